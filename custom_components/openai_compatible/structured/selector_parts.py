"""The pieces every selector's schema is made of: types, descriptions, objects."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from copy import deepcopy
from typing import Any, Final

type Schema = dict[str, Any]


type Convert = Callable[[Any], Schema]


type Handler = Callable[[Mapping[str, Any], Convert], Schema]


FREE_FORM_LIST: Final[Schema] = {
    "type": "array",
    "items": {"type": "object", "additionalProperties": True},
}


def joined(description: str, own: str | None) -> str:
    """Return a user's description followed by the one a schema gives itself."""
    return f"{description} ({own})" if own else description


def multiple(config: Mapping[str, Any], item: Schema) -> Schema:
    """Return the item, or an array of it when the selector takes several values."""
    if not config.get("multiple"):
        return item
    result: Schema = {"type": "array", "items": item}
    if "description" in item:
        result["description"] = item.pop("description")
    return result


def plain_number(value: float) -> float:
    """Return a whole float as an int, so bounds read 5 rather than 5.0."""
    return int(value) if float(value).is_integer() else value


def closed_object(properties: Schema, required: list[str]) -> Schema:
    """Return a closed object schema."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def fixed(schema: Schema) -> Handler:
    """Return a handler for a selector whose schema does not depend on its options."""

    def handler(config: Mapping[str, Any], convert: Convert) -> Schema:
        return deepcopy(schema)

    return handler
