"""Arguments cleaned before a call runs: placeholders out, names as the home has them."""

from __future__ import annotations

from typing import Any

from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar, entity_registry as er, llm
import pytest

from custom_components.openai_compatible.net.transport import ToolSet
from custom_components.openai_compatible.wire.call_arguments import ArgumentCleaner
from custom_components.openai_compatible.wire.tool_calls import words

pytestmark = pytest.mark.usefixtures("small_home")

TARGETS = {
    "name": {"type": "string"},
    "device_class": {"type": "array", "items": {"type": "string"}},
    "area": {"type": "string"},
    "floor": {"type": "string"},
    "domain": {"type": "array", "items": {"type": "string"}},
}


def tool_set(tools: dict[str, dict[str, Any]]) -> ToolSet:
    """Return a set offering the tools (object parameters, by name), named as is."""
    return ToolSet(
        [
            {
                "type": "function",
                "function": {"name": name, "parameters": {"type": "object", **given}},
            }
            for name, given in tools.items()
        ],
        {},
        {name: name for name in tools},
    )


TOOL_SET = tool_set(
    {
        "intent__HassTurnOn": {"properties": TARGETS},
        "light__HassLightSet": {
            "properties": {**TARGETS, "brightness": {"type": "integer"}}
        },
        "todo__HassListAddItem": {
            "properties": {"item": {"type": "string"}, "name": TARGETS["name"]},
            "required": ["item", "name"],
        },
        "script__notify": {"properties": {"message": {"type": "string"}}},
    }
)


def cleaned(hass: HomeAssistant, arguments: dict[str, Any], tool: str = "") -> Any:
    """Return the arguments of a call as they run."""
    call = llm.ToolInput(tool or "intent__HassTurnOn", arguments, id="c1")
    result = ArgumentCleaner(hass, TOOL_SET).clean(call)
    assert result.id == "c1"
    return result.tool_args


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("garageDoor", "garage door"),
        ("living_room_light", "living room light"),
        ("Living Room  Light", "living room light"),
        ("light.kitchen-lights", "light kitchen lights"),
    ],
)
def test_words(name: str, expected: str) -> None:
    """Code style, snake case and spacing all read as the same words."""
    assert words(name) == expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # The issue's placeholders, as Qwen2.5-Coder 0.5B wrote them.
        (
            {"name": "Garage Door", "floor": "unknown", "domain": [""]},
            {"name": "Garage Door"},
        ),
        (
            {"name": "Garage Door", "floor": "0", "area": "None"},
            {"name": "Garage Door"},
        ),
        (
            {"name": "Garage Door", "area": None, "floor": "n/a"},
            {"name": "Garage Door"},
        ),
        # Names in code style, as the home writes them.
        ({"name": "garageDoor"}, {"name": "Garage Door"}),
        ({"name": "kitchen_lights"}, {"name": "Kitchen Lights"}),
        ({"name": "light.kitchen_lights"}, {"name": "Kitchen Lights"}),
        (
            {"area": "livingRoom", "domain": "lights"},
            {"area": "Living Room", "domain": "light"},
        ),
        (
            {"floor": "ground_floor", "domain": ["light"]},
            {"floor": "Ground Floor", "domain": ["light"]},
        ),
        # Places the home lacks go where the name says enough.
        (
            {"name": "Reading Lamp", "area": "Attic", "domain": ["lamp"]},
            {"name": "Reading Lamp"},
        ),
        # So do places where the named device is not.
        # Qwen2.5-Coder 1.5B on llama-server, asked to close the garage door
        (
            {"name": "Garage Door", "area": "Living Room", "domain": ["cover"]},
            {"name": "Garage Door", "domain": ["cover"]},
        ),
        (
            {"name": "Reading Lamp", "area": "Living Room", "floor": "Ground Floor"},
            {"name": "Reading Lamp", "area": "Living Room", "floor": "Ground Floor"},
        ),
        (
            {"name": "Kitchen Lights", "floor": "ground_floor"},
            {"name": "Kitchen Lights"},
        ),
        # Qwen2.5-Coder 1.5B on llama-server, asked to close the garage door
        (
            {"name": "Garage Door", "domain": "cover", "device_class": ["door"]},
            {"name": "Garage Door", "domain": "cover"},
        ),
        (
            {"name": "Garage Door", "device_class": ["door", "garage"]},
            {"name": "Garage Door", "device_class": ["door", "garage"]},
        ),
        # Where nothing else says what is meant, they stay: the intent tells.
        ({"area": "Attic", "domain": ["lamp"]}, {"area": "Attic", "domain": ["lamp"]}),
        # A part of one name, or a domain of one entity, is that one.
        ({"name": "garage"}, {"name": "Garage Door"}),
        ({"name": "cover"}, {"name": "Garage Door"}),
        (
            {"name": "lamp", "area": "lights"},
            {"name": "Reading Lamp", "domain": ["light"]},
        ),
        # Qwen2.5-Coder 0.5B on llama-server, asked to close the garage door
        (
            {"name": "garage", "area": "floor", "floor": "garage"},
            {"name": "Garage Door"},
        ),
        # Qwen2.5-Coder 0.5B: "Ceiling fan speed 75 percent", its key as its name.
        (
            {"name": "name", "area": "Living Room", "domain": ["light"]},
            {"area": "Living Room", "domain": ["light"]},
        ),
        # Qwen2.5-Coder 0.5B: "Turn off the lights in the living room".
        (
            {"name": "living room", "domain": ["light"]},
            {"area": "Living Room", "domain": ["light"]},
        ),
        ({"name": "ground floor"}, {"floor": "Ground Floor"}),
        # Qwen2.5-Coder 1.5B: "Set the temperature in the bedroom to 19".
        (
            {"name": "living room", "area": "Living Room", "domain": ["light"]},
            {"area": "Living Room", "domain": ["light"]},
        ),
        (
            {"name": "living room", "area": "Attic", "domain": ["light"]},
            {"name": "living room", "domain": ["light"]},
        ),
        # Another form of a word of the name: "the living room curtain".
        ({"name": "kitchen light"}, {"name": "Kitchen Lights"}),
        ({"name": "garage doors"}, {"name": "Garage Door"}),
        # What fits nothing, or more than one, is left as it is.
        ({"name": "Porch Light"}, {"name": "Porch Light"}),
        ({"name": "light"}, {"name": "light"}),
        ({"name": "_"}, {"name": "_"}),
    ],
)
async def test_arguments_are_cleaned(
    hass: HomeAssistant, arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Placeholders go, code-style names become the home's, unknown places go."""
    assert cleaned(hass, arguments) == expected


async def test_required_and_numeric_arguments_stay(hass: HomeAssistant) -> None:
    """A required argument is never dropped; numbers are not placeholders."""
    assert cleaned(
        hass, {"item": "none", "name": "unknown"}, "todo__HassListAddItem"
    ) == {"item": "none", "name": "unknown"}
    assert cleaned(
        hass, {"name": "Kitchen Lights", "brightness": 0}, "light__HassLightSet"
    ) == {"name": "Kitchen Lights", "brightness": 0}
    assert cleaned(
        hass, {"name": "Kitchen Lights", "brightness": "0"}, "light__HassLightSet"
    ) == {"name": "Kitchen Lights", "brightness": "0"}


async def test_a_call_that_needs_nothing_is_the_same_call(hass: HomeAssistant) -> None:
    """Calls already right, of other tools, or answered here are left alone."""
    cleaner = ArgumentCleaner(hass, TOOL_SET)
    right = llm.ToolInput("intent__HassTurnOn", {"name": "Kitchen Lights"})
    other = llm.ToolInput("GetLiveContext", {"name": "unknown"})
    answered = llm.ToolInput("intent__HassTurnOn", {"floor": "0"}, external=True)
    for call in (right, other, answered):
        assert cleaner.clean(call) is call


async def test_names_are_read_only_for_tools_that_take_them(
    hass: HomeAssistant,
) -> None:
    """A tool that takes no name, place or domain gets them as the model wrote them."""
    arguments = {"message": "hi", "name": "kitchen_lights", "domain": "lights"}
    assert cleaned(hass, arguments, "script__notify") == arguments
    assert cleaned(hass, {"name": "kitchen_lights", "domain": "lights"}) == {
        "name": "Kitchen Lights",
        "domain": "light",
    }


async def test_two_names_that_read_alike_are_left_as_written(
    hass: HomeAssistant,
) -> None:
    """A name that reads as two of the home's is not guessed."""
    hass.states.async_set(
        "switch.kitchen_lights", "off", {"friendly_name": "Kitchen-Lights"}
    )
    async_expose_entity(hass, "conversation", "switch.kitchen_lights", True)
    assert cleaned(hass, {"name": "kitchen_lights"}) == {"name": "kitchen_lights"}


async def test_a_name_of_another_domain_gives_way_to_the_asked_one(
    hass: HomeAssistant,
) -> None:
    """Qwen2.5-Coder 0.5B put the kind of device where the area goes.

    "Kitchen" is a speaker, but the call asks for a light: the kitchen's.
    """
    hass.states.async_set("media_player.kitchen", "off", {"friendly_name": "Kitchen"})
    async_expose_entity(hass, "conversation", "media_player.kitchen", True)

    assert cleaned(hass, {"name": "Kitchen", "area": "light"}) == {
        "name": "Kitchen Lights",
        "domain": ["light"],
    }
    assert cleaned(hass, {"name": "Kitchen"}) == {"name": "Kitchen"}


SPEED = {
    "allOf": [{"type": "integer"}, {"type": "number", "minimum": 0, "maximum": 100}],
    "description": "The speed percentage of the fan",
}
LIGHT_SET = {
    **TARGETS,
    "device_class": {
        "type": "array",
        "items": {"type": "string", "enum": ["door", "garage", "outlet"]},
    },
    "brightness": {"type": "integer"},
    "color": {"type": "string"},
    "temperature": {"type": "integer"},
}
INTENT_SET = tool_set(
    {
        "intent__HassTurnOn": {"properties": LIGHT_SET},
        "light__HassLightSet": {"properties": LIGHT_SET},
        "script__party": {"properties": LIGHT_SET},
        "fan__HassFanSetSpeed": {
            "properties": {**TARGETS, "percentage": SPEED},
            "required": ["percentage"],
        },
    }
)


@pytest.mark.parametrize(
    ("asked", "tool", "arguments", "expected"),
    [
        # Qwen2.5-Coder 0.5B on llama-server: "Turn on the kitchen light".
        (
            "Turn on the kitchen light",
            "intent__HassTurnOn",
            {"name": "light", "area": "Living Room", "device_class": ["light"]},
            {"area": "Living Room", "domain": ["light"]},
        ),
        (
            "Turn off the lights in the living room",
            "intent__HassTurnOn",
            {"name": "lights", "area": "Living Room", "device_class": ["light"]},
            {"area": "Living Room", "domain": ["light"]},
        ),
        # Offered device classes stay; a kind of device with no place stays a name.
        (
            "Open the garage",
            "intent__HassTurnOn",
            {"name": "light", "device_class": ["garage", "light"]},
            {"name": "light", "device_class": ["garage"]},
        ),
        # "Make the office light full brightness": a colour and a colour
        # temperature nobody asked for made the light refuse the call.
        (
            "Make the reading lamp full brightness",
            "light__HassLightSet",
            {
                "name": "Reading Lamp",
                "color": "white",
                "temperature": 100,
                "brightness": 100,
            },
            {"name": "Reading Lamp", "brightness": 100},
        ),
        (
            "Set the reading lamp to 20%",
            "light__HassLightSet",
            {"name": "Reading Lamp", "color": "white", "brightness": 20},
            {"name": "Reading Lamp", "brightness": 20},
        ),
        (
            "Make the reading lamp red",
            "light__HassLightSet",
            {"name": "Reading Lamp", "color": "red", "brightness": 100},
            {"name": "Reading Lamp", "color": "red"},
        ),
        # The place and the name together name one device: that one.
        (
            "Turn on the kitchen light",
            "intent__HassTurnOn",
            {"name": "lights", "area": "kitchen", "device_class": ["light"]},
            {"name": "Kitchen Lights", "area": "Kitchen"},
        ),
        # Qwen2.5-Coder 0.5B: "Kitchen light on, please".
        (
            "Living room light on, please",
            "intent__HassTurnOn",
            {"name": "light", "area": "Living Room", "floor": "all"},
            {"area": "Living Room", "domain": ["light"]},
        ),
        # Qwen2.5-Coder 0.5B: "Turn on the coffee maker", with a domain of
        # another device, and keys copied from the schema.
        (
            "Open the garage door",
            "intent__HassTurnOn",
            {
                "name": "garage door",
                "domain": "light",
                "percentage": "100",
                "required": ["percentage"],
            },
            {"name": "Garage Door"},
        ),
        # Where the words name no setting (another language), all stay.
        (
            "Leselampe volle Helligkeit",
            "light__HassLightSet",
            {"name": "Reading Lamp", "color": "white", "brightness": 100},
            {"name": "Reading Lamp", "color": "white", "brightness": 100},
        ),
        # Qwen2.5-Coder 0.5B: the one number said, for one the call left out
        # or filled with its schema.
        (
            "Set the kitchen fan to 50%",
            "fan__HassFanSetSpeed",
            {"name": "Kitchen Lights", "percentage": SPEED},
            {"name": "Kitchen Lights", "percentage": 50},
        ),
        (
            "Kitchen fan at 37.5 percent",
            "fan__HassFanSetSpeed",
            {"name": "Kitchen Lights"},
            {"name": "Kitchen Lights", "percentage": 37.5},
        ),
        (
            "Put the kitchen fan on",
            "fan__HassFanSetSpeed",
            {"name": "Kitchen Lights", "percentage": SPEED},
            {"name": "Kitchen Lights", "percentage": SPEED},
        ),
        (
            "Kitchen fan from 20 to 30",
            "fan__HassFanSetSpeed",
            {"name": "Kitchen Lights"},
            {"name": "Kitchen Lights"},
        ),
        # Only a number's schema counts as copied: a tool's own object stays.
        (
            "File a bug",
            "script__party",
            {"color": {"type": "bug", "description": "It breaks"}},
            {"color": {"type": "bug", "description": "It breaks"}},
        ),
        # A word of a kind of device, in a known place: the device of both.
        (
            "Open the kitchen curtains",
            "intent__HassTurnOn",
            {"name": "curtain", "area": "Kitchen"},
            {"name": "Kitchen Curtains"},
        ),
        # A tool that is no intent keeps what it was given.
        (
            "Start the party at full brightness",
            "script__party",
            {"color": "white", "brightness": 100},
            {"color": "white", "brightness": 100},
        ),
    ],
)
async def test_what_the_user_asked_for_is_what_runs(
    hass: HomeAssistant,
    asked: str,
    tool: str,
    arguments: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    """Kinds of device in a place, offered device classes, the settings asked for."""
    kitchen = ar.async_get(hass).async_create("Kitchen")
    er.async_get(hass).async_update_entity("light.kitchen_lights", area_id=kitchen.id)
    for room in ("kitchen", "bedroom"):
        entity_id = f"cover.{room}_curtains"
        hass.states.async_set(
            entity_id, "closed", {"friendly_name": f"{room.title()} Curtains"}
        )
        async_expose_entity(hass, "conversation", entity_id, True)
    cleaner = ArgumentCleaner(
        hass,
        INTENT_SET,
        asked=asked,
        intents={"intent__HassTurnOn", "light__HassLightSet", "fan__HassFanSetSpeed"},
    )
    assert cleaner.clean(llm.ToolInput(tool, arguments)).tool_args == expected


@pytest.mark.parametrize(
    "arguments",
    [
        {"name": ["Kitchen"]},
        {"name": {"value": "Kitchen"}},
        {"domain": [{"value": "light"}]},
        {"domain": [["light"]]},
    ],
)
def test_arguments_that_are_not_words_are_left_as_given(
    hass: HomeAssistant, arguments: dict[str, Any]
) -> None:
    """A name or domain given as an object or nested list goes as it came.

    Home Assistant's own check of the call then answers the model.
    """
    assert cleaned(hass, arguments) == arguments
