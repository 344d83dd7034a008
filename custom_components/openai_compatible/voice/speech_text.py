"""Text that sounds spoken: markdown marks, code and emoji out, cut into sentences."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterator
import re
from typing import Final

# OpenAI takes at most 4096 characters per request.
MAX_SPEECH_CHARACTERS: Final = 4000
# A sentence's punctuation and the space after, or a line end; possessive: linear.
_SENTENCE_END = re.compile(r"(?<![.!?…。！？])[.!?…。！？]++[\"')\]]*+(?=\s)|\n")

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


def _speakable(text: str) -> bool:
    return any(character.isalnum() for character in text)


def _cut(text: str) -> int | None:
    """Return where the first sentence ends, else a long text's last space in reach."""
    limit = MAX_SPEECH_CHARACTERS
    if (match := _SENTENCE_END.search(text)) and match.end() <= limit:
        return match.end()
    if len(text) <= limit:
        return None
    space = text.rfind(" ", 0, limit)
    return space if space > 0 else limit


def _sentences(text: str) -> Iterator[str]:
    while text:
        end = _cut(text) or len(text)
        sentence, text = text[:end].strip(), text[end:]
        if _speakable(sentence):
            yield sentence


async def async_spoken_sentences(text: AsyncIterable[str]) -> AsyncIterator[str]:
    """Yield each sentence of a text stream as it should be said, when complete."""
    lines, pending = SpokenLines(), ""
    async for piece in text:
        pending += lines.feed(piece)
        while (end := _cut(pending)) is not None:
            sentence, pending = pending[:end], pending[end:]
            if _speakable(said := spoken_sentence(sentence.strip())):
                yield said
    for sentence in _sentences(pending + lines.end()):
        if _speakable(said := spoken_sentence(sentence)):
            yield said


def spoken_pieces(text: str) -> list[str]:
    """Return a whole text as said, in as few requests' worth as the limit allows."""
    pieces: list[str] = []
    for sentence in _sentences(spoken_text(text)):
        if pieces and len(pieces[-1]) + 1 + len(sentence) <= MAX_SPEECH_CHARACTERS:
            pieces[-1] = f"{pieces[-1]} {sentence}"
        else:
            pieces.append(sentence)
    return pieces
