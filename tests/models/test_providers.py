"""The presets, and local servers answering at their default address."""

from __future__ import annotations

import socket
from unittest.mock import patch

from homeassistant.config_entries import SOURCE_USER
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest

from custom_components.openai_compatible.const import CONF_PROVIDER, DOMAIN
from custom_components.openai_compatible.models import providers
from custom_components.openai_compatible.models.providers import (
    PROVIDER_CUSTOM,
    PROVIDERS,
)
from simulator import OpenAISimulator
from tests.conftest import served


def _closed_port_url() -> str:
    """Return a URL on which nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_local_presets_by_default_address() -> None:
    """Every local preset is asked at its address; shared addresses once."""
    assert providers.PRESETS_BY_ADDRESS == {
        "http://localhost:11434/v1": ["ollama"],
        "http://localhost:1234/v1": ["lm_studio"],
        "http://localhost:8000/v1": ["vllm"],
        "http://localhost:8080/v1": ["llama_cpp", "localai"],
    }


async def test_only_servers_listing_models_in_time_are_found(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """Listing models in time counts; a closed port, a web page or delay does not."""
    async with (
        served(OpenAISimulator()) as page,
        served(OpenAISimulator()) as slow,
    ):
        page.enqueue("/models", raw="<html>router</html>")
        slow.settings.latency = 2.0
        addresses = {
            simulator.base_url: ["llama_cpp", "localai"],
            _closed_port_url(): ["ollama"],
            page.base_url: ["lm_studio"],
            slow.base_url: ["vllm"],
        }
        with (
            patch.object(providers, "PRESETS_BY_ADDRESS", addresses),
            patch.object(providers, "DISCOVERY_SECONDS", 0.5),
        ):
            found = await providers.async_answering_presets(hass)
    assert found == ["llama_cpp", "localai"]
    assert [request.path for request in simulator.requests] == ["/v1/models"]


@pytest.mark.parametrize(
    ("found", "step_id", "default", "placeholders"),
    [
        ([], "user", "openai", None),
        (["ollama"], "user_found", "ollama", {"found": "Ollama"}),
        (
            ["llama_cpp", "localai"],
            "user_found",
            "llama_cpp",
            {"found": "llama.cpp server, LocalAI"},
        ),
    ],
)
@pytest.mark.usefixtures("ha_core")
async def test_first_step_offers_what_answers(
    hass: HomeAssistant,
    found: list[str],
    step_id: str,
    default: str,
    placeholders: dict[str, str] | None,
) -> None:
    """A local server that answers is named and preselected; choosing goes on."""
    with patch(
        "custom_components.openai_compatible.config_flow.async_answering_presets",
        return_value=found,
    ):
        result = await hass.config_entries.flow.async_init(
            DOMAIN, context={"source": SOURCE_USER}
        )
    assert result["step_id"] == step_id
    assert result["description_placeholders"] == placeholders
    (marker,) = result["data_schema"].schema
    assert marker.default() == default
    # What answers first, then any other server, then the other presets.
    options = result["data_schema"].schema[marker].config["options"]
    assert options[: len(found) + 1] == [*found, PROVIDER_CUSTOM]
    assert sorted(options) == sorted(PROVIDERS)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_PROVIDER: default}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"].startswith("connect")
