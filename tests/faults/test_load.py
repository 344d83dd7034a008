"""The load a home gives: many tasks at once, reloads mid-stream, odd structures."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import pytest

from custom_components.openai_compatible.const import DOMAIN
from custom_components.openai_compatible.models.providers import provider_for
from simulator import Pause, chunk

from .conftest import FaultHarness, FaultHarnessFactory

CHAT = "/chat/completions"
TASKS_AT_ONCE = 50
# Answers the server fails among them, as a busy server does.
FAILED_ANSWERS = 5
NO_TOOLS = {CONF_LLM_HASS_API: []}
# The answer stops this long between its words: the entry changes meanwhile.
MID_STREAM_PAUSE = 1.0


async def _generate(hass: HomeAssistant, entity_id: str, index: int) -> Any:
    """Ask one generate_data task; return its data."""
    response = await hass.services.async_call(
        "ai_task",
        "generate_data",
        {
            "entity_id": entity_id,
            "task_name": f"Task {index}",
            "instructions": f"Say {index}",
        },
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response["data"]


async def test_many_tasks_at_once(fault_harness: FaultHarnessFactory) -> None:
    """Fifty tasks through one entry: each answered or told, a few at a time."""
    harness = await fault_harness()
    for _ in range(FAILED_ANSWERS):
        harness.faulty.enqueue(CHAT, status=503)
    harness.faulty.peak_in_flight = 0

    results = await harness.run(
        asyncio.gather(
            *(
                _generate(harness.hass, harness.faulty_ai_task, index)
                for index in range(TASKS_AT_ONCE)
            ),
            return_exceptions=True,
        )
    )

    failures = [result for result in results if isinstance(result, BaseException)]
    assert len(failures) == FAILED_ANSWERS
    for failure in failures:
        assert isinstance(failure, HomeAssistantError)
        assert failure.translation_domain == DOMAIN
        assert str(failure)
    answers = {result for result in results if isinstance(result, str)}
    assert len(answers) == TASKS_AT_ONCE - FAILED_ANSWERS
    assert all(answer.startswith("You said: Say ") for answer in answers)
    # Requests wait for a slot of the entry: connections and buffers stay few.
    assert 1 < harness.faulty.peak_in_flight <= provider_for(None).concurrency


# --- an entry that goes while it streams ---------------------------------------


def _half_answered(harness: FaultHarness) -> None:
    """Queue an answer that pauses after its first word."""
    harness.faulty.enqueue(
        CHAT,
        sse=[
            chunk({"role": "assistant", "content": "Still"}),
            Pause(MID_STREAM_PAUSE),
            chunk({"content": " here."}),
        ],
    )


async def _streaming(harness: FaultHarness) -> None:
    """Wait until the faulty server has started its answer."""
    while not harness.faulty.chat_requests():
        await asyncio.sleep(0.01)
    # Past the harness's latency, well before the pause ends.
    await asyncio.sleep(0.4)


def _raised(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Return the log records that carry an error or an exception."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.levelno >= logging.ERROR or record.exc_info
    ]


@pytest.mark.parametrize("change", ["reload", "unload"])
async def test_the_entry_goes_while_a_turn_streams(
    fault_harness: FaultHarnessFactory,
    caplog: pytest.LogCaptureFixture,
    change: str,
) -> None:
    """The stream ends, and nothing is raised into the log."""
    harness = await fault_harness(conversation=NO_TOOLS)
    entry = harness.faulty_entry
    _half_answered(harness)

    async def turn_with_change() -> str:
        turn = asyncio.ensure_future(harness.converse("Hello"))
        await _streaming(harness)
        if change == "reload":
            assert await harness.hass.config_entries.async_reload(entry.entry_id)
        else:
            assert await harness.hass.config_entries.async_unload(entry.entry_id)
        result = await turn
        return str(result.response.speech["plain"]["speech"])

    said = await harness.run(turn_with_change())

    assert said == "Still here."
    expected = ConfigEntryState.LOADED if change == "reload" else None
    assert entry.state is (expected or ConfigEntryState.NOT_LOADED)
    await harness.hass.async_block_till_done()
    assert not _raised(caplog)


async def test_a_lesson_learned_after_unload_raises_nothing(
    fault_harness: FaultHarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A refusal that comes in after the entry unloaded is learned, quietly."""
    harness = await fault_harness(conversation=NO_TOOLS)
    entry = harness.faulty_entry
    harness.faulty.enqueue(
        CHAT,
        status=400,
        json={
            "error": {
                "message": "Unrecognized request argument supplied: stream_options",
                "param": "stream_options",
            }
        },
    )
    _half_answered(harness)

    async def turn_with_unload() -> str:
        harness.faulty.settings.latency = 0.5
        turn = asyncio.ensure_future(harness.converse("Hello"))
        while not harness.faulty.chat_requests():
            await asyncio.sleep(0.01)
        assert await harness.hass.config_entries.async_unload(entry.entry_id)
        result = await turn
        return str(result.response.speech["plain"]["speech"])

    assert await harness.run(turn_with_unload()) == "Still here."
    await harness.hass.async_block_till_done()
    assert not _raised(caplog)


# --- structures at the edge of what Home Assistant takes ------------------------


def _nested(depth: int) -> dict[str, Any]:
    """Return a structure of objects within objects, a number at the bottom."""
    field: dict[str, Any] = {"selector": {"number": {}}, "required": True}
    for _ in range(depth):
        field = {"selector": {"object": {"fields": {"inner": field}}}, "required": True}
    return {"outer": field}


def _many(count: int) -> dict[str, Any]:
    """Return a structure of many text and boolean fields."""
    return {
        f"field_{index}": {
            "required": True,
            "selector": {"boolean": {}} if index % 2 else {"text": {}},
        }
        for index in range(count)
    }


def _depth(data: Any) -> int:
    """Return how deep objects are nested in the data."""
    depth = 0
    while isinstance(data, dict):
        (data,) = data.values()
        depth += 1
    return depth


# The simulator, like a small model, fills objects only so deep: past that it
# answers null, which the task tells as its translated error. (Far deeper
# structures, some 300 objects, fail Home Assistant's own validation of the
# action before they reach the integration.)
@pytest.mark.parametrize(
    ("structure", "check"),
    [
        (_nested(8), lambda data: _depth(data) == 9),
        (_nested(40), None),
        (_many(500), lambda data: len(data) == 500),
    ],
    ids=["nested_8", "nested_40", "fields_500"],
)
async def test_odd_structures(
    fault_harness: FaultHarnessFactory, structure: dict[str, Any], check: Any
) -> None:
    """Deep and wide structures are answered, or told as not filled, the loop free."""
    harness = await fault_harness()
    call = harness.hass.services.async_call(
        "ai_task",
        "generate_data",
        {
            "entity_id": harness.faulty_ai_task,
            "task_name": "Odd",
            "instructions": "Fill it in",
            "structure": structure,
        },
        blocking=True,
        return_response=True,
    )

    if check is None:
        with pytest.raises(HomeAssistantError) as err:
            await harness.run(call)
        assert err.value.translation_key == "structured_output_invalid"
        return
    response = await harness.run(call)
    assert isinstance(response, dict)
    assert check(response["data"])
