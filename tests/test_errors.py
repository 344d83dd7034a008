"""Our errors: translated, quoting servers without their keys."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible import errors as errors_module
from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.errors import (
    MAX_KEYS,
    MAX_SHOWN_CHARACTERS,
    REMOVED,
    ContextOverflowError,
    MalformedAnswerError,
    RequestRejectedError,
    ServerError,
    redact,
    remember_key,
    shown,
)


def test_placeholders_lose_keys() -> None:
    """A server quoting our key does not show it."""
    remember_key("sk-secret-key-123456")
    err = ServerError("api_error", message="bad key sk-secret-key-123456")
    assert "sk-secret-key-123456" not in str(err.translation_placeholders)
    assert ServerError("invalid_auth").translation_placeholders is None


def test_refusals_a_user_can_act_on_have_their_own_words() -> None:
    """Tools, images and files refused are told so; other refusals are api_error."""
    keys = {
        feature: RequestRejectedError("no", feature).translation_key
        for feature in (Feature.TOOLS, Feature.IMAGE_INPUT, Feature.SAMPLING, None)
    }
    assert keys == {
        Feature.TOOLS: "tools_unsupported",
        Feature.IMAGE_INPUT: "image_input_refused",
        Feature.SAMPLING: "api_error",
        None: "api_error",
    }


def test_a_refusal_teaches_with_its_status_and_feature() -> None:
    """What a lesson was learned from names the status and the feature, not words.

    A server's words may quote the prompt; lessons are stored and shown.
    """
    err = RequestRejectedError("no tools: PIN 4711", Feature.TOOLS, status=422)
    assert err.lesson_source == "HTTP 422 refusing tools"
    assert RequestRejectedError("no", status=400).lesson_source == "HTTP 400"


def test_answer_and_window_errors_keep_their_details() -> None:
    """A malformed part is named; an overflow keeps its window and prompt."""
    malformed = MalformedAnswerError(part="choices")
    assert malformed.translation_placeholders == {"part": "choices"}
    overflow = ContextOverflowError(4096, 5000)
    assert (overflow.window, overflow.prompt_tokens) == (4096, 5000)
    assert overflow.translation_key == "context_overflow"


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
    monkeypatch.setattr(errors_module, "_known", {})
    remember_key("plain-secret-value")
    remember_key("short")
    remember_key(None)

    assert redact("key=plain-secret-value!") == f"key={REMOVED}!"
    assert redact("short answer") == "short answer"


def test_only_the_newest_keys_are_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_KEYS keys, the oldest is forgotten; a key told again is kept."""
    monkeypatch.setattr(errors_module, "_known", {})
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
