"""JSON answers: the instruction asking for them, finding them, checking them."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.openai_compatible.structured.json_answer import (
    JSON_TRIES,
    StructureMismatch,
    parse_json_answer,
    schema_instructions,
    validate_result,
)
from custom_components.openai_compatible.structured.selector_schema import (
    structure_to_json_schema,
)
from tests.structures import build, single


def test_validation_problems() -> None:
    """Problems name the key and where it is, all of them."""
    structure = build(
        {
            "color": {"required": True, "selector": {"text": {}}},
            "count": {"selector": {"number": {}}},
            "where": {"selector": {"location": {}}},
        }
    )
    with pytest.raises(StructureMismatch) as err:
        validate_result(
            structure, {"count": "many", "where": {"latitude": 1}, "other": 1}
        )
    assert err.value.problem == (
        "expected float at 'count'; "
        "required key 'longitude' is missing at 'where'; "
        "key 'other' is not allowed; "
        "required key 'color' is missing"
    )
    with pytest.raises(StructureMismatch, match="^expected a mapping$"):
        validate_result(structure, ["red"])


def test_validation_of_a_value_a_selector_trips_over() -> None:
    """A validator failing with TypeError is a mismatch too."""
    structure = single({"choose": {"choices": {"a": {"selector": {"text": {}}}}}})
    with pytest.raises(StructureMismatch, match="^the answer does not fit: "):
        validate_result(structure, {"value": {"active_choice": ["a"]}})


def test_schema_instructions() -> None:
    """The fallback instruction carries the schema as compact JSON, in order."""
    schema = structure_to_json_schema(
        build(
            {
                "b": {
                    "description": "Température",
                    "required": True,
                    "selector": {"text": {}},
                },
                "a": {"selector": {"boolean": {}}},
            }
        )
    )
    assert schema_instructions(schema) == (
        "Answer with only a JSON object that matches this JSON schema: "
        '{"type":"object","properties":{"b":{"type":"string","description":"Température"},'
        '"a":{"type":"boolean"}},"required":["b"],"additionalProperties":false}'
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("  [1, 2]\n", [1, 2]),
        ('<think>\nThe user wants {a}.\n</think>\n\n{"a": 1}', {"a": 1}),
        ('The user wants a JSON.</think>{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": [1]}\n```\nDone.', {"a": [1]}),
        ('Here you go: ```json\n{"a": 1}\n```', {"a": 1}),
        ('```text\nnot json\n```\n```json\n{"a": 2}\n```', {"a": 2}),
        ('Sure! Here is the data: {"a": {"b": "}"}} Hope it helps.', {"a": {"b": "}"}}),
        ('Options [a] and {b} aside: {"a": 1}', {"a": 1}),
        ('<think>{"draft": 1}</think>Final: {"a": 1}', {"a": 1}),
        # A start that fails is skipped with what it read: the inner {"a": 1}
        # is part of the broken list, and the search goes on after it.
        ('[{"a": 1}, oops] and then {"b": 2}', {"b": 2}),
        ('Step [1: "x"] gave {"a": 1}', {"a": 1}),
    ],
)
def test_parse_json_answer(text: str, expected: Any) -> None:
    """The JSON value is found behind reasoning, fences and prose."""
    assert parse_json_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the answer is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
        (
            "I cannot do that.",
            "the answer is not valid JSON: Expecting value: line 1 column 1 (char 0)",
        ),
        (
            '{"a": 1',
            "the answer is not valid JSON: Expecting ',' delimiter: line 1 column 8 (char 7)",
        ),
        (
            '<think>{"a": 1}',
            "the answer is not valid JSON: Expecting value: line 1 column 1 (char 0)",
        ),
    ],
)
def test_parse_json_answer_garbage(text: str, problem: str) -> None:
    """No JSON value at all is a mismatch that says why."""
    with pytest.raises(StructureMismatch) as err:
        parse_json_answer(text)
    assert err.value.problem == problem


# Deeper than any thread's stack lets Python's JSON decoder go.
TOO_DEEP = 1_000_000


@pytest.mark.parametrize(
    "text",
    [
        "[" * TOO_DEEP,
        "[" * TOO_DEEP + "]" * TOO_DEEP,
        f"```json\n{'[' * TOO_DEEP}\n```",
        'Here: {"a": ' + "[" * TOO_DEEP,
    ],
    ids=["open", "balanced", "fenced", "in_prose"],
)
def test_parse_json_answer_too_deep(text: str) -> None:
    """JSON nested past what the decoder can follow is a mismatch, not a crash."""
    with pytest.raises(StructureMismatch) as err:
        parse_json_answer(text)
    assert err.value.problem == "the answer's JSON is nested too deep"


def test_parse_json_answer_tries_so_many_starts() -> None:
    """At most JSON_TRIES places in prose are tried, then the search ends."""
    assert JSON_TRIES == 1000
    found = "{" * (JSON_TRIES - 1) + '{"a": 1}'
    assert parse_json_answer(found) == {"a": 1}
    with pytest.raises(StructureMismatch, match="^the answer is not valid JSON: "):
        parse_json_answer("{" + found)


def test_parse_json_answer_tries_so_many_fences() -> None:
    """At most JSON_TRIES fenced blocks are tried, then the search ends."""
    fences = "```\nnot json\n```\n" * (JSON_TRIES - 1)
    last = "```\n42\n```"
    assert parse_json_answer(fences + last) == 42
    with pytest.raises(StructureMismatch, match="^the answer is not valid JSON: "):
        parse_json_answer("```\nnot json\n```\n" + fences + last)


def test_line_breaks_inside_strings_are_text() -> None:
    """A raw line break or tab inside a string is read, as models write them."""
    assert parse_json_answer('{"note": "two\nlines\tand a tab"}') == {
        "note": "two\nlines\tand a tab"
    }
    assert parse_json_answer('Here: {"note": "a\nb"} done') == {"note": "a\nb"}
