"""Config entry diagnostics: settings, models and capabilities, without secrets."""

from __future__ import annotations

from datetime import timedelta
import json

from freezegun.api import FrozenDateTimeFactory
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import MockConfigEntry
from pytest_homeassistant_custom_component.components.diagnostics import (
    get_diagnostics_for_config_entry,
)
from pytest_homeassistant_custom_component.typing import ClientSessionGenerator
from syrupy.assertion import SnapshotAssertion
from syrupy.matchers import path_type

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.diagnostics import (
    async_get_config_entry_diagnostics,
)
from simulator import OpenAISimulator

from .conftest import TEST_API_KEY, SetupEntry, converse

# The simulator listens on a random port.
VOLATILE = path_type({"title": (str,), "data.base_url": (str,)})


async def test_diagnostics(
    hass: HomeAssistant,
    hass_client: ClientSessionGenerator,
    setup_integration: MockConfigEntry,
    snapshot: SnapshotAssertion,
    freezer: FrozenDateTimeFactory,
) -> None:
    """The key and the prompts are redacted; models and capabilities are shown.

    Each lesson shows its age and what taught it.
    """
    setup_integration.runtime_data.capabilities.model("gpt-4o-mini").learn_refused(
        Feature.LOGPROBS, "HTTP 400: logprobs are not supported"
    )
    freezer.tick(timedelta(seconds=90))
    result = await get_diagnostics_for_config_entry(
        hass, hass_client, setup_integration
    )
    assert result == snapshot(matcher=VOLATILE)
    text = json.dumps(result)
    assert TEST_API_KEY not in text
    assert "You are a test assistant." not in text
    assert result["data"]["base_url"] == setup_integration.data["base_url"]
    model = result["capabilities"]["models"]["gpt-4o-mini"]
    assert model["learned"]["refused"] == {
        "logprobs": {
            "age_seconds": 90,
            "source": "HTTP 400: logprobs are not supported",
        }
    }
    assert "logprobs" in model["refused"]


async def test_diagnostics_of_entry_not_loaded(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry
) -> None:
    """An entry that is not loaded has no models or capabilities to show."""
    result = await async_get_config_entry_diagnostics(hass, mock_config_entry)
    assert result["state"] == "not_loaded"
    assert "models" not in result
    assert "capabilities" not in result
    assert result["data"]["api_key"] == "**REDACTED**"


async def test_a_refusal_quoting_the_prompt_is_not_kept(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A lesson keeps the status and the feature refused, not the server's words."""
    entry = await setup_entry(conversation={CONF_LLM_HASS_API: []})
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json={
            "error": {
                "message": "stream_options is not supported. Your prompt: my PIN "
                "is 4711 and the alarm code is 0815"
            }
        },
    )

    await converse(hass, "Hello")

    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    lesson = model.lessons.refused[Feature.STREAM_OPTIONS]
    assert lesson.source == "HTTP 400 refusing stream_options"
    text = json.dumps(await async_get_config_entry_diagnostics(hass, entry))
    assert "4711" not in text
