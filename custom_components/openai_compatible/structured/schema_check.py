"""Answers held to the JSON schema they were asked in, as servers may not hold them.

Not every server holds the model to the schema: llama.cpp ignores a number's
bounds, a number too large for a float reads as infinity (which Home
Assistant then writes as null), and a small model may put control characters
in text. Home Assistant's selectors coerce what they are given (any text is a
true boolean, infinity a number), so they do not catch these. Each answer is
checked here against the plain schema: every required key present and not
null, numbers finite, integers whole, booleans booleans, options among the
schema's, bounds kept, and no control characters in text.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any, Final

from probatio.error import render_path

from ..net.shapes import JsonObject, JsonSchema
from .json_answer import StructureMismatch

# The most problems named in one answer's description.
MAX_PROBLEMS: Final = 5
# C0 and C1 control characters, and DEL; tabs and line breaks are text.
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_FLOAT_MAX: Final = sys.float_info.max
_PYTHON_TYPES: Final[dict[str, type]] = {
    "string": str,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}
_NAMES: Final = {
    "string": "a text",
    "number": "a finite number",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def check_answer(data: Any, schema: JsonSchema) -> None:
    """Raise StructureMismatch naming what in the answer breaks the schema."""
    problems: list[str] = []
    _check(data, schema, [], problems)
    if problems:
        raise StructureMismatch("; ".join(problems[:MAX_PROBLEMS]))


def _check(value: Any, schema: Any, path: list[Any], problems: list[str]) -> None:
    """Add the problems of one value, and of what it holds, to the list."""
    if not isinstance(schema, dict):
        return
    if isinstance(branches := schema.get("anyOf"), list):
        _check_any(value, branches, path, problems)
        return
    kinds = _types(schema)
    if kinds and not _is(value, *kinds):
        names = " or ".join(_NAMES.get(kind, str(kind)) for kind in kinds)
        problems.append(_at(f"the value must be {names}", path))
        return
    if isinstance(options := schema.get("enum"), list) and not _among(value, options):
        problems.append(_at(f"the value must be one of {options!r}", path))
    elif _is(value, "number"):
        _check_bounds(value, schema, path, problems)
    elif isinstance(value, str) and _CONTROL.search(value):
        problems.append(_at("the text holds control characters", path))
    elif isinstance(value, dict):
        _check_object(value, schema, path, problems)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check(item, schema.get("items"), [*path, index], problems)


def _check_any(
    value: Any, branches: list[Any], path: list[Any], problems: list[str]
) -> None:
    """Add the first branch's problems when the value fits no branch."""
    found: list[list[str]] = []
    for branch in branches:
        own: list[str] = []
        _check(value, branch, path, own)
        if not own:
            return
        found.append(own)
    problems.extend(found[0] if found else [])


def _check_object(
    value: JsonObject, schema: JsonSchema, path: list[Any], problems: list[str]
) -> None:
    """Add the problems of an object's keys: required ones missing or null."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    problems.extend(
        _at(f"required key {key!r} is missing or null", path)
        for key in schema.get("required", ())
        if value.get(key) is None and not _is(None, *_types(properties.get(key, {})))
    )
    for key, item in value.items():
        if key in properties and item is not None:
            _check(item, properties[key], [*path, key], problems)


def _check_bounds(
    value: float, schema: JsonSchema, path: list[Any], problems: list[str]
) -> None:
    """Add a problem when a number is outside the schema's bounds."""
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float) and value < low:
        problems.append(_at(f"the number {value:g} is below {low:g}", path))
    elif isinstance(high, int | float) and value > high:
        problems.append(_at(f"the number {value:g} is above {high:g}", path))


def _types(schema: Any) -> list[str]:
    """Return the JSON types a schema names; none when it names none."""
    kind = schema.get("type", []) if isinstance(schema, dict) else []
    return [str(k) for k in kind] if isinstance(kind, list) else [str(kind)]


def _is(value: Any, *kinds: str) -> bool:
    """Tell whether a JSON value is of one of the JSON types."""
    return any(_is_kind(value, kind) for kind in kinds)


def _is_kind(value: Any, kind: str) -> bool:
    """Tell whether a JSON value is of a JSON type; any type we do not know is."""
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if isinstance(value, int):
            return -_FLOAT_MAX <= value <= _FLOAT_MAX
        return math.isfinite(value) and (kind == "number" or value.is_integer())
    python = _PYTHON_TYPES.get(kind, object)
    return isinstance(value, python)


def _among(value: Any, options: list[Any]) -> bool:
    """Tell whether a value is one of the options, true never standing for 1."""
    return any(value == o and type(value) is type(o) for o in options) or (
        _is(value, "number") and any(_is(o, "number") and o == value for o in options)
    )


def _at(message: str, path: list[Any]) -> str:
    """Return the message with the path it is about, if any."""
    return f"{message} at '{render_path(path)}'" if path else message
