"""Titles of entries and subentries."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.openai_compatible.const import (
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONVERSATION_NAME,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)
from custom_components.openai_compatible.naming import (
    entry_title,
    followed_title,
    is_generated_title,
    subentry_title,
)

OLLAMA = {CONF_PROVIDER: "ollama", CONF_BASE_URL: "http://192.168.1.20:11434/v1"}
CUSTOM = {CONF_PROVIDER: "custom", CONF_BASE_URL: "https://llm.home.arpa:8443/v1"}


@pytest.mark.parametrize(
    ("provider", "base_url", "title"),
    [
        ("openai", "https://api.openai.com/v1", "OpenAI"),
        ("openai", "https://proxy.example.com/v1", "OpenAI (proxy.example.com)"),
        ("ollama", "http://192.168.1.20:11434/v1", "Ollama (192.168.1.20:11434)"),
        ("litellm", "http://localhost:4000/v1", "LiteLLM proxy (localhost:4000)"),
        ("custom", "https://llm.home.arpa/v1", "Custom (llm.home.arpa)"),
        ("gone", "https://llm.home.arpa/v1", "Custom (llm.home.arpa)"),
    ],
)
def test_entry_title(provider: str, base_url: str, title: str) -> None:
    """Hosted services at home are named alone; the others show their host."""
    assert entry_title(provider, base_url) == title


@pytest.mark.parametrize(
    ("entry_data", "subentry_type", "subentry_data", "title"),
    [
        (OLLAMA, SUBENTRY_CONVERSATION, {CONF_CHAT_MODEL: "llama3.1:8b"}, "Ollama · llama3.1:8b"),
        (OLLAMA, SUBENTRY_AI_TASK, {CONF_CHAT_MODEL: "llama3.1:8b"}, "Ollama · llama3.1:8b · AI task"),
        (CUSTOM, SUBENTRY_CONVERSATION, {CONF_CHAT_MODEL: "qwen3"}, "llm.home.arpa · qwen3"),
        ({**CUSTOM, CONF_PROVIDER: "gone"}, SUBENTRY_CONVERSATION, {}, "llm.home.arpa"),
        (OLLAMA, SUBENTRY_AI_TASK, {}, "Ollama · AI task"),
    ],
)  # fmt: skip
def test_subentry_title(
    entry_data: dict[str, Any],
    subentry_type: str,
    subentry_data: dict[str, Any],
    title: str,
) -> None:
    """A subentry is named by server, model and, for a task, its kind."""
    assert subentry_title(subentry_type, entry_data, subentry_data) == title


@pytest.mark.parametrize(
    ("subentry_type", "title", "generated"),
    [
        (SUBENTRY_CONVERSATION, "Ollama · llama3.1:8b", True),
        (SUBENTRY_CONVERSATION, DEFAULT_CONVERSATION_NAME, True),
        (SUBENTRY_AI_TASK, DEFAULT_AI_TASK_NAME, True),
        (SUBENTRY_AI_TASK, DEFAULT_CONVERSATION_NAME, False),
        (SUBENTRY_AI_TASK, "Ollama · llama3.1:8b", False),
        (SUBENTRY_CONVERSATION, "Ollama · qwen3", False),
        (SUBENTRY_CONVERSATION, "Kitchen helper", False),
    ],
)
def test_is_generated_title(subentry_type: str, title: str, generated: bool) -> None:
    """Only the title the subentry would get now, or the old fixed one, is ours."""
    model = {CONF_CHAT_MODEL: "llama3.1:8b"}
    assert is_generated_title(title, subentry_type, OLLAMA, model) is generated


@pytest.mark.parametrize(
    ("title", "followed"),
    [
        ("Ollama · llama3.1:8b", "Ollama · qwen3"),
        (DEFAULT_CONVERSATION_NAME, "Ollama · qwen3"),
        ("Kitchen helper", "Kitchen helper"),
    ],
)
def test_followed_title(title: str, followed: str) -> None:
    """A title the integration gave follows the new model; a given name stays."""
    old = {CONF_CHAT_MODEL: "llama3.1:8b"}
    new = {CONF_CHAT_MODEL: "qwen3"}
    assert followed_title(title, SUBENTRY_CONVERSATION, OLLAMA, old, new) == followed
