"""Error answers per route: one table, and one rule for an unknown model."""

from __future__ import annotations

from dataclasses import dataclass
import re
from typing import Any, Final

from ..const import Feature
from ..errors import InputError, RequestRejectedError, ServerError, TranslatedError

_MISSING_STATUSES: Final = frozenset({404, 405})
# Audio servers name an unknown model with any refusal (Kokoro-FastAPI: 400).
_ANY_REFUSAL: Final = frozenset({*range(400, 500), 501})
_VOICE_STATUSES: Final = frozenset({400, 404, 422})


@dataclass(frozen=True, slots=True)
class RouteErrors:
    """What error answers mean on one route, beyond what any answer says."""

    feature: Feature | None = None
    missing: str | None = None
    model_statuses: frozenset[int] = frozenset({404})
    unknown_model: str | None = None
    voices: bool = False


# Any other route (/chat/completions, /models) has no quirks.
_ANY_ROUTE: Final = RouteErrors()
ROUTES: Final[dict[str, RouteErrors]] = {
    "/responses": RouteErrors(Feature.RESPONSES_API),
    "/decisions": RouteErrors(Feature.DECISIONS),
    "/images/generations": RouteErrors(Feature.IMAGES_GENERATIONS),
    "/images/edits": RouteErrors(Feature.IMAGES_EDITS),
    "/audio/transcriptions": RouteErrors(
        missing="no_transcription_route",
        model_statuses=_ANY_REFUSAL,
        unknown_model="audio_model_not_found",
    ),
    "/audio/speech": RouteErrors(
        missing="no_speech_route",
        model_statuses=_ANY_REFUSAL,
        unknown_model="audio_model_not_found",
        voices=True,
    ),
}
FEATURE_ROUTES: Final = {
    route.feature: path for path, route in ROUTES.items() if route.feature is not None
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


def route_errors(path: str) -> RouteErrors:
    """Return what error answers mean on a route; any other route has no quirks."""
    return ROUTES.get(path, _ANY_ROUTE)


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
    route = route_errors(path)
    if err.translation_key == "model_not_found" and route.unknown_model:
        message = (err.translation_placeholders or {}).get("message", "")
        return ServerError(route.unknown_model, model=model, message=message)
    if not isinstance(err, RequestRejectedError) or err.feature is not None:
        return None
    if route.voices and voice is not None and _names_voice(err, voice):
        return InputError("unknown_voice", voice=voice, message=err.server_message)
    if route.missing and is_missing_route(err):
        return ServerError(route.missing)
    return None


def _names_voice(err: RequestRejectedError, voice: str) -> bool:
    """Tell whether a refusal is about the voice: it says so, or quotes the name."""
    lowered, name = err.server_message.lower(), voice.lower()
    return err.status in _VOICE_STATUSES and (
        "voice" in lowered or f"'{name}'" in lowered or f'"{name}"' in lowered
    )
