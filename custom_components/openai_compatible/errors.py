"""The integration's errors: bad input, server failures, unusable model answers."""

from __future__ import annotations

from homeassistant.exceptions import HomeAssistantError

from .const import DOMAIN, Feature
from .redact import redact, shown


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
