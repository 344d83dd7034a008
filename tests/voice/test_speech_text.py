"""Speech text: what a voice says of an answer written in markdown."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible.voice.speech_text import (
    SpokenLines,
    spoken_sentence,
    spoken_text,
)

ANSWER = """## Today's weather ☀️

It is **21 °C** and _sunny_ in the `garden`; see [the forecast](https://example.com/f).

1. Close the *kitchen* window.
2. Turn off the ~~hall~~ porch light 💡.
- Water the plants 🌱
> Quote of the day
---
| Room | Temperature |
|:-----|------------:|
| Kitchen | 21 °C |

```yaml
light: on
```
Done! 👍🏽
"""

SAID = [
    "Today's weather",
    "It is 21 °C and sunny in the garden; see the forecast.",
    "Close the kitchen window.",
    "Turn off the porch light.",
    "Water the plants",
    "Quote of the day",
    "Room, Temperature",
    "Kitchen, 21 °C",
    "Done!",
]


def _streamed(text: str, size: int) -> str:
    """Return what the line stage lets through of a text fed `size` at a time."""
    lines = SpokenLines()
    said = [lines.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return "".join(said) + lines.end()


def _sentences(text: str) -> list[str]:
    return [said for line in text.splitlines() if (said := spoken_sentence(line))]


def test_a_markdown_answer_is_said_without_its_marks() -> None:
    """Headings, lists, quotes, rules, tables, code, emphasis and emoji go."""
    assert spoken_text(ANSWER).splitlines() == [
        line if line.endswith((".", "!")) else f"{line}." for line in SAID
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_pieces_of_any_size_are_said_as_the_whole(size: int) -> None:
    """Where the stream is cut changes nothing: no word or mark is split."""
    assert _sentences(_streamed(ANSWER, size)) == SAID


def test_prose_passes_as_it_comes() -> None:
    """Only a line's first characters wait, and only while they could be a mark."""
    lines = SpokenLines()

    assert lines.feed("The light") == "The light"
    assert lines.feed(" is on.\n") == " is on.\n"
    assert lines.feed("1") == ""
    assert lines.feed("5 ") == ""
    assert lines.feed("degrees") == "15 degrees"
    assert lines.feed("\n- ") == "\n"
    assert lines.end() == ""


@pytest.mark.parametrize(
    ("sentence", "said"),
    [
        ("snake_case and __init__ stay words", "snake_case and init stay words"),
        ("-5 °C outside", "-5 °C outside"),
        ("3.5 hours © 2026 → later", "3.5 hours © 2026 → later"),
        ("![a cat](cat.png) sleeps", "a cat sleeps"),
        ("🎉🎉", ""),
        ("Light on ✅ , door shut 🚪.", "Light on, door shut."),
    ],
)
def test_what_a_sentence_keeps(sentence: str, said: str) -> None:
    """Numbers, signs and words with underscores are said; marks are not."""
    assert spoken_sentence(sentence) == said


def test_an_unclosed_code_block_says_nothing_more() -> None:
    """Code after an opening fence is never read out, even at the end."""
    lines = SpokenLines()

    assert lines.feed("Run this:\n```\nrm -rf /\n") == "Run this:\n"
    assert lines.feed("echo") == ""
    assert lines.end() == ""


def test_a_long_line_of_marks_is_not_held_for_ever() -> None:
    """A start of only mark characters is let go once longer than any mark."""
    lines = SpokenLines()

    said = lines.feed("-" * 300)

    assert said == "-" * 300
