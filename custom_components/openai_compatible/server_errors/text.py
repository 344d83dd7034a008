"""The human part of an error answer: its message, without markup."""

from __future__ import annotations

import html
import json
import re
from typing import Any, Final

# Linear time: an error page of many unclosed tags must not block the event loop.
_BLOCK_OPEN: Final = re.compile(r"<(script|style)\b", re.IGNORECASE)
_BLOCK_CLOSE: Final = {
    kind: re.compile(rf"</{kind}\s*>", re.IGNORECASE) for kind in ("script", "style")
}
_TAG: Final = re.compile(r"<[^<>]*>")
_SPACES: Final = re.compile(r"\s+")


def error_text(body: bytes) -> str:
    """Return the human part of an error body: OpenAI's, FastAPI's, or the text itself."""
    text = body.decode("utf-8", errors="replace")
    return plain(_message_in(json_or_none(text)) or text)


def json_or_none(text: str) -> Any:
    """Return the JSON a text holds, or None."""
    try:
        return json.loads(text)
    except ValueError, RecursionError:
        return None


def _message_in(data: Any) -> str | None:
    if not isinstance(data, dict):
        return data if isinstance(data, str) else None
    inner = data.get("error", data)
    if isinstance(inner, str):
        return inner
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return str(inner["message"])
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str):
            return value
        if key == "detail" and isinstance(value, list):
            return "; ".join(_problem(item) for item in value)
    return None


def _problem(item: Any) -> str:
    """Return one FastAPI validation problem as 'where: what'."""
    if not isinstance(item, dict):
        return str(item)
    where = ".".join(str(part) for part in item.get("loc") or ())
    message = str(item.get("msg", ""))
    return f"{where}: {message}" if where else message


def plain(text: str) -> str:
    """Return text without markup, on one line."""
    return _SPACES.sub(" ", html.unescape(_TAG.sub(" ", _without_blocks(text)))).strip()


def _without_blocks(text: str) -> str:
    """Return text without its script and style blocks, in linear time."""
    kept: list[str] = []
    position = 0
    unclosed: set[str] = set()
    for opening in _BLOCK_OPEN.finditer(text):
        kind = opening[1].lower()
        if opening.start() < position or kind in unclosed:
            continue
        closing = _BLOCK_CLOSE[kind].search(text, opening.end())
        if closing is None:
            unclosed.add(kind)
            continue
        kept.append(text[position : opening.start()])
        position = closing.end()
    kept.append(text[position:])
    return " ".join(kept)
