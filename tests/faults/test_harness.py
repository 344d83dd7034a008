"""The fault harness itself: it sees a stalled loop and a silent healthy agent."""

from __future__ import annotations

import asyncio
import logging
import time

from homeassistant.const import CONF_LLM_HASS_API
import pytest

from simulator import sse_text

from .conftest import LOOP_STALL_LIMIT, FaultHarnessFactory, LoopWatch


async def test_a_healthy_fault_run_passes(fault_harness: FaultHarnessFactory) -> None:
    """A plain answer from the faulty server passes every check."""
    harness = await fault_harness(conversation={CONF_LLM_HASS_API: []})
    harness.faulty.enqueue("/chat/completions", sse=sse_text("Fine."))

    result = await harness.run(harness.converse("Hi"))

    assert result.response.speech["plain"]["speech"] == "Fine."
    assert harness.healthy_answers
    assert harness.faulty_agent != harness.healthy_agent
    assert harness.faulty_ai_task.startswith("ai_task.")


async def test_a_blocked_loop_fails_the_run(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A fault that blocks the event loop longer than the limit is caught."""
    harness = await fault_harness(conversation={CONF_LLM_HASS_API: []})

    async def block() -> None:
        await asyncio.sleep(0.05)
        time.sleep(LOOP_STALL_LIMIT + 0.1)  # noqa: ASYNC251

    with pytest.raises(AssertionError, match="stalled"):
        await harness.run(block())


async def test_a_fault_that_ends_at_once_fails_the_run(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A fault over before the healthy agent answered proves nothing."""
    harness = await fault_harness(conversation={CONF_LLM_HASS_API: []})

    async def instant() -> None:
        return None

    with pytest.raises(AssertionError, match="no healthy answer"):
        await harness.run(instant())


async def test_error_log_lines_fail_the_run(
    fault_harness: FaultHarnessFactory,
) -> None:
    """An ERROR line logged during the fault fails the run unless allowed."""
    harness = await fault_harness(conversation={CONF_LLM_HASS_API: []})

    async def log_error() -> str:
        await asyncio.sleep(0.3)
        logging.getLogger("custom_components.openai_compatible").error("boom")
        return "done"

    with pytest.raises(AssertionError, match="boom"):
        await harness.run(log_error())
    assert await harness.run(log_error(), errors_logged=True) == "done"


async def test_loop_watch_measures_a_stall() -> None:
    """The watch reports a blocking call as a stall of about its length."""
    watch = LoopWatch()
    watch.start()
    await asyncio.sleep(0.02)
    time.sleep(0.2)  # noqa: ASYNC251
    await asyncio.sleep(0.02)
    assert 0.15 < await watch.stop() < LOOP_STALL_LIMIT


async def test_loop_watch_sees_a_stall_right_before_it_stops() -> None:
    """A stall just before `stop` is measured, not cancelled with the beat."""
    watch = LoopWatch()
    watch.start()
    await asyncio.sleep(0.02)
    time.sleep(0.2)  # noqa: ASYNC251
    assert 0.15 < await watch.stop() < LOOP_STALL_LIMIT


async def test_loop_watch_sees_a_stall_before_its_first_beat() -> None:
    """A stall right after `start`, before the heartbeat ran once, is measured."""
    watch = LoopWatch()
    watch.start()
    time.sleep(0.2)  # noqa: ASYNC251
    await asyncio.sleep(0.02)
    assert 0.15 < await watch.stop() < LOOP_STALL_LIMIT
