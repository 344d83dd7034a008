"""The agent and task flow: the advanced extra request fields and thinking switch."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import (
    CONF_CHAT_MODEL,
    CONF_EXTRA_FIELDS,
    CONF_RECOMMENDED,
    CONF_THINKING,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)

EXTRA = {"min_p": 0.05, "top_k": 40, "chat_template_kwargs": {"enable_thinking": False}}


async def _submit(
    hass: HomeAssistant, entry: MockConfigEntry, kind: str, values: dict[str, Any]
) -> Any:
    """Open the form of a new subentry of a kind and submit the values."""
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, kind), context={"source": SOURCE_USER}
    )
    base = {CONF_NAME: "Local", CONF_CHAT_MODEL: "llama3.2:3b"}
    if kind == SUBENTRY_CONVERSATION:
        base[CONF_LLM_HASS_API] = []
    return await hass.config_entries.subentries.async_configure(
        result["flow_id"], {**base, **values}
    )


@pytest.mark.parametrize("kind", [SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK])
async def test_extra_fields_and_thinking_saved(
    hass: HomeAssistant, setup_integration: MockConfigEntry, kind: str
) -> None:
    """With the recommended settings off, the object and the switch are kept."""
    result = await _submit(
        hass,
        setup_integration,
        kind,
        {CONF_RECOMMENDED: False, CONF_EXTRA_FIELDS: EXTRA, CONF_THINKING: "off"},
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_EXTRA_FIELDS] == EXTRA
    assert result["data"][CONF_THINKING] == "off"
    await hass.async_block_till_done()


async def test_server_default_and_recommended_save_nothing(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """The server's default is not saved; nor is anything while recommended."""
    result = await _submit(
        hass,
        setup_integration,
        SUBENTRY_CONVERSATION,
        {CONF_RECOMMENDED: True, CONF_EXTRA_FIELDS: EXTRA, CONF_THINKING: "on"},
    )
    assert CONF_EXTRA_FIELDS not in result["data"]
    assert CONF_THINKING not in result["data"]
    await hass.async_block_till_done()
    result = await _submit(
        hass, setup_integration, SUBENTRY_CONVERSATION, {CONF_RECOMMENDED: False}
    )
    assert CONF_EXTRA_FIELDS not in result["data"]
    assert CONF_THINKING not in result["data"]
    await hass.async_block_till_done()


@pytest.mark.parametrize(
    ("fields", "error", "named"),
    [
        (
            {"top_k": 40, "stream": False, "model": "x"},
            "extra_fields_owned",
            "model, stream",
        ),
        (
            {"response_format": {"type": "text"}},
            "extra_fields_owned",
            "response_format",
        ),
        ({"text": {"verbosity": "low"}}, "extra_fields_owned", "text"),
        ([1, 2], "extra_fields_not_object", None),
        ("top_k: 40", "extra_fields_not_object", None),
    ],
)
async def test_refused_in_the_form(
    hass: HomeAssistant,
    setup_integration: MockConfigEntry,
    fields: Any,
    error: str,
    named: str | None,
) -> None:
    """An owned field, or what is no object, shows the form again with the error."""
    result = await _submit(
        hass,
        setup_integration,
        SUBENTRY_CONVERSATION,
        {CONF_RECOMMENDED: False, CONF_EXTRA_FIELDS: fields},
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_EXTRA_FIELDS: error}
    assert (result["description_placeholders"] or {}).get("fields") == named
