"""Keys kept out of server texts: the entries' keys, bearer tokens, sk- keys."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible import redact as redact_module
from custom_components.openai_compatible.errors import RequestRejectedError, ServerError
from custom_components.openai_compatible.redact import (
    MAX_KEYS,
    MAX_SHOWN_CHARACTERS,
    REMOVED,
    redact,
    remember_key,
    shown,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Bearer abc.def-ghi_jkl", f"Authorization: Bearer {REMOVED}"),
        ("bearer\tabcdefghij, then", f"bearer\t{REMOVED}, then"),
        ("Missing bearer token", "Missing bearer token"),
        ('"key": "sk-proj-0123456789abcdef"', f'"key": "{REMOVED}"'),
        ("gsk_0123456789abcdef and xai-0123456789abcdef", f"{REMOVED} and {REMOVED}"),
        ("task-0123456789abcdef is a task", "task-0123456789abcdef is a task"),
        ("sk-short", "sk-short"),
    ],
)
def test_tokens_are_removed(text: str, expected: str) -> None:
    """Bearer tokens and keys of the usual forms go; other words stay."""
    assert redact(text) == expected


def test_a_remembered_key_is_removed_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key the entry uses goes, whatever its form; a short one is no key."""
    monkeypatch.setattr(redact_module, "_known", {})
    remember_key("plain-secret-value")
    remember_key("short")
    remember_key(None)

    assert redact("key=plain-secret-value!") == f"key={REMOVED}!"
    assert redact("short answer") == "short answer"


def test_only_the_newest_keys_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_KEYS keys, the oldest is forgotten; a key told again is kept."""
    monkeypatch.setattr(redact_module, "_known", {})
    keys = [f"key-number-{index:04}" for index in range(MAX_KEYS + 1)]
    for key in keys:
        remember_key(key)
    remember_key(keys[1])
    remember_key("one-more-key-here")

    assert keys[0] in redact(keys[0])
    assert keys[2] in redact(keys[2])
    assert redact(keys[1]) == REMOVED
    assert redact(keys[-1]) == REMOVED


def test_errors_hold_no_key() -> None:
    """A translated error's placeholders and a refusal's message are redacted."""
    token = "sk-0123456789abcdefgh"
    error = ServerError("api_error", message=f"bad key {token}")
    refusal = RequestRejectedError(f"bad key {token}")

    assert error.translation_placeholders == {"message": f"bad key {REMOVED}"}
    assert refusal.server_message == f"bad key {REMOVED}"
    assert token not in str(refusal.translation_placeholders)


def test_shown() -> None:
    """Long texts are cut to what users read, with an ellipsis."""
    assert shown("short") == "short"
    cut = shown("x" * 1000)
    assert len(cut) == MAX_SHOWN_CHARACTERS
    assert cut.endswith("…")


@pytest.mark.parametrize("before", range(175, 200, 4))
def test_a_key_across_the_cut_is_removed_first(before: int) -> None:
    """A key that the cut would split is removed whole, wherever the cut falls."""
    key = "sk-proj-0123456789abcdefghijklmnop"
    message = "x" * before + f" {key} and more"
    error = ServerError("api_error", message=message)

    for text in (shown(message), str(error.translation_placeholders)):
        assert "sk-" not in text
        assert len(text) <= MAX_SHOWN_CHARACTERS + len("{'message': ''}")
