"""Faults around requests: many questions at once, a reload mid-turn, one-off refusals."""

from __future__ import annotations

import asyncio
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant

from custom_components.openai_compatible.const import Feature
from simulator import Pause, chunk

from .conftest import FaultHarnessFactory

CHAT = "/chat/completions"
DOOR = {"type": "noul", "instructions": "Is the garage door open?"}
STRUCTURE = {"condition": {"required": True, "selector": {"text": {}}}}


async def _call(hass: HomeAssistant, action: str, **data: Any) -> dict[str, Any]:
    """Call an ai_task action and return its response."""
    response = await hass.services.async_call(
        "ai_task", action, data, blocking=True, return_response=True
    )
    assert isinstance(response, dict)
    return response


async def test_a_local_server_gets_one_question_at_a_time(
    fault_harness: FaultHarnessFactory,
) -> None:
    """Eight questions to a local preset go one by one; the home keeps answering."""
    harness = await fault_harness(provider="ollama")
    model = harness.faulty_entry.runtime_data.capabilities.model("gpt-4o-mini")
    model.learn_refused(Feature.DECISIONS, "HTTP 400: refused")
    harness.faulty.peak_in_flight = 0

    response = await harness.run(
        _call(
            harness.hass,
            "evaluate",
            entity_id=harness.faulty_ai_task,
            task_name="Garage",
            state={"door": "open"},
            questions={f"q{index}": DOOR for index in range(8)},
        )
    )

    assert len(response["answers"]) == 8
    assert harness.faulty.peak_in_flight == 1


async def test_a_reload_mid_turn_finishes_the_turn(
    fault_harness: FaultHarnessFactory,
) -> None:
    """The entry reloads while a turn streams; the turn ends with its answer."""
    harness = await fault_harness(conversation={CONF_LLM_HASS_API: []})
    harness.faulty.enqueue(
        CHAT, sse=[Pause(0.3), chunk({"role": "assistant", "content": "Still here."})]
    )

    async def turn_with_reload() -> str:
        turn = asyncio.ensure_future(harness.converse("Hello"))
        await asyncio.sleep(0.1)
        await harness.hass.config_entries.async_reload(harness.faulty_entry.entry_id)
        result = await turn
        return str(result.response.speech["plain"]["speech"])

    assert await harness.run(turn_with_reload()) == "Still here."


async def test_a_limit_of_one_schema_moves_one_task_only(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A strict-mode limit of one schema is not learned as the model's."""
    harness = await fault_harness()
    harness.faulty.enqueue(
        CHAT,
        status=400,
        json={
            "error": {
                "message": "Invalid schema for response_format 'garage': In "
                "context=('properties', 'condition'), 'pattern' is not permitted.",
                "param": "response_format",
            }
        },
    )

    response = await harness.run(
        _call(
            harness.hass,
            "generate_data",
            entity_id=harness.faulty_ai_task,
            task_name="Garage",
            instructions="Describe the garage",
            structure=STRUCTURE,
        )
    )

    assert set(response["data"]) == {"condition"}
    model = harness.faulty_entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert not model.lessons.refused
