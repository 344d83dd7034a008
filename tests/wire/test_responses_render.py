"""The chat log as Responses API input items."""

from __future__ import annotations

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from custom_components.openai_compatible.net.request import ToolSet
from custom_components.openai_compatible.wire.responses_render import InputRenderer
from custom_components.openai_compatible.wire.responses_stream import ResponsesReplay

AGENT = "conversation.other"
TOOLS = ToolSet([], {"Hass Turn On": "Hass_Turn_On"}, {"Hass_Turn_On": "Hass Turn On"})


def _call(call_id: str, *, external: bool = False) -> llm.ToolInput:
    """Return a call of the one tool."""
    return llm.ToolInput(
        "Hass Turn On", {"name": "light"}, id=call_id, external=external
    )


def _result(call_id: str) -> conversation.ToolResultContent:
    """Return the result of a call."""
    return conversation.ToolResultContent(
        AGENT, call_id, "Hass Turn On", llm.ToolResult({"success": True})
    )


async def test_another_agents_answer_goes_back_as_a_message_and_calls(
    hass: HomeAssistant,
) -> None:
    """Text and calls become items under wire names; each call keeps its result."""
    renderer = InputRenderer(hass, TOOLS, AGENT)
    answer = conversation.AssistantContent(
        AGENT, content="On it", tool_calls=[_call("call_1")]
    )

    items = await renderer.async_render([answer, _result("call_1")])

    assert items == [
        {"type": "message", "role": "assistant", "content": "On it"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "Hass_Turn_On",
            "arguments": '{"name":"light"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": '{"success":true}',
        },
    ]


async def test_calls_without_a_result_and_results_without_a_call(
    hass: HomeAssistant,
) -> None:
    """An unanswered call gets a placeholder; a provider-run result is left out."""
    renderer = InputRenderer(hass, TOOLS, AGENT)
    contents: list[conversation.Content] = [
        conversation.AssistantContent(
            AGENT, tool_calls=[_call("call_1"), _call("ws_1", external=True)]
        ),
        _result("ws_1"),
        conversation.UserContent("And now?"),
    ]

    items = await renderer.async_render(contents)

    assert [item["type"] for item in items] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert items[1] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": '{"error":"no result"}',
    }


async def test_an_answer_of_this_api_goes_back_as_it_came(
    hass: HomeAssistant,
) -> None:
    """Reasoning and provider-run calls go back exactly, not as text."""
    replayed = (
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "secret"},
        {"type": "message", "role": "assistant", "content": []},
    )
    answer = conversation.AssistantContent(
        AGENT, content="Hi", native=ResponsesReplay(replayed)
    )

    items = await InputRenderer(hass, TOOLS, AGENT).async_render([answer])

    assert items == list(replayed)


async def test_instructions_go_with_the_tasks_own_message(
    hass: HomeAssistant,
) -> None:
    """The task's instructions follow its message, not a later one."""
    task = conversation.UserContent("Describe the room")
    later = conversation.UserContent("More")
    renderer = InputRenderer(hass, TOOLS, AGENT)

    first = await renderer.async_render([task], (task, "Answer in JSON."))
    again = await renderer.async_render([task, later], (task, "Answer in JSON."))
    plain = await renderer.async_render([task, later])

    assert first[0]["content"] == "Describe the room\n\nAnswer in JSON."
    assert again[0] == first[0]
    assert again[1]["content"] == "More"
    assert plain[0]["content"] == "Describe the room"


async def test_another_agents_native_answer_goes_back_as_a_message(
    hass: HomeAssistant,
) -> None:
    """Reasoning of another agent (a turn handed over) stays with its server."""
    replayed = (
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "secret"},
        {"type": "message", "role": "assistant", "content": []},
    )
    answer = conversation.AssistantContent(
        "conversation.first", content="Hi", native=ResponsesReplay(replayed)
    )

    items = await InputRenderer(hass, TOOLS, AGENT).async_render([answer])

    assert items == [{"type": "message", "role": "assistant", "content": "Hi"}]
