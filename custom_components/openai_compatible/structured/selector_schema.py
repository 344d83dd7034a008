"""Task structures as JSON schema: HA's serializer tightened, and OpenAI's strict form."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from homeassistant.helpers import llm, selector
import probatio

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
_SCRIPT: Final = "Home Assistant {}, in YAML's JSON form"


def _free_form(what: str, multiple: bool = True) -> JsonSchema:
    item: JsonSchema = {"type": "object", "additionalProperties": True}
    if not multiple:
        return {**item, "description": _SCRIPT.format(what)}
    return {"type": "array", "items": item, "description": _SCRIPT.format(what)}


def _select(node: selector.Selector[Any]) -> JsonSchema:
    """Return Home Assistant's schema of the options, with what their labels say."""
    schema: JsonSchema = llm.selector_serializer(node)
    item = schema["items"] if node.config["multiple"] else schema
    told = [
        f"{value} ({option['label']})"
        if isinstance(option, Mapping) and option["label"] != value
        else value
        for value, option in zip(item["enum"], node.config["options"], strict=True)
    ]
    if node.config["custom_value"]:
        del item["enum"]
        item["description"] = f"Suggested values: {', '.join(told)}"
    elif told != item["enum"]:
        item["description"] = f"Values: {', '.join(told)}"
    return schema


_OWN: Final[dict[str, Callable[[selector.Selector[Any]], JsonSchema]]] = {
    "action": lambda node: _free_form("actions"),
    "condition": lambda node: _free_form("conditions"),
    "trigger": lambda node: _free_form("triggers"),
    "numeric_threshold": lambda node: _free_form("numeric threshold", False),
    "select": _select,
    "time": lambda node: {
        "type": "string",
        "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$",
    },
}


def structure_to_json_schema(
    structure: probatio.Schema,
    api_serializer: Callable[[Any], Any] | None = None,
) -> JsonSchema:
    """Return the plain JSON schema of a task structure, with the API's serializer."""

    def serialize(node: Any) -> Any:
        if isinstance(node, selector.ChooseSelector):
            # A value that one of the choices takes is a valid selection.
            choices = node.serialize()["selector"]["choose"]["choices"].values()
            return {
                "anyOf": [convert(selector.selector(c["selector"])) for c in choices]
            }
        if isinstance(node, selector.Selector) and node.selector_type in _OWN:
            return _OWN[node.selector_type](node)
        # A merged API serializer hands back the node itself when no API knows it.
        found = api_serializer(node) if api_serializer else None
        if isinstance(found, dict) and found is not node:
            return _standard(found)
        return _standard(llm.selector_serializer(node))

    def convert(node: Any) -> JsonSchema:
        return dict(
            probatio.to_openapi(
                node, custom_serializer=serialize, openapi_version="3.1.0"
            )
        )

    result = convert(structure)
    properties = result.get("properties", {})
    fields = structure.schema if isinstance(structure.schema, dict) else {}
    for key, value in fields.items():
        # to_openapi puts the key's description over the value's own: keep both.
        if not (isinstance(key, probatio.Marker) and key.description):
            continue
        if key.schema in properties and (own := convert(value).get("description")):
            properties[key.schema]["description"] = f"{key.description} ({own})"
    return result


def _standard(schema: Any) -> Any:
    """Return a schema without formats JSON schema lacks (grammar builders refuse them)."""
    if isinstance(schema, list):
        return [_standard(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _standard(value)
        for key, value in schema.items()
        if key != "format" or not isinstance(value, str) or value in STRICT_FORMATS
    }


class StrictUnsupported(Exception):
    """The structure has no OpenAI strict-mode form; use the plain schema."""


def json_types(schema: Any) -> list[Any]:
    """Return the types a schema names; none where it is no schema."""
    kind = schema.get("type", []) if isinstance(schema, dict) else []
    return kind if isinstance(kind, list) else [kind]


def _nullable(schema: JsonSchema) -> JsonSchema:
    kind = schema.get("type")
    if "null" in json_types(schema):
        return schema
    if kind in _SCALAR_TYPES and not schema.keys() & {"enum", "const"}:
        return {**schema, "type": [kind, "null"]}
    inner = {key: value for key, value in schema.items() if key != "description"}
    told = {"description": schema["description"]} if "description" in schema else {}
    return {"anyOf": [inner, {"type": "null"}], **told}


def strict_json_schema(schema: JsonSchema) -> JsonSchema:
    """Return the OpenAI strict-mode form of a plain schema.

    Dropped keywords only widen it (the answer is validated afterwards); raises
    StrictUnsupported where strict mode cannot say it at all.
    """
    if "object" not in json_types(schema):
        raise StrictUnsupported("the root is not an object")
    enum_values = 0

    def convert(schema: Any, where: str, depth: int, optional: bool) -> JsonSchema:
        # `depth` counts enclosing objects; an optional property may be null.
        nonlocal enum_values
        if not isinstance(schema, dict):
            raise StrictUnsupported(f"{where} has no schema")
        kinds = json_types(schema)
        closed = schema.get("additionalProperties", "properties" not in schema) is False
        if "object" in kinds and not closed:
            raise StrictUnsupported(f"{where} is a free-form object")
        if "object" in kinds and depth > _STRICT_MAX_DEPTH:
            raise StrictUnsupported(f"{where} is nested too deep")
        result: JsonSchema = {}
        for keyword, value in schema.items():
            if keyword not in _STRICT_KEYWORDS or (
                keyword == "format" and value not in STRICT_FORMATS
            ):
                continue
            result[keyword] = value
            if keyword == "properties":
                required = schema.get("required", [])
                result[keyword] = {
                    name: convert(
                        prop, f"{where}.{name}", depth + 1, name not in required
                    )
                    for name, prop in value.items()
                }
            elif keyword == "items":
                result[keyword] = convert(value, f"{where}[]", depth, False)
            elif keyword == "anyOf":
                result[keyword] = [convert(item, where, depth, False) for item in value]
            elif keyword == "$defs":
                result[keyword] = {
                    name: convert(definition, f"definition {name}", depth, False)
                    for name, definition in value.items()
                }
            elif keyword == "enum":
                enum_values += len(value)
                if enum_values > _STRICT_MAX_ENUM_VALUES:
                    raise StrictUnsupported(
                        f"{where} brings the enum values past {_STRICT_MAX_ENUM_VALUES}"
                    )
        if not result.keys() & _TYPED_KEYWORDS:
            raise StrictUnsupported(f"{where} takes a value of any type")
        if "array" in kinds and "items" not in result:
            raise StrictUnsupported(f"{where} is a list of anything")
        if "object" in kinds:
            result.setdefault("properties", {})
            result["required"] = list(result["properties"])
            result["additionalProperties"] = False
        return _nullable(result) if optional else result

    return convert(schema, "the answer", 1, False)
