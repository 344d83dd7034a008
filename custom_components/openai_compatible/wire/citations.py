"""Inline web-search citations (` ([example.com](https://...))`) kept out of speech.

Across stream deltas, only text that may still become one is held back.
"""

from __future__ import annotations

import re
from typing import Final

# The longest title and address of a citation; past them, text is not one.
_MAX_TITLE: Final = 300
_MAX_URL: Final = 2000
_CITATION: Final = re.compile(
    rf"\(\[[^\]\n]{{1,{_MAX_TITLE}}}\]\(https?://[^\s()]{{1,{_MAX_URL}}}\)\)"
)
# Every start of a citation, from its opening parenthesis on.
_CITATION_START: Final = re.compile(
    rf"\((?:\[(?:[^\]\n]{{0,{_MAX_TITLE}}}(?:\](?:\((?:h(?:t(?:t(?:p(?:s?(?::"
    rf"(?:/(?:/[^\s()]{{0,{_MAX_URL}}}(?:\)\)?)?)?)?)?)?)?)?)?)?)?)?)?)?"
)


class CitationFilter:
    """Remove inline citations from text that arrives in pieces."""

    def __init__(self) -> None:
        """Start with nothing held back."""
        self._held = ""

    def feed(self, text: str) -> str:
        """Return the text that is certain to be spoken, citations removed."""
        buffer = self._held + text
        self._held = ""
        spoken: list[str] = []
        position = 0
        while (found := buffer.find("(", position)) >= 0:
            # The space before a citation goes with it.
            start = found - 1 if buffer[found - 1 : found] == " " else found
            spoken.append(buffer[position:start])
            if match := _CITATION.match(buffer, found):
                position = match.end()
            elif _CITATION_START.fullmatch(buffer, found):
                self._held = buffer[start:]
                return "".join(spoken)
            else:
                spoken.append(buffer[start : found + 1])
                position = found + 1
        rest = buffer[position:]
        if rest.endswith(" "):
            # It may be the space before a citation.
            rest, self._held = rest[:-1], " "
        spoken.append(rest)
        return "".join(spoken)

    def flush(self) -> str:
        """Return what is held back when the text is over."""
        held, self._held = self._held, ""
        return held
