"""Connecting to a server from a form: its base URL made canonical, its key, the check."""

from __future__ import annotations

from collections.abc import Mapping
from ipaddress import ip_address
import logging
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.helpers.selector import (
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
from homeassistant.util.network import is_ip_address
import probatio
from yarl import URL

from ..const import CONF_BASE_URL, CONF_PROVIDER, CONF_SERVER_KIND
from ..errors import (
    AuthError,
    ConnectError,
    InvalidURLError,
    NotCompatibleError,
    RateLimitedError,
    ServerError,
)
from ..models.listing import async_validate_server
from ..models.names import MAX_OFFERED
from ..models.providers import PROVIDER_CUSTOM, PROVIDERS, URL_PLACEHOLDER, provider_for
from ..models.server_info import async_guess_kind
from ..net.transport import Transport

_LOGGER = logging.getLogger(__name__)

API_KEY_SELECTOR = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))
URL_SELECTOR = TextSelector(TextSelectorConfig(type=TextSelectorType.URL))

# Server errors the connect step tells in its own words, with their placeholders.
_TOLD_ERRORS: Final = frozenset(
    {
        "redirected",
        "redirected_nowhere",
        "gateway_failed",
        "server_unavailable",
        "server_failed",
    }
)

# The hosted presets' hosts; Azure's as what follows its placeholder.
HOSTED_HOSTS: Final = tuple(
    host.removeprefix(URL_PLACEHOLDER)
    for preset in PROVIDERS.values()
    if preset.base_url.startswith("https://")
    and (host := (URL(preset.base_url).host or "").lower())
)


def completed_url(text: str) -> str:
    """Return the URL with http:// or https:// added where it can be told."""
    text = text.strip()
    if "://" in text:
        return text
    try:
        url = URL(f"http://{text}")
        host, port = (url.host or "").lower(), url.explicit_port
    except TypeError, ValueError:
        return text
    if host and host.endswith(HOSTED_HOSTS):
        return f"https://{text}"
    if host and port:
        return f"http://{text}"
    return text


# No server's base URL is longer.
MAX_URL_CHARACTERS: Final = 2048


def normalize_base_url(url: str) -> str:
    """Return a base URL's canonical form (one server, one spelling); refuse one unfit."""
    text = url.strip()
    if (
        not text
        or len(text) > MAX_URL_CHARACTERS
        or any(char.isspace() for char in text)
    ):
        raise InvalidURLError(url)
    try:
        parsed = URL(text)
        path = urlsplit(text).path
    except (TypeError, ValueError) as err:
        raise InvalidURLError(url) from err
    # A `.` or `..` path segment is refused, however often encoded.
    while (decoded := unquote(path)) != path:
        path = decoded
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.host
        # Credentials in the URL would end up in the unique id and diagnostics.
        or parsed.user is not None
        or parsed.password is not None
        or parsed.query_string
        or parsed.fragment
        or parsed.explicit_port == 0
        or {".", ".."} & set(path.replace("\\", "/").split("/"))
        or URL_PLACEHOLDER in parsed.host.lower()
    ):
        raise InvalidURLError(url)
    path = parsed.path.rstrip("/").removesuffix("/chat/completions").rstrip("/")
    return str(parsed.with_path(path or "/")).rstrip("/")


def api_key_field(required: bool) -> probatio.Marker:
    """Return the schema key of the API key, required or not."""
    return (probatio.Required if required else probatio.Optional)(
        probatio.Secret(CONF_API_KEY)
    )


def server_schema(api_key_required: bool) -> probatio.Schema:
    """Return the form of a server's base URL and key."""
    return probatio.Schema(
        {
            probatio.Required(CONF_BASE_URL): URL_SELECTOR,
            api_key_field(api_key_required): API_KEY_SELECTOR,
        }
    )


def entry_data(
    user_input: Mapping[str, Any], provider_key: str, errors: dict[str, str]
) -> dict[str, Any] | None:
    """Return the entry data for a form's input; None for a bad URL, told in errors."""
    try:
        base_url = normalize_base_url(completed_url(user_input[CONF_BASE_URL]))
    except InvalidURLError:
        errors[CONF_BASE_URL] = "invalid_url"
        return None
    data: dict[str, Any] = {CONF_PROVIDER: provider_key, CONF_BASE_URL: base_url}
    if api_key := (user_input.get(CONF_API_KEY) or "").strip():
        data[CONF_API_KEY] = api_key
    return data


async def async_check_server(
    hass: HomeAssistant,
    data: dict[str, Any],
    errors: dict[str, str],
    placeholders: dict[str, str],
) -> list[str]:
    """Connect with the settings; fill in errors; return the models."""
    preset = provider_for(data.get(CONF_PROVIDER))
    try:
        listing = await async_validate_server(hass, data, preset.recommended_model)
    except AuthError:
        errors["base"] = "invalid_auth"
    except ConnectError as err:
        failed = err.translation_key or "cannot_connect"
        # An answer too slow to finish is, for the check, a server too slow to answer.
        errors["base"] = "timeout_connect" if failed == "timeout_answer" else failed
        url = URL(data[CONF_BASE_URL])
        host = url.host or ""
        if errors["base"] == "cannot_connect" and (
            host == "localhost"
            or (is_ip_address(host) and ip_address(host).is_loopback)
        ):
            # Most often the server runs elsewhere, not beside Home Assistant.
            errors["base"] = "cannot_connect_local"
            placeholders["port"] = str(url.port)
    except NotCompatibleError:
        errors["base"] = "not_compatible"
    except RateLimitedError:
        errors["base"] = "rate_limited"
    except ServerError as err:
        given = err.translation_placeholders or {}
        if (key := err.translation_key) in _TOLD_ERRORS:
            placeholders.update(given)
            errors["base"] = key
        else:
            placeholders["message"] = given.get("message", "")
            errors["base"] = "api_error"
    except Exception:
        _LOGGER.exception("Unexpected error while connecting to the server")
        errors["base"] = "unknown"
    else:
        data.pop(CONF_SERVER_KIND, None)
        if data.get(CONF_PROVIDER) == PROVIDER_CUSTOM:
            transport = Transport(hass, data[CONF_BASE_URL], data.get(CONF_API_KEY))
            if kind := await async_guess_kind(transport, listing):
                data[CONF_SERVER_KIND] = kind.value
        return listing.ids[:MAX_OFFERED]
    return []
