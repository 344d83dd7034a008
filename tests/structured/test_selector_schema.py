"""Task structures as JSON schema: every selector, round trips to validated data."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
import subprocess
import sys
from typing import Any

from homeassistant.components.sensor import SensorDeviceClass, SensorStateClass
from homeassistant.core import HomeAssistant
from homeassistant.helpers import config_validation as cv, selector
import probatio
import pytest
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.structured.json_answer import (
    StructureMismatch,
    validate_result,
)
from custom_components.openai_compatible.structured.selector_schema import (
    structure_to_json_schema,
)
from custom_components.openai_compatible.structured.strict_schema import (
    StrictUnsupported,
    drop_optional_nulls,
    strict_json_schema,
)
from tests.structures import build, single

FILE_ID = "0b3b2c8e6c0a4c7e9a3f1d2e4b5c6d7e"

# id, selector, answer in strict form (nulls for what is left out), validated
# value, a wrong answer and the exact problem it must be reported with.
ROUND_TRIPS: list[tuple[str, dict[str, Any], Any, Any, Any, str]] = [
    (
        "action",
        {"action": {}},
        [{"action": "light.turn_on"}],
        [{"action": "light.turn_on"}],
        {},
        "required key 'value' is missing",
    ),
    (
        "addon",
        {"addon": {}},
        "core_ssh",
        "core_ssh",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "app",
        {"app": {}},
        "core_ssh",
        "core_ssh",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "area",
        {"area": {"multiple": True}},
        ["kitchen"],
        ["kitchen"],
        {"value": "kitchen"},
        "Value should be a list at 'value'",
    ),
    (
        "assist_pipeline",
        {"assist_pipeline": {}},
        "preferred",
        "preferred",
        {"value": None},
        "expected str at 'value'",
    ),
    (
        "attribute",
        {"attribute": {"entity_id": "light.kitchen"}},
        "brightness",
        "brightness",
        {"value": 3},
        "expected str at 'value'",
    ),
    (
        "automation_behavior",
        {"automation_behavior": {"mode": "trigger"}},
        "first",
        "first",
        {"value": "any"},
        (
            "value must be one of [<AutomationBehavior.ALL: 'all'>, "
            "<AutomationBehavior.EACH: 'each'>, <AutomationBehavior.FIRST: 'first'>] "
            "at 'value'"
        ),
    ),
    (
        "backup_location",
        {"backup_location": {}},
        "/backup",
        "/backup",
        {"value": "my backups"},
        "does not match the expected pattern at 'value'",
    ),
    (
        "boolean",
        {"boolean": {}},
        False,
        False,
        {"value": True, "x": 1},
        "key 'x' is not allowed",
    ),
    (
        "choose",
        {
            "choose": {
                "choices": {
                    "number": {"selector": {"number": {}}},
                    "text": {"selector": {"text": {}}},
                }
            }
        },
        {"active_choice": "number", "number": 3, "text": None},
        3.0,
        {"value": {"active_choice": "number", "text": "x"}},
        "Missing value for active choice at 'value'",
    ),
    (
        "color_rgb",
        {"color_rgb": {}},
        [255, 128, 0],
        [255, 128, 0],
        {"value": [255, 128, 256]},
        "value must be at most 255 at 'value[2]'",
    ),
    (
        "color_temp",
        {"color_temp": {"unit": "kelvin", "min": 2000, "max": 6500}},
        2700,
        2700.0,
        {"value": 9000},
        "value must be at most 6500 at 'value'",
    ),
    (
        "condition",
        {"condition": {}},
        [{"condition": "state", "entity_id": "light.kitchen", "state": "on"}],
        [
            {
                "condition": "state",
                "entity_id": ["light.kitchen"],
                "state": "on",
                "match": "all",
            }
        ],
        {"value": [{"condition": "state"}]},
        "required key 'entity_id' is missing at 'value[0]'; required key 'state' is missing at 'value[0]'",
    ),
    (
        "config_entry",
        {"config_entry": {}},
        "01JABC",
        "01JABC",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "constant",
        {"constant": {"value": "on"}},
        "on",
        "on",
        {"value": "off"},
        "not a valid value at 'value'",
    ),
    (
        "conversation_agent",
        {"conversation_agent": {}},
        "conversation.home_assistant",
        "conversation.home_assistant",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "country",
        {"country": {"countries": ["DE", "FR"]}},
        "DE",
        "DE",
        {"value": "US"},
        "Value US is not a valid option at 'value'",
    ),
    (
        "date",
        {"date": {}},
        "2026-11-05",
        "2026-11-05",
        {"value": "5 November"},
        "Could not parse date at 'value'",
    ),
    (
        "datetime",
        {"datetime": {}},
        "2026-11-05T07:30:00+01:00",
        "2026-11-05T07:30:00+01:00",
        {"value": "tomorrow"},
        "Invalid datetime specified: tomorrow at 'value'",
    ),
    (
        "device",
        {"device": {}},
        "abc123",
        "abc123",
        {"value": ["abc"]},
        "expected str at 'value'",
    ),
    (
        "device_class",
        {"device_class": {"domain": "button"}},
        "restart",
        "restart",
        {"value": "hot"},
        "value must be one of ['identify', 'restart', 'update'] at 'value'",
    ),
    (
        "duration",
        {"duration": {"enable_day": True}},
        {"days": 0, "hours": 1, "minutes": 30, "seconds": 0},
        {"days": 0, "hours": 1, "minutes": 30, "seconds": 0},
        {"value": {"days": 0, "hours": -1, "minutes": 0, "seconds": 0}},
        "Time period should be positive at 'value'",
    ),
    (
        "entity",
        {"entity": {"domain": "light"}},
        "light.kitchen",
        "light.kitchen",
        {"value": "switch.kitchen"},
        "Entity switch.kitchen belongs to domain switch, expected ['light'] at 'value'",
    ),
    (
        "entity_multiple",
        {"entity": {"multiple": True, "include_entities": ["light.a", "light.b"]}},
        ["light.b"],
        ["light.b"],
        {"value": ["light.c"]},
        (
            "value must be one of ['light.a', 'light.b'], did you mean 'light.b' or "
            "'light.a'? at 'value[0]'"
        ),
    ),
    (
        "file",
        {"file": {"accept": "image/*"}},
        FILE_ID,
        FILE_ID,
        {"value": "photo.jpg"},
        "not a valid value: badly formed hexadecimal UUID string at 'value'",
    ),
    (
        "floor",
        {"floor": {}},
        "ground",
        "ground",
        {"value": 0},
        "expected str at 'value'",
    ),
    (
        "icon",
        {"icon": {}},
        "mdi:lightbulb",
        "mdi:lightbulb",
        {"value": 0},
        "expected str at 'value'",
    ),
    (
        "label",
        {"label": {"multiple": True}},
        ["a", "b"],
        ["a", "b"],
        {"value": [1]},
        "expected str at 'value'",
    ),
    (
        "language",
        {"language": {"languages": ["en", "de"]}},
        "de",
        "de",
        {"value": "fr"},
        "Value fr is not a valid option at 'value'",
    ),
    (
        "location",
        {"location": {"radius": True}},
        {"latitude": 52.5, "longitude": 13.4, "radius": None},
        {"latitude": 52.5, "longitude": 13.4},
        {"value": {"latitude": 100, "longitude": 0}},
        "invalid latitude at 'value.latitude'",
    ),
    (
        "media",
        {"media": {}},
        {
            "entity_id": "media_player.tv",
            "media_content_id": "media-source://x",
            "media_content_type": "music",
        },
        {
            "entity_id": "media_player.tv",
            "media_content_id": "media-source://x",
            "media_content_type": "music",
        },
        {"value": {"entity_id": "media_player.tv", "media_content_id": "x"}},
        "required key 'media_content_type' is missing at 'value'",
    ),
    (
        "media_multiple",
        {"media": {"accept": ["image/*"], "multiple": True}},
        [{"media_content_id": "media-source://x", "media_content_type": "image/png"}],
        [{"media_content_id": "media-source://x", "media_content_type": "image/png"}],
        {"value": [{"media_content_id": "x", "media_content_type": "y", "z": 1}]},
        "key 'z' is not allowed at 'value'",
    ),
    (
        "number",
        {"number": {"min": 0, "max": 10}},
        5,
        5.0,
        {"value": 11},
        "Value 11.0 is too large at 'value'",
    ),
    (
        "numeric_threshold",
        {"numeric_threshold": {"mode": "is", "unit_of_measurement": ["°C", None]}},
        {
            "type": "above",
            "value": {"number": 21.5, "entity": None, "unit_of_measurement": "°C"},
            "value_min": None,
            "value_max": None,
        },
        {"type": "above", "value": {"number": 21.5, "unit_of_measurement": "°C"}},
        {"value": {"type": "any"}},
        "Threshold type 'any' is only allowed when mode is 'changed' at 'value'",
    ),
    (
        "object",
        {
            "object": {
                "fields": {
                    "name": {"required": True, "selector": {"text": {}}},
                    "age": {"selector": {"number": {}}},
                }
            }
        },
        {"name": "Ada", "age": None},
        {"name": "Ada"},
        {"value": {"age": 36}},
        "Field name is required at 'value'",
    ),
    (
        "object_free_form",
        {"object": {}},
        {"anything": [1, "two"]},
        {"anything": [1, "two"]},
        {},
        "required key 'value' is missing",
    ),
    (
        "qr_code",
        {"qr_code": {"data": "abc"}},
        "abc",
        "abc",
        {"value": 5},
        "expected str or None at 'value'",
    ),
    (
        "select",
        {"select": {"options": ["a", "b"]}},
        "a",
        "a",
        {"value": "c"},
        "value must be one of ['a', 'b'] at 'value'",
    ),
    (
        "select_multiple",
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
        ["r", "g"],
        {"value": ["red"]},
        "value must be one of ['g', 'r'] at 'value'",
    ),
    (
        "select_custom_value",
        {"select": {"options": ["a", "b"], "custom_value": True}},
        "z",
        "z",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "serial_port",
        {"serial_port": {}},
        "/dev/ttyUSB0",
        "/dev/ttyUSB0",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "state",
        {"state": {"entity_id": "light.kitchen"}},
        "on",
        "on",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "state_class",
        {"state_class": {"state_classes": ["measurement", "total"]}},
        "total",
        "total",
        {"value": "total_increasing"},
        "value must be one of ['measurement', 'total'] at 'value'",
    ),
    (
        "statistic",
        {"statistic": {}},
        "sensor.energy",
        "sensor.energy",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "target",
        {"target": {}},
        {
            "entity_id": ["light.kitchen"],
            "device_id": None,
            "area_id": ["kitchen"],
            "floor_id": None,
            "label_id": None,
        },
        {"entity_id": ["light.kitchen"], "area_id": ["kitchen"]},
        {"value": {"entity_id": ["light.kitchen"], "zone_id": ["home"]}},
        "key 'zone_id' is not allowed at 'value'",
    ),
    (
        "text",
        {"text": {"multiline": True}},
        "Hello",
        "Hello",
        {"value": 1},
        "expected str at 'value'",
    ),
    (
        "text_multiple",
        {"text": {"multiple": True, "type": "email"}},
        ["a@example.com"],
        ["a@example.com"],
        {"value": "a@example.com"},
        "Value should be a list at 'value'",
    ),
    ("theme", {"theme": {}}, "dark", "dark", {"value": 1}, "expected str at 'value'"),
    (
        "time",
        {"time": {}},
        "07:30:00",
        "07:30:00",
        {"value": "half past seven"},
        "Invalid time specified: half past seven at 'value'",
    ),
    (
        "trigger",
        {"trigger": {}},
        [{"trigger": "state", "entity_id": "light.kitchen"}],
        [{"platform": "state", "entity_id": "light.kitchen"}],
        {"value": [{"entity_id": "light.kitchen"}]},
        "required key not provided at 'value[0].trigger'",
    ),
    (
        "unit_of_measurement",
        {"unit_of_measurement": {"device_classes": ["wind_direction"]}},
        "°",
        "°",
        {"value": "kg"},
        "value must be one of ['°'] at 'value'",
    ),
]

# Selectors whose values are free-form objects, which strict mode cannot describe.
FREE_FORM = {"action", "condition", "object_free_form", "trigger"}


def test_every_selector_has_a_round_trip() -> None:
    """Each selector type Home Assistant offers is covered below."""
    covered = {next(iter(config)) for _, config, *_ in ROUND_TRIPS}
    assert covered == set(selector.SELECTORS) - {"template"}  # template needs hass


@pytest.mark.parametrize(
    ("selector_config", "answer", "expected", "wrong", "problem"),
    [pytest.param(*case[1:], id=case[0]) for case in ROUND_TRIPS],
)
def test_round_trip(
    selector_config: dict[str, Any],
    answer: Any,
    expected: Any,
    wrong: Any,
    problem: str,
) -> None:
    """A strict-form answer comes back as the user's data; a wrong one is named."""
    structure = single(selector_config)
    plain = structure_to_json_schema(structure)
    assert plain["properties"]["value"]["description"].startswith("The value")
    assert plain["required"] == ["value"]

    data = drop_optional_nulls({"value": answer}, plain)
    assert validate_result(structure, data) == {"value": expected}

    with pytest.raises(StructureMismatch) as err:
        validate_result(structure, wrong)
    assert err.value.problem == problem
    assert str(err.value) == problem


@pytest.mark.parametrize(
    "selector_config",
    [pytest.param(case[1], id=case[0]) for case in ROUND_TRIPS],
)
def test_strict_form_of_each_selector(
    selector_config: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    """Every selector has a strict form, except those taking free-form objects."""
    plain = structure_to_json_schema(single(selector_config))
    if request.node.callspec.id in FREE_FORM:
        with pytest.raises(StrictUnsupported, match="is a free-form object"):
            strict_json_schema(plain)
    else:
        strict = strict_json_schema(plain)
        assert strict["required"] == ["value"]
        assert strict["additionalProperties"] is False


def test_plain_schema_of_every_selector(snapshot: SnapshotAssertion) -> None:
    """What each selector becomes in the plain schema."""
    structure = build(
        {
            name: {"selector": config}
            for name, config, *_ in [*ROUND_TRIPS, ("template", {"template": {}})]
        }
    )
    assert structure_to_json_schema(structure) == snapshot


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
        "for": {"hours": 2, "minutes": 0, "seconds": 0},
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
    assert validate_result(structure, drop_optional_nulls(answer, plain)) == {
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
        "description": "The value (a Home Assistant template (Jinja2))",
    }
    assert validate_result(structure, {"value": "{{ 1 + 1 }}"}) == {
        "value": "{{ 1 + 1 }}"
    }
    with pytest.raises(StructureMismatch, match="invalid template"):
        validate_result(structure, {"value": "{{ 1 + }}"})


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


def test_selector_options_shape_the_schema() -> None:
    """Options that narrow a selector's values narrow its schema."""
    properties = structure_to_json_schema(
        build(
            {
                "number_any": {"selector": {"number": {"step": "any"}}},
                "number_box": {"selector": {"number": {"min": 0}}},
                "number_box_step": {"selector": {"number": {"min": 0, "step": 5}}},
                "number_slider": {"selector": {"number": {"min": 0, "max": 9}}},
                "number_fraction": {
                    "selector": {"number": {"min": 0.5, "max": 9, "step": 1}}
                },
                "entity_filter": {
                    "selector": {
                        "entity": {
                            "filter": [
                                {"domain": "light"},
                                {"domain": ["fan", "light"]},
                            ]
                        }
                    }
                },
                "entity_mixed_filter": {
                    "selector": {
                        "entity": {
                            "filter": [{"domain": "light"}, {"integration": "hue"}]
                        }
                    }
                },
                "entity_excluded": {
                    "selector": {
                        "entity": {
                            "include_entities": ["light.a", "light.b"],
                            "exclude_entities": ["light.a"],
                        }
                    }
                },
                "country": {"selector": {"country": {}}},
                "language": {"selector": {"language": {}}},
                "mireds": {
                    "selector": {"color_temp": {"min_mireds": 153, "max_mireds": 500}}
                },
                "signed": {
                    "selector": {
                        "duration": {"mode": "signed", "enable_millisecond": True}
                    }
                },
                "no_seconds": {"selector": {"duration": {"enable_second": False}}},
                "changed": {
                    "selector": {
                        "numeric_threshold": {"mode": "changed", "number": {"min": 0}}
                    }
                },
                "any_unit": {"selector": {"unit_of_measurement": {}}},
                "energy_unit": {
                    "selector": {
                        "unit_of_measurement": {
                            "device_classes": ["energy"],
                            "state_classes": ["total_increasing"],
                        }
                    }
                },
                "angle_unit": {
                    "selector": {
                        "unit_of_measurement": {
                            "device_classes": ["wind_direction"],
                            "state_classes": ["measurement_angle"],
                        }
                    }
                },
                "any_angle_unit": {
                    "selector": {
                        "unit_of_measurement": {"state_classes": ["measurement_angle"]}
                    }
                },
                "true": {"selector": {"constant": {"value": True}}},
                "three": {"selector": {"constant": {"value": 3}}},
            }
        )
    )["properties"]
    assert properties["number_any"] == {"type": "number"}
    assert properties["number_box"] == {"type": "number", "minimum": 0}
    assert properties["number_box_step"] == {"type": "integer", "minimum": 0}
    assert properties["number_slider"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 9,
    }
    assert properties["number_fraction"] == {
        "type": "number",
        "minimum": 0.5,
        "maximum": 9,
    }
    assert properties["entity_filter"]["pattern"] == r"^(light|fan)\.[a-z0-9_]+$"
    assert properties["entity_mixed_filter"]["pattern"] == r"^[a-z0-9_]+\.[a-z0-9_]+$"
    assert properties["entity_excluded"]["enum"] == ["light.b"]
    assert properties["country"] == {"type": "string", "pattern": "^[A-Z]{2}$"}
    assert properties["language"] == {"type": "string"}
    assert properties["mireds"] == {
        "type": "integer",
        "minimum": 153,
        "maximum": 500,
        "description": "in mired",
    }
    assert properties["signed"]["properties"] == {
        "hours": {"type": "integer"},
        "minutes": {"type": "integer"},
        "seconds": {"type": "number"},
        "milliseconds": {"type": "integer"},
    }
    assert properties["no_seconds"]["required"] == ["hours", "minutes"]
    changed = properties["changed"]["properties"]
    assert changed["type"]["enum"] == ["above", "below", "between", "outside", "any"]
    assert changed["value"]["properties"]["number"] == {"type": "number", "minimum": 0}
    assert "unit_of_measurement" not in changed["value"]["properties"]
    assert properties["any_unit"] == {"type": "string"}
    assert properties["energy_unit"]["enum"] == sorted(
        properties["energy_unit"]["enum"]
    )
    assert "kWh" in properties["energy_unit"]["enum"]
    assert properties["angle_unit"] == {"type": "string", "enum": ["°"]}
    assert properties["any_angle_unit"] == {"type": "string", "enum": ["°"]}
    assert properties["true"] == {"type": "boolean", "enum": [True]}
    assert properties["three"] == {"type": "integer", "enum": [3]}


class FutureSelector(selector.Selector[dict[str, Any]]):
    """A selector this integration does not know (a newer Home Assistant's)."""

    selector_type = "future"
    CONFIG_SCHEMA = selector.make_selector_config_schema(
        {probatio.Optional("multiple", default=False): bool}
    )


def test_unknown_selectors_and_api_serializer() -> None:
    """Unknown selectors ask the API's serializer, else become named strings."""
    structure = probatio.Schema(
        {
            probatio.Required("one", description="One"): FutureSelector(),
            probatio.Optional("many"): FutureSelector({"multiple": True}),
            probatio.Optional("name"): cv.string,
            probatio.Optional("count"): probatio.All(int, probatio.Range(min=1)),
            probatio.Optional("text"): selector.TextSelector(),
        }
    )
    properties = structure_to_json_schema(structure)["properties"]
    assert properties["one"] == {
        "type": "string",
        "description": "One (Value for a Home Assistant future selector)",
    }
    assert properties["many"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Value for a Home Assistant future selector",
    }
    assert properties["name"] == {"type": "string"}
    assert properties["count"] == {"type": "integer", "minimum": 1}

    def api_serializer(node: Any) -> Any:
        if isinstance(node, FutureSelector) and not node.config["multiple"]:
            return {"type": "string", "format": "future"}
        return node  # what Home Assistant's merged serializer returns for unknowns

    properties = structure_to_json_schema(structure, api_serializer)["properties"]
    assert properties["one"] == {
        "type": "string",
        "format": "future",
        "description": "One",
    }
    assert properties["many"]["items"] == {"type": "string"}
    assert properties["text"] == {"type": "string"}
    assert strict_json_schema(structure_to_json_schema(structure, api_serializer))[
        "properties"
    ]["one"] == {"type": "string", "description": "One"}


def test_structure_of_a_python_caller() -> None:
    """A structure that is not a mapping of fields still converts."""
    structure = probatio.Schema(
        probatio.All({probatio.Required("x", description="X"): str})
    )
    schema = structure_to_json_schema(structure)
    assert schema["properties"]["x"] == {"type": "string", "description": "X"}


# ---------------------------------------------------------------------------
# Our tables of what selectors offer, checked against Home Assistant's selectors
# ---------------------------------------------------------------------------


def value_schema(selector_config: dict[str, Any]) -> dict[str, Any]:
    """Return the plain schema of the one value a selector gives."""
    schema: dict[str, Any] = structure_to_json_schema(single(selector_config))
    return schema["properties"]["value"]


def accepts(check: selector.Selector[Any], value: Any) -> bool:
    """Tell whether Home Assistant's selector takes the value."""
    try:
        check(value)
    except probatio.Invalid:
        return False
    return True


@pytest.mark.parametrize("mode", list(selector.AutomationBehaviorSelectorMode))
def test_automation_behaviors_are_home_assistants(mode: str) -> None:
    """Each mode offers exactly the behaviors Home Assistant's selector takes."""
    offered = value_schema({"automation_behavior": {"mode": mode}})["enum"]
    check = selector.AutomationBehaviorSelector({"mode": mode})
    taken = [str(value) for value in selector.AutomationBehavior]
    assert sorted(offered) == sorted(v for v in taken if accepts(check, v))


@pytest.mark.parametrize(
    "domain", sorted(selector.DeviceClassSelector.SUPPORTED_PLATFORMS)
)
def test_device_classes_are_home_assistants(domain: str) -> None:
    """Each domain offers the values of the enum its selector checks against."""
    module = importlib.import_module(f"homeassistant.components.{domain}")
    enum = getattr(module, selector.DeviceClassSelector.SUPPORTED_PLATFORMS[domain])
    offered = value_schema({"device_class": {"domain": domain}})["enum"]
    assert offered == [str(value) for value in enum]
    check = selector.DeviceClassSelector({"domain": domain})
    assert all(accepts(check, value) for value in offered)
    assert not accepts(check, "no_such_class")


def test_state_classes_are_home_assistants() -> None:
    """The state classes offered are those Home Assistant's selector takes."""
    offered = value_schema({"state_class": {}})["enum"]
    check = selector.StateClassSelector()
    assert offered == [str(value) for value in SensorStateClass]
    assert all(accepts(check, value) for value in offered)
    assert not accepts(check, "no_such_class")


@pytest.mark.parametrize(
    "config",
    [
        *({"device_classes": [str(value)]} for value in SensorDeviceClass),
        *({"state_classes": [str(value)]} for value in SensorStateClass),
        {"device_classes": ["temperature", "aqi"]},
        {"device_classes": ["temperature", "monetary"]},
        {"device_classes": ["energy"], "state_classes": ["total_increasing"]},
        {"device_classes": ["wind_direction"], "state_classes": ["measurement_angle"]},
    ],
    ids=str,
)
def test_units_are_home_assistants(config: dict[str, list[str]]) -> None:
    """The units offered are those Home Assistant's selector takes.

    A selector that takes any unit gets none listed; one limited to units
    lists each, and a unit of no class is refused by it.
    """
    schema = value_schema({"unit_of_measurement": config})
    check = selector.UnitOfMeasurementSelector(config)
    if "enum" not in schema:
        assert accepts(check, "furlongs")
    else:
        assert all(accepts(check, unit) for unit in schema["enum"])
        assert not accepts(check, "furlongs")


class FutureDomainSelector(selector.DeviceClassSelector):
    """A device class selector of a domain that came after this integration."""

    CONFIG_SCHEMA = selector.make_selector_config_schema(
        {
            probatio.Required("domain"): str,
            probatio.Optional("multiple", default=False): bool,
        }
    )


class FutureModeSelector(selector.AutomationBehaviorSelector):
    """An automation behavior selector of a mode that came after this integration."""

    CONFIG_SCHEMA = selector.make_selector_config_schema(
        {probatio.Required("mode"): str}
    )


def test_domains_and_modes_we_do_not_know() -> None:
    """A newer domain's device classes or mode's behaviors are described strings."""
    structure = probatio.Schema(
        {
            probatio.Required("kind"): FutureDomainSelector({"domain": "lawn_mower"}),
            probatio.Required("kinds"): FutureDomainSelector(
                {"domain": "lawn_mower", "multiple": True}
            ),
            probatio.Required("how"): FutureModeSelector({"mode": "action"}),
        }
    )
    properties = structure_to_json_schema(structure)["properties"]
    assert properties == {
        "kind": {"type": "string", "description": "a device class of lawn_mower"},
        "kinds": {
            "type": "array",
            "items": {"type": "string"},
            "description": "a device class of lawn_mower",
        },
        "how": {"type": "string", "description": "a behavior of the action mode"},
    }
