"""Task structures as JSON schema: Home Assistant's serializer, tightened."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from homeassistant.helpers import llm, selector
import probatio

from ..net.shapes import JsonSchema
from .strict_schema import STRICT_FORMATS

_SCRIPT: Final = "Home Assistant {}, in YAML's JSON form"


def _free_form(what: str, multiple: bool = True) -> JsonSchema:
    """Return a list of objects (or one object) the model writes as it sees fit."""
    item: JsonSchema = {"type": "object", "additionalProperties": True}
    if not multiple:
        return {**item, "description": _SCRIPT.format(what)}
    return {"type": "array", "items": item, "description": _SCRIPT.format(what)}


def _select(config: Mapping[str, Any]) -> JsonSchema:
    """Return one of the options (or several), with what their labels say."""
    values, told = [], []
    for option in config["options"]:
        value = option["value"] if isinstance(option, Mapping) else option
        label = option.get("label", value) if isinstance(option, Mapping) else value
        values.append(value)
        told.append(value if label == value else f"{value} ({label})")
    item: JsonSchema = {"type": "string"}
    if config["custom_value"]:
        item["description"] = f"Suggested values: {', '.join(told)}"
    else:
        item["enum"] = values
        if told != values:
            item["description"] = f"Values: {', '.join(told)}"
    if not config["multiple"]:
        return item
    return {"type": "array", "items": item, "uniqueItems": True}


_OWN: Final[dict[str, Callable[[Mapping[str, Any]], JsonSchema]]] = {
    "action": lambda config: _free_form("actions"),
    "condition": lambda config: _free_form("conditions"),
    "trigger": lambda config: _free_form("triggers"),
    "numeric_threshold": lambda config: _free_form("numeric threshold", False),
    "select": _select,
    "time": lambda config: {
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
            choices = node.config["choices"].values()
            return {"anyOf": [convert(_selector(c["selector"])) for c in choices]}
        if isinstance(node, selector.Selector) and node.selector_type in _OWN:
            return _OWN[node.selector_type](node.config)
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
        if (
            isinstance(key, probatio.Marker)
            and key.description
            and key.schema in properties
        ):
            if own := convert(value).get("description"):
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


def _selector(config: Any) -> selector.Selector[Any]:
    return (
        config if isinstance(config, selector.Selector) else selector.selector(config)
    )
