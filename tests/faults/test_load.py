"""The load a home gives: many tasks at once, reloads mid-stream, odd structures."""

from __future__ import annotations

import asyncio
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError

from custom_components.openai_compatible.capabilities import provider_for
from custom_components.openai_compatible.const import DOMAIN

from .conftest import FaultHarnessFactory

CHAT = "/chat/completions"
TASKS_AT_ONCE = 50
# Answers the server fails among them, as a busy server does.
FAILED_ANSWERS = 5


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
