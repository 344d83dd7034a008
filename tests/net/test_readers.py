"""Typed readers: what a server answers, read into typed values or a named error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from custom_components.openai_compatible.errors import ServerError
from custom_components.openai_compatible.net.readers import (
    MAX_TOKENS,
    MIN_WINDOW,
    CallFragment,
    ChoiceDelta,
    error_message,
    read_call_fragment,
    read_choices,
    read_count,
    read_index,
    read_list,
    read_number,
    read_object,
    read_object_or_empty,
    read_optional_string,
    read_string,
    read_usage,
    read_window,
    string_or_none,
)


@pytest.mark.parametrize(
    ("reader", "value", "expected"),
    [
        (read_object, {"a": 1}, {"a": 1}),
        (read_object_or_empty, None, {}),
        (read_object_or_empty, {"a": 1}, {"a": 1}),
        (read_list, None, []),
        (read_list, [1, "a"], [1, "a"]),
        (read_string, None, ""),
        (read_string, "text", "text"),
        (read_optional_string, None, None),
        (read_optional_string, "", ""),
        (read_index, 3, 3),
    ],
)
def test_parts_of_the_right_shape_are_read(
    reader: Callable[[object, str], Any], value: object, expected: object
) -> None:
    """A part in the API's form is given back; null is an empty part where allowed."""
    assert reader(value, "part") == expected


@pytest.mark.parametrize(
    ("reader", "value"),
    [
        (read_object, None),
        (read_object, [1]),
        (read_object_or_empty, "a"),
        (read_list, {"a": 1}),
        (read_list, "abc"),
        (read_string, 5),
        (read_optional_string, ["a"]),
        (read_index, "0"),
        (read_index, True),
        (read_index, 1.0),
    ],
)
def test_parts_of_the_wrong_shape_are_named(
    reader: Callable[[object, str], Any], value: object
) -> None:
    """A part of the wrong shape is an unreadable answer, naming the part."""
    with pytest.raises(ServerError) as err:
        reader(value, "choices.delta")
    assert err.value.translation_key == "answer_malformed"
    assert err.value.translation_placeholders == {"part": "choices.delta"}


def test_lenient_strings_and_error_messages() -> None:
    """Where a wrong shape is ignored, it reads as nothing; errors say their message."""
    assert string_or_none("a") == "a"
    assert string_or_none(3) is None
    assert error_message({"message": "model crashed"}) == "model crashed"
    assert error_message("overloaded") == "overloaded"
    assert error_message({"code": 5}) == "None"
    assert error_message("<p>Down &amp; out</p>") == "Down & out"


@pytest.mark.parametrize(
    ("value", "count", "window", "number"),
    [
        (4096, 4096, 4096, 4096.0),
        (10**400, MAX_TOKENS, MAX_TOKENS, None),
        (1, 1, MIN_WINDOW, 1.0),
        (0, 0, None, 0.0),
        (-5, None, None, -5.0),
        (0.5, None, None, 0.5),
        (float("inf"), None, None, None),
        (True, None, None, None),
        ("4096", None, None, None),
    ],
)
def test_numbers_are_read_within_bounds(
    value: object, count: int | None, window: int | None, number: float | None
) -> None:
    """Counts up to MAX_TOKENS, windows from MIN_WINDOW; floats that hold them."""
    assert read_count(value) == count
    assert read_window(value) == window
    assert read_number(value) == number


def test_usage_keeps_its_counts_only() -> None:
    """Counts clamped, details read where given, anything else left out."""
    usage = read_usage(
        {
            "prompt_tokens": 10**400,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 3, "audio": [1]},
            "cost": {"usd": 1},
        }
    )
    assert usage == {
        "prompt_tokens": MAX_TOKENS,
        "completion_tokens": 7,
        "total_tokens": None,
        "prompt_tokens_details": {"cached_tokens": 3},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def test_the_first_choice_of_a_chunk() -> None:
    """Only index 0 is read; text falls back to a refusal, reasoning to either name."""
    chunk: dict[str, object] = {
        "choices": [
            {"index": 1, "delta": "never read"},
            {
                "index": 0,
                "delta": {
                    "content": None,
                    "refusal": "I can't.",
                    "reasoning": "Thinking.",
                    "tool_calls": [{"index": 0}],
                },
                "finish_reason": "stop",
            },
            {"delta": {"content": "Hi", "reasoning_content": "Plan."}},
        ]
    }

    assert read_choices(chunk) == [
        ChoiceDelta("I can't.", "Thinking.", [{"index": 0}], "stop"),
        ChoiceDelta("Hi", "Plan.", (), None),
    ]


@pytest.mark.parametrize(
    "chunk",
    [
        {},
        {"choices": None},
        {"choices": []},
        {"choices": [{"index": 0, "delta": None, "finish_reason": ""}]},
    ],
)
def test_chunks_that_add_nothing(chunk: dict[str, object]) -> None:
    """No choices, or a first choice with nothing in it, adds nothing."""
    assert all(
        delta == ChoiceDelta(None, None, (), None) for delta in read_choices(chunk)
    )


@pytest.mark.parametrize(
    ("chunk", "part"),
    [
        ({"choices": {"index": 0}}, "choices"),
        ({"choices": [{"index": 1}, "a"]}, "choices"),
        ({"choices": [{"delta": ["a"]}]}, "choices.delta"),
        ({"choices": [{"delta": {"tool_calls": "a"}}]}, "tool_calls"),
        ({"choices": [{"delta": {}, "finish_reason": 1}]}, "choices.finish_reason"),
    ],
)
def test_chunks_of_the_wrong_shape(chunk: dict[str, object], part: str) -> None:
    """A chunk whose choices are not in the API's form names the part."""
    with pytest.raises(ServerError) as err:
        read_choices(chunk)
    assert err.value.translation_placeholders == {"part": part}


def test_call_fragments() -> None:
    """A fragment reads its index, id, name and arguments; empty strings are none."""
    assert read_call_fragment(
        {"index": 2, "id": "c1", "function": {"name": "Ping", "arguments": "{"}}
    ) == CallFragment(2, "c1", "Ping", "{")
    assert read_call_fragment(
        {"index": "2", "id": "", "function": {"arguments": {"a": 1}}}
    ) == CallFragment(None, None, None, {"a": 1})
    assert read_call_fragment({"function": None}) == CallFragment(
        None, None, None, None
    )


def test_call_arguments_of_the_wrong_shape() -> None:
    """Arguments that are neither JSON text nor an object are named."""
    with pytest.raises(ServerError) as err:
        read_call_fragment({"function": {"name": "Ping", "arguments": [1]}})
    assert err.value.translation_placeholders == {
        "part": "tool_calls.function.arguments"
    }
