"""Base URLs typed without a scheme: completed where it can be told."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible.flows.connection import completed_url


@pytest.mark.parametrize(
    ("typed", "completed"),
    [
        ("localhost:11434", "http://localhost:11434"),
        ("localhost:11434/v1", "http://localhost:11434/v1"),
        (" 192.168.1.20:8080/v1 ", "http://192.168.1.20:8080/v1"),
        ("[::1]:8000/v1", "http://[::1]:8000/v1"),
        ("api.openai.com/v1", "https://api.openai.com/v1"),
        ("API.Groq.com/openai/v1", "https://API.Groq.com/openai/v1"),
        ("home.openai.azure.com/openai/v1", "https://home.openai.azure.com/openai/v1"),
        ("http://localhost:11434/v1", "http://localhost:11434/v1"),
        ("ftp://example.com/v1", "ftp://example.com/v1"),
    ],
)
def test_completed(typed: str, completed: str) -> None:
    """A host with a port gets http://; a hosted preset's host gets https://."""
    assert completed_url(typed) == completed


@pytest.mark.parametrize(
    "typed", ["localhost/v1", "example.com/v1", "localhost:0", "a:b:c", "not a url", ""]
)
def test_left_as_typed(typed: str) -> None:
    """What cannot be told is left for the URL check to refuse."""
    assert completed_url(typed) == typed.strip()
