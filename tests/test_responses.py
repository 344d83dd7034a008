"""The Responses API adapter: conversations over /responses against the simulator."""

from __future__ import annotations

from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
import pytest
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.capabilities import Feature, WireApi
from custom_components.openai_compatible.const import CONF_API, CONF_STREAMING
from simulator import (
    OpenAISimulator,
    function_call_item,
    message_item,
    reasoning_item,
    response_stream,
    usage_block,
)

from .conftest import SetupEntry, converse, speech, stored_chat_log

REASONING_MODEL = "gpt-5-mini"
NO_TOOLS = {CONF_LLM_HASS_API: [], CONF_PROMPT: "You are a test assistant."}


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Keep the date in the system prompt stable for snapshots."""
    freezer.move_to("2026-11-29 12:00:00+00:00")


def paths(simulator: OpenAISimulator) -> list[str]:
    """Return the API routes the integration posted to, in order."""
    return [
        request.path.removeprefix("/v1")
        for request in simulator.requests
        if request.method == "POST"
    ]


def without_cache_key(body: dict[str, Any]) -> dict[str, Any]:
    """Return a request body without its cache key (the random subentry id)."""
    assert body["prompt_cache_key"]
    return {key: value for key, value in body.items() if key != "prompt_cache_key"}


def last_answer(
    hass: HomeAssistant, conversation_id: str
) -> conversation.AssistantContent:
    """Return the last message of the conversation's chat log."""
    last = stored_chat_log(hass, conversation_id).content[-1]
    assert isinstance(last, conversation.AssistantContent)
    return last


async def test_plain_answer(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """The OpenAI preset talks to /responses, statelessly, by default."""
    entry = await setup_entry(provider="openai", conversation=NO_TOOLS)

    result = await converse(hass, "Hello")

    assert speech(result) == "You said: Hello"
    assert paths(simulator) == ["/responses"]
    [body] = simulator.responses_requests()
    assert body["store"] is False
    assert body["stream"] is True
    assert without_cache_key(body) == snapshot
    counts = entry.runtime_data.usage.counts(
        next(iter(entry.subentries.values())).subentry_id
    )
    assert (counts.requests, counts.completion_tokens) == (1, 4)


async def test_tool_loop_turns_on_light(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    snapshot: SnapshotAssertion,
) -> None:
    """A function call runs in Home Assistant; its output goes back as an item."""
    await setup_entry(provider="openai")
    simulator.enqueue(
        "/responses",
        sse=response_stream(
            [
                function_call_item(
                    "call_light1", "intent__HassTurnOn", '{"name": "Kitchen light"}'
                )
            ]
        ),
    )

    result = await converse(hass, "Turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result) == "Turned on Kitchen light."
    first, second = simulator.responses_requests()
    assert second["input"][: len(first["input"])] == first["input"]
    call, output = second["input"][-2:]
    assert call["type"] == "function_call"
    assert call["name"] == "intent__HassTurnOn"
    assert output["type"] == "function_call_output"
    assert output["call_id"] == call["call_id"]
    assert all(tool.get("strict") is False for tool in first["tools"])
    assert first["prompt_cache_key"] == second["prompt_cache_key"]
    assert [without_cache_key(first), without_cache_key(second)] == snapshot


async def test_reasoning_chain_goes_back_encrypted(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A reasoning model's items go back as given, across rounds and turns."""
    await setup_entry(provider="openai", conversation={"chat_model": REASONING_MODEL})

    first = await converse(hass, "Turn on the kitchen light")
    second = await converse(hass, "Thanks", first.conversation_id)

    assert speech(first) == "Turned on Kitchen light."
    assert speech(second).startswith("You said: Thanks")
    requests = simulator.responses_requests()
    assert len(requests) == 3
    assert all(body["include"] == ["reasoning.encrypted_content"] for body in requests)
    kinds = [item["type"] for item in requests[2]["input"]]
    assert kinds[1:] == [
        "message",  # the user's first message
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "message",  # the answer
        "message",  # the user's thanks
    ]
    assert requests[1]["input"] == requests[2]["input"][: len(requests[1]["input"])]


async def test_thinking_is_shown_not_spoken(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Reasoning summaries and think tags become thinking, never speech."""
    await setup_entry(provider="openai", conversation=NO_TOOLS)
    simulator.enqueue(
        "/responses",
        sse=response_stream(
            [
                reasoning_item("The user greets."),
                reasoning_item("Answer kindly."),
                message_item("<think>hidden</think>Hi there"),
            ],
            usage=usage_block(20, 8, cached=16, reasoning=5),
        ),
    )

    result = await converse(hass, "Hello")

    assert speech(result) == "Hi there"
    answer = last_answer(hass, result.conversation_id)
    assert answer.thinking_content == "The user greets.\n\nAnswer kindly.hidden"


async def test_automatic_falls_back_to_chat_completions(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A server without /responses is answered over Chat Completions, and learned."""
    simulator.settings.responses = False
    entry = await setup_entry(provider="openai", conversation=NO_TOOLS)

    result = await converse(hass, "Hello")
    assert speech(result) == "You said: Hello"
    assert paths(simulator) == ["/responses", "/chat/completions"]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.RESPONSES_API)

    simulator.requests.clear()
    await converse(hass, "Again")
    assert paths(simulator) == ["/chat/completions"]


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, {"detail": "Not Found"}),
        (405, "Method Not Allowed"),
        (404, "<html><head><title>404 Not Found</title></head></html>"),
        (501, {"error": {"message": "Not Implemented"}}),
    ],
)
async def test_route_refusals_of_other_servers(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    status: int,
    body: Any,
) -> None:
    """Each server's way of saying it has no such route makes the fall back."""
    await setup_entry(provider="azure", conversation=NO_TOOLS)
    if isinstance(body, str):
        simulator.enqueue("/responses", status=status, raw=body)
    else:
        simulator.enqueue("/responses", status=status, json=body)

    result = await converse(hass, "Hello")

    assert speech(result) == "You said: Hello"
    assert paths(simulator)[-2:] == ["/responses", "/chat/completions"]


async def test_an_item_not_found_is_no_missing_route(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 404 about something else is an error, not a reason to fall back."""
    entry = await setup_entry(provider="openai", conversation=NO_TOOLS)
    simulator.enqueue(
        "/responses",
        status=404,
        json={"error": {"message": "Item with id 'rs_1' not found.", "type": "x"}},
    )

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "Item with id 'rs_1' not found." in speech(result)
    assert paths(simulator) == ["/responses"]
    assert not entry.runtime_data.capabilities.model("gpt-4o-mini").refuses(
        Feature.RESPONSES_API
    )


async def test_chosen_responses_api_does_not_fall_back(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Chosen explicitly, the Responses API is used on any preset, refusal or not."""
    simulator.settings.responses = False
    await setup_entry(options={CONF_API: WireApi.RESPONSES}, conversation=NO_TOOLS)

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "Invalid URL (POST /v1/responses)" in speech(result)
    assert paths(simulator) == ["/responses"]


async def test_chosen_chat_completions_on_openai(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Chat Completions chosen for OpenAI: no /responses request at all."""
    await setup_entry(
        provider="openai",
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        conversation=NO_TOOLS,
    )

    await converse(hass, "Hello")

    assert paths(simulator) == ["/chat/completions"]


async def test_whole_answer_when_streaming_is_off(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """With streaming off, the whole response object is read."""
    await setup_entry(
        provider="openai",
        conversation={**NO_TOOLS, "chat_model": REASONING_MODEL, CONF_STREAMING: False},
    )
    simulator.enqueue(
        "/responses",
        json={
            "status": "completed",
            "output": [
                reasoning_item("Plan."),
                message_item("Hi"),
            ],
            "usage": usage_block(10, 2),
        },
    )

    result = await converse(hass, "Hello")

    assert speech(result) == "Hi"
    assert last_answer(hass, result.conversation_id).thinking_content == "Plan."
    assert "stream" not in simulator.responses_requests()[0]


@pytest.mark.parametrize(
    ("events", "error"),
    [
        (
            [{"type": "error", "code": "server_error", "message": "Boom"}],
            "Boom",
        ),
        (
            [
                {
                    "type": "response.failed",
                    "response": {"status": "failed", "error": {"message": "Overload"}},
                }
            ],
            "Overload",
        ),
        (
            response_stream(
                [message_item("Hello wor")],
                status="incomplete",
                reason="max_output_tokens",
            ),
            "maximum number of tokens",
        ),
        (response_stream([message_item("Hello wor")])[:-1], "before it was complete"),
        ([{"type": "response.output_item.done", "item": "not an item"}], "item"),
    ],
)
async def test_answers_that_end_badly(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    events: list[dict[str, Any]],
    error: str,
) -> None:
    """An error, a failure, a cut or a malformed event is told in our words."""
    await setup_entry(provider="openai", conversation=NO_TOOLS)
    simulator.enqueue("/responses", sse=events)

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert error in speech(result)


async def test_calls_of_a_cut_answer_do_not_run(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A function call in an answer cut at the token limit is not run."""
    await setup_entry(provider="openai")
    simulator.enqueue(
        "/responses",
        sse=response_stream(
            [
                function_call_item(
                    "call_1", "intent__HassTurnOn", '{"name": "Kitchen light"}'
                )
            ],
            status="incomplete",
            reason="max_output_tokens",
        ),
    )

    result = await converse(hass, "Turn on the kitchen light")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert hass.states.get(kitchen_light).state == "off"


async def test_history_from_chat_completions_and_other_agents(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A conversation begun over Chat Completions goes on over Responses."""
    entry = await setup_entry(
        provider="openai", options={CONF_API: WireApi.CHAT_COMPLETIONS}
    )
    first = await converse(hass, "Turn on the kitchen light")
    hass.config_entries.async_update_entry(entry, options={CONF_API: WireApi.RESPONSES})
    await hass.async_block_till_done()

    second = await converse(hass, "Thanks", first.conversation_id)

    assert speech(second).startswith("You said: Thanks")
    body = simulator.responses_requests()[0]
    kinds = [item["type"] for item in body["input"]]
    assert kinds == [
        "message",
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]
