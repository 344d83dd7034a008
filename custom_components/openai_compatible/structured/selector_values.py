"""Each Home Assistant selector's values as JSON schema.

One handler per selector type (`HANDLERS`), from the selector's configuration
to the schema of the values it takes, described for a model; the tables of
what selectors offer come from the public enums of Home Assistant's platforms.
"""

from __future__ import annotations

from collections.abc import Mapping
import re
from typing import Any, Final

from homeassistant.helpers import selector

from .selector_classes import (
    automation_behavior,
    device_class,
    state_class,
    unit_of_measurement,
)
from .selector_parts import (
    FREE_FORM_LIST,
    Convert,
    Handler,
    Schema,
    closed_object,
    fixed,
    joined,
    multiple,
    plain_number,
)

_ENTITY_ID_PATTERN: Final = r"^[a-z0-9_]+\.[a-z0-9_]+$"


_TIME_PATTERN: Final = r"^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$"


def _string(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a string (an ID, a name), or a list of them."""
    return multiple(config, {"type": "string"})


def _choose(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return the selection form of a choose selector: the choice and its value."""
    choices: Mapping[str, Any] = config["choices"]
    properties: Schema = {
        "active_choice": {"type": "string", "enum": list(choices)},
    }
    for name, choice in choices.items():
        properties[name] = convert(choice["selector"])
    result = closed_object(properties, ["active_choice"])
    result["description"] = "Set active_choice to one choice and fill in that one"
    return result


def _color_temp(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a whole color temperature within the selector's range."""
    result: Schema = {"type": "integer"}
    minimum = config.get("min", config.get("min_mireds"))
    maximum = config.get("max", config.get("max_mireds"))
    if minimum is not None:
        result["minimum"] = minimum
    if maximum is not None:
        result["maximum"] = maximum
    result["description"] = f"in {config['unit']}"
    return result


def _constant(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return the one value a constant selector takes."""
    value = config["value"]
    if isinstance(value, bool):
        return {"type": "boolean", "enum": [value]}
    if isinstance(value, int):
        return {"type": "integer", "enum": [value]}
    return {"type": "string", "enum": [value]}


def _country(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return an ISO 3166-1 alpha-2 code, one of the selector's if it lists any."""
    if countries := config.get("countries"):
        return {"type": "string", "enum": list(countries)}
    return {"type": "string", "pattern": "^[A-Z]{2}$"}


def _duration(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return the parts of a duration that the selector shows, all required."""
    positive = selector.DurationSelectorMode.POSITIVE
    negative = config.get("mode", positive) != positive or config.get("allow_negative")
    bound = {} if negative else {"minimum": 0}
    properties: Schema = {}
    if config.get("enable_day"):
        properties["days"] = {"type": "integer", **bound}
    properties["hours"] = {"type": "integer", **bound}
    properties["minutes"] = {"type": "integer", **bound}
    if config["enable_second"]:
        properties["seconds"] = {"type": "number", **bound}
    if config.get("enable_millisecond"):
        properties["milliseconds"] = {"type": "integer", **bound}
    return closed_object(properties, list(properties))


def _entity(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return an entity ID, limited to the selector's entities or domains."""
    item: Schema = {"type": "string"}
    if include := config.get("include_entities"):
        exclude = config.get("exclude_entities", [])
        item["enum"] = [entity for entity in include if entity not in exclude]
    elif domains := _entity_domains(config):
        item["pattern"] = rf"^({'|'.join(map(re.escape, domains))})\.[a-z0-9_]+$"
    else:
        item["pattern"] = _ENTITY_ID_PATTERN
    return multiple(config, item)


def _entity_domains(config: Mapping[str, Any]) -> list[str]:
    """Return the domains an entity selector limits itself to, if it does."""
    if domains := config.get("domain"):
        return list(domains)
    filters = config.get("filter", [])
    if filters and all(entity_filter.get("domain") for entity_filter in filters):
        return list(dict.fromkeys(domain for f in filters for domain in f["domain"]))
    return []


def _language(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a language code, one of the selector's if it lists any."""
    if languages := config.get("languages"):
        return {"type": "string", "enum": list(languages)}
    return {"type": "string"}


def _location(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a latitude and longitude, with a radius if the selector has one."""
    properties: Schema = {
        "latitude": {"type": "number", "minimum": -90, "maximum": 90},
        "longitude": {"type": "number", "minimum": -180, "maximum": 180},
    }
    if config.get("radius"):
        properties["radius"] = {
            "type": "number",
            "minimum": 0,
            "description": "in meters",
        }
    return closed_object(properties, ["latitude", "longitude"])


def _media(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a media item (the entity playing it when the selector needs one)."""
    properties: Schema = {}
    if "accept" not in config:
        properties["entity_id"] = {"type": "string", "pattern": _ENTITY_ID_PATTERN}
    properties["media_content_id"] = {"type": "string"}
    properties["media_content_type"] = {"type": "string"}
    return multiple(config, closed_object(properties, list(properties)))


def _number(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a number within the selector's range.

    It is an integer where the selector's input gives whole numbers only: steps
    that are whole from a whole minimum, on a slider or longer than the default 1.
    """
    step = config["step"]
    integer = (
        step != "any"
        and float(step).is_integer()
        and float(config.get("min", 0)).is_integer()
        and (config.get("mode") == selector.NumberSelectorMode.SLIDER or step != 1)
    )
    result: Schema = {"type": "integer" if integer else "number"}
    if "min" in config:
        result["minimum"] = plain_number(config["min"])
    if "max" in config:
        result["maximum"] = plain_number(config["max"])
    if unit := config.get("unit_of_measurement"):
        result["description"] = f"in {unit}"
    return result


def _numeric_threshold(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a threshold: its type and one value, or a lower and an upper one."""
    types = [
        selector.NumericThresholdType.ABOVE,
        selector.NumericThresholdType.BELOW,
        selector.NumericThresholdType.BETWEEN,
        selector.NumericThresholdType.OUTSIDE,
    ]
    if config["mode"] == selector.NumericThresholdMode.CHANGED:
        types.append(selector.NumericThresholdType.ANY)
    number = _number({"step": "any", **config.get("number", {})}, convert)
    units = [unit for unit in config.get("unit_of_measurement", []) if unit]

    def entry() -> Schema:
        properties: Schema = {
            "number": dict(number),
            "entity": {"type": "string", "pattern": _ENTITY_ID_PATTERN},
        }
        if units:
            properties["unit_of_measurement"] = {"type": "string", "enum": list(units)}
        result = closed_object(properties, [])
        result["description"] = (
            "A number with its unit, or an entity ID"
            if units
            else "A number or an entity ID"
        )
        return result

    result = closed_object(
        {
            "type": {"type": "string", "enum": [str(kind) for kind in types]},
            "value": entry(),
            "value_min": entry(),
            "value_max": entry(),
        },
        ["type"],
    )
    result["description"] = (
        "value for above and below, value_min and value_max for between and outside"
    )
    return result


def _object_selector(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return the selector's fields as an object, or any object if it has none."""
    if not (fields := config.get("fields")):
        return multiple(config, {"type": "object", "additionalProperties": True})
    properties: Schema = {}
    for name, field in fields.items():
        properties[name] = convert(field["selector"])
        if label := field.get("label"):
            properties[name]["description"] = joined(
                label, properties[name].get("description")
            )
    required = [name for name, field in fields.items() if field.get("required")]
    return multiple(config, closed_object(properties, required))


def _select(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return one of the options (or several), with their labels described."""
    options = config["options"]
    values = [
        option["value"] if isinstance(option, Mapping) else option for option in options
    ]
    labelled = [
        f"{option['value']} ({option['label']})"
        if isinstance(option, Mapping) and option["label"] != option["value"]
        else value
        for option, value in zip(options, values, strict=True)
    ]
    item: Schema = {"type": "string"}
    if config["custom_value"]:
        item["description"] = f"Suggested values: {', '.join(labelled)}"
    else:
        item["enum"] = values
        if labelled != values:
            item["description"] = f"Values: {', '.join(labelled)}"
    result = multiple(config, item)
    if config["multiple"]:
        result["uniqueItems"] = True
    return result


def _target(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return lists of entity, device, area, floor and label IDs."""
    properties: Schema = {
        "entity_id": {
            "type": "array",
            "items": {"type": "string", "pattern": _ENTITY_ID_PATTERN},
        }
    }
    for key in ("device_id", "area_id", "floor_id", "label_id"):
        properties[key] = {"type": "array", "items": {"type": "string"}}
    return closed_object(properties, [])


_TEXT_TYPES: Final[dict[str, Schema]] = {
    selector.TextSelectorType.COLOR: {"pattern": "^#[0-9a-fA-F]{6}$"},
    selector.TextSelectorType.DATE: {"format": "date"},
    selector.TextSelectorType.EMAIL: {"format": "email"},
    selector.TextSelectorType.TIME: {"pattern": _TIME_PATTERN},
}


def _text(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return text, in the form its input type suggests, or a list of texts."""
    item: Schema = {"type": "string", **_TEXT_TYPES.get(config.get("type", ""), {})}
    return multiple(config, item)


HANDLERS: Final[dict[str, Handler]] = {
    "action": fixed(
        {**FREE_FORM_LIST, "description": "Home Assistant actions, in script syntax"}
    ),
    "addon": _string,
    "app": _string,
    "area": _string,
    "assist_pipeline": _string,
    "attribute": _string,
    "automation_behavior": automation_behavior,
    "backup_location": fixed({"type": "string", "pattern": r"^(?:\/backup|\w+)$"}),
    "boolean": fixed({"type": "boolean"}),
    "choose": _choose,
    "color_rgb": fixed(
        {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": 255},
            "minItems": 3,
            "maxItems": 3,
            "description": "red, green and blue",
        }
    ),
    "color_temp": _color_temp,
    "condition": fixed(
        {
            **FREE_FORM_LIST,
            "description": "Home Assistant conditions, in script syntax",
        }
    ),
    "config_entry": _string,
    "constant": _constant,
    "conversation_agent": _string,
    "country": _country,
    "date": fixed({"type": "string", "format": "date"}),
    "datetime": fixed({"type": "string", "format": "date-time"}),
    "device": _string,
    "device_class": device_class,
    "duration": _duration,
    "entity": _entity,
    "file": fixed({"type": "string", "format": "uuid"}),
    "floor": _string,
    "icon": fixed({"type": "string", "pattern": "^[a-z0-9-]+:[a-z0-9-]+$"}),
    "label": _string,
    "language": _language,
    "location": _location,
    "media": _media,
    "number": _number,
    "numeric_threshold": _numeric_threshold,
    "object": _object_selector,
    "qr_code": _string,
    "select": _select,
    "serial_port": _string,
    "state": _string,
    "state_class": state_class,
    "statistic": _string,
    "target": _target,
    "template": fixed(
        {"type": "string", "description": "a Home Assistant template (Jinja2)"}
    ),
    "text": _text,
    "theme": _string,
    "time": fixed({"type": "string", "pattern": _TIME_PATTERN}),
    "trigger": fixed(
        {
            **FREE_FORM_LIST,
            "description": "Home Assistant triggers, in automation syntax",
        }
    ),
    "unit_of_measurement": unit_of_measurement,
}
