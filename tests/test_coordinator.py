"""The entry's coordinator, over HTTP against the simulator.

Whether the server answers makes the entities available or not; the model
list is read again every six hours, and every minute while the server is gone.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
import logging
from unittest.mock import patch

from freezegun.api import FrozenDateTimeFactory
from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import STATE_UNAVAILABLE
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)

from custom_components.openai_compatible.const import (
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    CONF_SERVER_KIND,
    SUBENTRY_CONVERSATION,
    Feature,
)
from custom_components.openai_compatible.coordinator import (
    CHECK_INTERVAL,
    REFRESH_INTERVAL,
    entry_kind,
)
from custom_components.openai_compatible.models.server_info import ServerKind
from custom_components.openai_compatible.repairs import model_issue_id
from simulator import OpenAISimulator
from tests.test_repair_issues import (
    model_issues,
    model_list_requests,
    refresh,
    subentry_id,
)

from .conftest import AGENT, STT_ENTITY, TTS_ENTITY, SetupEntry, converse, forget_button


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Hold the clock still: the tests move it to each refresh and check."""


TASK = "ai_task.openai_compatible_ai_task"
# The entities of one subentry each: they follow the server's availability.
SERVICE_ENTITIES = (AGENT, TASK, STT_ENTITY, TTS_ENTITY)


def unavailable(hass: HomeAssistant) -> list[bool]:
    """Return, for each service entity, whether it is unavailable."""
    return [
        hass.states.get(entity_id).state == STATE_UNAVAILABLE
        for entity_id in SERVICE_ENTITIES
    ]


def port_of(simulator: OpenAISimulator) -> int:
    """Return the port the simulator serves on, to start it there again."""
    return int(simulator.base_url.rsplit(":", 1)[1].split("/")[0])


def logged(caplog: pytest.LogCaptureFixture, level: int, text: str) -> int:
    """Return how many records of a level say a text."""
    return sum(
        record.levelno == level and text in record.getMessage()
        for record in caplog.records
    )


async def gone_at_a_refresh(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_voice: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> tuple[MockConfigEntry, int]:
    """Load an entry with every service entity; stop the server; refresh."""
    entry = await setup_voice(stt={}, tts={})
    port = port_of(simulator)
    await simulator.stop()
    await refresh(hass, freezer)
    return entry, port


async def test_a_server_gone_is_checked_every_minute_until_it_answers(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_voice: SetupEntry,
    freezer: FrozenDateTimeFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Gone: one warning, entities unavailable; back at a check: one info line."""
    entry, port = await gone_at_a_refresh(hass, simulator, setup_voice, freezer)

    assert all(unavailable(hass))
    # The server's own button does not depend on the server answering.
    assert hass.states.get(forget_button(hass, entry)).state != STATE_UNAVAILABLE
    assert logged(caplog, logging.WARNING, "cannot be reached") == 1

    await refresh(hass, freezer, CHECK_INTERVAL)  # still gone: nothing new said
    assert all(unavailable(hass))
    assert logged(caplog, logging.WARNING, "cannot be reached") == 1

    await simulator.start(port=port)
    asked = model_list_requests(simulator)
    await refresh(hass, freezer, CHECK_INTERVAL)

    assert not any(unavailable(hass))
    assert model_list_requests(simulator) == asked + 1
    assert logged(caplog, logging.INFO, "answers again") == 1
    ours = [r for r in caplog.records if r.name.startswith("custom_components")]
    assert not [r for r in ours if r.levelno >= logging.ERROR]

    # Back to a refresh every six hours.
    await refresh(hass, freezer, CHECK_INTERVAL)
    assert model_list_requests(simulator) == asked + 1


async def test_an_answered_request_brings_the_entities_back_at_once(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_voice: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A request that gets an answer needs no check; the next refresh is hours away."""
    _entry, port = await gone_at_a_refresh(hass, simulator, setup_voice, freezer)
    await simulator.start(port=port)

    await converse(hass, "Hi")

    assert not any(unavailable(hass))
    asked = model_list_requests(simulator)
    await refresh(hass, freezer, CHECK_INTERVAL)
    assert model_list_requests(simulator) == asked
    await refresh(hass, freezer)
    assert model_list_requests(simulator) == asked + 1


async def test_a_request_answered_after_a_refresh_failed_otherwise_brings_them_back(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_voice: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The transport tells only changes, so it follows what a refresh found."""
    await setup_voice(stt={}, tts={})
    with patch(
        "custom_components.openai_compatible.coordinator.async_server_report",
        side_effect=RuntimeError("a bug"),
    ):
        await refresh(hass, freezer)
    assert all(unavailable(hass))

    await converse(hass, "Hi")

    assert not any(unavailable(hass))


async def test_an_unloaded_entry_checks_no_more(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_voice: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The minute's check goes with the entry."""
    entry, port = await gone_at_a_refresh(hass, simulator, setup_voice, freezer)
    assert await hass.config_entries.async_unload(entry.entry_id)
    await simulator.start(port=port)
    asked = model_list_requests(simulator)

    await refresh(hass, freezer, CHECK_INTERVAL)

    assert model_list_requests(simulator) == asked


async def test_refresh_notices_a_model_going_and_coming_back(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The list is read again every interval, in place; issues follow it."""
    entry = await setup_entry(ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    runtime = entry.runtime_data
    issue_id = model_issue_id(subentry_id(entry, SUBENTRY_CONVERSATION), "chat_model")
    asked = model_list_requests(simulator)

    simulator.models.remove("gpt-4o-mini")
    freezer.tick(REFRESH_INTERVAL - timedelta(minutes=1))
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)

    assert model_list_requests(simulator) == asked
    assert model_issues(hass) == {}

    await refresh(hass, freezer)

    assert model_list_requests(simulator) == asked + 1
    assert list(model_issues(hass)) == [issue_id]
    assert "gpt-4o-mini" not in runtime.models
    # Updated in place: the same runtime data, no reload.
    assert entry.runtime_data is runtime
    assert entry.state is ConfigEntryState.LOADED

    simulator.models.append("gpt-4o-mini")
    await refresh(hass, freezer)

    assert model_issues(hass) == {}
    assert "gpt-4o-mini" in runtime.models


async def test_refresh_forgets_lessons_only_when_the_list_changes(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Lessons are tied to the model list: the same list keeps them."""
    entry = await setup_entry()
    capabilities = entry.runtime_data.capabilities
    capabilities.model("gpt-4o-mini").learn_refused(
        Feature.LOGPROBS, "HTTP 400: refused"
    )
    server = capabilities.server

    await refresh(hass, freezer)

    assert capabilities.server == server
    assert capabilities.model("gpt-4o-mini").refuses(Feature.LOGPROBS)

    simulator.models.append("qwen3:8b")
    await refresh(hass, freezer)

    assert capabilities.server != server
    assert not capabilities.model("gpt-4o-mini").refuses(Feature.LOGPROBS)
    assert not capabilities.diagnostics([])["models"]


@pytest.mark.parametrize("status", [500, 401, 429])
async def test_failed_refresh_changes_nothing_quietly(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
    caplog: pytest.LogCaptureFixture,
    status: int,
) -> None:
    """A refresh the server fails keeps the list and logs nothing above debug."""
    entry = await setup_entry()
    models = list(entry.runtime_data.models)
    simulator.models.remove("gpt-4o-mini")
    simulator.enqueue("/models", status=status)
    caplog.set_level(logging.DEBUG, logger="custom_components.openai_compatible")

    await refresh(hass, freezer)

    assert entry.runtime_data.models == models
    assert model_issues(hass) == {}
    assert entry.state is ConfigEntryState.LOADED
    # The server answered: its entities stay available.
    assert hass.states.get(AGENT).state != STATE_UNAVAILABLE
    ours = [r for r in caplog.records if r.name.startswith("custom_components")]
    assert any("were not refreshed" in r.getMessage() for r in ours)
    assert all(r.levelno <= logging.DEBUG for r in ours)


async def test_refresh_without_a_list_keeps_the_known_one(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A server that stops listing its models is not taken to have none."""
    entry = await setup_entry(conversation={CONF_CHAT_MODEL: "gone-model"})
    models = list(entry.runtime_data.models)
    simulator.settings.models_endpoint = False

    await refresh(hass, freezer)

    assert entry.runtime_data.models == models
    assert len(model_issues(hass)) == 1


class TestUnloadDuringRefresh:
    """A refresh under way when the entry unloads, on the real clock."""

    @pytest.fixture(autouse=True)
    def frozen_time(self) -> None:
        """Leave the clock running: the server answers after a real delay."""

    async def test_unloaded_during_a_refresh(
        self, hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
    ) -> None:
        """The refresh is cancelled: it changes nothing and leaves no issue behind."""
        entry = await setup_entry()
        runtime = entry.runtime_data
        simulator.models.remove("gpt-4o-mini")
        simulator.settings.latency = 0.3

        async_fire_time_changed(hass, dt_util.utcnow() + REFRESH_INTERVAL)
        assert await hass.config_entries.async_unload(entry.entry_id)
        await asyncio.sleep(0.5)
        await hass.async_block_till_done(wait_background_tasks=True)

        assert model_list_requests(simulator) >= 2
        assert "gpt-4o-mini" in runtime.models
        assert model_issues(hass) == {}


@pytest.mark.parametrize(
    ("provider", "stored", "kind"),
    [
        ("ollama", None, ServerKind.OLLAMA),
        ("ollama", "vllm", ServerKind.OLLAMA),
        ("custom", "ollama", ServerKind.OLLAMA),
        ("custom", "lm_studio", ServerKind.LM_STUDIO),
        ("custom", "sglang", None),
        ("custom", None, None),
    ],
)
def test_entry_kind(provider: str, stored: str | None, kind: ServerKind | None) -> None:
    """An entry's software is its preset's, else the one its server was recognised as."""
    data = {CONF_PROVIDER: provider}
    if stored is not None:
        data[CONF_SERVER_KIND] = stored
    assert entry_kind(data) is kind
