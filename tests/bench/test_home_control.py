"""The benchmark's home in a real Home Assistant: what a right call does is judged right.

Each action of bench/home.py is carried out the way a model that understood
it would: by calling the Assist API's tools with the device's name. The home
must then be judged as asked, so a model that fails a command in the
benchmark failed it, not the home.
"""

from __future__ import annotations

from typing import Any

from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm

from bench._home_control_pytest import async_reset, async_setup_home, snapshot
from bench.home import ADDED, BY_ID, COMMANDS, Command, judge

# The tool a right call uses for each expected state, by state.
STATE_TOOLS = {
    "on": "intent__HassTurnOn",
    "open": "intent__HassTurnOn",
    "locked": "intent__HassTurnOn",
    "off": "intent__HassTurnOff",
    "closed": "intent__HassTurnOff",
    "unlocked": "intent__HassTurnOff",
    "paused": "media_player__HassMediaPause",
    "playing": "media_player__HassMediaUnpause",
    "cleaning": "vacuum__HassVacuumStart",
    "returning": "vacuum__HassVacuumReturnToBase",
}
# The tool and its argument for each expected field, by field.
FIELD_TOOLS = {
    ADDED: ("todo__HassListAddItem", "item"),
    "brightness": ("light__HassLightSet", "brightness"),
    "position": ("intent__HassSetPosition", "position"),
    "percentage": ("fan__HassFanSetSpeed", "percentage"),
    "temperature": ("climate__HassClimateSetTemperature", "temperature"),
    "volume": ("media_player__HassSetVolume", "volume_level"),
}


def right_calls(command: Command) -> list[tuple[str, dict[str, Any]]]:
    """Return the tool calls that carry out a command, one per device."""
    calls = []
    for entity_id, fields in command.expect.items():
        name = BY_ID[entity_id].name
        field = next((f for f in FIELD_TOOLS if f in fields), None)
        if field is None:
            calls.append((STATE_TOOLS[fields["state"]], {"name": name}))
        else:
            tool, argument = FIELD_TOOLS[field]
            calls.append((tool, {"name": name, argument: fields[field]}))
    return calls


async def _api(hass: HomeAssistant) -> llm.APIInstance:
    return await llm.async_get_api(
        hass,
        llm.LLM_API_ASSIST,
        llm.LLMContext("conversation", Context(), "en", "conversation", None),
    )


async def test_the_right_calls_are_judged_good(hass: HomeAssistant) -> None:
    """Every action can be done with the Assist API's tools, and is then ✓."""
    home = await async_setup_home(hass)
    api = await _api(hass)
    wrong = []
    for command in (c for c in COMMANDS if c.expect):
        before = await async_reset(hass, home, command)
        for tool, arguments in right_calls(command):
            result = await api.async_call_tool(llm.ToolInput(tool, arguments))
            if result.error:
                wrong.append((command.text, tool, arguments, result.data))
        await hass.async_block_till_done()
        verdict = judge(command, before, snapshot(hass, home), "Done.")
        if not verdict.good:
            wrong.append((command.text, verdict.why))
    assert not wrong


async def test_a_wrong_call_is_judged_wrong(hass: HomeAssistant) -> None:
    """The near-namesake turned on instead is ✗, the real one untouched."""
    home = await async_setup_home(hass)
    api = await _api(hass)
    command = next(c for c in COMMANDS if c.text == "Turn on the kitchen light")
    before = await async_reset(hass, home, command)

    await api.async_call_tool(
        llm.ToolInput("intent__HassTurnOn", {"name": "Kitchen counter lights"})
    )
    await hass.async_block_till_done()

    verdict = judge(command, before, snapshot(hass, home), "Done.")
    assert not verdict.good
    assert "light.kitchen_counter_lights state 'off' → 'on'" in verdict.why
