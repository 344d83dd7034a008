"""The server connection: client, model listing and the one error mapper."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import openai

from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.httpx_client import get_async_client

from .const import (
    CONF_BASE_URL,
    DOMAIN,
    IMAGE_MODEL_MARKERS,
    NON_CHAT_MODEL_MARKERS,
    TIMEOUT_SECONDS,
    VALIDATION_TIMEOUT_SECONDS,
)

# Local servers ignore the key, but the client insists on one.
PLACEHOLDER_API_KEY = "no-key"


class ServerError(HomeAssistantError):
    """A failure talking to the model server, with a translated message."""

    def __init__(self, key: str, **placeholders: str) -> None:
        """Create the error from a translation key of ours."""
        super().__init__(
            translation_domain=DOMAIN,
            translation_key=key,
            translation_placeholders=placeholders or None,
        )


class AuthError(ServerError):
    """The server refused our credentials (401/403)."""


class ConnectError(ServerError):
    """The server could not be reached or did not answer in time."""


class RateLimitedError(ServerError):
    """The server asked us to slow down (429)."""


class ToolsUnsupportedError(ServerError):
    """The model cannot call tools."""


class RequestRejectedError(ServerError):
    """The server rejected the request as malformed or unsupported (400/422)."""

    def __init__(self, message: str) -> None:
        """Keep the server's message for callers that adapt and retry."""
        super().__init__("api_error", message=message)
        self.server_message = message


@dataclass(slots=True)
class ServerQuirks:
    """What we learned about a server while talking to it (per entry)."""

    # Index into the structured-output ladder that this server needs.
    structured_output_rung: int = 0
    # None: not known yet.
    logprobs: bool | None = None
    decisions: bool | None = None


@dataclass(slots=True)
class RuntimeData:
    """Everything a loaded entry holds."""

    client: openai.AsyncOpenAI
    models: list[str]
    quirks: ServerQuirks = field(default_factory=ServerQuirks)


async def async_create_client(
    hass: HomeAssistant, data: dict[str, Any]
) -> openai.AsyncOpenAI:
    """Create the client on Home Assistant's shared HTTP client."""
    client = openai.AsyncOpenAI(
        api_key=data.get(CONF_API_KEY) or PLACEHOLDER_API_KEY,
        base_url=data[CONF_BASE_URL],
        http_client=get_async_client(hass),
        timeout=TIMEOUT_SECONDS,
        max_retries=1,
    )
    # The client reads platform details from disk on first use; do it here.
    await hass.async_add_executor_job(client.platform_headers)
    return client


def server_message(err: openai.APIStatusError) -> str:
    """Return the human part of an error body, whatever its shape."""
    body = err.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        if isinstance(body.get("message"), str):
            return str(body["message"])
        if isinstance(body.get("detail"), str):
            return str(body["detail"])
    if isinstance(body, str) and body:
        return body
    return err.message


def _retry_hint(err: openai.APIStatusError) -> str:
    """Return the server's retry hint in seconds, or an empty string."""
    headers = err.response.headers
    for name in ("retry-after", "x-ratelimit-reset-requests", "x-ratelimit-reset"):
        if value := headers.get(name):
            return str(value)
    return ""


def map_error(err: openai.OpenAIError) -> ServerError:
    """Turn a client error into our translated error."""
    if isinstance(err, openai.APITimeoutError):
        return ConnectError("timeout_connect")
    if isinstance(err, openai.APIConnectionError):
        return ConnectError("cannot_connect")
    if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return AuthError("invalid_auth")
    if isinstance(err, openai.APIStatusError):
        message = server_message(err)
        if isinstance(err, openai.RateLimitError):
            hint = _retry_hint(err)
            if hint:
                return RateLimitedError("rate_limited_retry", retry_after=hint)
            return RateLimitedError("rate_limited")
        if "does not support tools" in message.lower() or (
            "tool" in message.lower() and "not support" in message.lower()
        ):
            return ToolsUnsupportedError("tools_unsupported", message=message)
        if err.status_code in (400, 404, 415, 422):
            return RequestRejectedError(message)
        return ServerError("api_error", message=message)
    return ServerError("api_error", message=str(err) or type(err).__name__)


@contextmanager
def translate_errors() -> Iterator[None]:
    """Raise our translated error for any client error in the block."""
    try:
        yield
    except openai.OpenAIError as err:
        raise map_error(err) from err


async def async_list_models(client: openai.AsyncOpenAI) -> list[str]:
    """Return the model ids the server lists, sorted; raise ServerError."""
    with translate_errors():
        page = await client.models.list(timeout=VALIDATION_TIMEOUT_SECONDS)
    return sorted({model.id for model in page.data})


async def async_probe(client: openai.AsyncOpenAI, model: str) -> None:
    """Check a server without a models endpoint with a one-token completion."""
    with translate_errors():
        await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "ping"}],
            max_tokens=1,
            timeout=VALIDATION_TIMEOUT_SECONDS,
        )


def is_chat_model(model: str) -> bool:
    """Tell whether a listed model looks like a chat model."""
    lowered = model.lower()
    return not any(marker in lowered for marker in NON_CHAT_MODEL_MARKERS)


def is_image_model(model: str) -> bool:
    """Tell whether a listed model evidently generates images."""
    lowered = model.lower()
    return any(marker in lowered for marker in IMAGE_MODEL_MARKERS) and not any(
        marker in lowered for marker in ("vision", "-vl", "embed")
    )


def pick_chat_model(models: list[str], recommended: str | None) -> str | None:
    """Return the most suitable chat model the server lists."""
    if recommended and recommended in models:
        return recommended
    return next((model for model in models if is_chat_model(model)), recommended)


def pick_image_model(models: list[str]) -> str | None:
    """Return the first evident image model the server lists, if any."""
    return next((model for model in models if is_image_model(model)), None)


def is_reasoning_model(model: str) -> bool:
    """Tell whether a model is one of OpenAI's reasoning models."""
    name = model.lower().rsplit("/", 1)[-1]
    return name.startswith(("o1", "o3", "o4", "gpt-5"))
