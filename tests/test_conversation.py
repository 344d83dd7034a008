"""The Assist agent and the shared engine, over HTTP against the simulator."""

from __future__ import annotations

import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.components.llm import LLMTools
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import Context, HomeAssistant, callback
from homeassistant.helpers import intent, llm
from homeassistant.setup import async_setup_component
import probatio
import pytest
from pytest_homeassistant_custom_component.common import (
    MockModule,
    mock_integration,
    mock_platform,
)
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.const import CONF_API, Feature
from custom_components.openai_compatible.conversation import SPOKEN_ANSWER
from custom_components.openai_compatible.models.capabilities import WireApi
from simulator import OpenAISimulator, chunk, sse_text, sse_tool_calls

from .conftest import AGENT, SetupEntry, converse, speech, stored_chat_log


class BeamTool(llm.Tool):
    """A tool another integration contributes through its llm.py platform."""

    name = "lighthouse__beam"
    description = "Switch the lighthouse beam."
    parameters = probatio.Schema({probatio.Required("on"): bool})
    integration = "lighthouse"

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> llm.ToolResult:
        """Pretend to switch the beam."""
        return llm.ToolResult({"beam": tool_input.tool_args["on"]})


class LighthouseTools:
    """The llm.py platform of the test integration `lighthouse`."""

    @callback
    def async_get_tools(
        self, hass: HomeAssistant, llm_context: llm.LLMContext, api_id: str
    ) -> LLMTools | None:
        """Offer the beam tool to the Assist API."""
        if api_id != llm.LLM_API_ASSIST:
            return None
        return LLMTools([BeamTool()], prompt="Lighthouse tools are here.")


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Keep the date in the system prompt stable for snapshots."""
    freezer.move_to("2026-11-29 12:00:00+00:00")


async def test_plain_answer(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """A plain question streams a plain answer; the request is minimal."""
    await setup_entry(
        conversation={
            CONF_PROMPT: "You are a helpful assistant.",
            CONF_LLM_HASS_API: [],
        }
    )
    simulator.enqueue("/chat/completions", sse=sse_text("Hello there, friend."))

    result = await converse(hass, "Hello")

    assert result.response.response_type == intent.IntentResponseType.ACTION_DONE
    assert speech(result) == "Hello there, friend."
    assert simulator.chat_requests() == snapshot


async def test_tool_loop_turns_on_light(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    snapshot: SnapshotAssertion,
) -> None:
    """Two rounds: the model calls HassTurnOn, the light turns on, it answers."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue(
        "/chat/completions",
        sse=sse_tool_calls(
            [("call_light1", "intent__HassTurnOn", {"name": "Kitchen light"})]
        ),
    )
    simulator.enqueue("/chat/completions", sse=sse_text("The kitchen light is on."))

    result = await converse(hass, "Turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result) == "The kitchen light is on."
    first, second = simulator.chat_requests()
    assert [tool["function"]["name"] for tool in first["tools"]] == sorted(
        tool["function"]["name"] for tool in first["tools"]
    )
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_light1"
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["tool_call_id"] == "call_light1"
    result_data = json.loads(tool_message["content"])
    assert result_data["response_type"] == "action_done"
    assert result_data["data"]["success"][0]["id"] == kitchen_light
    assert [first, second] == snapshot


async def test_builtin_simulator_turns_on_light(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """The simulator's own behaviour drives the same loop without a script."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})

    result = await converse(hass, "turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result)
    assert len(simulator.chat_requests()) == 2


async def test_stream_reasoning_is_not_spoken(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Reasoning fields and think tags (split across chunks) stay unspoken."""
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    simulator.enqueue(
        "/chat/completions",
        sse=[
            chunk({"role": "assistant", "content": ""}),
            chunk({"reasoning_content": "The user greets. "}),
            chunk({"reasoning": "Answer kindly."}),
            chunk({"content": "<thi"}),
            chunk({"content": "nk>hidden plan</th"}),
            chunk({"content": "ink>\n\nHi"}),
            chunk({"content": " there"}),
            chunk({}, finish_reason="stop"),
        ],
    )

    result = await converse(hass, "Hello")

    assert speech(result) == "Hi there"
    chat_log = stored_chat_log(hass, result.conversation_id)
    last = chat_log.content[-1]
    assert isinstance(last, conversation.AssistantContent)
    assert last.thinking_content == "The user greets. Answer kindly.hidden plan"


async def test_stream_tool_call_quirks(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """Fragmented calls, missing ids and names, null args, shared index, two finishes."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue(
        "/chat/completions",
        sse=[
            chunk({"role": "assistant", "content": None}),
            # First call, fragmented; later fragments lack id and name.
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "intent__HassTurnOn", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"na'}}]}),
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"arguments": 'me": "Kitchen light"}'}}
                    ]
                }
            ),
            # A second call under the same index, with null arguments.
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_b",
                            "function": {
                                "name": "homeassistant__GetLiveContext",
                                "arguments": None,
                            },
                        }
                    ]
                }
            ),
            chunk({}, finish_reason="tool_calls"),
            chunk({}, finish_reason="tool_calls"),
        ],
    )
    simulator.enqueue("/chat/completions", sse=sse_text("Done."))

    result = await converse(hass, "Turn on the kitchen light")

    assert speech(result) == "Done."
    assert hass.states.get(kitchen_light).state == "on"
    second = simulator.chat_requests()[1]
    calls = second["messages"][-3]["tool_calls"]
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls
    ] == [
        ("call_a", "intent__HassTurnOn", '{"name":"Kitchen light"}'),
        ("call_b", "homeassistant__GetLiveContext", "{}"),
    ]
    assert [m["tool_call_id"] for m in second["messages"][-2:]] == ["call_a", "call_b"]


async def test_missing_call_id_gets_one(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A server that sends no call id still gets a consistent id back."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue(
        "/chat/completions",
        sse=[
            chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "function": {
                                "name": "intent__HassTurnOn",
                                "arguments": {"name": "Kitchen light"},
                            },
                        }
                    ],
                },
                finish_reason="tool_calls",
            )
        ],
    )
    simulator.enqueue("/chat/completions", sse=sse_text("Done."))

    await converse(hass, "Turn on the kitchen light")

    second = simulator.chat_requests()[1]
    call_id = second["messages"][-2]["tool_calls"][0]["id"]
    assert call_id.startswith("call_")
    assert second["messages"][-1]["tool_call_id"] == call_id


async def test_multi_turn_prefix_is_stable(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """Each request starts with the previous request's tools and messages, byte for byte."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue(
        "/chat/completions",
        sse=sse_tool_calls(
            [("call_x1", "intent__HassTurnOn", {"name": "Kitchen light"})]
        ),
    )
    simulator.enqueue("/chat/completions", sse=sse_text("It is on."))
    simulator.enqueue("/chat/completions", sse=sse_text("You are welcome."))
    simulator.enqueue("/chat/completions", sse=sse_text("Bye."))

    first = await converse(hass, "Turn on the kitchen light")
    await converse(hass, "Thanks", first.conversation_id)
    await converse(hass, "Bye", first.conversation_id)

    raw = [r.body for r in simulator.requests if r.path.endswith("/chat/completions")]
    bodies = [json.loads(body) for body in raw]
    assert len(bodies) == 4
    for previous, current in zip(bodies, bodies[1:], strict=False):
        assert json.dumps(current["tools"]) == json.dumps(previous["tools"])
        prefix = current["messages"][: len(previous["messages"])]
        assert json.dumps(prefix) == json.dumps(previous["messages"])


@pytest.mark.parametrize(
    "source", [{"satellite_id": "assist_satellite.kitchen"}, {"device_id": "abc123"}]
)
async def test_a_voice_turn_asks_for_spoken_text(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    source: dict[str, str],
) -> None:
    """A turn from a satellite adds one line to the instructions; typed turns don't."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})

    await converse(hass, "Hello")
    await conversation.async_converse(
        hass, "Hello", None, Context(), agent_id=AGENT, **source
    )

    typed, spoken = (
        body["messages"][0]["content"] for body in simulator.chat_requests()
    )
    assert spoken.replace(f"\n{SPOKEN_ANSWER}", "", 1) == typed
    assert SPOKEN_ANSWER not in typed
    assert "without markdown" in spoken


async def test_two_apis_and_platform_tools(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """Every selected API contributes its tools and its prompt."""

    class EchoTool(llm.Tool):
        name = "echo"
        description = "Repeat the text."
        parameters = probatio.Schema({"text": str})

        async def async_call(
            self,
            hass: HomeAssistant,
            tool_input: llm.ToolInput,
            llm_context: llm.LLMContext,
        ) -> llm.ToolResult:
            return llm.ToolResult({"echo": tool_input.tool_args["text"]})

    class EchoAPI(llm.API):
        async def async_get_api_instance(
            self, llm_context: llm.LLMContext
        ) -> llm.APIInstance:
            return llm.APIInstance(
                self, "Use echo to repeat.", llm_context, [EchoTool()]
            )

    assert await async_setup_component(hass, "homeassistant", {})
    llm.async_register_api(hass, EchoAPI(hass=hass, id="echo_api", name="Echo"))
    mock_integration(hass, MockModule("lighthouse"))
    mock_platform(hass, "lighthouse.llm", LighthouseTools())
    assert await async_setup_component(hass, "lighthouse", {})
    await setup_entry(
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST, "echo_api"]}
    )
    simulator.enqueue(
        "/chat/completions",
        sse=sse_tool_calls([("call_e", "echo", {"text": "hi"})]),
    )
    simulator.enqueue("/chat/completions", sse=sse_text("hi"))

    result = await converse(hass, "Echo hi")

    assert speech(result) == "hi"
    first, second = simulator.chat_requests()
    names = [tool["function"]["name"] for tool in first["tools"]]
    assert "echo" in names
    assert "intent__HassTurnOn" in names
    assert "lighthouse__beam" in names
    assert "Lighthouse tools are here." in first["messages"][0]["content"]
    assert "Use echo to repeat." in first["messages"][0]["content"]
    assert json.loads(second["messages"][-1]["content"]) == {"echo": "hi"}
    assert first == snapshot


async def test_iteration_cap(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A model that never stops calling tools ends with a clear error."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    for round_number in range(10):
        simulator.enqueue(
            "/chat/completions",
            sse=sse_tool_calls(
                [
                    (
                        f"call_{round_number}",
                        "intent__HassTurnOn",
                        {"name": f"Lamp {round_number}"},
                    )
                ]
            ),
        )

    result = await converse(hass, "Turn on the kitchen light")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "10" in speech(result)
    assert len(simulator.chat_requests()) == 10


@pytest.mark.parametrize(
    ("status", "body", "headers", "expected"),
    [
        (
            429,
            {"error": {"message": "Slow down", "type": "rate_limit"}},
            {"retry-after": "7"},
            "7",
        ),
        (
            400,
            {"error": {"message": "gemma does not support tools"}},
            None,
            "tool",
        ),
        (500, {"error": {"message": "Backend exploded"}}, None, "Backend exploded"),
    ],
)
async def test_server_errors_are_translated(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    status: int,
    body: dict[str, Any],
    headers: dict[str, str] | None,
    expected: str,
) -> None:
    """Failures become readable answers, not tracebacks."""
    await setup_entry()
    simulator.enqueue("/chat/completions", status=status, json=body, headers=headers)

    result = await converse(hass, "Hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert expected in speech(result)
    assert len(simulator.chat_requests()) == 1  # the client does not retry


async def test_auth_failure_starts_reauth(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 401 during a conversation starts the reauth flow and says so."""
    entry = await setup_entry()
    simulator.enqueue(
        "/chat/completions",
        status=401,
        json={"error": {"message": "Incorrect API key provided"}},
    )

    result = await converse(hass, "Hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    flows = hass.config_entries.flow.async_progress_by_handler("openai_compatible")
    assert [flow["context"]["source"] for flow in flows] == ["reauth"]
    assert entry.state is ConfigEntryState.LOADED


async def test_connection_failure(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A server that went away gives a translated connection error."""
    await setup_entry()
    await simulator.stop()

    result = await converse(hass, "Hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR


async def test_reasoning_model_parameters(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """Reasoning models get max_completion_tokens and no sampling parameters."""
    await setup_entry(
        provider="openai",
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        conversation={
            "chat_model": "gpt-5-mini",
            "recommended": False,
            "max_tokens": 500,
            "temperature": 0.3,
            "top_p": 0.9,
        },
    )
    simulator.enqueue("/chat/completions", sse=sse_text("Hi."))

    await converse(hass, "Hello")

    body = simulator.chat_requests()[0]
    assert body["max_completion_tokens"] == 500
    assert "temperature" not in body
    assert "max_tokens" not in body
    assert body["prompt_cache_key"]
    assert {k: v for k, v in body.items() if k != "prompt_cache_key"} == snapshot


async def test_tuned_parameters_for_other_models(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Other models get max_tokens, temperature and top_p; no cache key off OpenAI."""
    await setup_entry(
        conversation={
            "chat_model": "llama3.2:3b",
            "recommended": False,
            "max_tokens": 200,
            "temperature": 0.3,
            "top_p": 0.9,
        },
    )
    simulator.enqueue("/chat/completions", sse=sse_text("Hi."))

    await converse(hass, "Hello")

    body = simulator.chat_requests()[0]
    assert (body["max_tokens"], body["temperature"], body["top_p"]) == (200, 0.3, 0.9)
    assert "prompt_cache_key" not in body


async def test_entry_unloads(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Unloading removes the agent."""
    entry = await setup_entry()
    assert hass.states.get(AGENT)
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert conversation.async_get_agent(hass, AGENT) is None


async def test_usage_is_traced(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Token usage from the stream's last chunk lands in the conversation trace.

    Only its counts: a server may add objects of any size and depth.
    """
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    usage = {
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "total_tokens": 127,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    deep: dict[str, Any] = {}
    for _ in range(300):
        deep = {"deeper": deep}
    simulator.enqueue(
        "/chat/completions", sse=sse_text("Hi.", usage={**usage, "cost": deep})
    )

    await converse(hass, "Hello")

    events = trace.async_get_traces()[-1].as_dict()["events"]
    details = [
        event["data"]
        for event in events
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        and "stats" in event["data"]
    ]
    assert details == [
        {
            "stats": {
                "input_tokens": 120,
                "cached_input_tokens": 100,
                "output_tokens": 7,
            },
            "usage": usage,
        }
    ]


async def test_an_answer_cut_at_its_token_limit_says_so(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The words stand, the user is told they are not all, the trace notes it."""
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    simulator.enqueue(
        "/chat/completions",
        sse=[
            chunk({"role": "assistant", "content": "The kitchen light is"}),
            chunk({}, finish_reason="length"),
        ],
    )

    result = await converse(hass, "Is the kitchen light on?")

    assert speech(result) == (
        "The kitchen light is… (the answer was cut off at its token limit)"
    )
    events = trace.async_get_traces()[-1].as_dict()["events"]
    assert {"answer_cut": "token_limit"} in [event["data"] for event in events]


def _whole(text: str) -> dict[str, Any]:
    """Return an unstreamed answer that says `text`."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }


@pytest.mark.parametrize("streaming", [True, False])
async def test_question_continues_conversation(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    streaming: bool,
) -> None:
    """An answer that asks back keeps the microphone open, streamed or not."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [], "streaming": streaming})
    for text in ("Which light?", "Done."):
        if streaming:
            simulator.enqueue("/chat/completions", sse=sse_text(text))
        else:
            simulator.enqueue("/chat/completions", json=_whole(text))

    asked = await converse(hass, "Turn on a light")
    told = await converse(hass, "The kitchen one", asked.conversation_id)

    assert speech(asked) == "Which light?"
    assert asked.continue_conversation
    assert not told.continue_conversation


async def test_question_after_a_tool_call_continues_conversation(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A question that follows the tool loop keeps the conversation open too."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue(
        "/chat/completions",
        sse=sse_tool_calls([("call_1", "HassTurnOn", {"name": "Kitchen light"})]),
    )
    simulator.enqueue("/chat/completions", sse=sse_text("It is on. Dim it too?"))

    result = await converse(hass, "turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert result.continue_conversation


@pytest.mark.parametrize(
    "written",
    [
        '{"name": "intent__HassTurnOn", "arguments": {"name": "Kitchen light"}}',
        '```json\n{"name": "HassTurnOn", "parameters": {"name": "Kitchen light"}}\n```',
        (
            '<tool_call>\n{"name": "HassTurnOn", "arguments": "{\\"name\\": '
            '\\"Kitchen light\\"}"}\n</tool_call>'
        ),
        (
            'Sure! ```json\n{"name": "intent__HassTurnOn", "arguments": '
            '{"name": "Kitchen light"}}\n``` I will turn it on.'
        ),
        'HassTurnOn(name="Kitchen light")',
        '<tool_call>\n{"name": "hassturnon", "arguments": {"name": "Kitchen light"}}',
    ],
)
async def test_tool_call_written_as_text(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    written: str,
) -> None:
    """A model that writes its tool call as text still turns on the light."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue("/chat/completions", sse=sse_text(written, split=7))
    simulator.enqueue("/chat/completions", sse=sse_text("It is on."))

    result = await converse(hass, "Turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result) == "It is on."
    assistant = simulator.chat_requests()[1]["messages"][-2]
    # Empty text, not null: llama-cpp-python refuses null next to tool calls.
    assert assistant["content"] == ("Sure! " if written.startswith("Sure") else "")
    assert assistant["tool_calls"][0]["function"] == {
        "name": "intent__HassTurnOn",
        "arguments": '{"name":"Kitchen light"}',
    }


@pytest.mark.parametrize(
    ("tools", "text"),
    [
        (True, '{"answer": 42}'),
        (True, "```python\nprint(1)\n```"),
        (True, "{not json at all"),
        (False, '{"name": "intent__HassTurnOn", "arguments": {}}'),
    ],
)
async def test_text_that_only_looks_like_a_call(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    tools: bool,
    text: str,
) -> None:
    """JSON or code that is not a call of an offered tool is spoken as it is."""
    apis = [llm.LLM_API_ASSIST] if tools else []
    await setup_entry(conversation={CONF_LLM_HASS_API: apis})
    simulator.enqueue("/chat/completions", sse=sse_text(text, split=3))

    result = await converse(hass, "Say something")

    assert speech(result) == text
    assert len(simulator.chat_requests()) == 1


async def test_a_written_call_of_a_tool_not_offered_is_answered(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Text that is only a call is never the answer: the model hears the names."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue(
        "/chat/completions", sse=sse_text('{"name": "NoSuchTool", "arguments": {}}')
    )
    simulator.enqueue("/chat/completions", sse=sse_text("I cannot do that."))

    result = await converse(hass, "Dance")

    assert speech(result) == "I cannot do that."
    answer = json.loads(simulator.chat_requests()[1]["messages"][-1]["content"])
    assert answer["error"] == "unknown_tool"
    assert "intent__HassTurnOn" in answer["error_text"]


async def test_streaming_off(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """With streaming off, whole answers drive the same tool loop."""
    await setup_entry(
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST], "streaming": False}
    )
    entity = hass.data[conversation.DOMAIN].get_entity(AGENT)
    assert entity is not None
    assert entity.supports_streaming is False

    result = await converse(hass, "turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result)
    first, second = simulator.chat_requests()
    assert "stream" not in first
    assert "stream_options" not in first
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == (
        "intent__HassTurnOn"
    )


async def test_an_empty_answer_is_told(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An answer that ends without a word or a reason says so, in our words."""
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    simulator.enqueue("/chat/completions", sse=[chunk({})])

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert speech(result).startswith("The model gave no answer")


@pytest.mark.parametrize("streaming", [True, False])
async def test_an_answer_stopped_empty_is_silent(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    streaming: bool,
) -> None:
    """A model that stops having said nothing chose silence: no error is spoken."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [], "streaming": streaming})
    if streaming:
        simulator.enqueue("/chat/completions", sse=[chunk({}, finish_reason="stop")])
    else:
        simulator.enqueue("/chat/completions", json=_whole(""))

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert speech(result) == ""
    last = stored_chat_log(hass, result.conversation_id).content[-1]
    assert isinstance(last, conversation.AssistantContent)
    assert last.content == ""


async def test_an_empty_stream_next_to_tools_is_asked_again_unstreamed(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A gateway's empty stream when tools are offered: unstreamed, and learned."""
    entry = await setup_entry()
    simulator.enqueue("/chat/completions", sse=[chunk({}, finish_reason="stop")])

    first = await converse(hass, "Hello")
    await converse(hass, "Hello again")

    assert "Hello" in speech(first)
    assert [body.get("stream") for body in simulator.chat_requests()] == [
        True,
        None,
        None,
    ]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.STREAM_WITH_TOOLS)
