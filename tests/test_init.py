"""Setting up and unloading an entry, against the simulator."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from types import MappingProxyType
from typing import Any
from unittest.mock import patch

from homeassistant.components import ai_task
from homeassistant.config_entries import (
    SOURCE_REAUTH,
    ConfigEntryState,
    ConfigSubentry,
    ConfigSubentryData,
)
from homeassistant.const import (
    ATTR_SUPPORTED_FEATURES,
    CONF_LLM_HASS_API,
    EVENT_STATE_CHANGED,
    STATE_UNAVAILABLE,
)
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible import coordinator
from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_IMAGE_MODEL,
    CONF_PROVIDER,
    CONF_STREAMING,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONVERSATION_NAME,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)
from custom_components.openai_compatible.diagnostics import (
    async_get_config_entry_diagnostics,
)
from custom_components.openai_compatible.models import listing, server_info
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.models.listing import MAX_LISTED_MODELS
from custom_components.openai_compatible.models.providers import PROVIDER_CUSTOM
from simulator import DEFAULT_MODELS, OpenAISimulator, Pause, chunk

from .conftest import AGENT, MakeConfigEntry, SetupEntry, converse, speech

TASK = "ai_task.openai_compatible_ai_task"


async def test_setup_and_unload(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """An entry loads with the listed models and unloads cleanly."""
    entry = setup_integration
    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data.models == sorted(DEFAULT_MODELS)
    assert hass.states.async_entity_ids("conversation")
    assert await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.NOT_LOADED


async def test_sends_the_key(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_integration: MockConfigEntry
) -> None:
    """Setup lists the models with the entry's key."""
    request = simulator.requests[0]
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["Authorization"].startswith("Bearer sk-test-")


async def test_refused_key_starts_reauth(
    hass: HomeAssistant,
    keyed_simulator: OpenAISimulator,
    make_config_entry: MakeConfigEntry,
) -> None:
    """A 401 at setup is ConfigEntryAuthFailed: the entry asks for a new key."""
    entry = make_config_entry(base_url=keyed_simulator.base_url, api_key="sk-wrong")
    assert not await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.SETUP_ERROR
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [flow["context"]["source"] for flow in flows] == [SOURCE_REAUTH]
    assert flows[0]["context"]["entry_id"] == entry.entry_id


async def test_server_down_is_not_ready(
    hass: HomeAssistant, make_config_entry: MakeConfigEntry, socket_enabled: None
) -> None:
    """A server that cannot be reached makes setup retry later."""
    sim = OpenAISimulator()
    await sim.start()
    url = sim.base_url
    await sim.stop()
    entry = make_config_entry(base_url=url)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_RETRY
    assert entry.reason == "Cannot connect to the model server"


async def test_failing_server_is_not_ready(
    hass: HomeAssistant, simulator: OpenAISimulator, mock_config_entry: MockConfigEntry
) -> None:
    """A server error on the models list is worth a retry, not an empty list."""
    simulator.settings.fail_status = 503
    assert not await hass.config_entries.async_setup(mock_config_entry.entry_id)
    assert mock_config_entry.state is ConfigEntryState.SETUP_RETRY
    assert simulator.settings.fail_message in (mock_config_entry.reason or "")


async def test_missing_models_endpoint_still_loads(
    hass: HomeAssistant, simulator: OpenAISimulator, mock_config_entry: MockConfigEntry
) -> None:
    """A server without /models loads, knowing no models."""
    simulator.settings.models_endpoint = False
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    assert mock_config_entry.state is ConfigEntryState.LOADED
    assert mock_config_entry.runtime_data.models == []


@pytest.mark.parametrize(
    "answer",
    [
        {"raw": "<html><body>Welcome</body></html>"},
        {"raw": "<html>", "headers": {"Content-Type": "text/html"}},
        {"json": ["gpt-5-mini"]},
        {"raw": ""},
        {"raw": "", "headers": {"Content-Type": "application/json"}},
    ],
)
async def test_models_answer_that_is_no_listing_still_loads(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    mock_config_entry: MockConfigEntry,
    answer: dict[str, Any],
) -> None:
    """A 200 on /models that is no models page means no models route."""
    simulator.enqueue("/models", **answer)
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    assert mock_config_entry.state is ConfigEntryState.LOADED
    assert mock_config_entry.runtime_data.models == []


async def test_odd_models_listing(
    hass: HomeAssistant, simulator: OpenAISimulator, mock_config_entry: MockConfigEntry
) -> None:
    """A listing with odd entries keeps only the usable ids."""
    simulator.enqueue(
        "/models",
        json={
            "object": "list",
            "data": [{"id": "b"}, {"id": ""}, {"x": 1}, {"id": "a"}],
        },
    )
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    assert mock_config_entry.runtime_data.models == ["a", "b"]


def _subentry(entry: MockConfigEntry, kind: str) -> ConfigSubentry:
    """Return the entry's subentry of a kind."""
    return next(s for s in entry.subentries.values() if s.subentry_type == kind)


async def test_subentry_change_applies_in_place(
    hass: HomeAssistant, setup_integration: MockConfigEntry, simulator: OpenAISimulator
) -> None:
    """A subentry's new settings apply without a reload: nothing goes unavailable.

    The models are listed again (a new model's report), and the entities'
    features, names and devices follow.
    """
    entry = setup_integration
    runtime = entry.runtime_data
    listed = sum(request.path == "/v1/models" for request in simulator.requests)
    changes: list[tuple[str, str]] = []
    hass.bus.async_listen(
        EVENT_STATE_CHANGED,
        lambda event: changes.append(
            (event.data["entity_id"], event.data["new_state"].state)
        ),
    )
    agent = _subentry(entry, SUBENTRY_CONVERSATION)
    task = _subentry(entry, SUBENTRY_AI_TASK)

    hass.config_entries.async_update_subentry(
        entry,
        agent,
        title="Renamed",
        data={**agent.data, CONF_CHAT_MODEL: "gpt-5-mini", CONF_STREAMING: False}
        | {CONF_LLM_HASS_API: []},
    )
    await hass.async_block_till_done()
    assert (
        sum(request.path == "/v1/models" for request in simulator.requests)
        == listed + 1
    )
    hass.config_entries.async_update_subentry(
        entry, task, data={**task.data, CONF_IMAGE_MODEL: ""}
    )
    await hass.async_block_till_done()

    assert entry.runtime_data is runtime
    assert entry.state is ConfigEntryState.LOADED
    assert not [change for change in changes if change[1] == STATE_UNAVAILABLE]
    device = dr.async_get(hass).async_get_device_by_identifier(
        (DOMAIN, agent.subentry_id), entry.entry_id
    )
    assert device is not None
    assert (device.name, device.model) == ("Renamed", "gpt-5-mini")
    state = hass.states.get(AGENT)
    assert state is not None
    assert state.name == "Renamed"
    assert state.attributes[ATTR_SUPPORTED_FEATURES] == 0
    task_state = hass.states.get(TASK)
    assert task_state is not None
    assert not (
        task_state.attributes[ATTR_SUPPORTED_FEATURES]
        & ai_task.AITaskEntityFeature.GENERATE_IMAGE
    )

    await converse(hass, "Hello")

    (body,) = simulator.chat_requests()
    assert body["model"] == "gpt-5-mini"
    assert not body.get("stream")
    assert "tools" not in body


@pytest.mark.parametrize("change", ["options", "new subentry"])
async def test_entry_change_reloads(
    hass: HomeAssistant, setup_integration: MockConfigEntry, change: str
) -> None:
    """A change of the entry itself, or a subentry added, sets the entry up anew."""
    entry = setup_integration
    runtime = entry.runtime_data
    if change == "options":
        hass.config_entries.async_update_entry(
            entry, options={CONF_API: WireApi.CHAT_COMPLETIONS}
        )
    else:
        hass.config_entries.async_add_subentry(
            entry,
            ConfigSubentry(
                data=MappingProxyType({CONF_CHAT_MODEL: "gpt-5-mini"}),
                subentry_type=SUBENTRY_CONVERSATION,
                title="Second agent",
                unique_id=None,
            ),
        )
    await hass.async_block_till_done()

    assert entry.state is ConfigEntryState.LOADED
    assert entry.runtime_data is not runtime


# --- migration ----------------------------------------------------------------


async def test_migrate_1_1_drops_unique_id_and_fixed_titles(
    hass: HomeAssistant, simulator: OpenAISimulator, ha_core: None
) -> None:
    """A 1.1 entry loses its unique id; fixed subentry titles name server and model."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        title="Ollama (127.0.0.1:11434)",
        data={CONF_PROVIDER: "ollama", CONF_BASE_URL: simulator.base_url},
        unique_id=f"{simulator.base_url}|e3b0c442",
        version=1,
        minor_version=1,
        subentries_data=[
            ConfigSubentryData(
                data={CONF_CHAT_MODEL: "llama3.2:3b"},
                subentry_type=SUBENTRY_CONVERSATION,
                title=DEFAULT_CONVERSATION_NAME,
                unique_id=None,
            ),
            ConfigSubentryData(
                data={CONF_CHAT_MODEL: "llama3.2:3b"},
                subentry_type=SUBENTRY_AI_TASK,
                title=DEFAULT_AI_TASK_NAME,
                unique_id=None,
            ),
            ConfigSubentryData(
                data={CONF_CHAT_MODEL: "gpt-5-mini"},
                subentry_type=SUBENTRY_CONVERSATION,
                title="Kitchen helper",
                unique_id=None,
            ),
        ],
    )
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert (entry.version, entry.minor_version) == (1, 2)
    assert entry.unique_id is None
    assert sorted(sub.title for sub in entry.subentries.values()) == [
        "Kitchen helper",
        "Ollama · llama3.2:3b",
        "Ollama · llama3.2:3b · AI task",
    ]
    assert entry.title == "Ollama (127.0.0.1:11434)"


async def test_entry_of_a_newer_version_is_not_loaded(
    hass: HomeAssistant, simulator: OpenAISimulator, ha_core: None
) -> None:
    """An entry saved by a newer major version is left alone, not loaded."""
    entry = MockConfigEntry(
        domain=DOMAIN,
        data={CONF_PROVIDER: PROVIDER_CUSTOM, CONF_BASE_URL: simulator.base_url},
        version=2,
        minor_version=1,
    )
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.MIGRATION_ERROR
    assert (entry.version, entry.minor_version) == (2, 1)
    assert not simulator.requests


async def test_reload_during_a_turn(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_integration: MockConfigEntry
) -> None:
    """A turn under way when the entry reloads finishes with the connection it had."""
    simulator.enqueue(
        "/chat/completions",
        sse=[Pause(0.3), chunk({"role": "assistant", "content": "Still here."})],
    )
    turn = hass.async_create_task(converse(hass, "Hello"))
    await asyncio.sleep(0.1)

    assert await hass.config_entries.async_reload(setup_integration.entry_id)
    result = await turn

    assert speech(result) == "Still here."
    assert setup_integration.state is ConfigEntryState.LOADED


async def test_removal_leaves_no_stored_lessons(
    hass: HomeAssistant, hass_storage: dict[str, Any], setup_entry: SetupEntry
) -> None:
    """The lessons file that earlier builds kept goes with the entry."""
    entry = await setup_entry()
    key = f"{DOMAIN}.{entry.entry_id}.capabilities"
    hass_storage[key] = {"version": 1, "key": key, "data": {"models": {}}}

    assert await hass.config_entries.async_remove(entry.entry_id)
    await hass.async_block_till_done()

    assert key not in hass_storage


async def test_a_key_that_may_not_list_models_still_loads(
    hass: HomeAssistant, simulator: OpenAISimulator, mock_config_entry: MockConfigEntry
) -> None:
    """A 403 that lacks only the models permission is like no models route."""
    simulator.enqueue(
        "/models",
        status=403,
        json={
            "error": {
                "message": "You have insufficient permissions for this operation. "
                "Missing scopes: api.model.read.",
            }
        },
    )
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    assert mock_config_entry.state is ConfigEntryState.LOADED
    assert mock_config_entry.runtime_data.models == []


# --- long model lists ---------------------------------------------------------


async def test_a_long_model_list_is_read_off_the_event_loop(
    hass: HomeAssistant, simulator: OpenAISimulator, mock_config_entry: MockConfigEntry
) -> None:
    """The models page is parsed and summarised in the executor, once per entry.

    The lookup of listed models, which reads the whole list, is made there too.
    """
    simulator.models = [*DEFAULT_MODELS, *(f"model-{n}" for n in range(5000))]
    threads: list[int] = []

    def recorded(function: Any) -> Any:
        def run(*args: Any) -> Any:
            threads.append(threading.get_ident())
            return function(*args)

        return run

    with (
        patch.object(listing, "read_listing", recorded(listing.read_listing)),
        patch.object(server_info, "listed_report", recorded(server_info.listed_report)),
        patch.object(coordinator, "listed_models", recorded(coordinator.listed_models)),
    ):
        assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
        await hass.async_block_till_done()

    survey = mock_config_entry.runtime_data.coordinator.data
    assert len(survey.models) == len(simulator.models)
    # One page read, one report per entry, one lookup.
    assert len(threads) == 1 + len(simulator.models) + 1
    assert threading.get_ident() not in threads


async def test_a_model_list_over_the_cap_sets_up_with_what_fits(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    mock_config_entry: MockConfigEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A list past MAX_LISTED_MODELS is read up to it: the entry loads and says so."""
    entry = {"id": "", "object": "model", "owned_by": "x" * 100}
    count = MAX_LISTED_MODELS + 10
    data = [{**entry, "id": f"model-{n:06d}"} for n in range(count)]
    page = {"object": "list", "data": [{"id": "gpt-4o-mini"}, *data]}
    simulator.enqueue(
        "/models",
        raw=json.dumps(page),
        headers={"Content-Type": "application/json"},
    )
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()

    assert mock_config_entry.state is ConfigEntryState.LOADED
    models = mock_config_entry.runtime_data.coordinator.data.models
    assert "gpt-4o-mini" in models
    assert 0 < len(models) - 1 < count
    assert models[-1] == data[len(models) - 2]["id"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"set up with the first {len(models)}" in w for w in warnings)
    assert len(models) == MAX_LISTED_MODELS
    unread = f"over 10000 models or 8 MiB: the first {len(models)} read"
    diagnostics = await async_get_config_entry_diagnostics(hass, mock_config_entry)
    assert diagnostics["models_unread"] == unread

    # A refresh that reads the list cut again says so as well, warning no more.
    simulator.enqueue(
        "/models", raw=json.dumps(page), headers={"Content-Type": "application/json"}
    )
    await mock_config_entry.runtime_data.coordinator.async_refresh()
    diagnostics = await async_get_config_entry_diagnostics(hass, mock_config_entry)
    assert diagnostics["models_unread"] == unread
    cut = [r for r in caplog.records if "lists over" in r.getMessage()]
    assert len(cut) == 1
