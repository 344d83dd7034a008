"""Faults of a server's model list: hundreds of thousands of names, patterns."""

from __future__ import annotations

import json

from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import issue_registry as ir

from custom_components.openai_compatible.const import (
    CONF_BASE_URL,
    CONF_PROVIDER,
    DOMAIN,
)
from custom_components.openai_compatible.models.listing import (
    MAX_LISTED_MODELS,
    MAX_LISTING_BYTES,
)
from custom_components.openai_compatible.models.names import MAX_OFFERED
from custom_components.openai_compatible.models.providers import PROVIDER_CUSTOM

from .conftest import FaultHarnessFactory

JSON = {"Content-Type": "application/json"}


def _model_page(names: list[str]) -> bytes:
    """Return a models page listing the names, each entry as small as it gets."""
    return json.dumps({"object": "list", "data": [{"id": n} for n in names]}).encode()


async def test_a_list_of_patterns_keeps_the_loop_free(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A refresh that lists 466k names with `*` reads 10k and matches a few; the loop runs on."""
    harness = await fault_harness(provider="openai")
    page = _model_page([f"*{index:06d}" for index in range(466_000)])
    assert len(page) > MAX_LISTING_BYTES  # cut: the most a server can send
    harness.faulty.enqueue("/models", raw=page, headers=JSON)
    coordinator = harness.faulty_entry.runtime_data.coordinator

    await harness.run(coordinator.async_refresh())

    assert len(coordinator.data.models) == MAX_LISTED_MODELS
    # No listed pattern that counts matches the agent's model.
    issues = ir.async_get(harness.hass).issues
    assert any(issue[1].startswith("model_") for issue in issues)


async def test_a_config_flow_over_200k_models_keeps_the_loop_free(
    fault_harness: FaultHarnessFactory,
) -> None:
    """Picking default models among 200k names leaves Home Assistant answering."""
    harness = await fault_harness()
    page = _model_page([f"model-{index:06d}" for index in range(200_000)])
    # The flow's check, then the new entry's setup.
    harness.faulty.enqueue("/models", raw=page, headers=JSON)
    harness.faulty.enqueue("/models", raw=page, headers=JSON)
    hass: HomeAssistant = harness.hass

    async def flow() -> FlowResultType:
        result = await hass.config_entries.flow.async_init(
            DOMAIN, context={"source": SOURCE_USER}
        )
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_PROVIDER: PROVIDER_CUSTOM}
        )
        result = await hass.config_entries.flow.async_configure(
            # Another key: the faulty entry has this server with its own.
            result["flow_id"],
            {CONF_BASE_URL: harness.faulty.base_url, CONF_API_KEY: "another-key"},
        )
        await hass.async_block_till_done()
        return result["type"]

    assert await harness.run(flow()) is FlowResultType.CREATE_ENTRY
    (entry,) = (
        entry
        for entry in hass.config_entries.async_entries(DOMAIN)
        if entry.entry_id
        not in (harness.faulty_entry.entry_id, harness.healthy_entry.entry_id)
    )
    assert len(entry.runtime_data.models) == MAX_OFFERED
