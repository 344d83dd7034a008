"""The server's button that forgets what was learned about it."""

from __future__ import annotations

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er

from custom_components.openai_compatible.const import DOMAIN
from custom_components.openai_compatible.features import Feature
from simulator import OpenAISimulator

from .conftest import SetupEntry, forget_button, press_forget

MODEL = "gpt-4o-mini"


async def test_button_on_the_server_device(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """One configuration button per entry, on a device of the server itself."""
    entry = await setup_entry()
    entity = er.async_get(hass).async_get(forget_button(hass, entry))
    assert entity is not None
    assert entity.entity_category is EntityCategory.CONFIG
    device = dr.async_get(hass).async_get(entity.device_id or "")
    assert device is not None
    assert device.identifiers == {(DOMAIN, entry.entry_id)}
    assert device.name == entry.title
    state = hass.states.get(entity.entity_id)
    assert state is not None
    assert state.name == f"{entry.title} Forget what was learned about the server"


async def test_button_forgets_fallbacks_too(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The button forgets the lessons that last, and reads the server again."""
    entry = await setup_entry()
    entry.runtime_data.capabilities.model(MODEL).learn_refused(
        Feature.JSON_SCHEMA, "HTTP 400: no json_schema"
    )
    listed = sum(r.path == "/v1/models" for r in simulator.requests)

    await press_forget(hass, entry)

    assert entry.state is ConfigEntryState.LOADED
    assert sum(r.path == "/v1/models" for r in simulator.requests) == listed + 1
    model = entry.runtime_data.capabilities.model(MODEL)
    assert not model.refuses(Feature.JSON_SCHEMA)
