"""The server connection: client, model listing and the one error mapper."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.helpers.httpx_client import get_async_client
import httpx2
import openai
from yarl import URL

from .const import CONF_BASE_URL, TIMEOUT_SECONDS, VALIDATION_TIMEOUT_SECONDS
from .errors import (
    AuthError,
    ConnectError,
    InvalidURLError,
    NotCompatibleError,
    RateLimitedError,
    RequestRejectedError,
    ServerError,
    ToolsUnsupportedError,
)
from .usage import UsageTracker

# Local servers ignore the key, but the client insists on one.
PLACEHOLDER_API_KEY = "no-key"


@dataclass(slots=True)
class ServerQuirks:
    """What we learned about a server and one of its models while talking."""

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
    # Learned per model: a rejection is often about one model, not the server.
    quirks: dict[str, ServerQuirks] = field(default_factory=dict)
    # Tokens, requests and errors of each subentry, for the usage sensors.
    usage: UsageTracker = field(default_factory=UsageTracker)

    def quirks_for(self, model: str) -> ServerQuirks:
        """Return what we learned about the server with this model."""
        return self.quirks.setdefault(model, ServerQuirks())


async def async_create_client(
    hass: HomeAssistant, data: dict[str, Any]
) -> openai.AsyncOpenAI:
    """Create the client on Home Assistant's shared HTTP client."""
    client = openai.AsyncOpenAI(
        api_key=data.get(CONF_API_KEY) or PLACEHOLDER_API_KEY,
        base_url=data[CONF_BASE_URL],
        http_client=get_async_client(hass),
        timeout=TIMEOUT_SECONDS,
        max_retries=0,
    )
    await hass.async_add_executor_job(_warm_up, client)
    return client


def _warm_up(client: openai.AsyncOpenAI) -> None:
    """Do the client's lazy disk work now, in the executor, not in the loop.

    It reads platform details on first use and imports each API resource on
    first access.
    """
    client.platform_headers()
    for resource in ("chat", "models", "images", "decisions"):
        getattr(client, resource)


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


def _lacks_permission(err: openai.APIStatusError, message: str) -> bool:
    """Tell a key that lacks access to one model or feature from a bad key."""
    lowered = message.lower()
    return err.code == "missing_scope" or any(
        phrase in lowered
        for phrase in (
            "missing scopes",
            "insufficient permissions",
            "must be verified",
            "not allowed to access",
            "does not have access to",
        )
    )


def map_error(err: openai.OpenAIError) -> ServerError:
    """Turn a client error into our translated error."""
    if isinstance(err, openai.APITimeoutError):
        return ConnectError("timeout_connect")
    if isinstance(err, openai.APIConnectionError):
        return ConnectError("cannot_connect")
    if isinstance(err, openai.APIStatusError):
        message = server_message(err)
        if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError)):
            if _lacks_permission(err, message):
                # The key is fine; a new one would not help.
                return ServerError("permission_denied", message=message)
            return AuthError("invalid_auth")
        if isinstance(err, openai.RateLimitError):
            if err.code == "insufficient_quota" or "insufficient_quota" in str(
                err.body
            ):
                return ServerError("insufficient_quota", message=message)
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
    except httpx2.TimeoutException as err:
        # Raised while a streamed answer is being read.
        raise ConnectError("timeout_connect") from err
    except httpx2.HTTPError as err:
        raise ConnectError("cannot_connect") from err


# Answers to GET /models that mean "no such route here", not "the server failed".
MISSING_ENDPOINT_STATUSES = frozenset({400, 404, 405, 415, 422, 501})
# Placeholder left in a preset's URL for the user to replace (Azure).
URL_PLACEHOLDER = "your-resource"
# Model name for the probe when the preset recommends none.
PROBE_MODEL = "probe"


def normalize_base_url(url: str) -> str:
    """Return the canonical form of a base URL; raise InvalidURLError.

    Lower-cases scheme and host, drops a trailing slash and a pasted
    ``/chat/completions`` suffix, so one server always gets one spelling.
    A user name or password in the URL is refused: the key belongs in its field.
    """
    text = url.strip()
    if not text or any(char.isspace() for char in text):
        raise InvalidURLError(url)
    try:
        parsed = URL(text)
    except (TypeError, ValueError) as err:
        raise InvalidURLError(url) from err
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.host
        # Credentials in the URL would end up in titles and diagnostics.
        or parsed.user is not None
        or parsed.password is not None
        or parsed.query_string
        or parsed.fragment
        or URL_PLACEHOLDER in parsed.host.lower()
    ):
        raise InvalidURLError(url)
    path = parsed.path.rstrip("/")
    path = path.removesuffix("/chat/completions").rstrip("/")
    return str(parsed.with_path(path or "/")).rstrip("/")


def _model_ids(page: Any) -> list[str]:
    """Return the sorted model ids of a models page, tolerating odd shapes."""
    return sorted(
        {
            model_id
            for model in getattr(page, "data", None) or []
            if isinstance(model_id := getattr(model, "id", None), str) and model_id
        }
    )


async def async_fetch_models(client: openai.AsyncOpenAI) -> list[str] | None:
    """Return the listed models, or None when the server has no models route.

    Auth, connection, rate-limit and server failures raise ServerError.
    """
    try:
        page = await client.models.list(timeout=VALIDATION_TIMEOUT_SECONDS)
    except openai.APIStatusError as err:
        if err.status_code in MISSING_ENDPOINT_STATUSES:
            return None
        raise map_error(err) from err
    except openai.OpenAIError as err:
        raise map_error(err) from err
    except ValueError, AttributeError, TypeError, RecursionError:
        # A 200 that is no models page (HTML, a JSON list, an empty body, JSON
        # nested past the decoder's depth):
        # no usable models route here; the probe decides.
        return None
    return _model_ids(page)


def _proves_protocol(err: openai.APIStatusError) -> bool:
    """Tell whether an error answer to the probe still proves the protocol.

    A validation error (400/422) with a JSON body proves that the route exists
    and took the key; so does a JSON 404 about the model, while a 404 about
    the URL does not.
    """
    try:
        body = err.response.json()
    except ValueError, RecursionError:
        return False
    if not isinstance(body, dict) or not body:
        return False
    if err.status_code in (400, 422):
        return True
    if err.status_code != 404:
        return False
    inner = body.get("error", body)
    if isinstance(inner, str):
        return "model" in inner.lower()
    return isinstance(inner, dict) and (
        inner.get("code") == "model_not_found"
        or inner.get("param") == "model"
        or "model" in str(inner.get("message", "")).lower()
    )


async def async_probe(client: openai.AsyncOpenAI, model: str) -> None:
    """Check that the server speaks the chat protocol and takes our key.

    Sends a chat completion with no messages: a server that validates the
    request (400/422 with a JSON error) or answers it (200) proves both the
    protocol and the key, and no tokens are generated. A JSON 404 about the
    model proves as much. Raises ServerError otherwise.
    """
    try:
        response = await client.chat.completions.with_raw_response.create(
            model=model, messages=[], timeout=VALIDATION_TIMEOUT_SECONDS
        )
    except openai.APIStatusError as err:
        if isinstance(err, (openai.AuthenticationError, openai.PermissionDeniedError)):
            raise AuthError("invalid_auth") from err
        if _proves_protocol(err):
            return
        if err.status_code in MISSING_ENDPOINT_STATUSES:
            raise NotCompatibleError("not_compatible") from err
        raise map_error(err) from err
    except openai.OpenAIError as err:
        raise map_error(err) from err
    # A 200 proves the protocol only when it is a JSON object (not a web page).
    try:
        body = response.http_response.json()
    except (ValueError, RecursionError) as err:
        raise NotCompatibleError("not_compatible") from err
    if not isinstance(body, dict):
        raise NotCompatibleError("not_compatible")


async def async_validate_server(
    hass: HomeAssistant, data: dict[str, Any], probe_model: str | None
) -> list[str]:
    """Connect with the given settings; return the listed models.

    A server without a usable models route is accepted when the probe passes
    (then no models are known). Raises ServerError.
    """
    client = await async_create_client(hass, data)
    try:
        models = await async_fetch_models(client)
    except AuthError, ConnectError:
        raise
    except ServerError:
        models = None
    if models is None:
        await async_probe(client, probe_model or PROBE_MODEL)
        return []
    return models


def is_reasoning_model(model: str) -> bool:
    """Tell whether a model is one of OpenAI's reasoning models."""
    name = model.lower().rsplit("/", 1)[-1]
    # gpt-5-chat is the non-reasoning chat variant of the family.
    return name.startswith(("o1", "o3", "o4", "gpt-5")) and not name.startswith(
        "gpt-5-chat"
    )
