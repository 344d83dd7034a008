"""Shared fixtures for the OpenAI Compatible tests.

The harness skews (httpx aliasing, the logger helper, custom_components
shadowing) are handled by tests/harness_skews.py, loaded with ``-p`` before
this file. Tests that talk to a real local server take pytest-socket's
``socket_enabled`` fixture.

Keep this file sectioned: add fixtures under a heading for their area.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

from homeassistant.components import conversation
from homeassistant.components.conversation.chat_log import DATA_CHAT_LOGS
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.light import ColorMode, LightEntity
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, llm
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    setup_test_component_platform,
)
from yarl import URL

from custom_components.openai_compatible.config_flow import OpenAICompatibleConfigFlow
from custom_components.openai_compatible.const import (
    CONF_AUDIO_FORMAT,
    CONF_AUDIO_MODEL,
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_HINT_NAMES,
    CONF_IMAGE_MODEL,
    CONF_PROVIDER,
    CONF_RECOMMENDED,
    CONF_SPEED,
    CONF_STREAMING,
    CONF_VOICE,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONVERSATION_NAME,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
    Feature,
)
from custom_components.openai_compatible.models.providers import PROVIDER_CUSTOM
from custom_components.openai_compatible.structured.rungs import start_rung
from simulator import AUDIO_MODELS, OpenAISimulator

# ---------------------------------------------------------------------------
# Base
# ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(enable_custom_integrations: None) -> None:
    """Let Home Assistant load the integration from custom_components/."""


@pytest.fixture(autouse=True)
async def settle_before_stop(request: pytest.FixtureRequest) -> AsyncGenerator[None]:
    """Let work a test started finish before Home Assistant stops.

    A flow that changes an entry reloads it in the background (one that
    changes a subentry reads the server again); a test that ends meanwhile
    would stop Home Assistant in the middle of a setup, which then schedules
    writes after the final one.
    """
    if "hass" not in request.fixturenames:
        yield
        return
    # Asked for here, so that this teardown runs before Home Assistant's.
    hass: HomeAssistant = request.getfixturevalue("hass")
    yield
    await hass.async_block_till_done()


@pytest.fixture(autouse=True)
def no_local_servers() -> Iterator[None]:
    """Find no local server at the default ports, whatever runs on this machine.

    tests/models/test_providers.py asks for real; other tests must not depend on
    what listens here.
    """
    with patch(
        "custom_components.openai_compatible.config_flow.async_answering_presets",
        return_value=[],
    ):
        yield


@pytest.fixture(autouse=True)
def tts_cache_dir(tmp_path: Path) -> Iterator[Path]:
    """Keep text-to-speech's file cache in the test's folder.

    Every loaded entry sets up text-to-speech, whose cache would otherwise go
    into the harness's shared testing_config folder.
    """
    folder = tmp_path / "tts"
    with patch("homeassistant.components.tts.DEFAULT_CACHE_DIR", str(folder)):
        yield folder


# ---------------------------------------------------------------------------
# Simulator: the local OpenAI-compatible server (owned with simulator/)
# ---------------------------------------------------------------------------


@asynccontextmanager
async def served(sim: OpenAISimulator) -> AsyncIterator[OpenAISimulator]:
    """Serve a simulator on a free localhost port for the block, then stop it.

    The block fails when answers queued with `enqueue` were never used: a test
    must not pass on answers it scripted but never reached. Every simulator a
    test starts is served this way.
    """
    await sim.start()
    try:
        yield sim
    finally:
        await sim.stop()
    assert not sim.unused_responses(), (
        f"Queued answers were never used: {sim.unused_responses()}"
    )


@pytest.fixture
async def simulator(socket_enabled: None) -> AsyncGenerator[OpenAISimulator]:
    """Serve a fresh simulator; see `simulator.base_url` and `served`."""
    async with served(OpenAISimulator()) as sim:
        yield sim


# ---------------------------------------------------------------------------
# Config flow, setup and diagnostics: entries for the simulator
# (owner: config flow). `make_config_entry(...)` builds an entry like the one
# the config flow creates, added to hass but not set up; `mock_config_entry`
# is the default one; `setup_integration` loads it; `keyed_simulator` is a
# second simulator that insists on the API key KEYED_SIMULATOR_KEY; `ha_core`
# sets up the `homeassistant` integration (the factory depends on it).
# ---------------------------------------------------------------------------


type MakeConfigEntry = Callable[..., MockConfigEntry]

TEST_API_KEY = "sk-test-0123456789"
KEYED_SIMULATOR_KEY = "sk-right-key"


@pytest.fixture
async def ha_core(hass: HomeAssistant) -> None:
    """Set up Home Assistant's core integration, which conversation needs."""
    assert await async_setup_component(hass, "homeassistant", {})


@pytest.fixture
def make_config_entry(
    hass: HomeAssistant, simulator: OpenAISimulator, ha_core: None
) -> MakeConfigEntry:
    """Return a factory of entries for a simulator, added to hass, not set up.

    Keywords: `base_url` (default: the `simulator` fixture's), `api_key`
    (default TEST_API_KEY; None for no key), `provider` ("custom"), `title`,
    `conversation` / `ai_task`: data merged over the subentries' defaults,
    `voice`: more subentries (see the Voice section), and the entry's `options`.
    """

    def factory(
        *,
        base_url: str | None = None,
        api_key: str | None = TEST_API_KEY,
        provider: str = PROVIDER_CUSTOM,
        title: str | None = None,
        conversation: dict[str, Any] | None = None,
        ai_task: dict[str, Any] | None = None,
        voice: list[ConfigSubentryData] | None = None,
        options: dict[str, Any] | None = None,
    ) -> MockConfigEntry:
        url = base_url or simulator.base_url
        data: dict[str, Any] = {CONF_PROVIDER: provider, CONF_BASE_URL: url}
        if api_key is not None:
            data[CONF_API_KEY] = api_key
        entry = MockConfigEntry(
            domain=DOMAIN,
            title=title or f"Custom ({URL(url).host_port_subcomponent})",
            data=data,
            options=options or {},
            minor_version=OpenAICompatibleConfigFlow.MINOR_VERSION,
            subentries_data=[
                ConfigSubentryData(
                    data={
                        CONF_RECOMMENDED: True,
                        CONF_CHAT_MODEL: "gpt-4o-mini",
                        CONF_PROMPT: "You are a test assistant.",
                        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
                        **(conversation or {}),
                    },
                    subentry_type=SUBENTRY_CONVERSATION,
                    title=DEFAULT_CONVERSATION_NAME,
                    unique_id=None,
                ),
                ConfigSubentryData(
                    data={
                        CONF_RECOMMENDED: True,
                        CONF_CHAT_MODEL: "gpt-4o-mini",
                        CONF_IMAGE_MODEL: "gpt-image-1",
                        **(ai_task or {}),
                    },
                    subentry_type=SUBENTRY_AI_TASK,
                    title=DEFAULT_AI_TASK_NAME,
                    unique_id=None,
                ),
                *(voice or ()),
            ],
        )
        entry.add_to_hass(hass)
        return entry

    return factory


@pytest.fixture
def mock_config_entry(make_config_entry: MakeConfigEntry) -> MockConfigEntry:
    """Return the default entry for the simulator (with TEST_API_KEY)."""
    return make_config_entry()


@pytest.fixture
async def setup_integration(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry
) -> MockConfigEntry:
    """Set up `mock_config_entry` and return it, loaded."""
    assert await hass.config_entries.async_setup(mock_config_entry.entry_id)
    await hass.async_block_till_done()
    return mock_config_entry


@pytest.fixture
async def keyed_simulator(socket_enabled: None) -> AsyncGenerator[OpenAISimulator]:
    """Yield a started simulator that accepts only KEYED_SIMULATOR_KEY."""
    async with served(OpenAISimulator(api_key=KEYED_SIMULATOR_KEY)) as sim:
        yield sim


# ---------------------------------------------------------------------------
# Engine: a loaded entry pointing at the simulator
# ---------------------------------------------------------------------------

type SetupEntry = Callable[..., Awaitable[MockConfigEntry]]


@pytest.fixture
def setup_entry(hass: HomeAssistant, make_config_entry: MakeConfigEntry) -> SetupEntry:
    """Return a factory that loads an entry made by `make_config_entry`."""

    async def factory(**kwargs: Any) -> MockConfigEntry:
        entry = make_config_entry(**kwargs)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        return entry

    return factory


# ---------------------------------------------------------------------------
# Capabilities: what an entry learned about a model, in the terms tests check
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Learned:
    """What an entry learned about one model: None where it learned nothing."""

    decisions: bool | None
    logprobs: bool | None
    # The rung of the structured-output ladder the next task starts at.
    structured_output_rung: int


def learned(entry: MockConfigEntry, model: str) -> Learned:
    """Return what the entry learned about a model of its server."""
    capabilities = entry.runtime_data.capabilities.model(model)

    def tri(feature: Feature) -> bool | None:
        if capabilities.lessons.refuses(feature):
            return False
        return True if capabilities.lessons.proved(feature) else None

    return Learned(
        decisions=tri(Feature.DECISIONS),
        logprobs=tri(Feature.LOGPROBS),
        structured_output_rung=start_rung(capabilities),
    )


def forget_button(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Return the entity id of the entry's button that forgets its lessons."""
    entity_id = er.async_get(hass).async_get_entity_id(
        "button", DOMAIN, f"{entry.entry_id}_forget_lessons"
    )
    assert entity_id is not None
    return entity_id


async def press_forget(hass: HomeAssistant, entry: MockConfigEntry) -> None:
    """Press the entry's button that forgets what was learned about the server."""
    await hass.services.async_call(
        "button", "press", {"entity_id": forget_button(hass, entry)}, blocking=True
    )
    await hass.async_block_till_done()


# ---------------------------------------------------------------------------
# AI tasks: a local media folder for attachments and stored images
# ---------------------------------------------------------------------------


@pytest.fixture
def media_dir(hass: HomeAssistant, tmp_path: Path) -> Path:
    """Give Home Assistant a local media folder."""
    folder = tmp_path / "media"
    folder.mkdir()
    hass.config.media_dirs = {"local": str(folder)}
    return folder


@pytest.fixture
async def setup(
    hass: HomeAssistant, setup_entry: SetupEntry, media_dir: Path
) -> SetupEntry:
    """Return `setup_entry` with media sources ready for attachments."""
    assert await async_setup_component(hass, "media_source", {})
    return setup_entry


# ---------------------------------------------------------------------------
# Conversation: talking to the default agent of `setup_entry`; a kitchen
# light the Assist API can switch (`kitchen_light`); the chat log Home
# Assistant keeps for a conversation (`stored_chat_log`)
# ---------------------------------------------------------------------------

AGENT = "conversation.openai_compatible_conversation"


async def converse(
    hass: HomeAssistant, text: str, conversation_id: str | None = None
) -> conversation.ConversationResult:
    """Send one sentence to our agent."""
    return await conversation.async_converse(
        hass, text, conversation_id, Context(), agent_id=AGENT
    )


def speech(result: conversation.ConversationResult) -> str:
    """Return what the agent said."""
    return str(result.response.speech["plain"]["speech"])


def stored_chat_log(hass: HomeAssistant, conversation_id: str) -> conversation.ChatLog:
    """Return the chat log Home Assistant keeps for a conversation."""
    return hass.data[DATA_CHAT_LOGS][conversation_id]


class KitchenLight(LightEntity):
    """A real light entity that the Assist API can turn on."""

    _attr_name = "Kitchen light"
    _attr_unique_id = "kitchen_light"
    _attr_color_mode = ColorMode.ONOFF
    _attr_supported_color_modes = {ColorMode.ONOFF}
    _attr_is_on = False

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Turn the light on."""
        self._attr_is_on = True
        self.async_write_ha_state()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Turn the light off."""
        self._attr_is_on = False
        self.async_write_ha_state()


@pytest.fixture
async def kitchen_light(hass: HomeAssistant) -> str:
    """Set up an exposed kitchen light."""
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "intent", {})
    setup_test_component_platform(hass, "light", [KitchenLight()])
    assert await async_setup_component(hass, "light", {"light": {"platform": "test"}})
    await hass.async_block_till_done()
    async_expose_entity(hass, conversation.DOMAIN, "light.kitchen_light", True)
    return "light.kitchen_light"


# ---------------------------------------------------------------------------
# Voice: speech-to-text and text-to-speech subentries (owner: voice).
# `setup_voice(stt={...}, tts={...})` loads an entry with both subentries (data
# merged over their defaults; None leaves one out) on a simulator that lists
# its audio models.
# ---------------------------------------------------------------------------

STT_ENTITY = "stt.speech_to_text"
TTS_ENTITY = "tts.text_to_speech"
STT_DEFAULTS: dict[str, Any] = {CONF_AUDIO_MODEL: "whisper-1", CONF_HINT_NAMES: False}
TTS_DEFAULTS: dict[str, Any] = {
    CONF_AUDIO_MODEL: "tts-1",
    CONF_VOICE: "alloy",
    CONF_SPEED: 1.0,
    CONF_AUDIO_FORMAT: "mp3",
    CONF_STREAMING: True,
}


def voice_subentry(kind: str, data: dict[str, Any]) -> ConfigSubentryData:
    """Return a speech-to-text or text-to-speech subentry with its defaults."""
    if kind == SUBENTRY_STT:
        return ConfigSubentryData(
            data={**STT_DEFAULTS, **data},
            subentry_type=SUBENTRY_STT,
            title="Speech-to-text",
            unique_id=None,
        )
    return ConfigSubentryData(
        data={**TTS_DEFAULTS, **data},
        subentry_type=SUBENTRY_TTS,
        title="Text-to-speech",
        unique_id=None,
    )


@pytest.fixture
def setup_voice(setup_entry: SetupEntry, simulator: OpenAISimulator) -> SetupEntry:
    """Return a factory that loads an entry with voice subentries."""
    simulator.models += AUDIO_MODELS

    async def factory(
        *,
        stt: dict[str, Any] | None = None,
        tts: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> MockConfigEntry:
        voice = [
            voice_subentry(kind, data)
            for kind, data in ((SUBENTRY_STT, stt), (SUBENTRY_TTS, tts))
            if data is not None
        ]
        return await setup_entry(voice=voice, **kwargs)

    return factory
