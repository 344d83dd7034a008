"""Speech-to-text and text-to-speech subentries: defaults and flows."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import SOURCE_USER, ConfigFlowResult
from homeassistant.const import CONF_NAME, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import (
    CONF_AUDIO_FORMAT,
    CONF_AUDIO_MODEL,
    CONF_BASE_URL,
    CONF_HINT_NAMES,
    CONF_INSTRUCTIONS,
    CONF_PROVIDER,
    CONF_SPEED,
    CONF_STREAMING,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from custom_components.openai_compatible.flows.voice_subentry import voice_defaults
from custom_components.openai_compatible.models.names import OPENAI_VOICES
from custom_components.openai_compatible.models.providers import PROVIDER_CUSTOM
from simulator import AUDIO_MODELS, OpenAISimulator
from tests.conftest import SetupEntry

pytestmark = pytest.mark.usefixtures("ha_core")


def options(result: ConfigFlowResult, field: str) -> list[str]:
    """Return the option values of a select field."""
    for key, selector in result["data_schema"].schema.items():
        if key == field:
            return [
                option["value"] if isinstance(option, dict) else option
                for option in selector.config["options"]
            ]
    raise AssertionError(f"no field {field}")


def suggested(result: ConfigFlowResult, field: str) -> Any:
    """Return the suggested value of a form field."""
    for key in result["data_schema"].schema:
        if key == field:
            return (key.description or {}).get("suggested_value")
    raise AssertionError(f"no field {field}")


def fields(result: ConfigFlowResult) -> list[str]:
    """Return the names of a form's fields."""
    return [str(key) for key in result["data_schema"].schema]


async def add_server(hass: HomeAssistant, simulator: OpenAISimulator) -> Any:
    """Add a keyless custom server through the config flow; return the entry."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_PROVIDER: PROVIDER_CUSTOM}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()
    return result["result"]


# --- a new entry --------------------------------------------------------------


async def test_new_entry_gets_voice_where_audio_models_are_listed(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A server with audio models gets speech-to-text and text-to-speech."""
    simulator.models += AUDIO_MODELS

    entry = await add_server(hass, simulator)

    subentries = {sub.subentry_type: sub for sub in entry.subentries.values()}
    assert set(subentries) == {
        SUBENTRY_CONVERSATION,
        SUBENTRY_AI_TASK,
        SUBENTRY_STT,
        SUBENTRY_TTS,
    }
    host = "OpenAI-compatible server"
    assert subentries[SUBENTRY_STT].title == (
        f"{host} · gpt-4o-mini-transcribe · Speech-to-text"
    )
    # The list comes sorted: gpt-4o models first.
    assert subentries[SUBENTRY_STT].data == {
        CONF_AUDIO_MODEL: "gpt-4o-mini-transcribe",
        CONF_HINT_NAMES: False,
    }
    assert (
        subentries[SUBENTRY_TTS].title == f"{host} · gpt-4o-mini-tts · Text-to-speech"
    )
    assert subentries[SUBENTRY_TTS].data == {
        CONF_AUDIO_MODEL: "gpt-4o-mini-tts",
        CONF_VOICE: "alloy",
        CONF_SPEED: 1.0,
        CONF_AUDIO_FORMAT: "mp3",
        CONF_STREAMING: True,
    }
    assert hass.states.get(
        "stt.openai_compatible_server_gpt_4o_mini_transcribe_speech_to_text"
    )
    assert hass.states.get(
        "tts.openai_compatible_server_gpt_4o_mini_tts_text_to_speech"
    )
    # Audio models are not offered as chat models.
    chat = subentries[SUBENTRY_CONVERSATION].data
    assert chat["chat_model"] == "gpt-4o-mini"


async def test_an_audio_only_server_gets_only_voice(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A server that only transcribes and speaks gets no agent and no task."""
    simulator.models[:] = ["Systran/faster-whisper-small", "kokoro"]

    entry = await add_server(hass, simulator)

    subentries = {sub.subentry_type: sub for sub in entry.subentries.values()}
    assert set(subentries) == {SUBENTRY_STT, SUBENTRY_TTS}
    assert subentries[SUBENTRY_STT].data[CONF_AUDIO_MODEL] == (
        "Systran/faster-whisper-small"
    )
    assert subentries[SUBENTRY_TTS].data[CONF_VOICE] == "af_heart"


async def test_a_server_without_audio_models_gets_no_voice(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """Without evident audio models there is no voice subentry."""
    entry = await add_server(hass, simulator)

    assert {sub.subentry_type for sub in entry.subentries.values()} == {
        SUBENTRY_CONVERSATION,
        SUBENTRY_AI_TASK,
    }


# --- speech-to-text -----------------------------------------------------------


async def start(hass: HomeAssistant, entry: MockConfigEntry, kind: str) -> Any:
    """Start adding a subentry; return its first form."""
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, kind), context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    return result


async def reconfigure(hass: HomeAssistant, entry: MockConfigEntry, kind: str) -> Any:
    """Start changing the entry's subentry of a kind; return its first form."""
    subentry = next(s for s in entry.subentries.values() if s.subentry_type == kind)
    return await hass.config_entries.subentries.async_init(
        (entry.entry_id, kind),
        context={"source": "reconfigure", "subentry_id": subentry.subentry_id},
    )


def titles(entry: MockConfigEntry, kind: str) -> list[str]:
    """Return the titles of the entry's subentries of a kind."""
    return [s.title for s in entry.subentries.values() if s.subentry_type == kind]


def saved(entry: MockConfigEntry, kind: str) -> dict[str, Any]:
    """Return the data of the entry's last subentry of a kind."""
    found = [s for s in entry.subentries.values() if s.subentry_type == kind]
    return dict(found[-1].data)


async def test_add_speech_to_text(hass: HomeAssistant, setup_voice: SetupEntry) -> None:
    """The form offers transcription models first; a blank model is refused."""
    entry = await setup_voice()
    result = await start(hass, entry, SUBENTRY_STT)

    assert result["step_id"] == "init"
    assert fields(result) == [CONF_NAME, CONF_AUDIO_MODEL, CONF_PROMPT, CONF_HINT_NAMES]
    assert options(result, CONF_AUDIO_MODEL)[:2] == [
        "gpt-4o-mini-transcribe",
        "whisper-1",
    ]
    assert suggested(result, CONF_AUDIO_MODEL) == "gpt-4o-mini-transcribe"

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_NAME: "Ears", CONF_AUDIO_MODEL: "  ", CONF_HINT_NAMES: True},
    )
    assert result["errors"] == {CONF_AUDIO_MODEL: "model_required"}

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Ears",
            CONF_AUDIO_MODEL: " my-whisper ",
            CONF_PROMPT: "  Names are Dutch. ",
            CONF_HINT_NAMES: True,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Ears"
    assert result["data"] == {
        CONF_AUDIO_MODEL: "my-whisper",
        CONF_PROMPT: "Names are Dutch.",
        CONF_HINT_NAMES: True,
    }


async def test_reconfigure_speech_to_text(
    hass: HomeAssistant, setup_voice: SetupEntry
) -> None:
    """Changing keeps the model offered and drops a cleared prompt."""
    entry = await setup_voice(stt={CONF_AUDIO_MODEL: "custom-asr", CONF_PROMPT: "x"})
    result = await reconfigure(hass, entry, SUBENTRY_STT)

    assert fields(result) == [CONF_AUDIO_MODEL, CONF_PROMPT, CONF_HINT_NAMES]
    assert options(result, CONF_AUDIO_MODEL)[0] == "custom-asr"
    assert suggested(result, CONF_PROMPT) == "x"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_AUDIO_MODEL: "whisper-1", CONF_PROMPT: " ", CONF_HINT_NAMES: False},
    )

    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    assert saved(entry, SUBENTRY_STT) == {
        CONF_AUDIO_MODEL: "whisper-1",
        CONF_HINT_NAMES: False,
    }
    # A name the user gave stays.
    assert titles(entry, SUBENTRY_STT) == ["Speech-to-text"]


async def test_a_generated_name_follows_the_model(
    hass: HomeAssistant, setup_voice: SetupEntry
) -> None:
    """Without a name, server and model name the subentry, and keep naming it."""
    entry = await setup_voice()
    result = await start(hass, entry, SUBENTRY_STT)
    await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_AUDIO_MODEL: "whisper-1", CONF_HINT_NAMES: False}
    )
    await hass.async_block_till_done()
    assert titles(entry, SUBENTRY_STT) == [
        "OpenAI-compatible server · whisper-1 · Speech-to-text"
    ]

    result = await reconfigure(hass, entry, SUBENTRY_STT)
    await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_AUDIO_MODEL: "my-asr", CONF_HINT_NAMES: False}
    )

    assert titles(entry, SUBENTRY_STT) == [
        "OpenAI-compatible server · my-asr · Speech-to-text"
    ]


# --- text-to-speech -----------------------------------------------------------


async def test_add_text_to_speech_with_known_voices(
    hass: HomeAssistant, setup_voice: SetupEntry
) -> None:
    """Model first, then the voice: the model family's, any other name allowed.

    The model suggested is a speech model the server lists, not a chat model.
    """
    entry = await setup_voice()
    result = await start(hass, entry, SUBENTRY_TTS)

    assert fields(result) == [CONF_NAME, CONF_AUDIO_MODEL]
    assert options(result, CONF_AUDIO_MODEL)[:2] == ["gpt-4o-mini-tts", "tts-1"]
    assert suggested(result, CONF_AUDIO_MODEL) == "gpt-4o-mini-tts"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Voice", CONF_AUDIO_MODEL: "gpt-4o-mini-tts"}
    )
    assert result["step_id"] == "voice"
    assert result["description_placeholders"] == {"model": "gpt-4o-mini-tts"}
    assert fields(result) == [
        CONF_VOICE,
        CONF_SPEED,
        CONF_INSTRUCTIONS,
        CONF_AUDIO_FORMAT,
        CONF_STREAMING,
    ]
    assert options(result, CONF_VOICE) == list(OPENAI_VOICES)
    assert suggested(result, CONF_VOICE) == "alloy"
    assert options(result, CONF_AUDIO_FORMAT) == [
        "mp3",
        "wav",
        "flac",
        "opus",
        "aac",
        "pcm",
    ]

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_VOICE: " ",
            CONF_SPEED: 1.0,
            CONF_AUDIO_FORMAT: "mp3",
            CONF_STREAMING: True,
        },
    )
    assert result["errors"] == {CONF_VOICE: "voice_required"}
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_VOICE: "marin",
            CONF_SPEED: 1.5,
            CONF_INSTRUCTIONS: " Speak warmly. ",
            CONF_AUDIO_FORMAT: "wav",
            CONF_STREAMING: False,
        },
    )

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Voice"
    assert result["data"] == {
        CONF_AUDIO_MODEL: "gpt-4o-mini-tts",
        CONF_VOICE: "marin",
        CONF_SPEED: 1.5,
        CONF_INSTRUCTIONS: "Speak warmly.",
        CONF_AUDIO_FORMAT: "wav",
        CONF_STREAMING: False,
    }


async def test_text_to_speech_offers_the_servers_voices(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A server's voice list is offered; a saved voice it lacks is not suggested."""
    simulator.settings.voices = ("af_heart", "am_adam")
    simulator.settings.voices_endpoint = True
    entry = await setup_voice(tts={CONF_INSTRUCTIONS: "Calm."})
    result = await reconfigure(hass, entry, SUBENTRY_TTS)
    assert fields(result) == [CONF_AUDIO_MODEL]
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_AUDIO_MODEL: "kokoro"}
    )

    assert options(result, CONF_VOICE) == ["af_heart", "am_adam"]
    assert suggested(result, CONF_VOICE) == "af_heart"
    assert suggested(result, CONF_INSTRUCTIONS) == "Calm."
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_VOICE: "am_adam",
            CONF_SPEED: 1.0,
            CONF_INSTRUCTIONS: "",
            CONF_AUDIO_FORMAT: "mp3",
            CONF_STREAMING: True,
        },
    )

    assert result["reason"] == "reconfigure_successful"
    assert saved(entry, SUBENTRY_TTS) == {
        CONF_AUDIO_MODEL: "kokoro",
        CONF_VOICE: "am_adam",
        CONF_SPEED: 1.0,
        CONF_AUDIO_FORMAT: "mp3",
        CONF_STREAMING: True,
    }


async def test_a_blank_speech_model_is_refused(
    hass: HomeAssistant, setup_voice: SetupEntry
) -> None:
    """The model step needs a name."""
    entry = await setup_voice()
    result = await start(hass, entry, SUBENTRY_TTS)

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Voice", CONF_AUDIO_MODEL: ""}
    )

    assert result["step_id"] == "init"
    assert result["errors"] == {CONF_AUDIO_MODEL: "model_required"}


# --- a server without evident audio models -----------------------------------


@pytest.mark.parametrize("kind", [SUBENTRY_STT, SUBENTRY_TTS])
async def test_voice_forms_offer_no_chat_image_or_embedding_model(
    hass: HomeAssistant, setup_entry: SetupEntry, simulator: OpenAISimulator, kind: str
) -> None:
    """A voice form offers models of unknown kind, but no chat, image or embedding model.

    A model whose name says nothing may be a voice model; gpt-4o-mini is not.
    """
    simulator.models += ["my-asr", "my-speaker"]
    entry = await setup_entry()

    offered = options(await start(hass, entry, kind), CONF_AUDIO_MODEL)

    assert offered == ["my-asr", "my-speaker"]


@pytest.mark.parametrize(
    ("kind", "known"),
    [(SUBENTRY_STT, "gpt-4o-mini-transcribe"), (SUBENTRY_TTS, "gpt-4o-mini-tts")],
)
async def test_preset_suggests_its_known_voice_model(
    hass: HomeAssistant,
    setup_entry: SetupEntry,
    simulator: OpenAISimulator,
    kind: str,
    known: str,
) -> None:
    """Where the server lists no voice model, OpenAI's preset suggests its own."""
    entry = await setup_entry(provider="openai")

    result = await start(hass, entry, kind)

    assert suggested(result, CONF_AUDIO_MODEL) == known
    offered = options(result, CONF_AUDIO_MODEL)
    assert offered[0] == known
    assert "gpt-4o-mini" not in offered


async def test_voice_can_be_added_by_hand_where_none_is_evident(
    hass: HomeAssistant, setup_entry: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A server that lists no audio model still gets voice subentries by hand.

    No model is suggested, the one picked is taken, and its voices are
    OpenAI's, which most servers accept.
    """
    simulator.models += ["my-asr", "my-speaker"]
    entry = await setup_entry()
    assert {sub.subentry_type for sub in entry.subentries.values()} == {
        SUBENTRY_CONVERSATION,
        SUBENTRY_AI_TASK,
    }

    result = await start(hass, entry, SUBENTRY_STT)
    assert suggested(result, CONF_AUDIO_MODEL) is None
    assert "my-asr" in options(result, CONF_AUDIO_MODEL)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_AUDIO_MODEL: "my-asr", CONF_HINT_NAMES: False}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()  # the entry reloads with it

    result = await start(hass, entry, SUBENTRY_TTS)
    assert suggested(result, CONF_AUDIO_MODEL) is None
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_AUDIO_MODEL: "my-speaker"}
    )
    assert options(result, CONF_VOICE) == list(OPENAI_VOICES)
    assert suggested(result, CONF_VOICE) == "alloy"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_VOICE: "nova",
            CONF_SPEED: 1.0,
            CONF_AUDIO_FORMAT: "mp3",
            CONF_STREAMING: True,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    await hass.async_block_till_done()

    assert saved(entry, SUBENTRY_STT) == {
        CONF_AUDIO_MODEL: "my-asr",
        CONF_HINT_NAMES: False,
    }
    assert saved(entry, SUBENTRY_TTS)[CONF_VOICE] == "nova"
    assert hass.states.get("stt.openai_compatible_server_my_asr_speech_to_text")
    assert hass.states.get("tts.openai_compatible_server_my_speaker_text_to_speech")


# --- an entry that is not loaded ----------------------------------------------


@pytest.mark.parametrize("kind", [SUBENTRY_STT, SUBENTRY_TTS])
async def test_flows_need_a_loaded_entry(
    hass: HomeAssistant, setup_voice: SetupEntry, kind: str
) -> None:
    """Adding or changing aborts while the entry is not loaded."""
    entry = await setup_voice(stt={}, tts={})
    started = await start(hass, entry, kind)
    assert await hass.config_entries.async_unload(entry.entry_id)

    added = await hass.config_entries.subentries.async_init(
        (entry.entry_id, kind), context={"source": SOURCE_USER}
    )
    changed = await reconfigure(hass, entry, kind)
    continued = await hass.config_entries.subentries.async_configure(
        started["flow_id"], {CONF_AUDIO_MODEL: "x"}
    )

    for result in (added, changed, continued):
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "entry_not_loaded"


async def test_voice_step_needs_a_loaded_entry(
    hass: HomeAssistant, setup_voice: SetupEntry
) -> None:
    """The voice step aborts when the entry went away in between."""
    entry = await setup_voice()
    result = await start(hass, entry, SUBENTRY_TTS)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_NAME: "Voice", CONF_AUDIO_MODEL: "tts-1"}
    )
    assert await hass.config_entries.async_unload(entry.entry_id)

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_VOICE: "alloy"}
    )

    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "entry_not_loaded"


def test_voice_defaults_pick_the_first_evident_model_of_each_kind() -> None:
    """The first evident model of each kind is picked, none if there is none."""
    models = ["gpt-4o-mini", "kokoro", "whisper-large-v3", "tts-1"]

    picked = [(kind, data[CONF_AUDIO_MODEL]) for kind, data in voice_defaults(models)]
    assert picked == [(SUBENTRY_STT, "whisper-large-v3"), (SUBENTRY_TTS, "kokoro")]
    assert voice_defaults(["gpt-4o-mini"]) == []
