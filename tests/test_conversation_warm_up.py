"""The agent sends a spoken command's first request ahead, while the user speaks.

Home Assistant's pipeline calls `async_prepare` as speech-to-text starts; the
server then evaluates the system prompt and tools before the words arrive.
Against the simulator, as a llama.cpp server, Ollama or a hosted service.
"""

from __future__ import annotations

import asyncio
import logging

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import device_registry as dr, llm
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import CONF_API
from custom_components.openai_compatible.conversation import (
    SPOKEN_ANSWER,
    WARM_AGAIN_AFTER,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from simulator import OpenAISimulator, SimulatorSettings

from .conftest import AGENT, SetupEntry, converse, speech

DOMAIN_LOGGER = "custom_components.openai_compatible"


async def _prepare(hass: HomeAssistant) -> None:
    """Tell the agent a spoken command is coming, as the pipeline does, and wait."""
    await conversation.async_prepare_agent(hass, AGENT, "en")
    await hass.async_block_till_done(wait_background_tasks=True)


def _device_without_area(hass: HomeAssistant) -> str:
    """Return a satellite's device, in no area."""
    source = MockConfigEntry(domain="satellite_maker")
    source.add_to_hass(hass)
    return (
        dr.async_get(hass)
        .async_get_or_create(
            config_entry_id=source.entry_id, identifiers={("satellite_maker", "s1")}
        )
        .id
    )


@pytest.mark.parametrize("api", [WireApi.CHAT_COMPLETIONS, WireApi.RESPONSES])
async def test_prepare_sends_the_start_of_a_spoken_command(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    api: WireApi,
) -> None:
    """The server gets the command's first request, but its words, one token asked."""
    await setup_entry(
        provider="llama_cpp",
        api_key=None,
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]},
        options={CONF_API: api.value},
    )
    device = _device_without_area(hass)

    await _prepare(hass)
    await conversation.async_converse(
        hass, "Good morning", None, Context(), agent_id=AGENT, device_id=device
    )

    key, limit = (
        ("messages", "max_tokens")
        if api is WireApi.CHAT_COMPLETIONS
        else ("input", "max_output_tokens")
    )
    warm, real = (
        simulator.chat_requests()
        if api is WireApi.CHAT_COMPLETIONS
        else simulator.responses_requests()
    )
    assert warm[limit] in (1, 16)
    assert "stream" not in warm
    assert {name: warm[name] for name in warm if name not in (key, limit)} == {
        name: real[name]
        for name in real
        if name not in (key, limit, "stream", "stream_options")
    }
    [system, varying, user] = warm[key]
    assert real[key][:2] == [system, varying]
    assert SPOKEN_ANSWER in system["content"]
    assert (user["content"], real[key][2]["content"]) == ("", "Good morning")


@pytest.mark.parametrize(
    ("provider", "api_key"), [("openai", "sk-1"), ("groq", "sk-1"), ("custom", None)]
)
async def test_hosted_or_unknown_servers_get_nothing_ahead(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    api_key: str | None,
) -> None:
    """A hosted service bills for it; a server of unknown software may be one."""
    await setup_entry(
        provider=provider,
        api_key=api_key,
        options={CONF_API: WireApi.CHAT_COMPLETIONS.value},
    )

    await _prepare(hass)

    assert simulator.chat_requests() == []


async def test_one_at_a_time_and_not_again_while_still_cached(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A second call meanwhile adds nothing; the same prompt goes again only later."""
    await setup_entry(
        provider="ollama",
        api_key=None,
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]},
    )

    agent = conversation.async_get_agent(hass, AGENT)
    assert agent is not None
    await agent.async_prepare("en")
    await _prepare(hass)
    await _prepare(hass)
    assert len(simulator.chat_requests()) == 1

    freezer.tick(WARM_AGAIN_AFTER + 1)
    await _prepare(hass)
    async_expose_entity(hass, conversation.DOMAIN, kitchen_light, False)
    await _prepare(hass)
    warm = simulator.chat_requests()
    assert len(warm) == 3
    assert "Kitchen light" in warm[1]["messages"][0]["content"]
    assert "Kitchen light" not in warm[2]["messages"][0]["content"]


async def test_a_failed_warm_up_is_quiet(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A refusal is no error and no log above debug; the command then answers."""
    await setup_entry(provider="llama_cpp", api_key=None)
    simulator.enqueue("/chat/completions", status=400)
    caplog.set_level(logging.DEBUG)

    await _prepare(hass)
    result = await converse(hass, "Hello")

    assert speech(result) == "You said: Hello"
    ours = [r for r in caplog.records if r.name.startswith(DOMAIN_LOGGER)]
    assert any("sent nothing ahead" in r.getMessage() for r in ours)
    assert all(r.levelno <= logging.DEBUG for r in ours)


async def test_a_command_waits_for_the_warm_up(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A command sent meanwhile goes after it, so it finds the prompt cached."""
    await setup_entry(provider="llama_cpp", api_key=None)
    simulator.settings.latency = 0.3
    agent = conversation.async_get_agent(hass, AGENT)
    assert agent is not None

    await agent.async_prepare("en")
    await converse(hass, "Hello")

    assert simulator.peak_in_flight == 1
    assert len(simulator.chat_requests()) == 2


async def test_unloading_cancels_the_warm_up(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The request sent ahead ends with the entry, quietly."""
    entry = await setup_entry(provider="llama_cpp", api_key=None)
    simulator.settings.latency = 0.3
    agent = conversation.async_get_agent(hass, AGENT)
    assert agent is not None

    await agent.async_prepare("en")
    await asyncio.sleep(0.1)
    assert await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()

    assert len(simulator.chat_requests()) == 1
    assert agent._warming is not None
    assert agent._warming.cancelled()


@pytest.mark.parametrize(
    "profile",
    ["llama_server_jinja", "llama_server_jinja_gemma", "llama_server_two_slots"],
)
async def test_recorded_llama_servers_take_the_warm_up(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    caplog: pytest.LogCaptureFixture,
    profile: str,
) -> None:
    """As llama-server answered the conformance lane: nothing of it is refused."""
    simulator.settings = SimulatorSettings.imitating(profile)
    await setup_entry(
        provider="llama_cpp",
        api_key=None,
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]},
    )
    caplog.set_level(logging.DEBUG)

    await _prepare(hass)

    [warm] = simulator.chat_requests()
    assert warm["max_tokens"] == 1
    assert "sent nothing ahead" not in caplog.text
