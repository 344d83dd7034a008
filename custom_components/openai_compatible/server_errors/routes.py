"""Error answers per route: one table, and one rule for an unknown model."""

from __future__ import annotations

import re
from typing import Any, Final

from ..const import Feature
from ..errors import InputError, RequestRejectedError, ServerError, TranslatedError

_MISSING_STATUSES: Final = frozenset({404, 405})
# Audio servers name an unknown model with any refusal (Kokoro-FastAPI: 400).
_ANY_REFUSAL: Final = frozenset({*range(400, 500), 501})
_VOICE_STATUSES: Final = frozenset({400, 404, 422})
_SPEECH: Final = "/audio/speech"

# A server without one of these routes refuses its feature.
FEATURE_ROUTES: Final = {
    Feature.RESPONSES_API: "/responses",
    Feature.DECISIONS: "/decisions",
    Feature.IMAGES_GENERATIONS: "/images/generations",
    Feature.IMAGES_EDITS: "/images/edits",
}
# The key a missing audio route is told with; any other route has no quirks.
_AUDIO_ROUTES: Final = {
    "/audio/transcriptions": "no_transcription_route",
    _SPEECH: "no_speech_route",
}

# "model ... not found" is looked for in two steps, in linear time.
_MODEL_WORD: Final = re.compile(r"model\b", re.IGNORECASE)
_NOT_FOUND_WORDS: Final = re.compile(
    r"\b(not found|does not exist|not exist|unknown|no such|not installed)",
    re.IGNORECASE,
)
_UNKNOWN_MODEL: Final = re.compile(
    r"(unknown|no such|invalid|unsupported) model", re.IGNORECASE
)


def model_statuses(path: str) -> frozenset[int]:
    """Return the statuses an unknown model may be told with on a route."""
    return _ANY_REFUSAL if path in _AUDIO_ROUTES else frozenset({404})


def error_details(body: Any) -> dict[str, Any]:
    """Return the error object of an answer's body (or the body); else an empty one."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    return inner if isinstance(inner, dict) else {}


def names_unknown_model(text: str, body: Any = None) -> bool:
    """Tell whether an error answer says the model is not there, by its code or words."""
    code = error_details(body).get("code")
    if code == "model_not_found" or _UNKNOWN_MODEL.search(text):
        return True
    model = _MODEL_WORD.search(text)
    return model is not None and bool(_NOT_FOUND_WORDS.search(text, model.end()))


def is_missing_route(err: ServerError) -> bool:
    """Tell whether a refusal says nothing but that the route is not there."""
    return (
        isinstance(err, RequestRejectedError)
        and err.feature is None
        and err.status in _MISSING_STATUSES
    )


def route_error(
    err: ServerError, path: str, model: str, voice: str | None = None
) -> TranslatedError | None:
    """Return the error a route tells a failure with (model, route, voice), if its own."""
    missing = _AUDIO_ROUTES.get(path)
    if missing is None:
        return None
    if err.translation_key == "model_not_found":
        message = (err.translation_placeholders or {}).get("message", "")
        return ServerError("audio_model_not_found", model=model, message=message)
    if not isinstance(err, RequestRejectedError) or err.feature is not None:
        return None
    if path == _SPEECH and voice is not None and _names_voice(err, voice):
        return InputError("unknown_voice", voice=voice, message=err.server_message)
    return ServerError(missing) if is_missing_route(err) else None


def _names_voice(err: RequestRejectedError, voice: str) -> bool:
    """Tell whether a refusal is about the voice: it says so, or quotes the name."""
    lowered, name = err.server_message.lower(), voice.lower()
    return err.status in _VOICE_STATUSES and (
        "voice" in lowered or f"'{name}'" in lowered or f'"{name}"' in lowered
    )
