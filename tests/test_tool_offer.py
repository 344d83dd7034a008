"""The tools a turn offers, at the HTTP level: a subset, a call cap, on demand."""

from __future__ import annotations

import json
from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
import pytest

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_CALL_EXAMPLES,
    CONF_MAX_TOOL_CALLS,
    CONF_TOOLS,
    CONF_TOOLS_ON_DEMAND,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.net.transport import ToolSet
from custom_components.openai_compatible.tool_offer import (
    LOOKUP_TOOL,
    MAX_LOOKED_UP,
    ToolOffer,
    call_examples,
)
from simulator import OpenAISimulator, sse_text, sse_tool_calls

from .conftest import SetupEntry, converse, speech

ASSIST = {CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}
TURN_ON = "intent__HassTurnOn"
LIVE_CONTEXT = "homeassistant__GetLiveContext"


def names(body: dict[str, Any]) -> list[str]:
    """Return the names of a request's tools, in order."""
    return [tool["function"]["name"] for tool in body.get("tools") or ()]


async def test_only_the_chosen_tools_are_sent(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A subset is sent alone; a chosen name the API lacks is not offered."""
    await setup_entry(
        conversation=ASSIST | {CONF_TOOLS: [TURN_ON, LIVE_CONTEXT, "gone__Tool"]}
    )

    await converse(hass, "turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    first, _ = simulator.chat_requests()
    assert names(first) == [LIVE_CONTEXT, TURN_ON]


async def test_all_tools_without_a_choice(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Without a subset every tool of the API is sent, and no lookup tool."""
    await setup_entry(conversation=ASSIST | {CONF_TOOLS: []})

    await converse(hass, "hello")

    (body,) = simulator.chat_requests()
    assert {TURN_ON, "intent__HassTurnOff", LIVE_CONTEXT} <= set(names(body))
    assert "find_tools" not in names(body)


async def test_calls_past_the_cap_are_answered_not_run(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """The call past the cap does not run; its result tells the model to answer."""
    await setup_entry(conversation=ASSIST | {CONF_MAX_TOOL_CALLS: 1})
    for call_id, tool in (("call_on", TURN_ON), ("call_off", "intent__HassTurnOff")):
        simulator.enqueue(
            "/chat/completions",
            sse=sse_tool_calls([(call_id, tool, {"name": "Kitchen light"})]),
        )
    simulator.enqueue("/chat/completions", sse=sse_text("The light is on."))

    result = await converse(hass, "turn on the kitchen light, then off")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result) == "The light is on."
    *_, last = simulator.chat_requests()
    told = json.loads(last["messages"][-1]["content"])
    assert told["error"] == "tool_call_limit"
    assert last["messages"][-2]["tool_calls"][0]["id"] == "call_off"
    assert json.loads(last["messages"][-2]["tool_calls"][0]["function"]["arguments"])


async def test_tools_on_demand_look_up_then_call(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """The lookup tool alone, then the found tools appended; the light turns on."""
    await setup_entry(conversation=ASSIST | {CONF_TOOLS_ON_DEMAND: True})

    result = await converse(hass, "turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result)
    first, second, third = simulator.chat_requests()
    assert names(first) == ["find_tools"]
    assert names(second)[0] == "find_tools"
    assert TURN_ON in names(second)
    assert names(third) == names(second)
    found = json.loads(second["messages"][-1]["content"])
    assert [tool["name"] for tool in found["tools"]] == names(second)[1:]
    assert second["tools"][1]["function"]["parameters"]


async def test_looked_up_tools_last_the_conversation(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """The next turn starts with what was found; tools found later go at the end."""
    await setup_entry(conversation=ASSIST | {CONF_TOOLS_ON_DEMAND: True})
    first_turn = await converse(hass, "turn on the kitchen light")
    found = names(simulator.chat_requests()[-1])

    await converse(hass, "what is the weather like?", first_turn.conversation_id)
    await converse(hass, "hello")

    requests = simulator.chat_requests()
    assert names(requests[3]) == found
    assert names(requests[4])[: len(found)] == found
    assert LIVE_CONTEXT in names(requests[4])
    assert names(requests[-1]) == ["find_tools"]


async def test_tools_on_demand_over_responses(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """Over the Responses API the lookup is answered and the found tool runs."""
    await setup_entry(
        conversation=ASSIST | {CONF_TOOLS_ON_DEMAND: True},
        options={CONF_API: WireApi.RESPONSES},
    )

    await converse(hass, "turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    first, second, *_ = simulator.responses_requests()
    assert [tool["name"] for tool in first["tools"]] == ["find_tools"]
    assert TURN_ON in [tool["name"] for tool in second["tools"]]
    found = json.loads(second["input"][-1]["output"])
    assert found["note"] == "These tools can be called now."


@pytest.mark.parametrize(
    ("provider", "examples", "shown"),
    [
        ("llama_cpp", None, True),
        ("llama_cpp", False, False),
        ("custom", None, False),
        ("custom", True, True),
    ],
)
async def test_examples_of_calls_on_a_local_server(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    examples: bool | None,
    shown: bool,
) -> None:
    """A local agent shows examples of the offered tools after the instructions."""
    option = {} if examples is None else {CONF_CALL_EXAMPLES: examples}
    await setup_entry(provider=provider, conversation=ASSIST | option)

    await converse(hass, "hello")

    (body,) = simulator.chat_requests()
    system = body["messages"][0]["content"]
    assert ("Examples of calls" in system) is shown
    if shown:
        examples_text = system.split("Examples of calls", 1)[1]
        turn_on = {"name": TURN_ON, "arguments": {"name": "espresso machine"}}
        assert (
            f"Turn on the espresso machine → {json.dumps(turn_on)}\n" in examples_text
        )
        live = {"name": LIVE_CONTEXT, "arguments": {}}
        assert f"{json.dumps(live)}, then answer with what it returns" in examples_text


async def test_examples_only_of_offered_tools(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A tool not offered has no example; with none of them, no examples at all."""
    await setup_entry(
        provider="llama_cpp", conversation=ASSIST | {CONF_TOOLS: [LIVE_CONTEXT]}
    )

    await converse(hass, "hello")

    (body,) = simulator.chat_requests()
    assert TURN_ON not in body["messages"][0]["content"]
    assert LIVE_CONTEXT in body["messages"][0]["content"]
    assert call_examples(ToolSet([], {}, {})) == ""
    timers = ToolSet(
        [],
        {"HassCancelTimer": "HassCancelTimer"},
        {"HassCancelTimer": "HassCancelTimer"},
    )
    assert call_examples(timers) == ""


def test_a_full_lookup_says_so(hass: HomeAssistant) -> None:
    """Past the conversation's limit, a lookup names what fits and says why."""
    wire = [f"qa{chr(97 + index // 26)}{chr(97 + index % 26)}" for index in range(20)]
    tools: list[Any] = [
        {"type": "function", "function": {"name": name, "description": ""}}
        for name in wire
    ]
    by_name = {name: name for name in wire}
    offer = ToolOffer(
        ToolSet(tools, by_name, by_name),
        {CONF_TOOLS_ON_DEMAND: True},
        conversation.ChatLog(hass, "full"),
    )
    for start in range(0, 20, 5):
        query = " ".join(wire[start : start + 5])
        result = offer.answer(llm.ToolInput(LOOKUP_TOOL, {"query": query}))

    assert result is not None
    assert result.data["note"].endswith(
        f"At most {MAX_LOOKED_UP} tools can be looked up in a conversation."
    )
    assert result.data["tools"] == [{"name": wire[15], "description": ""}]
