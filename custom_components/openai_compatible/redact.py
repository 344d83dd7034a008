"""Keys kept out of what servers say: every server text passes here.

A server may quote the request's `Authorization` header or its key back in an
error. Before such a text is shown, stored in a translated error or logged,
`redact` removes the keys of the entries (each Transport tells its own),
bearer tokens and keys in the usual `sk-...` forms.
"""

from __future__ import annotations

import re
from typing import Final

REMOVED: Final = "***"
# A server's text is shown to users at most this long.
MAX_SHOWN_CHARACTERS: Final = 200
# A key this short would garble messages more than it would protect.
MIN_KEY_LENGTH: Final = 8
# Keys told, newest last; the oldest is forgotten past this many.
MAX_KEYS: Final = 64
# A bearer token (as long as a key), or a key in OpenAI's, Groq's or xAI's
# form (`sk-proj-…`, `gsk_…`, `xai-…`), in linear time.
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
        if key in text:
            text = text.replace(key, REMOVED)
    return _TOKEN.sub(_removed, text)


def shown(text: str) -> str:
    """Return a server's text as users may see it: keys out first, then cut.

    Cut first, a key across the cut would lose the end it is known by.
    """
    text = redact(text)
    if len(text) <= MAX_SHOWN_CHARACTERS:
        return text
    return text[: MAX_SHOWN_CHARACTERS - 1].rstrip() + "…"


def _removed(match: re.Match[str]) -> str:
    """Return what stands for a token: the word `Bearer`, if it had one."""
    return (match[1] or "") + REMOVED
