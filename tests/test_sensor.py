"""The usage sensors of each agent and task, against the simulator."""

from __future__ import annotations

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er, restore_state as rs
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import SUBENTRY_CONVERSATION
from simulator import OpenAISimulator

from .conftest import SetupEntry, converse
from .test_translations import EN

KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens", "requests", "errors")
# The usage sensors of the default agent, by key (entity ids follow the names).
ENTITY_IDS = {
    key: f"sensor.openai_compatible_conversation_{name}"
    for key, name in zip(
        KEYS,
        (
            "prompt_tokens",
            "completion_tokens",
            "cached_prompt_tokens",
            "requests",
            "errors",
        ),
        strict=True,
    )
}


async def _enable_usage_sensors(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Enable every usage sensor of the entry and reload it."""
    registry = er.async_get(hass)
    for entity in er.async_entries_for_config_entry(registry, entry.entry_id):
        if entity.domain == "sensor":
            registry.async_update_entity(entity.entity_id, disabled_by=None)
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()


def _value(hass: HomeAssistant, key: str) -> int:
    """Return the state of one usage sensor of the default agent."""
    state = hass.states.get(ENTITY_IDS[key])
    assert state is not None, key
    return int(state.state)


async def test_sensors_are_disabled_diagnostics_of_each_subentry(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """Five sensors per agent and task, disabled, on the subentry's device."""
    registry = er.async_get(hass)
    sensors = [
        entity
        for entity in er.async_entries_for_config_entry(
            registry, setup_integration.entry_id
        )
        if entity.domain == "sensor"
    ]
    assert len(sensors) == 5 * len(setup_integration.subentries)
    agent = next(
        sub
        for sub in setup_integration.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    agent_device = registry.async_get(
        "conversation.openai_compatible_conversation"
    ).device_id
    names = EN["entity"]["sensor"]
    for entity in sensors:
        assert entity.disabled_by is er.RegistryEntryDisabler.INTEGRATION
        assert entity.entity_category is EntityCategory.DIAGNOSTIC
        assert names[entity.translation_key]["name"]
    assert sorted(
        entity.entity_id
        for entity in sensors
        if entity.config_subentry_id == agent.subentry_id
    ) == sorted(ENTITY_IDS.values())
    assert {
        entity.device_id
        for entity in sensors
        if entity.config_subentry_id == agent.subentry_id
    } == {agent_device}
    assert not hass.states.async_entity_ids("sensor")


async def test_a_conversation_is_counted(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Each request, its tokens as the server reports them, and each failure."""
    entry = await setup_entry()
    await _enable_usage_sensors(hass, entry)
    assert {key: _value(hass, key) for key in KEYS} == dict.fromkeys(KEYS, 0)
    state = hass.states.get(ENTITY_IDS["prompt_tokens"])
    assert state is not None
    assert state.attributes["unit_of_measurement"] == "tokens"
    assert state.attributes["state_class"] == "total_increasing"
    assert state.attributes["friendly_name"] == (
        "OpenAI Compatible conversation Prompt tokens"
    )

    simulator.enqueue(
        "/chat/completions",
        sse=[
            {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
            {"choices": [{"index": 0, "delta": {"content": "Hi!"}}]},
            {
                "choices": [],
                "usage": {
                    "prompt_tokens": 1500,
                    "completion_tokens": 3,
                    "prompt_tokens_details": {"cached_tokens": 1280},
                },
            },
        ],
    )
    await converse(hass, "Hello")
    await hass.async_block_till_done()
    assert {key: _value(hass, key) for key in KEYS} == {
        "prompt_tokens": 1500,
        "completion_tokens": 3,
        "cached_tokens": 1280,
        "requests": 1,
        "errors": 0,
    }

    simulator.settings.fail_status = 500
    await converse(hass, "Hello again")
    await hass.async_block_till_done()
    assert (_value(hass, "requests"), _value(hass, "errors")) == (2, 1)
    assert _value(hass, "prompt_tokens") == 1500


async def test_counts_continue_after_a_restart(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Counts saved at shutdown are restored, and what follows adds to them."""
    entry = await setup_entry()
    await _enable_usage_sensors(hass, entry)
    await converse(hass, "Hello")
    await hass.async_block_till_done()
    before = {key: _value(hass, key) for key in KEYS}
    assert before["requests"] == 1
    assert before["prompt_tokens"] > 0

    # Shut down: the states are saved to storage; start: they are read back.
    await rs.async_get(hass).async_dump_states()
    assert await hass.config_entries.async_unload(entry.entry_id)
    hass.data.pop(rs.DATA_RESTORE_STATE)
    await rs.async_load(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert {key: _value(hass, key) for key in KEYS} == before

    await converse(hass, "Hello again")
    await hass.async_block_till_done()
    assert _value(hass, "requests") == 2
    assert _value(hass, "prompt_tokens") > before["prompt_tokens"]
