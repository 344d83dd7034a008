"""A tool result cut to fit the window, what the request names first.

A listing (Home Assistant's live context is a YAML list, one device per
entry) keeps the entries that name most words of the user's request, then
the others, each in its place; any other result keeps its start. The same
result, words and room always give the same cut, so the prompt's start stays
the same for the server's cache.
"""

from __future__ import annotations

import re

# Where an entry of a YAML list starts, in the result or in its JSON.
_ENTRY = re.compile(r"(?=(?:\\n|\n)- )")
_WORD = re.compile(r"\w{3,}")


def request_words(text: object) -> frozenset[str]:
    """Return the words of a request that may name what it is about."""
    return (
        frozenset(_WORD.findall(text.lower())) if isinstance(text, str) else frozenset()
    )


def cut_result(content: str, keep: int, words: frozenset[str], narrower: str) -> str:
    """Return the result in `keep` characters and a note; `narrower`: how to ask for the rest."""
    note = f"[Cut to fit the context window: {keep:,} of {len(content):,} characters shown.{narrower}]"
    room = max(0, keep - len(note) - 1)
    head, *entries = _ENTRY.split(content)
    if (
        entries
        and len(head) < room
        and (chosen := _chosen(entries, words, room - len(head)))
    ):
        return f"{head}{''.join(chosen)}\n{note}"
    text = content[:room]
    # End at a line break where one is near, not in the middle of a line.
    line_end = max(text.rfind("\n"), text.rfind("\\n"))
    if line_end > len(text) * 3 // 4:
        text = text[:line_end]
    return f"{text}\n{note}"


def _chosen(entries: list[str], words: frozenset[str], room: int) -> list[str]:
    """Return the entries that fit the room, those naming most words first, in order."""
    named = [words.intersection(_WORD.findall(entry.lower())) for entry in entries]
    # A word most entries hold tells none apart ("room", a domain asked for).
    common = {word for word in words if 2 * sum(word in n for n in named) > len(named)}
    ranked = sorted(range(len(entries)), key=lambda index: -len(named[index] - common))
    kept: set[int] = set()
    for index in ranked:
        if len(entries[index]) <= room:
            kept.add(index)
            room -= len(entries[index])
    return [entries[index] for index in sorted(kept)]
