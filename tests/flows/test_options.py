"""The entry's options: how long a round trip may take, the API it goes over."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import ConfigFlowResult
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType, InvalidData
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_TIMEOUT,
    DEFAULT_TIMEOUT_SECONDS,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from simulator import OpenAISimulator
from tests.conftest import AGENT, SetupEntry, converse


def _default(result: ConfigFlowResult, field: str) -> Any:
    """Return the default a form shows for a field."""
    for key in result["data_schema"].schema:
        if key == field:
            return key.default()
    raise AssertionError(f"no field {field}")


async def _save(
    hass: HomeAssistant, entry: MockConfigEntry, options: dict[str, Any]
) -> ConfigFlowResult:
    """Open the options, save them as given, and let the entry reload."""
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert result["type"] is FlowResultType.FORM
    result = await hass.config_entries.options.async_configure(
        result["flow_id"], options
    )
    await hass.async_block_till_done()
    return result


async def test_options_set_the_request_timeout(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_integration: MockConfigEntry
) -> None:
    """The timeout option bounds every round trip of the entry's entities."""
    entry = setup_integration
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert _default(result, CONF_TIMEOUT) == DEFAULT_TIMEOUT_SECONDS
    result = await _save(hass, entry, {CONF_TIMEOUT: 42})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert entry.options == {CONF_TIMEOUT: 42, CONF_API: WireApi.AUTOMATIC}
    # The entry reloaded; its agent now gives a round trip 42 seconds.
    agent = hass.data["entity_components"]["conversation"].get_entity(AGENT)
    assert agent.budget().deadline == 42


async def test_saved_options_are_shown_again(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """Reopened, the form starts from what was saved."""
    entry = setup_integration
    await _save(hass, entry, {CONF_TIMEOUT: 90, CONF_API: WireApi.RESPONSES})
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert _default(result, CONF_TIMEOUT) == 90
    assert _default(result, CONF_API) == WireApi.RESPONSES


async def test_unknown_saved_api_shows_as_automatic(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """An API value no version offers (an edit by hand) reads as automatic."""
    entry = await setup_entry(options={CONF_API: "websocket"})
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert _default(result, CONF_API) == WireApi.AUTOMATIC


@pytest.mark.parametrize("timeout", [5, 3601])
async def test_timeout_outside_its_range_is_refused(
    hass: HomeAssistant, setup_integration: MockConfigEntry, timeout: int
) -> None:
    """A timeout under ten seconds or over an hour is not saved."""
    entry = setup_integration
    result = await hass.config_entries.options.async_init(entry.entry_id)
    with pytest.raises(InvalidData):
        await hass.config_entries.options.async_configure(
            result["flow_id"], {CONF_TIMEOUT: timeout}
        )
    assert entry.options == {}


async def test_options_choose_the_api(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_integration: MockConfigEntry
) -> None:
    """The API option sends the agent's requests over the Responses API."""
    result = await hass.config_entries.options.async_init(setup_integration.entry_id)
    assert _default(result, CONF_API) == WireApi.AUTOMATIC
    await _save(
        hass, setup_integration, {CONF_TIMEOUT: 60, CONF_API: WireApi.RESPONSES}
    )
    await converse(hass, "Hello")
    assert simulator.responses_requests()
    assert not simulator.chat_requests()


async def test_chat_completions_option_overrides_a_responses_preset(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """OpenAI's preset takes the Responses API unless the option says otherwise."""
    entry = await setup_entry(provider="openai")
    await converse(hass, "Hello")
    assert simulator.responses_requests()
    simulator.requests.clear()
    await _save(hass, entry, {CONF_TIMEOUT: 60, CONF_API: WireApi.CHAT_COMPLETIONS})
    await converse(hass, "Hello again")
    assert simulator.chat_requests()
    assert not simulator.responses_requests()
