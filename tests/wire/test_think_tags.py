"""`<think>` blocks told apart from spoken text."""

from __future__ import annotations

from custom_components.openai_compatible.wire.think_tags import ThinkTagSplitter


def split(*pieces: str) -> tuple[str, str]:
    """Feed the pieces to a splitter; return all (thinking, spoken) text."""
    splitter = ThinkTagSplitter()
    results = [splitter.feed(piece) for piece in pieces]
    results.append(splitter.flush())
    return (
        "".join(thinking for thinking, _ in results),
        "".join(spoken for _, spoken in results),
    )


def test_think_splitter_handles_every_split_point() -> None:
    """However a think block is cut into chunks, the split is the same."""
    text = "<think>plan</think>  Answer <b>bold</b>"
    for cut in range(1, len(text)):
        assert split(text[:cut], text[cut:]) == ("plan", "Answer <b>bold</b>"), cut


def test_only_a_cut_tag_is_held_back() -> None:
    """Text is given at once, except the start of a tag at the chunk's end."""
    splitter = ThinkTagSplitter()
    assert splitter.feed("Hi <thi") == ("", "Hi ")
    assert splitter.feed("nk>plan</th") == ("plan", "")
    assert splitter.feed("ink>\n") == ("", "")
    assert splitter.feed(" done") == ("", "done")
    assert splitter.flush() == ("", "")


def test_unclosed_think_tag_stays_thinking() -> None:
    """A stream that ends inside a think block never speaks it."""
    assert split("<think>still pondering <") == ("still pondering <", "")


def test_many_blocks_in_one_chunk() -> None:
    """Many blocks in one chunk come out joined, in one piece each."""
    assert split("<think>a</think>b" * 1000) == ("a" * 1000, "b" * 1000)
