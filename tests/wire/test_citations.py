"""Inline web-search citations taken out of spoken text, across stream deltas."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible.wire.citations import CitationFilter

CITED = (
    "The tide is high at noon ([tides.example](https://tides.example/brest?utm=1)). "
    "It turns (slowly) at six ([b.example](http://b.example/x))"
)
SPOKEN = "The tide is high at noon. It turns (slowly) at six"


def filtered(text: str, size: int) -> str:
    """Return the text fed in pieces of `size` characters, filtered."""
    citations = CitationFilter()
    pieces = [
        citations.feed(text[start : start + size])
        for start in range(0, len(text), size)
    ]
    return "".join(pieces) + citations.flush()


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 1000])
def test_citations_removed_however_the_text_is_cut(size: int) -> None:
    """The same spoken text comes out for any split of the stream."""
    assert filtered(CITED, size) == SPOKEN


def test_text_is_held_only_while_it_can_be_a_citation() -> None:
    """A parenthesis that cannot start a citation goes on at once."""
    citations = CitationFilter()

    assert citations.feed("Hello (there") == "Hello (there"
    assert citations.feed(" and ([ti") == " and"
    assert citations.feed("tle](ftp://x)") == " ([title](ftp://x)"
    assert citations.feed(" end ") == " end"
    assert citations.flush() == " "


def test_unfinished_citation_is_spoken_at_the_end() -> None:
    """A citation cut by the end of the answer is not lost."""
    citations = CitationFilter()

    assert citations.feed("See ([a](https://a.example") == "See"
    assert citations.flush() == " ([a](https://a.example"


def test_overlong_title_is_no_citation() -> None:
    """Past the longest title, the text is given on."""
    text = "([" + "x" * 400 + "](https://a.example))"

    assert filtered(text, 7) == text
