"""Task structures as JSON schema: Home Assistant's serializer, tightened."""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import config_validation as cv, selector
import probatio
import pytest
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.structured.rungs import (
    StructureMismatch,
    checked_answer,
)
from custom_components.openai_compatible.structured.selector_schema import (
    StrictUnsupported,
    strict_json_schema,
    structure_to_json_schema,
)
from tests.structures import build, single

# id: a selector, and an answer in strict form (nulls for what is left out)
# that its schema allows and its selector takes.
ANSWERS: dict[str, tuple[dict[str, Any], Any]] = {
    "action": ({"action": {}}, [{"action": "light.turn_on"}]),
    "addon": ({"addon": {}}, "core_ssh"),
    "app": ({"app": {}}, "core_ssh"),
    "area": ({"area": {"multiple": True}}, ["kitchen"]),
    "assist_pipeline": ({"assist_pipeline": {}}, "preferred"),
    "attribute": ({"attribute": {"entity_id": "light.kitchen"}}, "brightness"),
    "automation_behavior": ({"automation_behavior": {"mode": "trigger"}}, "first"),
    "backup_location": ({"backup_location": {}}, "/backup"),
    "boolean": ({"boolean": {}}, False),
    "choose": (
        {
            "choose": {
                "choices": {
                    "number": {"selector": {"number": {}}},
                    "text": {"selector": {"text": {}}},
                }
            }
        },
        3,
    ),
    "color_rgb": ({"color_rgb": {}}, [255, 128, 0]),
    "color_temp": ({"color_temp": {"unit": "kelvin", "min": 2000, "max": 6500}}, 2700),
    "condition": (
        {"condition": {}},
        [{"condition": "state", "entity_id": "light.kitchen", "state": "on"}],
    ),
    "config_entry": ({"config_entry": {}}, "01JABC"),
    "constant": ({"constant": {"value": "on"}}, "on"),
    "conversation_agent": ({"conversation_agent": {}}, "conversation.home_assistant"),
    "country": ({"country": {"countries": ["DE", "FR"]}}, "DE"),
    "date": ({"date": {}}, "2026-11-05"),
    "datetime": ({"datetime": {}}, "2026-11-05T07:30:00+01:00"),
    "device": ({"device": {}}, "abc123"),
    "device_class": ({"device_class": {"domain": "button"}}, "restart"),
    "duration": (
        {"duration": {"enable_day": True}},
        {"days": 0, "hours": 1, "minutes": 30, "seconds": 0, "milliseconds": None},
    ),
    "entity": ({"entity": {"domain": "light"}}, "light.kitchen"),
    "entity_multiple": (
        {"entity": {"multiple": True, "include_entities": ["light.a", "light.b"]}},
        ["light.b"],
    ),
    "file": ({"file": {"accept": "image/*"}}, "0b3b2c8e6c0a4c7e9a3f1d2e4b5c6d7e"),
    "floor": ({"floor": {}}, "ground"),
    "icon": ({"icon": {}}, "mdi:lightbulb"),
    "label": ({"label": {"multiple": True}}, ["a", "b"]),
    "language": ({"language": {"languages": ["en", "de"]}}, "de"),
    "location": (
        {"location": {"radius": True}},
        {"latitude": 52.5, "longitude": 13.4, "radius": None},
    ),
    "media": (
        {"media": {}},
        {
            "entity_id": "media_player.tv",
            "media_content_id": "media-source://x",
            "media_content_type": "music",
        },
    ),
    "number": ({"number": {"min": 0, "max": 10}}, 5),
    "numeric_threshold": (
        {"numeric_threshold": {"mode": "is", "unit_of_measurement": ["°C", None]}},
        {"type": "above", "value": {"number": 21.5, "unit_of_measurement": "°C"}},
    ),
    "object": (
        {
            "object": {
                "fields": {
                    "name": {"required": True, "selector": {"text": {}}},
                    "age": {"selector": {"number": {}}},
                }
            }
        },
        {"name": "Ada", "age": None},
    ),
    "object_free_form": ({"object": {}}, {"anything": [1, "two"]}),
    "qr_code": ({"qr_code": {"data": "abc"}}, "abc"),
    "select": ({"select": {"options": ["a", "b"]}}, "a"),
    "select_multiple": (
        {
            "select": {
                "options": [
                    {"value": "r", "label": "Red"},
                    {"value": "g", "label": "Green"},
                ],
                "multiple": True,
            }
        },
        ["r", "g"],
    ),
    "select_custom_value": (
        {"select": {"options": ["a", "b"], "custom_value": True}},
        "z",
    ),
    "serial_port": ({"serial_port": {}}, "/dev/ttyUSB0"),
    "state": ({"state": {"entity_id": "light.kitchen"}}, "on"),
    "state_class": ({"state_class": {"state_classes": ["measurement"]}}, "measurement"),
    "statistic": ({"statistic": {}}, "sensor.energy"),
    "target": (
        {"target": {}},
        {
            "entity_id": ["light.kitchen"],
            "device_id": None,
            "area_id": ["kitchen"],
            "floor_id": None,
            "label_id": None,
        },
    ),
    "text": ({"text": {"multiline": True}}, "Hello"),
    "text_multiple": ({"text": {"multiple": True, "type": "email"}}, ["a@b.example"]),
    "theme": ({"theme": {}}, "dark"),
    "time": ({"time": {}}, "07:30:00"),
    "trigger": (
        {"trigger": {}},
        [{"trigger": "state", "entity_id": "light.kitchen"}],
    ),
    "unit_of_measurement": (
        {"unit_of_measurement": {"device_classes": ["wind_direction"]}},
        "°",
    ),
}
# Selectors whose values hold free-form objects, which strict mode cannot say.
FREE_FORM = {
    "action",
    "condition",
    "media",
    "numeric_threshold",
    "object_free_form",
    "trigger",
}


def test_every_selector_has_an_answer() -> None:
    """Each selector type Home Assistant offers is covered below."""
    covered = {next(iter(config)) for config, _ in ANSWERS.values()}
    assert covered == set(selector.SELECTORS) - {"template"}  # template needs hass


@pytest.mark.parametrize(("selector_config", "answer"), ANSWERS.values(), ids=ANSWERS)
def test_a_fitting_answer_is_taken(
    selector_config: dict[str, Any], answer: Any, request: pytest.FixtureRequest
) -> None:
    """What the schema asks for, the selector takes; strict mode says it where it can."""
    structure = single(selector_config)
    plain = structure_to_json_schema(structure)
    assert plain["properties"]["value"]["description"].startswith("The value")

    checked_answer({"value": answer}, structure, plain)

    if request.node.callspec.id in FREE_FORM:
        with pytest.raises(StrictUnsupported, match="is a free-form object"):
            strict_json_schema(plain)
    else:
        assert strict_json_schema(plain)["required"] == ["value"]


def test_plain_schema_of_every_selector(snapshot: SnapshotAssertion) -> None:
    """What each selector becomes in the plain schema."""
    structure = build(
        {
            name: {"selector": config}
            for name, (config, _) in [
                *ANSWERS.items(),
                ("template", ({"template": {}}, "")),
            ]
        }
    )
    assert structure_to_json_schema(structure) == snapshot


def test_a_class_the_schema_leaves_open_is_named_by_the_selector() -> None:
    """A wrong device class is told with the allowed ones, for the repair round.

    Home Assistant's serializer lists no device classes, units or behaviours.
    """
    structure = single({"device_class": {"domain": "button"}})
    plain = structure_to_json_schema(structure)
    assert plain["properties"]["value"] == {
        "type": "string",
        "description": "The value",
    }
    with pytest.raises(StructureMismatch, match="must be one of .*'restart'"):
        checked_answer({"value": "reboot"}, structure, plain)


RICH_STRUCTURE = {
    "title": {
        "description": "A short title",
        "required": True,
        "selector": {"text": {}},
    },
    "summary": {
        "description": "Two sentences",
        "selector": {"text": {"multiline": True}},
    },
    "temperature": {
        "description": "Target temperature",
        "required": True,
        "selector": {
            "number": {"min": 5, "max": 30, "step": 0.5, "unit_of_measurement": "°C"}
        },
    },
    "mood": {
        "description": "Lighting mood",
        "selector": {
            "select": {
                "options": [
                    {"value": "warm", "label": "Warm and cosy"},
                    {"value": "cold", "label": "Cold and bright"},
                ]
            }
        },
    },
    "lights": {
        "description": "Lights to change",
        "selector": {"entity": {"domain": ["light", "switch"], "multiple": True}},
    },
    "color": {"selector": {"color_rgb": {}}},
    "when": {"description": "Start", "selector": {"datetime": {}}},
    "at": {"selector": {"time": {}}},
    "for": {"selector": {"duration": {}}},
    "where": {"selector": {"location": {}}},
    "steps": {
        "description": "What to do, in order",
        "required": True,
        "selector": {
            "object": {
                "multiple": True,
                "fields": {
                    "action": {
                        "label": "Action",
                        "required": True,
                        "selector": {"text": {}},
                    },
                    "delay": {
                        "label": "Delay in seconds",
                        "selector": {"number": {"min": 0}},
                    },
                    "done": {"selector": {"boolean": {}}},
                    "where": {
                        "selector": {
                            "object": {
                                "fields": {
                                    "area": {
                                        "required": True,
                                        "selector": {"area": {}},
                                    },
                                    "floor": {"selector": {"floor": {}}},
                                }
                            }
                        }
                    },
                },
            }
        },
    },
}


def test_rich_structure(snapshot: SnapshotAssertion) -> None:
    """A rich structure in plain and strict form, and an answer through both."""
    structure = build(RICH_STRUCTURE)
    plain = structure_to_json_schema(structure)
    strict = strict_json_schema(plain)
    assert plain == snapshot(name="plain")
    assert strict == snapshot(name="strict")

    answer = {
        "title": "Evening",
        "summary": None,
        "temperature": 21.5,
        "mood": "warm",
        "lights": ["light.sofa", "switch.lamp"],
        "color": None,
        "when": None,
        "at": "19:30:00",
        "for": {"hours": 2, "minutes": 0, "seconds": 0, "days": None},
        "where": None,
        "steps": [
            {"action": "dim", "delay": None, "done": None, "where": None},
            {
                "action": "close blinds",
                "delay": 10,
                "done": False,
                "where": {"area": "living_room", "floor": None},
            },
        ],
    }
    assert checked_answer(answer, structure, plain) == {
        "title": "Evening",
        "temperature": 21.5,
        "mood": "warm",
        "lights": ["light.sofa", "switch.lamp"],
        "at": "19:30:00",
        "for": {"hours": 2, "minutes": 0, "seconds": 0},
        "steps": [
            {"action": "dim"},
            {
                "action": "close blinds",
                "delay": 10,
                "done": False,
                "where": {"area": "living_room"},
            },
        ],
    }


def rich_schema_bytes() -> str:
    """Return the plain and strict schema of RICH_STRUCTURE as sent on the wire."""
    plain = structure_to_json_schema(build(RICH_STRUCTURE))
    return json.dumps([plain, strict_json_schema(plain)])


def test_output_is_the_same_in_every_process() -> None:
    """The same structure gives the same bytes under any hash seed.

    Prompt caching needs the bytes of a request to repeat across restarts, and
    a set or a hash-ordered walk would reorder them from one process to the next.
    """
    here = rich_schema_bytes()
    assert list(json.loads(here)[0]["properties"]) == list(RICH_STRUCTURE)
    # Any seed other than this process's own (random unless one was set).
    seed = "1" if os.environ.get("PYTHONHASHSEED") == "0" else "0"
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tests.structured.test_selector_schema import rich_schema_bytes as out; print(out())",
        ],
        cwd=Path(__file__).parents[2],
        env={**os.environ, "PYTHONHASHSEED": seed},
        capture_output=True,
        check=True,
        text=True,
        timeout=120,
    )
    assert other.stdout.strip() == here


async def test_template_round_trip(hass: HomeAssistant) -> None:
    """A template is a string, checked by Home Assistant's template validation."""
    structure = single({"template": {}})
    plain = structure_to_json_schema(structure)
    assert plain["properties"]["value"] == {
        "type": "string",
        "description": "The value",
    }
    value = {"value": "{{ 1 + 1 }}"}
    assert checked_answer(value, structure, plain) == value
    with pytest.raises(StructureMismatch, match="invalid template"):
        checked_answer({"value": "{{ 1 + }}"}, structure, plain)


def test_descriptions() -> None:
    """The user's description comes first, followed by what the selector adds."""
    structure = build(
        {
            "bare": {
                "selector": {"select": {"options": [{"value": "a", "label": "Apple"}]}}
            },
            "described": {
                "description": "Fruit",
                "selector": {"select": {"options": [{"value": "a", "label": "Apple"}]}},
            },
            "plain": {"description": "Just text", "selector": {"text": {}}},
            "suggested": {
                "selector": {"select": {"options": ["a", "b"], "custom_value": True}}
            },
            "same": {
                "selector": {"select": {"options": [{"value": "a", "label": "a"}]}}
            },
        }
    )
    properties = structure_to_json_schema(structure)["properties"]
    assert properties["bare"]["description"] == "Values: a (Apple)"
    assert properties["described"]["description"] == "Fruit (Values: a (Apple))"
    assert properties["plain"]["description"] == "Just text"
    assert properties["suggested"] == {
        "type": "string",
        "description": "Suggested values: a, b",
    }
    assert properties["same"] == {"type": "string", "enum": ["a"]}


def test_formats_json_schema_has_not_are_left_out() -> None:
    """Home Assistant's own format names are no JSON schema format: they go."""
    properties = structure_to_json_schema(
        build(
            {
                "lights": {"selector": {"entity": {"multiple": True}}},
                "day": {"selector": {"date": {}}},
                "language": {"selector": {"language": {}}},
                "style": {
                    "selector": {
                        "object": {"fields": {"format": {"selector": {"text": {}}}}}
                    }
                },
            }
        )
    )["properties"]
    assert properties["lights"] == {"type": "array", "items": {"type": "string"}}
    assert properties["day"] == {"type": "string", "format": "date"}
    assert properties["language"] == {"type": "string"}
    assert properties["style"]["properties"] == {"format": {"type": "string"}}


class FutureSelector(selector.Selector[dict[str, Any]]):
    """A selector this integration does not know (a newer Home Assistant's)."""

    selector_type = "future"
    CONFIG_SCHEMA = selector.make_selector_config_schema(
        {probatio.Optional("multiple", default=False): bool}
    )


def test_unknown_selectors_and_api_serializer() -> None:
    """The API's serializer is asked first, then Home Assistant's."""
    structure = probatio.Schema(
        {
            probatio.Required("one", description="One"): FutureSelector(),
            probatio.Optional("many"): FutureSelector({"multiple": True}),
            probatio.Optional("name"): cv.string,
            probatio.Optional("count"): probatio.All(int, probatio.Range(min=1)),
        }
    )
    properties = structure_to_json_schema(structure)["properties"]
    assert properties["one"] == {"type": "string", "description": "One"}
    assert properties["many"] == {"type": "array", "items": {"type": "string"}}
    assert properties["name"] == {"type": "string"}
    assert properties["count"] == {"type": "integer", "minimum": 1}

    def api_serializer(node: Any) -> Any:
        if isinstance(node, FutureSelector) and not node.config["multiple"]:
            return {"type": "string", "format": "uuid"}
        return node  # what Home Assistant's merged serializer returns for unknowns

    properties = structure_to_json_schema(structure, api_serializer)["properties"]
    assert properties["one"] == {
        "type": "string",
        "format": "uuid",
        "description": "One",
    }
    assert properties["many"]["items"] == {"type": "string"}


def test_structure_of_a_python_caller() -> None:
    """A structure that is not a mapping of fields still converts."""
    structure = probatio.Schema(
        probatio.All({probatio.Required("x", description="X"): str})
    )
    schema = structure_to_json_schema(structure)
    assert schema["properties"]["x"] == {"type": "string", "description": "X"}


# OpenAI's strict form of plain schemas.
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
