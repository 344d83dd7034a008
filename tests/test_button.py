"""The server's button that forgets what was learned about it."""

from __future__ import annotations

import logging

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import EVENT_STATE_CHANGED, STATE_UNAVAILABLE, EntityCategory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr, entity_registry as er
import pytest

from custom_components.openai_compatible.const import DOMAIN, Feature
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
    assert state.name == f"{entry.title} Relearn capabilities"


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


async def test_press_says_what_it_forgot_once_without_a_reload(
    hass: HomeAssistant,
    setup_entry: SetupEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What was forgotten is the button's attribute and one log line.

    Nothing reloads, so the button changes state once (one line in Activity)
    and the agent never goes unavailable.
    """
    entry = await setup_entry()
    runtime = entry.runtime_data
    capabilities = runtime.capabilities
    capabilities.model(MODEL).learn_refused(Feature.TOOLS, "HTTP 400: no tools")
    capabilities.model(MODEL).learn_refused_fields(("top_k",), "HTTP 400: top_k")
    button = forget_button(hass, entry)
    states: list[tuple[str, str]] = []
    hass.bus.async_listen(
        EVENT_STATE_CHANGED,
        lambda event: states.append(
            (event.data["entity_id"], event.data["new_state"].state)
        ),
    )
    caplog.set_level(logging.INFO)

    await press_forget(hass, entry)

    assert entry.runtime_data is runtime
    state = hass.states.get(button)
    assert state is not None
    assert state.attributes["forgotten"] == [
        "gpt-4o-mini: refused tools; refused the fields top_k"
    ]
    assert len({new for entity_id, new in states if entity_id == button}) == 1
    assert STATE_UNAVAILABLE not in {new for _, new in states}
    logged = [r.getMessage() for r in caplog.records if "Forgot" in r.getMessage()]
    told = "gpt-4o-mini: refused tools; refused the fields top_k"
    assert logged == [f"Forgot what was learned about {entry.title}: {told}"]

    await press_forget(hass, entry)

    state = hass.states.get(button)
    assert state is not None
    assert state.attributes["forgotten"] == []
