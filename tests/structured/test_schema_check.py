"""Answers checked against the JSON schema they were asked in."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.openai_compatible.structured.json_answer import (
    StructureMismatch,
    parse_json_answer,
)
from custom_components.openai_compatible.structured.schema_check import check_answer

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer", "minimum": 0, "maximum": 9},
        "flag": {"type": "boolean"},
        "mode": {"type": "integer", "enum": [1, 2]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "extra": {"type": "object", "additionalProperties": True},
        "free": {},
    },
    "required": ["name", "count"],
}


@pytest.mark.parametrize(
    "answer",
    [
        {"name": "a\tb\nc", "count": 3},
        {"name": "a", "count": 3.0, "mode": 2, "tags": ["x"], "note": None},
        {"name": "a", "count": 0, "note": "n", "extra": {"any": [1]}, "free": 1},
    ],
)
def test_fitting_answers_pass(answer: dict[str, Any]) -> None:
    """Tabs and line breaks are text; a whole float is a whole number."""
    check_answer(answer, SCHEMA)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ([], "the value must be an object"),
        ({"count": 1}, "required key 'name' is missing or null"),
        ({"name": "a", "count": 10}, "the number 10 is above 9 at 'count'"),
        ({"name": "a", "count": -1}, "the number -1 is below 0 at 'count'"),
        ({"name": "a", "count": 1.5}, "the value must be a whole number at 'count'"),
        (
            {"name": "a", "count": 10**400},
            "the value must be a whole number at 'count'",
        ),
        ({"name": "a", "count": 1, "mode": True}, "must be a whole number at 'mode'"),
        ({"name": "a", "count": 1, "mode": 3}, "must be one of [1, 2] at 'mode'"),
        ({"name": "a", "count": 1, "tags": ["\x1b[2J"]}, "control characters"),
        ({"name": "a", "count": 1, "note": 5}, "the value must be a text at 'note'"),
        ({"name": "a\x85", "count": 1}, "control characters at 'name'"),
    ],
)
def test_breaking_answers_are_named(answer: Any, problem: str) -> None:
    """Each problem is told with where it is."""
    with pytest.raises(StructureMismatch) as err:
        check_answer(answer, SCHEMA)
    assert problem in err.value.problem


def test_problems_are_capped() -> None:
    """A long list of problems is told by its first few."""
    schema = {"type": "array", "items": {"type": "integer"}}
    with pytest.raises(StructureMismatch) as err:
        check_answer(["x"] * 100, schema)
    assert err.value.problem.count(";") == 4


def test_enum_true_is_not_one() -> None:
    """An option list of numbers does not take true, nor one of texts a number."""
    with pytest.raises(StructureMismatch):
        check_answer(True, {"enum": [1]})
    check_answer(1.0, {"enum": [1]})
    check_answer("a", {"type": "string", "enum": ["a"]})


@pytest.mark.parametrize(
    "text",
    ['{"n": 1e999}', '{"n": -7.9E3667}', '{"n": NaN}', '{"n": -1' + "0" * 400 + "}"],
)
def test_numbers_no_float_holds_are_not_finite(text: str) -> None:
    """Huge exponents and integers read as infinity, and no check lets them by."""
    with pytest.raises(StructureMismatch) as err:
        check_answer(parse_json_answer(text), {"properties": {"n": {"type": "number"}}})
    assert err.value.problem == "the value must be a finite number at 'n'"
