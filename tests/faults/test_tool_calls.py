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

from simulator import function_call_item, message_item, response_stream

from .conftest import FaultHarnessFactory
from .test_stream import failed, speech

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
        """Count the run."""
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
