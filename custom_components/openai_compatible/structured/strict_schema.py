"""OpenAI's strict form of a JSON schema."""

from __future__ import annotations

from typing import Any, Final

from ..net.shapes import JsonSchema

# OpenAI's strict mode: the keywords it supports, the formats it knows, its limits.
_STRICT_KEYWORDS: Final = frozenset(
    {
        "type",
        "description",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "properties",
        "items",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)
STRICT_FORMATS: Final = frozenset(
    {
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
    }
)
_STRICT_MAX_DEPTH: Final = 10
_STRICT_MAX_ENUM_VALUES: Final = 1000
_SCALAR_TYPES: Final = frozenset({"string", "number", "integer", "boolean"})
_TYPED_KEYWORDS: Final = frozenset({"type", "enum", "const", "anyOf", "$ref"})


class StrictUnsupported(Exception):
    """The structure has no OpenAI strict-mode form; use the plain schema."""


def strict_json_schema(schema: JsonSchema) -> JsonSchema:
    """Return the OpenAI strict-mode form of a plain schema.

    Dropped keywords only widen it (the answer is validated afterwards); raises
    StrictUnsupported where strict mode cannot say it at all.
    """
    if "object" not in _types(schema):
        raise StrictUnsupported("the root is not an object")
    return _Strict().convert(schema, "the answer", 1)


def _types(schema: JsonSchema) -> list[Any]:
    kind = schema.get("type", [])
    return kind if isinstance(kind, list) else [kind]


def _nullable(schema: JsonSchema) -> JsonSchema:
    kind = schema.get("type")
    if "null" in _types(schema):
        return schema
    if kind in _SCALAR_TYPES and not schema.keys() & {"enum", "const"}:
        return {**schema, "type": [kind, "null"]}
    inner = {key: value for key, value in schema.items() if key != "description"}
    result: JsonSchema = {"anyOf": [inner, {"type": "null"}]}
    if "description" in schema:
        result["description"] = schema["description"]
    return result


class _Strict:
    """Conversion of a plain schema to strict mode, counting against the limits."""

    def __init__(self) -> None:
        """Start with no enum values counted."""
        self._enum_values = 0

    def convert(self, schema: Any, where: str, depth: int) -> JsonSchema:
        """Return the strict form of one schema; ``depth`` counts enclosing objects."""
        if not isinstance(schema, dict):
            raise StrictUnsupported(f"{where} has no schema")
        kinds = _types(schema)
        if (
            "object" in kinds
            and schema.get("additionalProperties", "properties" not in schema)
            is not False
        ):
            raise StrictUnsupported(f"{where} is a free-form object")
        if "object" in kinds and depth > _STRICT_MAX_DEPTH:
            raise StrictUnsupported(f"{where} is nested too deep")
        result: JsonSchema = {}
        for keyword, value in schema.items():
            if keyword not in _STRICT_KEYWORDS or (
                keyword == "format" and value not in STRICT_FORMATS
            ):
                continue
            result[keyword] = self._convert_keyword(
                keyword, value, schema, where, depth
            )
        if not result.keys() & _TYPED_KEYWORDS:
            raise StrictUnsupported(f"{where} takes a value of any type")
        if "array" in kinds and "items" not in result:
            raise StrictUnsupported(f"{where} is a list of anything")
        if "object" in kinds:
            result.setdefault("properties", {})
            result["required"] = list(result["properties"])
            result["additionalProperties"] = False
        return result

    def _convert_keyword(
        self, keyword: str, value: Any, schema: JsonSchema, where: str, depth: int
    ) -> Any:
        if keyword == "properties":
            required = schema.get("required", [])
            properties: JsonSchema = {}
            for name, prop in value.items():
                converted = self.convert(prop, f"{where}.{name}", depth + 1)
                properties[name] = (
                    converted if name in required else _nullable(converted)
                )
            return properties
        if keyword == "items":
            return self.convert(value, f"{where}[]", depth)
        if keyword == "anyOf":
            return [self.convert(branch, where, depth) for branch in value]
        if keyword == "$defs":
            return {
                name: self.convert(definition, f"definition {name}", depth)
                for name, definition in value.items()
            }
        if keyword == "enum":
            self._enum_values += len(value)
            if self._enum_values > _STRICT_MAX_ENUM_VALUES:
                raise StrictUnsupported(
                    f"{where} brings the enum values past {_STRICT_MAX_ENUM_VALUES}"
                )
        return value
