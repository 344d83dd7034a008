"""Base URLs typed without a scheme, completed before they are checked.

`localhost:11434/v1` becomes `http://localhost:11434/v1` (a host with a port
is a server of the user's own); `api.openai.com/v1` becomes
`https://api.openai.com/v1` (a hosted preset's host). Anything else is left
as typed, for the URL check to refuse.
"""

from __future__ import annotations

from typing import Final

from yarl import URL

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
