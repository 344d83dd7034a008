"""The order of a rendered request: what stays the same from one conversation to the next.

A satellite starts a new conversation for every command. Its first request
repeats the previous command's as far as the two agree: the system prompt
and the tools first, what varies by device or command (the device's area,
whether it takes timers, a satellite's extra system prompt, the date) at the
start of the user's message.
"""

from __future__ import annotations

from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.components.intent import async_register_timer_handler
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    device_registry as dr,
    floor_registry as fr,
    llm,
)
import probatio
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import CONF_API, CONF_HISTORY_TURNS
from custom_components.openai_compatible.features import WireApi
from custom_components.openai_compatible.wire.render import split_instructions
from simulator import OpenAISimulator

from ..conftest import AGENT, SetupEntry, converse

KITCHEN_AREA = "You are in area Kitchen and all generic commands"
BEDROOM_AREA = "You are in area Bedroom (floor Upstairs)"
NO_TIMERS = "This device is not able to start timers."
SATELLITE_PROMPT = "The user is in a hurry."


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Keep the date line stable."""
    freezer.move_to("2026-11-29 12:00:00+00:00")


def _device(hass: HomeAssistant, name: str, area: str, floor: str | None) -> str:
    """Return a new satellite device, in an area (on a floor)."""
    source = MockConfigEntry(domain="satellite_maker")
    source.add_to_hass(hass)
    floor_id = fr.async_get(hass).async_create(floor).floor_id if floor else None
    area_id = ar.async_get(hass).async_create(area, floor_id=floor_id).id
    devices = dr.async_get(hass)
    device = devices.async_get_or_create(
        config_entry_id=source.entry_id, identifiers={("satellite_maker", name)}
    )
    devices.async_update_device(device.id, area_id=area_id)
    return device.id


async def _command(
    hass: HomeAssistant, text: str, device_id: str, extra: str | None = None
) -> None:
    """Say a command on a satellite: a new conversation."""
    await conversation.async_converse(
        hass,
        text,
        None,
        Context(),
        agent_id=AGENT,
        device_id=device_id,
        extra_system_prompt=extra,
    )


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body["tools"]]


@pytest.mark.parametrize("api", [WireApi.CHAT_COMPLETIONS, WireApi.RESPONSES])
async def test_commands_of_two_satellites_share_the_system_prompt_and_tools(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    api: WireApi,
) -> None:
    """What varies by device or command comes after the system prompt and tools."""
    await setup_entry(
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]},
        options={CONF_API: api.value},
    )
    kitchen = _device(hass, "kitchen", "Kitchen", None)
    bedroom = _device(hass, "bedroom", "Bedroom", "Upstairs")

    await _command(hass, "Good morning", kitchen)
    await _command(hass, "Good morning", bedroom, SATELLITE_PROMPT)

    if api is WireApi.CHAT_COMPLETIONS:
        first, second = (body["messages"] for body in simulator.chat_requests())
        tools = [_tool_names(body) for body in simulator.chat_requests()]
    else:
        first, second = (body["input"] for body in simulator.responses_requests())
        tools = [
            [tool["name"] for tool in body["tools"]]
            for body in simulator.responses_requests()
        ]
    assert first[0] == second[0]
    assert tools[0] == tools[1]
    assert [message["role"] for message in first] == ["system", "user"]
    system = first[0]["content"]
    assert "Static Context" in system
    for varying in (KITCHEN_AREA, BEDROOM_AREA, NO_TIMERS, SATELLITE_PROMPT):
        assert varying not in system
    assert first[1]["content"].startswith(KITCHEN_AREA)
    assert first[1]["content"].endswith(f"{NO_TIMERS}\n\nGood morning")
    assert second[1]["content"].startswith(BEDROOM_AREA)
    assert second[1]["content"].endswith(
        f"{NO_TIMERS}\n{SATELLITE_PROMPT}\n\nGood morning"
    )


async def test_the_tools_only_some_devices_get_come_last(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A satellite that takes timers gets the timer tools after everyone's tools."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    kitchen = _device(hass, "kitchen", "Kitchen", None)
    bedroom = _device(hass, "bedroom", "Bedroom", None)
    async_register_timer_handler(hass, bedroom, lambda *_: None)

    await _command(hass, "Good morning", kitchen)
    await _command(hass, "Good morning", bedroom)

    without, with_timers = map(_tool_names, simulator.chat_requests())
    assert "intent__HassStartTimer" in with_timers
    assert with_timers[: len(without)] == without
    assert without == sorted(without)


async def test_the_varying_part_stays_when_old_turns_are_dropped(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """It goes into the first user message the fitted request keeps."""
    await setup_entry(
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST], CONF_HISTORY_TURNS: 1}
    )
    conversation_id = None
    for text in ("Hello", "How are you", "Goodbye"):
        result = await converse(hass, text, conversation_id)
        conversation_id = result.conversation_id

    last = simulator.chat_requests()[-1]["messages"]
    users = [message["content"] for message in last if message["role"] == "user"]
    assert len(users) < 3
    assert users[0].startswith("When a user asks to turn on all devices")
    assert users[0].endswith(f"{NO_TIMERS}\n\nHow are you")
    assert users[1:] == ["Goodbye"]
    assert NO_TIMERS not in last[0]["content"]


class _ClockTool(llm.Tool):
    """A tool of an API that tells no time."""

    name = "wind_clock"
    description = "Wind the clock."
    parameters = probatio.Schema({})

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> llm.ToolResult:
        """Wind it."""
        return llm.ToolResult({"wound": True})


class _ClockAPI(llm.API):
    """An API without Home Assistant's date tool: the prompt gets a date line."""

    async def async_get_api_instance(
        self, llm_context: llm.LLMContext
    ) -> llm.APIInstance:
        """Offer the one tool."""
        return llm.APIInstance(self, "Wind it daily.", llm_context, [_ClockTool()])


async def test_the_date_line_goes_after_the_tools(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Where the API tells no time, the date line moves; without tools, it stays."""
    llm.async_register_api(hass, _ClockAPI(hass=hass, id="clock", name="Clock"))
    await setup_entry(conversation={CONF_LLM_HASS_API: ["clock"]})

    await converse(hass, "Hello")
    freezer.tick(61)
    await converse(hass, "Hello")

    first, second = (body["messages"] for body in simulator.chat_requests())
    assert first[0] == second[0]
    assert first[0]["content"].endswith("Wind it daily.")
    assert first[1]["content"].startswith("Current time is 04:00:00.")
    assert second[1]["content"].startswith("Current time is 04:01:01.")


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (
            "Be brief.\nCurrent time is 04:00:00.\n",
            ("Be brief.", "Current time is 04:00:00."),
        ),
        ("Be brief.", ("Be brief.", "")),
    ],
)
def test_split_instructions(text: str, parts: tuple[str, str]) -> None:
    """The date line and what follows it vary; a prompt without it does not."""
    assert split_instructions(text) == parts
