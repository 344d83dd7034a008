"""Our errors: translated, quoting servers without their keys."""

from __future__ import annotations

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.errors import (
    ContextOverflowError,
    MalformedAnswerError,
    RequestRejectedError,
    ServerError,
)
from custom_components.openai_compatible.redact import remember_key


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
