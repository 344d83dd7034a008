"""The fault-matrix harness: one faulty server, one healthy one, a loop watch.

`fault_harness(...)` loads two entries: one pointing at the `simulator`
fixture (script its faults with `enqueue`), one at a healthy simulator of its
own. `harness.run(fault)` runs the faulty request while the healthy agent keeps
answering and a heartbeat measures the longest stall of the event loop; it
asserts that at least one healthy answer came while the fault was in flight,
that every healthy answer was right, that the loop never stalled for
LOOP_STALL_LIMIT seconds, and that nothing was logged at ERROR level.

    async def test_x(fault_harness: FaultHarnessFactory) -> None:
        harness = await fault_harness(conversation={CONF_LLM_HASS_API: []})
        harness.faulty.enqueue("/chat/completions", raw="...")
        result = await harness.run(harness.converse("Hi"))
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
import contextlib
from dataclasses import dataclass, field
import logging
from typing import Any

from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from simulator import OpenAISimulator
from tests.conftest import SetupEntry, served

# A blocked event loop shows as a stall of seconds; scheduling noise on a busy
# machine stays far below this.
LOOP_STALL_LIMIT = 1.0
# How often the heartbeat beats.
HEARTBEAT_SECONDS = 0.01
# The faulty server waits this long before it answers, so that the healthy
# agent has time to answer while the fault is in flight.
FAULT_LATENCY = 0.2


class LoopWatch:
    """A heartbeat task that records the event loop's longest stall."""

    def __init__(self) -> None:
        """Prepare a watch that has not started."""
        self.longest_stall = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start beating on the running loop, counting from now."""
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._beat(loop.time()))

    async def stop(self) -> float:
        """Stop beating; return the longest stall in seconds.

        The loop turns once more first, so that a stall just before the stop
        is recorded by a late beat rather than cancelled with it.
        """
        assert self._task is not None
        await asyncio.sleep(2 * HEARTBEAT_SECONDS)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        return self.longest_stall

    async def _beat(self, since: float) -> None:
        """Sleep briefly, over and over, noting how late each wake-up is.

        The first wake-up counts from `since`: a task scheduled before the
        watch started may stall the loop before the first beat.
        """
        loop = asyncio.get_running_loop()
        before = since
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            now = loop.time()
            self.longest_stall = max(
                self.longest_stall, now - before - HEARTBEAT_SECONDS
            )
            before = now


@dataclass(slots=True)
class FaultHarness:
    """Two loaded entries: a faulty server and a healthy one."""

    hass: HomeAssistant
    caplog: pytest.LogCaptureFixture
    faulty: OpenAISimulator
    healthy: OpenAISimulator
    faulty_entry: MockConfigEntry
    healthy_entry: MockConfigEntry
    healthy_answers: list[str] = field(default_factory=list)

    @property
    def faulty_agent(self) -> str:
        """Return the entity id of the faulty entry's conversation agent."""
        return entity_of(self.hass, self.faulty_entry, "conversation")

    @property
    def faulty_ai_task(self) -> str:
        """Return the entity id of the faulty entry's AI task entity."""
        return entity_of(self.hass, self.faulty_entry, "ai_task")

    @property
    def healthy_agent(self) -> str:
        """Return the entity id of the healthy entry's conversation agent."""
        return entity_of(self.hass, self.healthy_entry, "conversation")

    async def converse(
        self, text: str, conversation_id: str | None = None
    ) -> conversation.ConversationResult:
        """Send one sentence to the faulty agent."""
        return await conversation.async_converse(
            self.hass, text, conversation_id, Context(), agent_id=self.faulty_agent
        )

    async def run[T](
        self,
        fault: Coroutine[Any, Any, T] | Awaitable[T],
        *,
        errors_logged: bool = False,
    ) -> T:
        """Await the fault while the healthy agent answers and the loop is watched.

        Returns what the fault returns, or raises what it raises, after the
        harness's own assertions. `errors_logged` allows ERROR log lines (for a
        fault where a user must act).
        """
        self.caplog.clear()
        watch = LoopWatch()
        watch.start()
        self.faulty.settings.latency = FAULT_LATENCY
        task = asyncio.ensure_future(fault)
        answered_during_fault = 0
        try:
            while True:
                await self._ask_healthy()
                if task.done():
                    break
                answered_during_fault += 1
            await asyncio.wait([task])
        finally:
            self.faulty.settings.latency = 0.0
            longest_stall = await watch.stop()
        assert answered_during_fault >= 1, "no healthy answer while the fault ran"
        assert longest_stall < LOOP_STALL_LIMIT, f"event loop stalled {longest_stall}s"
        if not errors_logged:
            logged = [
                record.getMessage()
                for record in self.caplog.records
                if record.levelno >= logging.ERROR
            ]
            assert not logged, logged
        return task.result()

    async def _ask_healthy(self) -> None:
        """Ask the healthy agent one question and check its answer."""
        question = f"Ping {len(self.healthy_answers)}"
        result = await conversation.async_converse(
            self.hass, question, None, Context(), agent_id=self.healthy_agent
        )
        answer = str(result.response.speech["plain"]["speech"])
        assert answer == f"You said: {question}", answer
        self.healthy_answers.append(answer)


def entity_of(hass: HomeAssistant, entry: MockConfigEntry, domain: str) -> str:
    """Return the entity id of the entry's one entity in the domain."""
    (entity_id,) = (
        entity.entity_id
        for entity in er.async_entries_for_config_entry(
            er.async_get(hass), entry.entry_id
        )
        if entity.domain == domain
    )
    return entity_id


type FaultHarnessFactory = Callable[..., Awaitable[FaultHarness]]


@pytest.fixture
async def healthy_simulator(socket_enabled: None) -> AsyncGenerator[OpenAISimulator]:
    """Serve a second simulator, left with its built-in (healthy) answers."""
    async with served(OpenAISimulator()) as sim:
        yield sim


@pytest.fixture
def fault_harness(
    hass: HomeAssistant,
    caplog: pytest.LogCaptureFixture,
    simulator: OpenAISimulator,
    healthy_simulator: OpenAISimulator,
    setup_entry: SetupEntry,
) -> FaultHarnessFactory:
    """Return a factory of harnesses; keywords go to the faulty entry.

    The keywords are those of `make_config_entry` (`conversation`, `ai_task`,
    `provider`, ...); the healthy entry's agent has no tools.
    """

    async def factory(**faulty: Any) -> FaultHarness:
        faulty_entry = await setup_entry(**faulty)
        healthy_entry = await setup_entry(
            base_url=healthy_simulator.base_url,
            conversation={CONF_LLM_HASS_API: []},
        )
        return FaultHarness(
            hass, caplog, simulator, healthy_simulator, faulty_entry, healthy_entry
        )

    return factory
