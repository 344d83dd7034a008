"""JSON answers: the instruction asking for them, finding them, checking them once."""

from __future__ import annotations

from typing import Any

import probatio
import pytest

from custom_components.openai_compatible.structured.rungs import (
    JSON_TRIES,
    RUNG_INSTRUCTIONS,
    StructureMismatch,
    checked_answer,
    parse_json_answer,
    structured_request,
)
from custom_components.openai_compatible.structured.selector_schema import (
    structure_to_json_schema,
)
from tests.structures import build, single


def _checked(fields: dict[str, Any], answer: Any) -> Any:
    """Return an answer checked against the structure of service-call fields."""
    structure = build(fields)
    return checked_answer(answer, structure, structure_to_json_schema(structure))


def test_validation_problems() -> None:
    """The selectors' problems name the key and where it is, all of them."""
    fields = {
        "color": {"required": True, "selector": {"text": {}}},
        "count": {"selector": {"number": {"max": 9}}},
        "where": {"selector": {"location": {}}},
    }
    with pytest.raises(StructureMismatch) as err:
        _checked(fields, {"count": 10, "where": {"latitude": 1}, "other": 1})
    assert str(err.value) == (
        "Value 10.0 is too large at 'count'; "
        "required key 'longitude' is missing at 'where'; "
        "key 'other' is not allowed; "
        "required key 'color' is missing"
    )
    with pytest.raises(StructureMismatch, match="^the value must be an object$"):
        _checked(fields, ["red"])


def test_validation_of_a_value_a_selector_trips_over() -> None:
    """A validator failing with TypeError is a mismatch too."""
    structure = single({"choose": {"choices": {"a": {"selector": {"text": {}}}}}})
    with pytest.raises(StructureMismatch, match="^the answer does not fit: "):
        checked_answer({"value": {"active_choice": ["a"]}}, structure, {})


def test_nulls_of_optional_keys_go() -> None:
    """Strict mode's nulls for left-out keys go, nested too; the input stays."""
    fields = {
        "name": {"required": True, "selector": {"text": {}}},
        "note": {"selector": {"text": {}}},
        "items": {
            "selector": {
                "object": {
                    "multiple": True,
                    "fields": {
                        "a": {"required": True, "selector": {"text": {}}},
                        "b": {"selector": {"text": {}}},
                    },
                }
            }
        },
    }
    answer = {"name": "n", "note": None, "items": [{"a": "x", "b": None}]}
    assert _checked(fields, answer) == {"name": "n", "items": [{"a": "x"}]}
    assert answer["note"] is None
    with pytest.raises(StructureMismatch) as err:
        _checked(fields, {"name": None, "items": [{"a": None}]})
    assert str(err.value) == (
        "the value must be a text at 'name'; the value must be a text at 'items[0].a'"
    )


ANIMAL = {
    "name": {"required": True, "selector": {"text": {}}},
    "legs": {"selector": {"number": {}}},
    "tame": {"selector": {"boolean": {}}},
    "when": {
        "selector": {
            "choose": {
                "choices": {
                    "at": {"selector": {"number": {}}},
                    "on": {"selector": {"boolean": {}}},
                }
            }
        }
    },
}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"name": "a\x1b[2J"}, "the text holds control characters at 'name'"),
        ({"name": "a\x85"}, "the text holds control characters at 'name'"),
        ({"name": "a", "tame": "false"}, "the value must be true or false at 'tame'"),
        ({"name": "a", "legs": True}, "the value must be a finite number at 'legs'"),
        ({"name": "a", "legs": "4"}, "the value must be a finite number at 'legs'"),
        ({"name": "a", "when": "x"}, "the value must be a finite number at 'when'"),
        (
            {"name": 1, "legs": [], "tame": 0, "when": {}},
            (
                "the value must be a text at 'name'; "
                "the value must be a finite number at 'legs'; "
                "the value must be true or false at 'tame'; "
                "the value must be a finite number at 'when'"
            ),
        ),
    ],
)
def test_what_the_selectors_would_coerce_is_refused(answer: Any, problem: str) -> None:
    """Text for a boolean is true to Home Assistant: the answer's types count."""
    with pytest.raises(StructureMismatch) as err:
        _checked(ANIMAL, answer)
    assert str(err.value) == problem


def test_fitting_answers_pass() -> None:
    """Tabs and line breaks are text; either choice of a choose is taken."""
    answer = {"name": "a\tb\nc", "legs": 4, "tame": False, "when": True}
    assert _checked(ANIMAL, answer) == {**answer, "legs": 4.0}
    assert _checked(ANIMAL, {"name": "a", "when": 2}) == {"name": "a", "when": 2.0}


def test_problems_are_capped() -> None:
    """A long list of problems is told by its first few."""
    structure = probatio.Schema({"n": [int]})
    schema = {"properties": {"n": {"type": "array", "items": {"type": "integer"}}}}
    with pytest.raises(StructureMismatch) as err:
        checked_answer({"n": [1.5] * 100}, structure, schema)
    assert str(err.value).count(";") == 4
    assert str(err.value).startswith("the value must be a whole number at 'n[0]'")


@pytest.mark.parametrize(
    "text",
    ['{"n": 1e999}', '{"n": -7.9E3667}', '{"n": NaN}', '{"n": -1' + "0" * 400 + "}"],
)
def test_numbers_no_float_holds_are_not_finite(text: str) -> None:
    """Huge exponents and integers read as infinity, and the check refuses them."""
    with pytest.raises(StructureMismatch) as err:
        _checked({"n": {"selector": {"number": {}}}}, parse_json_answer(text))
    assert str(err.value) == "the value must be a finite number at 'n'"


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
    assert structured_request(RUNG_INSTRUCTIONS, "x", schema, None).instructions == (
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
    assert str(err.value) == problem


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
    assert str(err.value) == "the answer's JSON is nested too deep"


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
