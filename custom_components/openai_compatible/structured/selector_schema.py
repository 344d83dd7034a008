"""Task structures as JSON schema: each Home Assistant selector's values.

Home Assistant gives a data task its structure as a probatio schema whose values
are selectors. This module turns it into the plain JSON schema a model is asked
to answer in, closed and described, for each selector Home Assistant offers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from copy import deepcopy
from enum import StrEnum
import re
from typing import Any, Final

from homeassistant.components.binary_sensor import BinarySensorDeviceClass
from homeassistant.components.button import ButtonDeviceClass
from homeassistant.components.cover import CoverDeviceClass
from homeassistant.components.event import EventDeviceClass
from homeassistant.components.humidifier import HumidifierDeviceClass
from homeassistant.components.infrared import InfraredDeviceClass
from homeassistant.components.media_player import MediaPlayerDeviceClass
from homeassistant.components.number import NumberDeviceClass
from homeassistant.components.sensor import (
    DEVICE_CLASS_UNITS,
    NON_NUMERIC_DEVICE_CLASSES,
    STATE_CLASS_UNITS,
    SensorDeviceClass,
    SensorStateClass,
)
from homeassistant.components.switch import SwitchDeviceClass
from homeassistant.components.update import UpdateDeviceClass
from homeassistant.components.valve import ValveDeviceClass
from homeassistant.const import Platform
from homeassistant.helpers import llm, selector
from homeassistant.helpers.selector import (
    AutomationBehavior,
    AutomationBehaviorSelectorMode,
)
import probatio

from ..wire.shapes import JsonSchema

type _Convert = Callable[[Any], JsonSchema]
type _Handler = Callable[[Mapping[str, Any], _Convert], JsonSchema]

_OPENAPI_VERSION: Final = "3.1.0"
_ENTITY_ID_PATTERN: Final = r"^[a-z0-9_]+\.[a-z0-9_]+$"
_TIME_PATTERN: Final = r"^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$"
_FREE_FORM_LIST: Final[JsonSchema] = {
    "type": "array",
    "items": {"type": "object", "additionalProperties": True},
}
# Our own tables of what selectors offer, read from the public enums of Home
# Assistant's platforms; tests check them against the selectors themselves.
_AUTOMATION_BEHAVIORS: Final[dict[str, tuple[AutomationBehavior, ...]]] = {
    AutomationBehaviorSelectorMode.TRIGGER: (
        AutomationBehavior.FIRST,
        AutomationBehavior.ALL,
        AutomationBehavior.EACH,
    ),
    AutomationBehaviorSelectorMode.CONDITION: (
        AutomationBehavior.ALL,
        AutomationBehavior.ANY,
    ),
}
_DEVICE_CLASSES: Final[dict[str, type[StrEnum]]] = {
    Platform.BINARY_SENSOR: BinarySensorDeviceClass,
    Platform.BUTTON: ButtonDeviceClass,
    Platform.COVER: CoverDeviceClass,
    Platform.EVENT: EventDeviceClass,
    Platform.HUMIDIFIER: HumidifierDeviceClass,
    Platform.INFRARED: InfraredDeviceClass,
    Platform.MEDIA_PLAYER: MediaPlayerDeviceClass,
    Platform.NUMBER: NumberDeviceClass,
    Platform.SENSOR: SensorDeviceClass,
    Platform.SWITCH: SwitchDeviceClass,
    Platform.UPDATE: UpdateDeviceClass,
    Platform.VALVE: ValveDeviceClass,
}


def structure_to_json_schema(
    structure: probatio.Schema,
    custom_serializer: Callable[[Any], Any] | None = None,
) -> JsonSchema:
    """Return the plain JSON schema of a task structure.

    Optional keys are not required, descriptions are kept (with what the
    selector adds, such as the meaning of select options or a unit), and objects
    with known fields take no other keys. ``custom_serializer`` is the LLM API's
    (``llm.APIInstance.custom_serializer``), asked about what we do not map.
    """
    serializer = _Serializer(custom_serializer)
    result = serializer.convert(structure)
    properties = result.get("properties", {})
    fields = structure.schema if isinstance(structure.schema, dict) else {}
    for key, value in fields.items():
        if (
            isinstance(key, probatio.Marker)
            and key.description
            and key.schema in properties
        ):
            # to_openapi put the key's description over the one of the value.
            own = serializer.convert(value).get("description")
            properties[key.schema]["description"] = _joined(key.description, own)
    return result


class _Serializer:
    """Serializer for to_openapi: our selector mapping, the API's, Home Assistant's."""

    def __init__(self, api_serializer: Callable[[Any], Any] | None) -> None:
        """Keep the LLM API's serializer, if there is one."""
        self._api_serializer = api_serializer

    def __call__(self, node: Any) -> Any:
        """Return the schema of one node, or UNSUPPORTED for probatio to render."""
        if isinstance(node, selector.Selector) and (
            handler := _HANDLERS.get(node.selector_type)
        ):
            return handler(node.config, self.convert_selector)
        if self._api_serializer is not None:
            # A merged API serializer hands back the node itself when no API knows it.
            result = self._api_serializer(node)
            if isinstance(result, dict) and result is not node:
                return result
        if isinstance(node, selector.Selector):
            return _multiple(
                node.config,
                {
                    "type": "string",
                    "description": f"Value for a Home Assistant {node.selector_type} selector",
                },
            )
        return llm.selector_serializer(node)

    def convert(self, node: Any) -> JsonSchema:
        """Return the schema of a probatio schema or validator."""
        return probatio.to_openapi(
            node, custom_serializer=self, openapi_version=_OPENAPI_VERSION
        )

    def convert_selector(self, value: Any) -> JsonSchema:
        """Return the schema of a nested selector, an object or its configuration."""
        if not isinstance(value, selector.Selector):
            value = selector.selector(value)
        return self.convert(value)


def _joined(description: str, own: str | None) -> str:
    """Return a user's description followed by the one a schema gives itself."""
    return f"{description} ({own})" if own else description


def _multiple(config: Mapping[str, Any], item: JsonSchema) -> JsonSchema:
    """Return the item, or an array of it when the selector takes several values."""
    if not config.get("multiple"):
        return item
    result: JsonSchema = {"type": "array", "items": item}
    if "description" in item:
        result["description"] = item.pop("description")
    return result


def _plain_number(value: float) -> float:
    """Return a whole float as an int, so bounds read 5 rather than 5.0."""
    return int(value) if float(value).is_integer() else value


def _object(properties: JsonSchema, required: list[str]) -> JsonSchema:
    """Return a closed object schema."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _fixed(schema: JsonSchema) -> _Handler:
    """Return a handler for a selector whose schema does not depend on its options."""

    def handler(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
        return deepcopy(schema)

    return handler


def _string(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return a string (an ID, a name), or a list of them."""
    return _multiple(config, {"type": "string"})


def _automation_behavior(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return the behaviors the selector's mode allows, if we know the mode."""
    if (behaviors := _AUTOMATION_BEHAVIORS.get(config["mode"])) is None:
        return {
            "type": "string",
            "description": f"a behavior of the {config['mode']} mode",
        }
    return {"type": "string", "enum": [str(behavior) for behavior in behaviors]}


def _choose(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return the selection form of a choose selector: the choice and its value."""
    choices: Mapping[str, Any] = config["choices"]
    properties: JsonSchema = {
        "active_choice": {"type": "string", "enum": list(choices)},
    }
    for name, choice in choices.items():
        properties[name] = convert(choice["selector"])
    result = _object(properties, ["active_choice"])
    result["description"] = "Set active_choice to one choice and fill in that one"
    return result


def _color_temp(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return a whole color temperature within the selector's range."""
    result: JsonSchema = {"type": "integer"}
    minimum = config.get("min", config.get("min_mireds"))
    maximum = config.get("max", config.get("max_mireds"))
    if minimum is not None:
        result["minimum"] = minimum
    if maximum is not None:
        result["maximum"] = maximum
    result["description"] = f"in {config['unit']}"
    return result


def _constant(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return the one value a constant selector takes."""
    value = config["value"]
    if isinstance(value, bool):
        return {"type": "boolean", "enum": [value]}
    if isinstance(value, int):
        return {"type": "integer", "enum": [value]}
    return {"type": "string", "enum": [value]}


def _country(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return an ISO 3166-1 alpha-2 code, one of the selector's if it lists any."""
    if countries := config.get("countries"):
        return {"type": "string", "enum": list(countries)}
    return {"type": "string", "pattern": "^[A-Z]{2}$"}


def _device_class(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return the device classes of the selector's domain, if we know the domain."""
    domain = config["domain"]
    if (classes := _DEVICE_CLASSES.get(domain)) is None:
        item: JsonSchema = {
            "type": "string",
            "description": f"a device class of {domain}",
        }
    else:
        item = {"type": "string", "enum": [str(value) for value in classes]}
    return _multiple(config, item)


def _duration(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return the parts of a duration that the selector shows, all required."""
    positive = selector.DurationSelectorMode.POSITIVE
    negative = config.get("mode", positive) != positive or config.get("allow_negative")
    bound = {} if negative else {"minimum": 0}
    properties: JsonSchema = {}
    if config.get("enable_day"):
        properties["days"] = {"type": "integer", **bound}
    properties["hours"] = {"type": "integer", **bound}
    properties["minutes"] = {"type": "integer", **bound}
    if config["enable_second"]:
        properties["seconds"] = {"type": "number", **bound}
    if config.get("enable_millisecond"):
        properties["milliseconds"] = {"type": "integer", **bound}
    return _object(properties, list(properties))


def _entity(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return an entity ID, limited to the selector's entities or domains."""
    item: JsonSchema = {"type": "string"}
    if include := config.get("include_entities"):
        exclude = config.get("exclude_entities", [])
        item["enum"] = [entity for entity in include if entity not in exclude]
    elif domains := _entity_domains(config):
        item["pattern"] = rf"^({'|'.join(map(re.escape, domains))})\.[a-z0-9_]+$"
    else:
        item["pattern"] = _ENTITY_ID_PATTERN
    return _multiple(config, item)


def _entity_domains(config: Mapping[str, Any]) -> list[str]:
    """Return the domains an entity selector limits itself to, if it does."""
    if domains := config.get("domain"):
        return list(domains)
    filters = config.get("filter", [])
    if filters and all(entity_filter.get("domain") for entity_filter in filters):
        return list(dict.fromkeys(domain for f in filters for domain in f["domain"]))
    return []


def _language(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return a language code, one of the selector's if it lists any."""
    if languages := config.get("languages"):
        return {"type": "string", "enum": list(languages)}
    return {"type": "string"}


def _location(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return a latitude and longitude, with a radius if the selector has one."""
    properties: JsonSchema = {
        "latitude": {"type": "number", "minimum": -90, "maximum": 90},
        "longitude": {"type": "number", "minimum": -180, "maximum": 180},
    }
    if config.get("radius"):
        properties["radius"] = {
            "type": "number",
            "minimum": 0,
            "description": "in meters",
        }
    return _object(properties, ["latitude", "longitude"])


def _media(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return a media item (the entity playing it when the selector needs one)."""
    properties: JsonSchema = {}
    if "accept" not in config:
        properties["entity_id"] = {"type": "string", "pattern": _ENTITY_ID_PATTERN}
    properties["media_content_id"] = {"type": "string"}
    properties["media_content_type"] = {"type": "string"}
    return _multiple(config, _object(properties, list(properties)))


def _number(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
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
    result: JsonSchema = {"type": "integer" if integer else "number"}
    if "min" in config:
        result["minimum"] = _plain_number(config["min"])
    if "max" in config:
        result["maximum"] = _plain_number(config["max"])
    if unit := config.get("unit_of_measurement"):
        result["description"] = f"in {unit}"
    return result


def _numeric_threshold(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
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

    def entry() -> JsonSchema:
        properties: JsonSchema = {
            "number": dict(number),
            "entity": {"type": "string", "pattern": _ENTITY_ID_PATTERN},
        }
        if units:
            properties["unit_of_measurement"] = {"type": "string", "enum": list(units)}
        result = _object(properties, [])
        result["description"] = (
            "A number with its unit, or an entity ID"
            if units
            else "A number or an entity ID"
        )
        return result

    result = _object(
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


def _object_selector(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return the selector's fields as an object, or any object if it has none."""
    if not (fields := config.get("fields")):
        return _multiple(config, {"type": "object", "additionalProperties": True})
    properties: JsonSchema = {}
    for name, field in fields.items():
        properties[name] = convert(field["selector"])
        if label := field.get("label"):
            properties[name]["description"] = _joined(
                label, properties[name].get("description")
            )
    required = [name for name, field in fields.items() if field.get("required")]
    return _multiple(config, _object(properties, required))


def _select(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
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
    item: JsonSchema = {"type": "string"}
    if config["custom_value"]:
        item["description"] = f"Suggested values: {', '.join(labelled)}"
    else:
        item["enum"] = values
        if labelled != values:
            item["description"] = f"Values: {', '.join(labelled)}"
    result = _multiple(config, item)
    if config["multiple"]:
        result["uniqueItems"] = True
    return result


def _state_class(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return the sensor state classes the selector allows."""
    allowed = config.get("state_classes")
    options = [
        str(option)
        for option in SensorStateClass
        if allowed is None or option in allowed
    ]
    return _multiple(config, {"type": "string", "enum": options})


def _target(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return lists of entity, device, area, floor and label IDs."""
    properties: JsonSchema = {
        "entity_id": {
            "type": "array",
            "items": {"type": "string", "pattern": _ENTITY_ID_PATTERN},
        }
    }
    for key in ("device_id", "area_id", "floor_id", "label_id"):
        properties[key] = {"type": "array", "items": {"type": "string"}}
    return _object(properties, [])


_TEXT_TYPES: Final[dict[str, JsonSchema]] = {
    selector.TextSelectorType.COLOR: {"pattern": "^#[0-9a-fA-F]{6}$"},
    selector.TextSelectorType.DATE: {"format": "date"},
    selector.TextSelectorType.EMAIL: {"format": "email"},
    selector.TextSelectorType.TIME: {"pattern": _TIME_PATTERN},
}


def _text(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return text, in the form its input type suggests, or a list of texts."""
    item: JsonSchema = {"type": "string", **_TEXT_TYPES.get(config.get("type", ""), {})}
    return _multiple(config, item)


def _unit_of_measurement(config: Mapping[str, Any], convert: _Convert) -> JsonSchema:
    """Return a unit, one of those the selector's device and state classes allow."""
    units: set[Any] | None = None
    if device_classes := config.get("device_classes"):
        units = _units(DEVICE_CLASS_UNITS, device_classes)
    if (state_classes := config.get("state_classes")) and (
        state_units := _units(STATE_CLASS_UNITS, state_classes)
    ) is not None:
        units = state_units if units is None else units & state_units
    if units is None:
        return {"type": "string"}
    return {
        "type": "string",
        "enum": sorted(str(unit) for unit in units if unit),
    }


def _units(
    units_by_class: Mapping[Any, Collection[Any]], classes: list[str]
) -> set[Any] | None:
    """Return the units any of the sensor classes allows; None when one allows any.

    A non-numeric device class has no unit.
    """
    units: set[Any] = set()
    for sensor_class in classes:
        if sensor_class in units_by_class:
            units.update(units_by_class[sensor_class])
        elif sensor_class in NON_NUMERIC_DEVICE_CLASSES:
            units.add(None)
        else:
            return None
    return units


_HANDLERS: Final[dict[str, _Handler]] = {
    "action": _fixed(
        {**_FREE_FORM_LIST, "description": "Home Assistant actions, in script syntax"}
    ),
    "addon": _string,
    "app": _string,
    "area": _string,
    "assist_pipeline": _string,
    "attribute": _string,
    "automation_behavior": _automation_behavior,
    "backup_location": _fixed({"type": "string", "pattern": r"^(?:\/backup|\w+)$"}),
    "boolean": _fixed({"type": "boolean"}),
    "choose": _choose,
    "color_rgb": _fixed(
        {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": 255},
            "minItems": 3,
            "maxItems": 3,
            "description": "red, green and blue",
        }
    ),
    "color_temp": _color_temp,
    "condition": _fixed(
        {
            **_FREE_FORM_LIST,
            "description": "Home Assistant conditions, in script syntax",
        }
    ),
    "config_entry": _string,
    "constant": _constant,
    "conversation_agent": _string,
    "country": _country,
    "date": _fixed({"type": "string", "format": "date"}),
    "datetime": _fixed({"type": "string", "format": "date-time"}),
    "device": _string,
    "device_class": _device_class,
    "duration": _duration,
    "entity": _entity,
    "file": _fixed({"type": "string", "format": "uuid"}),
    "floor": _string,
    "icon": _fixed({"type": "string", "pattern": "^[a-z0-9-]+:[a-z0-9-]+$"}),
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
    "state_class": _state_class,
    "statistic": _string,
    "target": _target,
    "template": _fixed(
        {"type": "string", "description": "a Home Assistant template (Jinja2)"}
    ),
    "text": _text,
    "theme": _string,
    "time": _fixed({"type": "string", "pattern": _TIME_PATTERN}),
    "trigger": _fixed(
        {
            **_FREE_FORM_LIST,
            "description": "Home Assistant triggers, in automation syntax",
        }
    ),
    "unit_of_measurement": _unit_of_measurement,
}
