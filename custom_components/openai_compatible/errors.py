"""The integration's errors; servers' texts in them lose our keys, which they may quote."""

from __future__ import annotations

import re
from typing import Final

from homeassistant.exceptions import HomeAssistantError

from .const import DOMAIN, Feature

REMOVED: Final = "***"
MAX_SHOWN_CHARACTERS: Final = 200
# A key this short would garble messages more than it would protect.
MIN_KEY_LENGTH: Final = 8
# Keys told, newest last; the oldest is forgotten past this many.
MAX_KEYS: Final = 64
# A bearer token, or an OpenAI, Groq or xAI key (`sk-proj-…`, `gsk_…`, `xai-…`).
_TOKEN: Final = re.compile(
    r"(\bbearer\s+)[^\s\"'`,;]{8,}|(?<![\w-])(?:sk|gsk|xai)[-_][\w-]{12,}",
    re.IGNORECASE,
)
_known: dict[str, None] = {}


def remember_key(key: str | None) -> None:
    """Remove this key from server texts from now on."""
    if key is None or len(key) < MIN_KEY_LENGTH:
        return
    _known.pop(key, None)
    _known[key] = None
    while len(_known) > MAX_KEYS:
        del _known[next(iter(_known))]


def redact(text: str) -> str:
    """Return a server's text without keys or bearer tokens."""
    for key in reversed(_known):
        text = text.replace(key, REMOVED)
    # A bearer token keeps the word `Bearer`.
    return _TOKEN.sub(lambda match: (match[1] or "") + REMOVED, text)


def shown(text: str) -> str:
    """Return a server's text as users may see it: keys out, then cut (not the reverse)."""
    text = redact(text)
    if len(text) <= MAX_SHOWN_CHARACTERS:
        return text
    return text[: MAX_SHOWN_CHARACTERS - 1].rstrip() + "…"


class TranslatedError(HomeAssistantError):
    """An error whose message comes from our translations; placeholders redacted, cut."""

    def __init__(self, key: str, **placeholders: str) -> None:
        """Create the error from a translation key of ours."""
        super().__init__(
            translation_domain=DOMAIN,
            translation_key=key,
            translation_placeholders={
                name: shown(value) for name, value in placeholders.items()
            }
            or None,
        )


class InputError(TranslatedError):
    """The input of a task or message cannot be used."""


class ModelError(TranslatedError):
    """The model's answer cannot be used."""


class ServerError(TranslatedError):
    """A failure talking to the model server."""


class AuthError(ServerError):
    """The server refused our credentials (401/403)."""


class ConnectError(ServerError):
    """The server could not be reached or did not answer in time."""


class RateLimitedError(ServerError):
    """The server asked us to slow down (429)."""


class NotCompatibleError(ServerError):
    """Nothing at the URL answers like an OpenAI-compatible API."""


class RequestRejectedError(ServerError):
    """The server refused the request, perhaps for a feature we can drop."""

    def __init__(
        self,
        message: str,
        feature: Feature | None = None,
        *,
        general: bool = False,
        status: int = 400,
    ) -> None:
        """Keep the server's message, its status and what it refused."""
        super().__init__(_REFUSAL_KEYS.get(feature, "api_error"), message=message)
        self.server_message = redact(message)
        self.feature = feature
        self.general = general
        self.status = status

    @property
    def lesson_source(self) -> str:
        """Return a lesson's source: status, feature; no words (they may quote the prompt)."""
        return f"HTTP {self.status}" + (
            f" refusing {self.feature}" if self.feature else ""
        )


# Refusals a user can act on, told in their own words; the rest are api_error.
_REFUSAL_KEYS: dict[Feature | None, str] = {
    Feature.TOOLS: "tools_unsupported",
    # Only an answer the server could not parse is refused so, once unstreamed.
    Feature.STREAM_WITH_TOOLS: "tool_call_unparsed",
    Feature.IMAGE_INPUT: "image_input_refused",
    Feature.FILE_INPUT: "file_input_refused",
}


class MalformedAnswerError(ServerError):
    """A part of the server's answer is not in the form the API uses."""

    def __init__(self, *, part: str) -> None:
        """Name the part, such as `choices` or `tool_calls.function.name`."""
        super().__init__("answer_malformed", part=part)


class InvalidURLError(ValueError):
    """The base URL is malformed, not http(s), or still a template."""


class ContextWindowError(InputError):
    """The request cannot fit the model's context window, however trimmed."""


class ContextOverflowError(ServerError):
    """The server refused the request as larger than the model's window."""

    def __init__(self, window: int | None, prompt_tokens: int | None) -> None:
        """Keep what the server said about the window and the prompt."""
        super().__init__("context_overflow")
        self.window = window
        self.prompt_tokens = prompt_tokens
