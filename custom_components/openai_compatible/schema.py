"""Structured output: AI task structures as JSON schema, and answers checked.

Home Assistant gives a data task its structure as a probatio schema whose values
are selectors. This module turns it into the JSON schema of a ``response_format``
(plain, or in OpenAI's strict form), or into instructions for servers that take
neither, and it turns the model's answer back into data that fits the structure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from copy import deepcopy
import json
import re
from typing import Any, Final

from homeassistant.const import Platform
from homeassistant.helpers import llm, selector
import probatio
from probatio.error import render_path

type _Schema = dict[str, Any]
type _Convert = Callable[[Any], _Schema]
type _Handler = Callable[[Mapping[str, Any], _Convert], _Schema]

_OPENAPI_VERSION: Final = "3.1.0"
_ENTITY_ID_PATTERN: Final = r"^[a-z0-9_]+\.[a-z0-9_]+$"
_TIME_PATTERN: Final = r"^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$"
_FREE_FORM_LIST: Final[_Schema] = {
    "type": "array",
    "items": {"type": "object", "additionalProperties": True},
}

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
_STRICT_FORMATS: Final = frozenset(
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

_INSTRUCTIONS: Final = "Answer with only a JSON object that matches this JSON schema: "
_JSON_START: Final = re.compile(r"[{\[]")
_FENCED: Final = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


class StructureMismatch(Exception):
    """The model's answer does not fit the task's structure."""

    def __init__(self, problem: str) -> None:
        """Keep the short description of what is wrong."""
        super().__init__(problem)
        self.problem = problem


class StrictUnsupported(Exception):
    """The structure has no OpenAI strict-mode form; use the plain schema."""


def structure_to_json_schema(
    structure: probatio.Schema,
    custom_serializer: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
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


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Return the OpenAI strict-mode form of a plain schema.

    Every property becomes required and the optional ones nullable, every object
    closed, and keywords or formats that strict mode rejects are dropped (the
    answer is validated afterwards, so dropping one only widens). Raises
    StrictUnsupported where strict mode cannot say it at all: a free-form object,
    a value of any type, a root that is not an object, or a schema past
    OpenAI's limits of nesting or enum values.
    """
    if "object" not in _types(schema):
        raise StrictUnsupported("the root is not an object")
    return _Strict().convert(schema, "the answer", 1)


def drop_optional_nulls(data: Any, schema: dict[str, Any]) -> Any:
    """Remove the null values of optional keys, walking the plain schema.

    A strict-mode answer gives null for each optional key it leaves out; without
    them the data matches the user's structure again. The input is not changed.
    """
    if isinstance(data, dict) and "properties" in schema:
        properties: dict[str, Any] = schema["properties"]
        required = schema.get("required", [])
        return {
            key: drop_optional_nulls(value, properties.get(key, {}))
            for key, value in data.items()
            if value is not None or key in required or key not in properties
        }
    if isinstance(data, list) and isinstance(items := schema.get("items"), dict):
        return [drop_optional_nulls(item, items) for item in data]
    return data


def validate_result(structure: probatio.Schema, data: Any) -> Any:
    """Validate an answer against the task's structure and return the result.

    Raises StructureMismatch naming each problem and where it is.
    """
    try:
        return structure(data)
    except probatio.Invalid as err:
        errors = err.errors if isinstance(err, probatio.MultipleInvalid) else [err]
        raise StructureMismatch("; ".join(map(_problem, errors))) from err
    except TypeError as err:
        # A selector's validator tripped over a value of a type it did not expect.
        raise StructureMismatch(f"the answer does not fit: {err}") from err


def schema_instructions(schema: dict[str, Any]) -> str:
    """Return the instruction that asks for JSON matching the schema."""
    return _INSTRUCTIONS + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def parse_json_answer(text: str) -> Any:
    """Return the JSON value in a model's answer.

    Reasoning is dropped: all up to the last ``</think>``, and all after a
    ``<think>`` left open. Then the answer is read
    whole, else from the first fenced block that parses, else from the first
    ``{`` or ``[`` where a JSON value starts, so prose around it does not matter.
    """
    answer = text.rsplit("</think>", 1)[-1].split("<think>", 1)[0]
    try:
        return json.loads(answer)
    except json.JSONDecodeError as err:
        problem = err
    for block in _FENCED.findall(answer):
        try:
            return json.loads(block)
        except json.JSONDecodeError:
            continue
    decoder = json.JSONDecoder()
    for start in _JSON_START.finditer(answer):
        try:
            return decoder.raw_decode(answer, start.start())[0]
        except json.JSONDecodeError:
            continue
    raise StructureMismatch(f"the answer is not valid JSON: {problem}")


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

    def convert(self, node: Any) -> _Schema:
        """Return the schema of a probatio schema or validator."""
        return probatio.to_openapi(
            node, custom_serializer=self, openapi_version=_OPENAPI_VERSION
        )

    def convert_selector(self, value: Any) -> _Schema:
        """Return the schema of a nested selector, an object or its configuration."""
        if not isinstance(value, selector.Selector):
            value = selector.selector(value)
        return self.convert(value)


def _joined(description: str, own: str | None) -> str:
    """Return a user's description followed by the one a schema gives itself."""
    return f"{description} ({own})" if own else description


def _multiple(config: Mapping[str, Any], item: _Schema) -> _Schema:
    """Return the item, or an array of it when the selector takes several values."""
    if not config.get("multiple"):
        return item
    result: _Schema = {"type": "array", "items": item}
    if "description" in item:
        result["description"] = item.pop("description")
    return result


def _plain_number(value: float) -> float:
    """Return a whole float as an int, so bounds read 5 rather than 5.0."""
    return int(value) if float(value).is_integer() else value


def _object(properties: _Schema, required: list[str]) -> _Schema:
    """Return a closed object schema."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _fixed(schema: _Schema) -> _Handler:
    """Return a handler for a selector whose schema does not depend on its options."""

    def handler(config: Mapping[str, Any], convert: _Convert) -> _Schema:
        return deepcopy(schema)

    return handler


def _string(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return a string (an ID, a name), or a list of them."""
    return _multiple(config, {"type": "string"})


def _automation_behavior(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return the behaviors the selector's mode allows."""
    mode = selector.AutomationBehaviorSelectorMode(config["mode"])
    behaviors = selector._AUTOMATION_BEHAVIOR_MODES[mode]  # noqa: SLF001
    return {"type": "string", "enum": [str(behavior) for behavior in behaviors]}


def _choose(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return the selection form of a choose selector: the choice and its value."""
    choices: Mapping[str, Any] = config["choices"]
    properties: _Schema = {
        "active_choice": {"type": "string", "enum": list(choices)},
    }
    for name, choice in choices.items():
        properties[name] = convert(choice["selector"])
    result = _object(properties, ["active_choice"])
    result["description"] = "Set active_choice to one choice and fill in that one"
    return result


def _color_temp(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return a whole color temperature within the selector's range."""
    result: _Schema = {"type": "integer"}
    minimum = config.get("min", config.get("min_mireds"))
    maximum = config.get("max", config.get("max_mireds"))
    if minimum is not None:
        result["minimum"] = minimum
    if maximum is not None:
        result["maximum"] = maximum
    result["description"] = f"in {config['unit']}"
    return result


def _constant(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return the one value a constant selector takes."""
    value = config["value"]
    if isinstance(value, bool):
        return {"type": "boolean", "enum": [value]}
    if isinstance(value, int):
        return {"type": "integer", "enum": [value]}
    return {"type": "string", "enum": [value]}


def _country(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return an ISO 3166-1 alpha-2 code, one of the selector's if it lists any."""
    if countries := config.get("countries"):
        return {"type": "string", "enum": list(countries)}
    return {"type": "string", "pattern": "^[A-Z]{2}$"}


def _device_class(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return the device classes of the selector's domain."""
    domain = config["domain"]
    options = selector._enum_options(  # noqa: SLF001
        domain, selector.DeviceClassSelector.SUPPORTED_PLATFORMS[domain]
    )
    return _multiple(config, {"type": "string", "enum": list(options)})


def _duration(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return the parts of a duration that the selector shows, all required."""
    positive = selector.DurationSelectorMode.POSITIVE
    negative = config.get("mode", positive) != positive or config.get("allow_negative")
    bound = {} if negative else {"minimum": 0}
    properties: _Schema = {}
    if config.get("enable_day"):
        properties["days"] = {"type": "integer", **bound}
    properties["hours"] = {"type": "integer", **bound}
    properties["minutes"] = {"type": "integer", **bound}
    if config["enable_second"]:
        properties["seconds"] = {"type": "number", **bound}
    if config.get("enable_millisecond"):
        properties["milliseconds"] = {"type": "integer", **bound}
    return _object(properties, list(properties))


def _entity(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return an entity ID, limited to the selector's entities or domains."""
    item: _Schema = {"type": "string"}
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


def _language(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return a language code, one of the selector's if it lists any."""
    if languages := config.get("languages"):
        return {"type": "string", "enum": list(languages)}
    return {"type": "string"}


def _location(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return a latitude and longitude, with a radius if the selector has one."""
    properties: _Schema = {
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


def _media(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return a media item (the entity playing it when the selector needs one)."""
    properties: _Schema = {}
    if "accept" not in config:
        properties["entity_id"] = {"type": "string", "pattern": _ENTITY_ID_PATTERN}
    properties["media_content_id"] = {"type": "string"}
    properties["media_content_type"] = {"type": "string"}
    return _multiple(config, _object(properties, list(properties)))


def _number(config: Mapping[str, Any], convert: _Convert) -> _Schema:
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
    result: _Schema = {"type": "integer" if integer else "number"}
    if "min" in config:
        result["minimum"] = _plain_number(config["min"])
    if "max" in config:
        result["maximum"] = _plain_number(config["max"])
    if unit := config.get("unit_of_measurement"):
        result["description"] = f"in {unit}"
    return result


def _numeric_threshold(config: Mapping[str, Any], convert: _Convert) -> _Schema:
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

    def entry() -> _Schema:
        properties: _Schema = {
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


def _object_selector(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return the selector's fields as an object, or any object if it has none."""
    if not (fields := config.get("fields")):
        return _multiple(config, {"type": "object", "additionalProperties": True})
    properties: _Schema = {}
    for name, field in fields.items():
        properties[name] = convert(field["selector"])
        if label := field.get("label"):
            properties[name]["description"] = _joined(
                label, properties[name].get("description")
            )
    required = [name for name, field in fields.items() if field.get("required")]
    return _multiple(config, _object(properties, required))


def _select(config: Mapping[str, Any], convert: _Convert) -> _Schema:
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
    item: _Schema = {"type": "string"}
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


def _state_class(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return the sensor state classes the selector allows."""
    allowed = config.get("state_classes")
    options = [
        option
        for option in selector._enum_options(Platform.SENSOR, "SensorStateClass")  # noqa: SLF001
        if allowed is None or option in allowed
    ]
    return _multiple(config, {"type": "string", "enum": options})


def _target(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return lists of entity, device, area, floor and label IDs."""
    properties: _Schema = {
        "entity_id": {
            "type": "array",
            "items": {"type": "string", "pattern": _ENTITY_ID_PATTERN},
        }
    }
    for key in ("device_id", "area_id", "floor_id", "label_id"):
        properties[key] = {"type": "array", "items": {"type": "string"}}
    return _object(properties, [])


_TEXT_TYPES: Final[dict[str, _Schema]] = {
    selector.TextSelectorType.COLOR: {"pattern": "^#[0-9a-fA-F]{6}$"},
    selector.TextSelectorType.DATE: {"format": "date"},
    selector.TextSelectorType.EMAIL: {"format": "email"},
    selector.TextSelectorType.TIME: {"pattern": _TIME_PATTERN},
}


def _text(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return text, in the form its input type suggests, or a list of texts."""
    item: _Schema = {"type": "string", **_TEXT_TYPES.get(config.get("type", ""), {})}
    return _multiple(config, item)


def _unit_of_measurement(config: Mapping[str, Any], convert: _Convert) -> _Schema:
    """Return a unit, one of those the selector's device and state classes allow."""
    units: set[str | None] | None = None
    if device_classes := config.get("device_classes"):
        units = selector._units_set("DEVICE_CLASS_UNITS", tuple(device_classes))  # noqa: SLF001
    if (state_classes := config.get("state_classes")) and (
        state_units := selector._units_set("STATE_CLASS_UNITS", tuple(state_classes))  # noqa: SLF001
    ) is not None:
        units = state_units if units is None else units & state_units
    if units is None:
        return {"type": "string"}
    return {
        "type": "string",
        "enum": sorted(str(unit) for unit in units if unit),
    }


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


def _types(schema: _Schema) -> list[Any]:
    """Return the JSON types a schema names."""
    kind = schema.get("type", [])
    return kind if isinstance(kind, list) else [kind]


def _nullable(schema: _Schema) -> _Schema:
    """Return the schema that also takes null."""
    kind = schema.get("type")
    if "null" in _types(schema):
        return schema
    if kind in _SCALAR_TYPES and not schema.keys() & {"enum", "const"}:
        return {**schema, "type": [kind, "null"]}
    inner = {key: value for key, value in schema.items() if key != "description"}
    result: _Schema = {"anyOf": [inner, {"type": "null"}]}
    if "description" in schema:
        result["description"] = schema["description"]
    return result


class _Strict:
    """Conversion of a plain schema to strict mode, counting against the limits."""

    def __init__(self) -> None:
        """Start with no enum values counted."""
        self._enum_values = 0

    def convert(self, schema: Any, where: str, depth: int) -> _Schema:
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
        result: _Schema = {}
        for keyword, value in schema.items():
            if keyword not in _STRICT_KEYWORDS or (
                keyword == "format" and value not in _STRICT_FORMATS
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
        self, keyword: str, value: Any, schema: _Schema, where: str, depth: int
    ) -> Any:
        """Return the strict form of one keyword's value."""
        if keyword == "properties":
            required = schema.get("required", [])
            properties: _Schema = {}
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


def _problem(error: probatio.Invalid) -> str:
    """Return one validation error as a short sentence naming where it is."""
    path = list(error.path)
    if isinstance(error, probatio.RequiredFieldInvalid) and path:
        return _at(f"required key {path[-1]!r} is missing", path[:-1])
    if isinstance(error, probatio.ExtraKeysInvalid) and path:
        return _at(f"key {path[-1]!r} is not allowed", path[:-1])
    return str(error)


def _at(message: str, path: list[Any]) -> str:
    """Return the message with the path it is about, if any."""
    return f"{message} at '{render_path(path)}'" if path else message
