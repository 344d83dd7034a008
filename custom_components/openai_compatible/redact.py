"""Keys kept out of server texts, which may quote ours back, before they go anywhere."""

from __future__ import annotations

import re
from typing import Final

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
        if key in text:
            text = text.replace(key, REMOVED)
    # A bearer token keeps the word `Bearer`.
    return _TOKEN.sub(lambda match: (match[1] or "") + REMOVED, text)


def shown(text: str) -> str:
    """Return a server's text as users may see it: keys out, then cut (not the reverse)."""
    text = redact(text)
    if len(text) <= MAX_SHOWN_CHARACTERS:
        return text
    return text[: MAX_SHOWN_CHARACTERS - 1].rstrip() + "…"
