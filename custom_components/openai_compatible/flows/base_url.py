"""Base URLs: completed when typed without a scheme, then checked and made canonical."""

from __future__ import annotations

from typing import Final
from urllib.parse import unquote, urlsplit

from yarl import URL

from ..errors import InvalidURLError
from ..models.providers import PROVIDERS, URL_PLACEHOLDER


def _hosted_hosts() -> tuple[str, ...]:
    """Return the hosted presets' hosts; Azure's as what follows its placeholder."""
    return tuple(
        host.removeprefix(URL_PLACEHOLDER)
        for preset in PROVIDERS.values()
        if preset.base_url.startswith("https://")
        and (host := (URL(preset.base_url).host or "").lower())
    )


HOSTED_HOSTS: Final = _hosted_hosts()


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
    """Return the canonical form of a base URL: one server, one spelling.

    Refused (InvalidURLError): credentials (the key has its field), port 0, `.` and
    `..` segments however spelled, and URLs longer than MAX_URL_CHARACTERS.
    """
    text = url.strip()
    if (
        not text
        or len(text) > MAX_URL_CHARACTERS
        or any(char.isspace() for char in text)
    ):
        raise InvalidURLError(url)
    try:
        parsed = URL(text)
    except (TypeError, ValueError) as err:
        raise InvalidURLError(url) from err
    if (
        parsed.scheme not in ("http", "https")
        or not parsed.host
        # Credentials in the URL would end up in the unique id and diagnostics.
        or parsed.user is not None
        or parsed.password is not None
        or parsed.query_string
        or parsed.fragment
        or parsed.explicit_port == 0
        or _has_dot_segment(text)
        or URL_PLACEHOLDER in parsed.host.lower()
    ):
        raise InvalidURLError(url)
    path = parsed.path.rstrip("/")
    path = path.removesuffix("/chat/completions").rstrip("/")
    return str(parsed.with_path(path or "/")).rstrip("/")


def _has_dot_segment(text: str) -> bool:
    """Tell whether a URL's path has a `.` or `..` segment, however often encoded."""
    path = urlsplit(text).path
    while (decoded := unquote(path)) != path:
        path = decoded
    segments = path.replace("\\", "/").split("/")
    return any(segment in (".", "..") for segment in segments)
