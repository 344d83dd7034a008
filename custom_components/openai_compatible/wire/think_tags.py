"""`<think>` blocks told apart from spoken text, across stream chunks."""

from __future__ import annotations

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


class ThinkTagSplitter:
    """Separate `<think>` blocks from spoken text; only a cut tag is held back."""

    def __init__(self) -> None:
        """Start outside a think block."""
        self._held = ""
        self._thinking = False
        self._after_close = False

    def feed(self, text: str) -> tuple[str, str]:
        """Return the (thinking, spoken) text that is certain so far."""
        if self._held or self._after_close or "<" in text:
            return self._split(self._held + text)
        return (text, "") if self._thinking else ("", text)

    def flush(self) -> tuple[str, str]:
        """Return what is left at the end of the stream."""
        return self._split(self._held, end_of_stream=True)

    def _split(self, buffer: str, *, end_of_stream: bool = False) -> tuple[str, str]:
        """Split text at its tags, holding back a tag cut at its end."""
        thinking: list[str] = []
        spoken: list[str] = []
        position = 0
        while True:
            tag = THINK_CLOSE if self._thinking else THINK_OPEN
            found = buffer.find(tag, position)
            if found < 0:
                break
            self._emit(thinking, spoken, buffer[position:found])
            position = found + len(tag)
            self._after_close = self._thinking
            self._thinking = not self._thinking
        end = len(buffer)
        if not end_of_stream:
            end = max(position, end - _partial_suffix(buffer, tag))
        self._emit(thinking, spoken, buffer[position:end])
        self._held = buffer[end:]
        return "".join(thinking), "".join(spoken)

    def _emit(self, thinking: list[str], spoken: list[str], text: str) -> None:
        """Add a piece; spoken text right after a think block loses its indent."""
        if self._thinking:
            thinking.append(text)
            return
        if self._after_close:
            text = text.lstrip()
            self._after_close = not text
        spoken.append(text)


def _partial_suffix(text: str, tag: str) -> int:
    """Return the length of the longest end of text that starts the tag."""
    start = text.find(tag[0], max(0, len(text) - len(tag) + 1))
    while start >= 0:
        if tag.startswith(text[start:]):
            return len(text) - start
        start = text.find(tag[0], start + 1)
    return 0
