"""Faults in the tool calls of an answer: repeated, malformed or unknown calls.

Each call the model makes runs at most once, and a call that cannot run is
answered to the model, so that it can call again (see conftest.py for the
harness).
"""

from __future__ import annotations

import json
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
import probatio
import pytest

from custom_components.openai_compatible.const import (
    CONF_TOOLS_ON_DEMAND,
    MAX_TOOL_ROUNDS_CONVERSATION,
    Feature,
)
from custom_components.openai_compatible.tool_offer import LOOKUP_TOOL
from simulator import (
    OpenAISimulator,
    chunk,
    function_call_item,
    message_item,
    response_stream,
    sse_text,
)

from .conftest import FaultHarness, FaultHarnessFactory
from .test_stream import CHAT, call_chunk, event, failed, speech

RESPONSES = "/responses"
COUNTING = {CONF_LLM_HASS_API: ["counting"]}


class CountingTool(llm.Tool):
    """A tool that counts how often it ran and with what."""

    name = "count"
    description = "Count one."
    parameters = probatio.Schema({probatio.Required("label"): str})

    def __init__(self, runs: list[dict[str, Any]]) -> None:
        """Record each run's arguments in `runs`."""
        self.runs = runs

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> llm.ToolResult:
        """Count the run, with whatever arguments it is given."""
        self.runs.append(tool_input.tool_args)
        return llm.ToolResult({"count": len(self.runs)})


class CountingAPI(llm.API):
    """An LLM API offering the counting tool."""

    runs: list[dict[str, Any]]

    async def async_get_api_instance(
        self, llm_context: llm.LLMContext
    ) -> llm.APIInstance:
        """Offer the one tool."""
        return llm.APIInstance(
            self, "Count with count.", llm_context, [CountingTool(self.runs)]
        )


@pytest.fixture
def runs(hass: HomeAssistant) -> list[dict[str, Any]]:
    """Register the counting API; return the arguments of each run."""
    api = CountingAPI(hass=hass, id="counting", name="Counting")
    api.runs = []
    llm.async_register_api(hass, api)
    return api.runs


def completed_with(events: list[dict[str, Any]], output: list[Any]) -> None:
    """Make the stream's `response.completed` list these output items."""
    events[-1]["response"] = {**events[-1]["response"], "output": output}


async def test_responses_call_id_given_twice_runs_once(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """Two items with the same call id: the tool runs once, one output goes back."""
    harness = await fault_harness(provider="openai", conversation=COUNTING)
    call = function_call_item("call_1", "count", '{"label": "a"}')
    again = {**call, "id": "fc_other"}
    harness.faulty.enqueue(RESPONSES, sse=response_stream([call, again]))

    result = await harness.run(harness.converse("Count"))

    assert not failed(result), speech(result)
    assert runs == [{"label": "a"}]
    second = harness.faulty.responses_requests()[1]["input"]
    kinds = [item["type"] for item in second if item.get("call_id") == "call_1"]
    assert kinds == ["function_call", "function_call_output"]


async def test_responses_call_listed_elsewhere_at_completion_runs_once(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """A call the completed answer lists at another index is the same call."""
    harness = await fault_harness(provider="openai", conversation=COUNTING)
    call = function_call_item("call_1", "count", '{"label": "a"}')
    events = response_stream([call])
    completed_with(events, [message_item("Counting."), call])
    harness.faulty.enqueue(RESPONSES, sse=events)

    result = await harness.run(harness.converse("Count"))

    assert not failed(result), speech(result)
    assert runs == [{"label": "a"}]
    second = harness.faulty.responses_requests()[1]["input"]
    calls = [item for item in second if item.get("call_id") == "call_1"]
    assert [item["type"] for item in calls] == ["function_call", "function_call_output"]
    assert json.loads(calls[1]["output"]) == {"count": 1}
    assert {"type": "message", "role": "assistant", "content": "Counting."} in second


async def test_responses_call_listed_again_under_another_call_id_runs_once(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """The completed answer lists the call's item with a call id made up anew.

    A gateway that writes call ids as it converts may give the same item
    another one at the end: its item id still says it is the same call.
    """
    harness = await fault_harness(provider="openai", conversation=COUNTING)
    call = function_call_item("call_1", "count", '{"label": "a"}')
    events = response_stream([call])
    completed_with(events, [message_item("Counting."), {**call, "call_id": "call_2"}])
    harness.faulty.enqueue(RESPONSES, sse=events)

    result = await harness.run(harness.converse("Count"))

    assert not failed(result), speech(result)
    assert runs == [{"label": "a"}]
    second = harness.faulty.responses_requests()[1]["input"]
    outputs = [i["call_id"] for i in second if i["type"] == "function_call_output"]
    assert outputs == ["call_1"]


def bad_call(call_id: str, name: str = "count", arguments: str = "{oops") -> list[str]:
    """Return a streamed answer that makes one call."""
    return [
        call_chunk(0, call_id, name, arguments),
        event(chunk({}, finish_reason="tool_calls")),
    ]


async def test_raw_control_character_in_arguments_is_taken(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """llama-cpp-python's raw control character inside a string: the call runs."""
    harness = await fault_harness(conversation=COUNTING)
    harness.faulty.enqueue(CHAT, sse=bad_call("c1", arguments='{"label": "a\x01b"}'))

    result = await harness.run(harness.converse("Count"))

    assert not failed(result), speech(result)
    assert runs == [{"label": "a\x01b"}]


@pytest.mark.parametrize(
    ("name", "error"),
    [("count", "invalid_tool_arguments"), ("tally", "unknown_tool")],
)
async def test_malformed_call_is_answered_and_called_again(
    fault_harness: FaultHarnessFactory,
    runs: list[dict[str, Any]],
    name: str,
    error: str,
) -> None:
    """A call that cannot run is answered to the model, which then calls right."""
    harness = await fault_harness(conversation=COUNTING)
    harness.faulty.enqueue(CHAT, sse=bad_call("c1", name))
    harness.faulty.enqueue(CHAT, sse=bad_call("c2", arguments='{"label": "b"}'))
    harness.faulty.enqueue(CHAT, sse=sse_text("Counted."))

    result = await harness.run(harness.converse("Count"))

    assert speech(result) == "Counted."
    assert runs == [{"label": "b"}]
    second = harness.faulty.chat_requests()[1]["messages"]
    call, answer = second[-2:]
    assert call["tool_calls"][0]["id"] == "c1"
    assert call["tool_calls"][0]["function"]["name"] == name
    assert answer["tool_call_id"] == "c1"
    told = json.loads(answer["content"])
    assert told["error"] == error
    assert told["hint"]


async def test_call_outside_the_tools_schema_is_answered_and_called_again(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """A call lacking a key the tool requires is answered to the model, not run.

    The counting tool takes anything, as some tools do: the integration asks
    for the required keys it offered, and the turn goes on.
    """
    harness = await fault_harness(conversation=COUNTING)
    harness.faulty.enqueue(CHAT, sse=bad_call("c1", arguments='{"labels": 1}'))
    harness.faulty.enqueue(CHAT, sse=bad_call("c2", arguments='{"label": "b"}'))
    harness.faulty.enqueue(CHAT, sse=sse_text("Counted."))

    result = await harness.run(harness.converse("Count"))

    assert speech(result) == "Counted."
    assert runs == [{"label": "b"}]
    answer = harness.faulty.chat_requests()[1]["messages"][-1]
    assert answer["tool_call_id"] == "c1"
    told = json.loads(answer["content"])
    assert told["error"] == "invalid_tool_arguments"
    assert "'label'" in told["error_text"]


async def test_malformed_call_until_the_round_cap_is_told_to_the_user(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """A model that never gets its call right: the user hears what was wrong.

    Each call is wrong in its own way (the same answer again ends the turn).
    """
    harness = await fault_harness(conversation=COUNTING)
    for round_number in range(MAX_TOOL_ROUNDS_CONVERSATION):
        wrong = "{" + " " * round_number + "oops"
        harness.faulty.enqueue(CHAT, sse=bad_call(f"c{round_number}", arguments=wrong))

    result = await harness.run(harness.converse("Count"))

    assert failed(result)
    assert "invalid arguments for the tool count" in speech(result)
    assert runs == []


async def test_the_same_malformed_call_again_ends_the_turn(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """The same wrong call, answered the same way twice, costs no more rounds."""
    harness = await fault_harness(conversation=COUNTING)
    for round_number in range(2):
        harness.faulty.enqueue(CHAT, sse=bad_call(f"c{round_number}"))

    result = await harness.run(harness.converse("Count"))

    assert failed(result)
    assert "invalid arguments for the tool count" in speech(result)
    assert len(harness.faulty.chat_requests()) == 2


async def test_responses_malformed_call_is_answered(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """Over the Responses API too, the call goes back with an output that says why."""
    harness = await fault_harness(provider="openai", conversation=COUNTING)
    call = function_call_item("call_1", "count", "{oops")
    harness.faulty.enqueue(RESPONSES, sse=response_stream([call]))
    harness.faulty.enqueue(RESPONSES, sse=response_stream([message_item("Sorry.")]))

    result = await harness.run(harness.converse("Count"))

    assert speech(result) == "Sorry."
    assert runs == []
    second = harness.faulty.responses_requests()[1]["input"]
    sent_call, output = second[-2:]
    assert (sent_call["type"], sent_call["call_id"]) == ("function_call", "call_1")
    assert output["call_id"] == "call_1"
    assert json.loads(output["output"])["error"] == "invalid_tool_arguments"


# --- a tool call the server could not parse (llama-server) --------------------

UNPARSED = (
    "Failed to parse input at pos 17: <tool_call> Response does not match the "
    "expected peg-native format"
)
UNPARSED_BODY = {"error": {"code": 500, "message": UNPARSED, "type": "server_error"}}
WHOLE_CALL = {
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "count", "arguments": '{"label": "a"}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ]
}


def bodies_streamed(harness: FaultHarness) -> list[bool]:
    """Return whether each chat request of the faulty agent asked for a stream."""
    return [bool(body.get("stream")) for body in harness.faulty.chat_requests()]


@pytest.mark.parametrize("where", ["status", "event"])
async def test_unparsed_tool_call_is_asked_again_unstreamed(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]], where: str
) -> None:
    """A 500 or a stream's error event that the server could not parse: once more."""
    harness = await fault_harness(conversation=COUNTING)
    if where == "status":
        harness.faulty.enqueue(CHAT, status=500, json=UNPARSED_BODY)
    else:
        harness.faulty.enqueue(CHAT, sse=[event(UNPARSED_BODY)], done=False)
    harness.faulty.enqueue(CHAT, json=WHOLE_CALL)
    harness.faulty.enqueue(CHAT, sse=sse_text("Counted."))

    result = await harness.run(harness.converse("Count"))

    assert speech(result) == "Counted."
    assert runs == [{"label": "a"}]
    assert bodies_streamed(harness) == [True, False, True]


async def test_unparsed_tool_call_twice_is_told(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """Asked again and still not parsed: a translated error, nothing learned."""
    harness = await fault_harness(conversation=COUNTING)
    harness.faulty.enqueue(CHAT, sse=[event(UNPARSED_BODY)], done=False)
    harness.faulty.enqueue(CHAT, status=500, json=UNPARSED_BODY)

    result = await harness.run(harness.converse("Count"))

    assert failed(result)
    assert "could not read the model's answer as a tool call" in speech(result)
    assert "peg-native" in speech(result)
    assert bodies_streamed(harness) == [True, False]
    harness.faulty.enqueue(CHAT, sse=sse_text("Hello."))
    assert speech(await harness.converse("Hi")) == "Hello."
    assert bodies_streamed(harness)[-1]


# --- tools a chat template leaves out (llama-server with chatml) -------------


async def test_tools_left_out_of_the_prompt_are_told(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A server that counts two prompts smaller than their tools dropped them: told.

    One count alone may be made up: the first answer stands.
    """
    harness = await fault_harness()
    harness.faulty.settings.drops_tools = True

    first = await harness.run(harness.converse("Turn on the kitchen light"))
    result = await harness.converse("Turn on the kitchen light")

    assert not failed(first)
    assert failed(result)
    assert "leaves the tools out of the prompt" in speech(result)
    assert all(body["tools"] for body in harness.faulty.chat_requests())
    # From then on the agent says so at once, as for a refusal of tools.
    result = await harness.converse("Turn on the kitchen light")
    assert "cannot call tools, so nothing was sent" in speech(result)
    assert len(harness.faulty.chat_requests()) == 2


async def test_one_made_up_count_keeps_the_tools(
    fault_harness: FaultHarnessFactory,
) -> None:
    """An overflow error that claims a prompt far larger than the answers count.

    The estimate it skewed is set right by the next answer's own count; the
    tools stay offered.
    """
    harness = await fault_harness()
    harness.faulty.enqueue(
        CHAT,
        status=400,
        json={
            "error": {
                "message": "the request exceeds the available context size",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 3_300,
                "n_ctx": 100_000,
            }
        },
    )

    first = await harness.run(harness.converse("Hello"))
    second = await harness.converse("Hello again")

    assert not failed(first), speech(first)
    assert not failed(second), speech(second)
    assert all(body["tools"] for body in harness.faulty.chat_requests())
    model = harness.faulty_entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert not model.refuses(Feature.TOOLS)


async def test_a_server_that_reports_tools_is_trusted_over_the_count(
    fault_harness: FaultHarnessFactory, simulator: OpenAISimulator
) -> None:
    """A template may render tools far shorter than their schemas: no alarm.

    llama.cpp reports whether its chat template takes tools; where it says it
    does, a prompt counted smaller than the tools' schemas is such a template.
    """
    simulator.settings.native = "llama_cpp"
    harness = await fault_harness(provider="llama_cpp")
    harness.faulty.settings.drops_tools = True

    result = await harness.run(harness.converse("Hi"))

    assert not failed(result)
    (body,) = harness.faulty.chat_requests()
    assert body["tools"]


async def test_tools_kept_in_a_small_prompt_are_no_alarm(
    fault_harness: FaultHarnessFactory, runs: list[dict[str, Any]]
) -> None:
    """Tools too small to tell by the count are never taken as left out."""
    harness = await fault_harness(conversation=COUNTING)
    harness.faulty.settings.drops_tools = True

    result = await harness.run(harness.converse("Hi"))

    assert speech(result) == "You said: Hi"
    # The date line, which this API's tools leave to the prompt, comes after it.
    (body,) = harness.faulty.chat_requests()
    assert body["messages"][1]["content"].startswith("Current time is ")


async def test_a_lookup_of_a_huge_query_keeps_the_loop_free(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A find_tools query of 900 KiB of words is read only as far as its cap."""
    harness = await fault_harness(
        conversation={
            CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
            CONF_TOOLS_ON_DEMAND: True,
        }
    )
    query = " ".join(f"turn{index}" for index in range(100_000))
    arguments = json.dumps({"query": f"turn on the light {query}"})
    harness.faulty.enqueue(CHAT, sse=[call_chunk(0, "call_1", LOOKUP_TOOL, arguments)])
    harness.faulty.enqueue(CHAT, sse=sse_text("Done."))

    result = await harness.run(harness.converse("Turn on the light"))

    assert speech(result) == "Done."
    told = json.loads(harness.faulty.chat_requests()[1]["messages"][-1]["content"])
    assert "intent__HassTurnOn" in [tool["name"] for tool in told["tools"]]
