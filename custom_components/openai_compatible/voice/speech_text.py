"""Text that sounds spoken: markdown marks, code and emoji out before speech."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
import re
from typing import Final

_MARK_CHARACTERS: Final = frozenset(" \t#-*+•>_~`|:.)0123456789")
# A start held longer than this is prose (or a drawing too long to matter).
_LONGEST_MARK: Final = 200
_LINE_MARK: Final = re.compile(r"[ \t]*(?:>[ \t]*)*(?:#{1,6}|[-*+•]|\d{1,3}[.)])[ \t]+")
_QUOTE: Final = re.compile(r"[ \t]*(?:>[ \t]*)+")
_FENCE: Final = re.compile(r"[ \t]*(?:```|~~~)")
# A rule (---, ***, ___) or a table's border (|---|:--|).
_DRAWING: Final = re.compile(
    r"[ \t]*(?:(?:[-*_][ \t]*){3,}|\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*:?-*:?)[ \t]*"
)

# No bracket in a link's text, no parenthesis in its address: linear time.
_LINK: Final = re.compile(r"!?\[([^\[\]]*)\]\([^()]*\)")
_STRUCK: Final = re.compile(r"~~[^~]*~~")
_LINK_TAIL: Final = re.compile(r"\]\([^()]*\)")
_EMPHASIS: Final = re.compile(r"\*+|~~|`+|[\[\]]|(?<!\w)_+|_+(?!\w)")
_TABLE_BAR: Final = re.compile(r"[ \t]*\|[ \t]*")
# Not °, ©, ® nor arrows and maths.
_EMOJI: Final = re.compile(
    "[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u2300-\u23ff"
    "\ufe0e\ufe0f\u200d\u20e3\U000e0020-\U000e007f]+"
)
_SENTENCE_MARKS: Final = (".", "!", "?", ":", ";", ",", "…")
_SPACES: Final = re.compile(r"[ \t]{2,}")
_SPACE_BEFORE_MARK: Final = re.compile(r"\s+([,.!?;:])")


class SpokenLines:
    """The line-start stage: a line's start is held until it is clear it is no mark."""

    def __init__(self) -> None:
        """Start at the beginning of a line, outside code."""
        self._head = ""
        self._at_line_start = True
        self._in_code = False

    def feed(self, text: str) -> str:
        """Take the next piece of the text; return what can be said of it now."""
        return "".join(self._take(line) for line in text.splitlines(keepends=True))

    def end(self) -> str:
        """Return what the held-back start of the last line says."""
        head, self._head = self._head, ""
        return (
            "" if self._in_code or not self._at_line_start else self._line(head, True)
        )

    def _take(self, piece: str) -> str:
        """Take a piece that holds at most one line end, at its end."""
        ends_line = piece.endswith(("\n", "\r"))
        if not self._at_line_start:
            self._at_line_start = ends_line
            return "" if self._in_code else piece
        self._head += piece
        if (
            not ends_line
            and len(self._head) < _LONGEST_MARK
            and set(self._head) <= _MARK_CHARACTERS
        ):
            return ""
        head, self._head = self._head, ""
        self._at_line_start = ends_line
        return self._line(head, ends_line)

    def _line(self, head: str, whole: bool) -> str:
        """Return what a line's start says: a fence toggles code, marks go."""
        if _FENCE.match(head):
            self._in_code = not self._in_code
            return "\n" if whole and not self._in_code else ""
        if self._in_code:
            return ""
        if whole and _DRAWING.fullmatch(head.rstrip("\r\n")):
            return "\n"
        if mark := _LINE_MARK.match(head) or _QUOTE.match(head):
            return head[mark.end() :]
        return head


def spoken_sentence(sentence: str) -> str:
    """Return a sentence without markup or emoji: what a voice should say."""
    text = _LINK.sub(r"\1", sentence)
    text = _LINK_TAIL.sub("", text)
    text = _STRUCK.sub("", text)
    text = _EMPHASIS.sub("", text)
    text = _EMOJI.sub(" ", text)
    text = _TABLE_BAR.sub(", ", text.strip(" \t|"))
    text = _SPACE_BEFORE_MARK.sub(r"\1", text)
    return _SPACES.sub(" ", text).strip()


def spoken_text(text: str) -> str:
    """Return a whole text as it should be said; a line without a stop gets one."""
    lines = SpokenLines()
    kept = lines.feed(text) + lines.end()
    said = (spoken_sentence(line) for line in kept.splitlines())
    return "\n".join(
        line if line.endswith(_SENTENCE_MARKS) else f"{line}." for line in said if line
    )


async def async_spoken_lines(text: AsyncIterable[str]) -> AsyncIterator[str]:
    """Yield a text stream with its line marks and code left out, as it comes."""
    lines = SpokenLines()
    async for piece in text:
        if said := lines.feed(piece):
            yield said
    if said := lines.end():
        yield said
