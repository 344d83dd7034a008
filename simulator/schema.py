"""JSON Schema handling: OpenAI's strict-mode rules and deterministic filling."""

from __future__ import annotations

import json
import math
from typing import Any

_MAX_DEPTH = 12
_STRING_FORMATS = {
    "date": "2026-11-29",
    "time": "12:00:00",
    "date-time": "2026-11-29T12:00:00+00:00",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "duration": "PT5M",
    "ipv4": "192.168.1.10",
}
_KEY_HINTS = (
    ("entity_id", "light.kitchen"),
    ("date", "2026-11-29"),
    ("time", "12:00:00"),
    ("name", "Kitchen light"),
    ("color", "red"),
    ("colour", "red"),
    ("description", "A short description."),
    ("summary", "A short summary."),
    ("title", "A title"),
    ("url", "https://example.com/"),
    ("email", "user@example.com"),
    ("language", "en"),
)


def strict_schema_problem(schema: dict[str, Any]) -> str | None:
    """Return OpenAI's complaint about a schema used in strict mode, or None."""
    if schema.get("type") != "object":
        return (
            "schema must be a JSON Schema of 'type: \"object\"', "
            f"got 'type: \"{schema.get('type')}\"'."
        )
    return _strict_problem(schema, ())


def _strict_problem(node: Any, context: tuple[str, ...]) -> str | None:
    """Walk a schema depth first and return the first strict-mode violation."""
    if not isinstance(node, dict):
        return None
    types = node.get("type")
    if (
        types == "object"
        or (isinstance(types, list) and "object" in types)
        or ("properties" in node)
    ):
        if node.get("additionalProperties") is not False:
            return (
                f"In context={context!r}, 'additionalProperties' is required to be "
                "supplied and to be false."
            )
        properties = node.get("properties") or {}
        required = node.get("required") or []
        absent = [key for key in properties if key not in required]
        if absent:
            return (
                f"In context={context!r}, 'required' is required to be supplied and "
                "to be an array including every key in properties. "
                f"Missing '{absent[0]}'."
            )
        for key, sub in properties.items():
            if problem := _strict_problem(sub, (*context, "properties", key)):
                return problem
    if problem := _strict_problem(node.get("items"), (*context, "items")):
        return problem
    for keyword in ("anyOf", "allOf", "oneOf"):
        for index, sub in enumerate(node.get(keyword) or ()):
            if problem := _strict_problem(sub, (*context, keyword, str(index))):
                return problem
    for keyword in ("$defs", "definitions"):
        for name, sub in (node.get(keyword) or {}).items():
            if problem := _strict_problem(sub, (*context, keyword, name)):
                return problem
    return None


def fill_schema(schema: Any) -> Any:
    """Return a value that satisfies the schema, the same one every time."""
    return _fill(schema, schema, "", 0)


def _resolve(node: dict[str, Any], root: Any) -> Any:
    """Follow a local `$ref` such as `#/$defs/Thing`."""
    ref = node["$ref"]
    target: Any = root
    for part in str(ref).removeprefix("#").strip("/").split("/"):
        if not part:
            continue
        if not isinstance(target, dict) or part not in target:
            return {}
        target = target[part]
    return target


def _fill(node: Any, root: Any, key: str, depth: int) -> Any:
    """Fill one schema node; `key` is the property name it belongs to."""
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return None
    if "$ref" in node:
        return _fill(_resolve(node, root), root, key, depth + 1)
    if "const" in node:
        return node["const"]
    if enum := node.get("enum"):
        return next((value for value in enum if value is not None), enum[0])
    for keyword in ("anyOf", "oneOf", "allOf"):
        if variants := node.get(keyword):
            chosen = next(
                (
                    v
                    for v in variants
                    if not (isinstance(v, dict) and v.get("type") == "null")
                ),
                variants[0],
            )
            return _fill(chosen, root, key, depth + 1)
    types = node.get("type")
    if isinstance(types, list):
        types = next((t for t in types if t != "null"), "null")
    if types is None:
        types = (
            "object"
            if "properties" in node
            else "array"
            if "items" in node
            else "string"
        )
    if types == "object":
        return {
            name: _fill(sub, root, name, depth + 1)
            for name, sub in (node.get("properties") or {}).items()
        }
    if types == "array":
        count = max(1, int(node.get("minItems", 1)))
        return [
            _fill(node.get("items", {}), root, key, depth + 1) for _ in range(count)
        ]
    if types == "integer":
        return math.ceil(_number(node, 1))
    if types == "number":
        return _number(node, 1.5)
    if types == "boolean":
        return True
    if types == "null":
        return None
    return _string(node, key)


def _number(node: dict[str, Any], preferred: float) -> float:
    """Return the preferred number moved inside the schema's bounds."""
    bounds = {
        name: float(value)
        for name in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
        if isinstance(value := node.get(name), int | float)
        and not isinstance(value, bool)
    }
    value = preferred
    if "minimum" in bounds:
        value = max(value, bounds["minimum"])
    if "exclusiveMinimum" in bounds and value <= bounds["exclusiveMinimum"]:
        value = bounds["exclusiveMinimum"] + 1
    if "maximum" in bounds:
        value = min(value, bounds["maximum"])
    if "exclusiveMaximum" in bounds and value >= bounds["exclusiveMaximum"]:
        value = bounds["exclusiveMaximum"] - 1
    return value


def _string(node: dict[str, Any], key: str) -> str:
    """Return a plausible string for the format or the property name."""
    if (fmt := node.get("format")) in _STRING_FORMATS:
        value = _STRING_FORMATS[fmt]
    else:
        lowered = key.lower()
        value = next((hint for word, hint in _KEY_HINTS if word in lowered), "example")
    if (length := node.get("minLength")) and len(value) < length:
        value = value.ljust(length, "x")
    if (length := node.get("maxLength")) is not None:
        value = value[:length]
    return value


def schema_in_text(text: str) -> dict[str, Any] | None:
    """Return the first JSON object in the text that looks like a JSON Schema."""
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position >= 0:
        try:
            value, _ = decoder.raw_decode(text, position)
        except ValueError:
            value = None
        if isinstance(value, dict) and (
            "properties" in value or value.get("type") == "object"
        ):
            return value
        position = text.find("{", position + 1)
    return None
