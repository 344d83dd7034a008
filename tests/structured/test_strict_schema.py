"""OpenAI's strict form of plain schemas."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.openai_compatible.structured.selector_schema import (
    structure_to_json_schema,
)
from custom_components.openai_compatible.structured.strict_schema import (
    StrictUnsupported,
    strict_json_schema,
)
from tests.structures import build


def test_strict_drops_what_strict_mode_rejects() -> None:
    """Keywords and formats outside OpenAI's supported subset are dropped."""
    plain = {
        "type": "object",
        "title": "Answer",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 9, "default": "x"},
            "mail": {"type": "string", "format": "email", "examples": ["a@b.c"]},
            "entity": {"type": "string", "format": "entity_id"},
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "uniqueItems": True,
                "minItems": 1,
            },
            "kind": {"type": "string", "enum": ["a", "b"]},
            "either": {
                "anyOf": [{"type": "string"}, {"type": "integer"}],
                "description": "E",
            },
            "maybe": {"type": ["string", "null"]},
            "node": {"$ref": "#/$defs/node"},
        },
        "required": ["name", "mail"],
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/node"}},
                "additionalProperties": False,
            }
        },
    }
    assert strict_json_schema(plain) == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "mail": {"type": "string", "format": "email"},
            "entity": {"type": ["string", "null"]},
            "tags": {
                "anyOf": [
                    {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    {"type": "null"},
                ]
            },
            "kind": {
                "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]
            },
            "either": {
                "anyOf": [
                    {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    {"type": "null"},
                ],
                "description": "E",
            },
            "maybe": {"type": ["string", "null"]},
            "node": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]},
        },
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}
                },
                "required": ["next"],
                "additionalProperties": False,
            }
        },
        "required": [
            "name",
            "mail",
            "entity",
            "tags",
            "kind",
            "either",
            "maybe",
            "node",
        ],
        "additionalProperties": False,
    }
    assert (
        plain["properties"]["name"]["minLength"] == 1
    )  # the plain schema is untouched


@pytest.mark.parametrize(
    ("plain", "problem"),
    [
        ({"type": "array", "items": {"type": "string"}}, "the root is not an object"),
        (
            {"type": "object", "properties": {"x": {"type": "object"}}},
            "the answer.x is a free-form object",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "x": {"type": "object", "additionalProperties": {"type": "string"}}
                },
            },
            "the answer.x is a free-form object",
        ),
        (
            {"type": "object", "properties": {"x": {}}},
            "the answer.x takes a value of any type",
        ),
        (
            {"type": "object", "properties": {"x": {"allOf": [{"type": "string"}]}}},
            "the answer.x takes a value of any type",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "array"}}},
            "the answer.x is a list of anything",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "array", "items": True}}},
            "the answer.x[] has no schema",
        ),
    ],
)
def test_strict_unsupported(plain: dict[str, Any], problem: str) -> None:
    """What strict mode cannot describe is refused, naming where it is."""
    with pytest.raises(StrictUnsupported) as err:
        strict_json_schema(plain)
    assert str(err.value) == problem


def _nested(levels: int) -> dict[str, Any]:
    """Return object selector fields nested `levels` deep."""
    fields: dict[str, Any] = {"leaf": {"selector": {"text": {}}}}
    for _ in range(levels):
        fields = {"inner": {"selector": {"object": {"fields": fields}}}}
    return fields


def test_strict_limits() -> None:
    """OpenAI's limits: ten levels of objects, a thousand enum values."""
    strict_json_schema(structure_to_json_schema(build(_nested(9))))
    with pytest.raises(StrictUnsupported, match="is nested too deep"):
        strict_json_schema(structure_to_json_schema(build(_nested(10))))

    options = [f"option_{index}" for index in range(600)]
    fields = {
        "first": {"selector": {"select": {"options": options}}},
        "second": {"selector": {"select": {"options": options}}},
    }
    with pytest.raises(
        StrictUnsupported, match="the answer.second brings the enum values past 1000"
    ):
        strict_json_schema(structure_to_json_schema(build(fields)))
