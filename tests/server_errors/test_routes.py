"""The error table: a route and a server's answer give which of our errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.errors import (
    InputError,
    RequestRejectedError,
    ServerError,
)
from custom_components.openai_compatible.server_errors.answers import error_for_status
from custom_components.openai_compatible.server_errors.routes import (
    is_missing_route,
    names_unknown_model,
    route_error,
)

CHAT = "/chat/completions"
SPEECH = "/audio/speech"
TRANSCRIPTION = "/audio/transcriptions"


def _answer(status: int, message: str, path: str, **sent: Any) -> ServerError:
    """Return our error for an OpenAI error object the route answered."""
    body = json.dumps({"error": {"message": message}}).encode()
    return error_for_status(status, {}, body, path=path, **sent)


@pytest.mark.parametrize(
    ("text", "body", "unknown"),
    [
        ("The model `x` does not exist", None, True),
        ("Unknown model: x", None, True),
        ("Unsupported model: tts-1", None, True),
        ("Model 'whisper-1' is not installed locally", None, True),
        ("no such model", None, True),
        ("", {"error": {"code": "model_not_found"}}, True),
        ("Not found: the model route", None, False),
        ("Voice 'x' not found for model tts-1", None, False),
        ("model " * 10_000, None, False),
    ],
)
def test_one_rule_for_an_unknown_model(text: str, body: Any, unknown: bool) -> None:
    """The code says so, or 'model' comes before words of its absence."""
    assert names_unknown_model(text, body) is unknown


def test_unknown_model_by_route() -> None:
    """Chat tells it at 404 only; audio routes at any refusal (Kokoro: 400)."""
    assert _answer(404, "model x not found", CHAT).translation_key == "model_not_found"
    chat_400 = _answer(400, "model x not found", CHAT)
    assert isinstance(chat_400, RequestRejectedError)
    speech_400 = _answer(400, "model x not found", SPEECH)
    assert speech_400.translation_key == "model_not_found"


def test_audio_routes_name_the_model() -> None:
    """An unknown audio model is told with the model we asked for."""
    told = route_error(_answer(400, "Unknown model", TRANSCRIPTION), TRANSCRIPTION, "w")
    assert told is not None
    assert told.translation_key == "audio_model_not_found"
    assert told.translation_placeholders == {"model": "w", "message": "Unknown model"}
    assert route_error(_answer(404, "model x not found", CHAT), CHAT, "m") is None


@pytest.mark.parametrize(
    ("message", "status", "key"),
    [
        ("Voice 'nova' not found", 400, "unknown_voice"),
        ("'nova' is not one of the choices", 422, "unknown_voice"),
        ("Not Found", 404, "no_speech_route"),
        ("Method Not Allowed", 405, "no_speech_route"),
        ("Internal error", 400, None),
    ],
)
def test_speech_refusals(message: str, status: int, key: str | None) -> None:
    """A refusal naming the voice is the voice's; a bare 404/405 a missing route."""
    told = route_error(_answer(status, message, SPEECH), SPEECH, "tts", "nova")
    assert (told.translation_key if told else None) == key
    if key == "unknown_voice":
        assert isinstance(told, InputError)


def test_a_refused_feature_is_left_to_the_caller() -> None:
    """A refusal that names a feature we sent may be dropped, not translated."""
    err = _answer(400, "speed is not supported", SPEECH, sent={Feature.SPEECH_SPEED})
    assert isinstance(err, RequestRejectedError)
    assert err.feature is Feature.SPEECH_SPEED
    assert route_error(err, SPEECH, "tts", "nova") is None


def test_routes_that_are_a_feature() -> None:
    """A server without the Responses or Decisions route refuses that feature."""
    for path, feature in (
        ("/responses", Feature.RESPONSES_API),
        ("/decisions", Feature.DECISIONS),
        ("/images/edits", Feature.IMAGES_EDITS),
    ):
        err = _answer(404, "Not Found", path, sent={feature})
        assert isinstance(err, RequestRejectedError)
        assert (err.feature, err.general) == (feature, True)


def test_missing_route() -> None:
    """Only a featureless refusal at 404 or 405 says the route is missing."""
    assert is_missing_route(_answer(404, "Not Found", "/audio/voices"))
    assert not is_missing_route(_answer(400, "Bad", "/audio/voices"))
    assert not is_missing_route(_answer(500, "Oops", "/audio/voices"))
