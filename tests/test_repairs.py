"""The fix flow of model repairs, through Home Assistant's repairs flow manager."""

from __future__ import annotations

import json
from pathlib import Path
import re
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components.repairs import RepairsFlowManager, repairs_flow_manager
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResult, FlowResultType
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import (
    CONF_AUDIO_MODEL,
    CONF_CHAT_MODEL,
    CONF_IMAGE_MODEL,
    CONF_VOICE,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from custom_components.openai_compatible.flows.common import subentry_title
from custom_components.openai_compatible.repairs import model_issue_id
from simulator import OpenAISimulator
from tests.test_repair_issues import BEFORE_GPT5_SHUTDOWN, model_issues, subentry_id

from .conftest import SetupEntry

PACKAGE = Path(__file__).parent.parent / "custom_components" / "openai_compatible"
EN = json.loads((PACKAGE / "translations" / "en.json").read_text(encoding="utf-8"))
MODEL_ISSUES = ("model_deprecated", "model_not_listed", "model_shut_down")


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Hold the clock before OpenAI's GPT-5 shutdown."""
    freezer.move_to(BEFORE_GPT5_SHUTDOWN)


@pytest.fixture
async def manager(hass: HomeAssistant) -> RepairsFlowManager:
    """Set up the repairs integration; return its flow manager."""
    assert await async_setup_component(hass, "repairs", {})
    flows = repairs_flow_manager(hass)
    assert flows is not None
    return flows


async def start_fix(
    manager: RepairsFlowManager, entry: MockConfigEntry, subentry_type: str, key: str
) -> FlowResult[Any, str]:
    """Start fixing the issue about one model setting of a subentry."""
    issue_id = model_issue_id(subentry_id(entry, subentry_type), key)
    return await manager.async_init("openai_compatible", context={"issue_id": issue_id})


def offered(result: FlowResult[Any, str], key: str) -> list[str]:
    """Return the models the form offers for a setting, in order."""
    selector = result["data_schema"].schema[key]
    return [option["value"] for option in selector.config["options"]]


def suggested(result: FlowResult[Any, str], key: str) -> Any:
    """Return the value the form suggests for a setting."""
    field = next(field for field in result["data_schema"].schema if field == key)
    return (field.description or {}).get("suggested_value")


async def test_pick_another_chat_model(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    manager: RepairsFlowManager,
) -> None:
    """The form offers chat models first; the pick is saved and the issue goes."""
    simulator.models.append("gpt-5-nano")
    simulator.shutdown_dates["gpt-5-nano"] = "2026-12-11"
    entry = await setup_entry(conversation={CONF_CHAT_MODEL: "gpt-3.5-turbo"})
    agent = subentry_id(entry, SUBENTRY_CONVERSATION)
    # The title it was given is the old fixed one: it follows the model.
    entry_title = entry.subentries[agent].title

    result = await start_fix(manager, entry, SUBENTRY_CONVERSATION, CONF_CHAT_MODEL)

    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "model"
    assert result["description_placeholders"] == {
        "name": entry_title,
        "model": "gpt-3.5-turbo",
        "server": entry.title,
        "shutdown": "",
    }
    # Chat models only; nothing about to shut down.
    assert offered(result, CONF_CHAT_MODEL) == [
        "gpt-4o-mini",
        "gpt-5-mini",
        "llama3.2:3b",
    ]
    assert suggested(result, CONF_CHAT_MODEL) == "gpt-4o-mini"

    result = await manager.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: "llama3.2:3b"}
    )
    await hass.async_block_till_done()

    assert result["type"] is FlowResultType.CREATE_ENTRY
    subentry = entry.subentries[agent]
    assert subentry.data[CONF_CHAT_MODEL] == "llama3.2:3b"
    assert subentry.title == subentry_title(
        SUBENTRY_CONVERSATION, entry.title, entry.data, subentry.data
    )
    assert entry.state is ConfigEntryState.LOADED
    assert model_issues(hass) == {}


async def test_a_given_name_stays(
    hass: HomeAssistant, setup_entry: SetupEntry, manager: RepairsFlowManager
) -> None:
    """A subentry the user named keeps its name when its model changes."""
    entry = await setup_entry(ai_task={CONF_IMAGE_MODEL: "dall-e-2"})
    task = subentry_id(entry, SUBENTRY_AI_TASK)
    hass.config_entries.async_update_subentry(
        entry, entry.subentries[task], title="Kitchen helper"
    )
    await hass.async_block_till_done()

    result = await start_fix(manager, entry, SUBENTRY_AI_TASK, CONF_IMAGE_MODEL)
    # Image models first for an image model.
    assert offered(result, CONF_IMAGE_MODEL)[0] == "gpt-image-1"
    await manager.async_configure(result["flow_id"], {CONF_IMAGE_MODEL: "gpt-image-1"})
    await hass.async_block_till_done()

    assert entry.subentries[task].title == "Kitchen helper"
    assert entry.subentries[task].data[CONF_IMAGE_MODEL] == "gpt-image-1"
    assert model_issues(hass) == {}


async def test_blank_or_same_model_is_refused(
    hass: HomeAssistant, setup_entry: SetupEntry, manager: RepairsFlowManager
) -> None:
    """A blank pick or the model being replaced asks again, with the reason."""
    entry = await setup_entry(conversation={CONF_CHAT_MODEL: "gone-model"})
    result = await start_fix(manager, entry, SUBENTRY_CONVERSATION, CONF_CHAT_MODEL)

    result = await manager.async_configure(result["flow_id"], {CONF_CHAT_MODEL: "  "})
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_CHAT_MODEL: "model_required"}

    result = await manager.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: "gone-model"}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_CHAT_MODEL: "same_model"}
    assert suggested(result, CONF_CHAT_MODEL) == "gone-model"
    agent = subentry_id(entry, SUBENTRY_CONVERSATION)
    assert entry.subentries[agent].data[CONF_CHAT_MODEL] == "gone-model"


async def test_typed_model_is_taken_and_checked_again(
    hass: HomeAssistant, setup_entry: SetupEntry, manager: RepairsFlowManager
) -> None:
    """Any name may be typed; one the server does not list gets its issue again."""
    entry = await setup_entry(conversation={CONF_CHAT_MODEL: "gone-model"})
    result = await start_fix(manager, entry, SUBENTRY_CONVERSATION, CONF_CHAT_MODEL)

    result = await manager.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: " other-model "}
    )
    await hass.async_block_till_done()

    assert result["type"] is FlowResultType.CREATE_ENTRY
    agent = subentry_id(entry, SUBENTRY_CONVERSATION)
    assert entry.subentries[agent].data[CONF_CHAT_MODEL] == "other-model"
    issues = model_issues(hass)
    assert [issue.translation_placeholders for issue in issues.values()] == [
        {
            "name": entry.subentries[agent].title,
            "model": "other-model",
            "server": entry.title,
            "shutdown": "",
        }
    ]


async def test_deprecated_model_fix(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    manager: RepairsFlowManager,
) -> None:
    """A deprecated model's repair names the date and offers the same fix."""
    entry = await setup_entry(
        provider="openai",
        conversation={CONF_CHAT_MODEL: "gpt-5-mini"},
        ai_task={CONF_CHAT_MODEL: "gpt-4o-mini"},
    )

    result = await start_fix(manager, entry, SUBENTRY_CONVERSATION, CONF_CHAT_MODEL)

    assert result["description_placeholders"]["shutdown"] == "2026-12-11"
    assert "gpt-5-mini" not in offered(result, CONF_CHAT_MODEL)
    result = await manager.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: "gpt-4o-mini"}
    )
    await hass.async_block_till_done()
    assert model_issues(hass) == {}


@pytest.mark.parametrize(
    ("subentry_type", "evident"),
    [
        (SUBENTRY_STT, {"whisper-1", "gpt-4o-mini-transcribe"}),
        (SUBENTRY_TTS, {"tts-1", "gpt-4o-mini-tts"}),
    ],
)
async def test_voice_models_of_the_right_kind_first(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    manager: RepairsFlowManager,
    subentry_type: str,
    evident: set[str],
) -> None:
    """Transcription models lead for speech-to-text, speech models for speech."""
    entry = await setup_voice(
        stt={CONF_AUDIO_MODEL: "gone-stt"}, tts={CONF_AUDIO_MODEL: "gone-tts"}
    )

    result = await start_fix(manager, entry, subentry_type, CONF_AUDIO_MODEL)

    models = offered(result, CONF_AUDIO_MODEL)
    assert set(models[:2]) == evident
    assert len(models) == len(entry.runtime_data.models)


@pytest.mark.parametrize(
    ("voice", "model", "kept"),
    [
        # gpt-4o-mini-tts has tts-1's voices and more; tts-1 lacks "ballad".
        ("alloy", "tts-1", True),
        ("ballad", "tts-1", False),
        ("ballad", "gpt-4o-mini-tts", True),
    ],
)
async def test_speech_voice_follows_the_model(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    manager: RepairsFlowManager,
    voice: str,
    model: str,
    kept: bool,
) -> None:
    """A voice the new speech model lacks is dropped, so its first voice is used."""
    entry = await setup_voice(tts={CONF_AUDIO_MODEL: "gone-tts", CONF_VOICE: voice})
    result = await start_fix(manager, entry, SUBENTRY_TTS, CONF_AUDIO_MODEL)

    await manager.async_configure(result["flow_id"], {CONF_AUDIO_MODEL: model})
    await hass.async_block_till_done()

    data = entry.subentries[subentry_id(entry, SUBENTRY_TTS)].data
    assert data[CONF_AUDIO_MODEL] == model
    assert data.get(CONF_VOICE) == (voice if kept else None)


async def test_server_voices_are_kept(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_voice: SetupEntry,
    manager: RepairsFlowManager,
) -> None:
    """A voice the server lists stays, whatever the model's family."""
    simulator.settings.voices = ("house_voice",)
    simulator.settings.voices_endpoint = True
    entry = await setup_voice(
        tts={CONF_AUDIO_MODEL: "gone-tts", CONF_VOICE: "house_voice"}
    )
    result = await start_fix(manager, entry, SUBENTRY_TTS, CONF_AUDIO_MODEL)

    await manager.async_configure(result["flow_id"], {CONF_AUDIO_MODEL: "tts-1"})
    await hass.async_block_till_done()

    data = entry.subentries[subentry_id(entry, SUBENTRY_TTS)].data
    assert data[CONF_VOICE] == "house_voice"


async def test_gone_setting_aborts(
    hass: HomeAssistant, setup_entry: SetupEntry, manager: RepairsFlowManager
) -> None:
    """A flow whose subentry went meanwhile ends without changing anything."""
    entry = await setup_entry(conversation={CONF_CHAT_MODEL: "gone-model"})
    result = await start_fix(manager, entry, SUBENTRY_CONVERSATION, CONF_CHAT_MODEL)
    hass.config_entries.async_remove_subentry(
        entry, subentry_id(entry, SUBENTRY_CONVERSATION)
    )
    await hass.async_block_till_done()

    result = await manager.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: "gpt-4o-mini"}
    )

    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "not_loaded"


async def test_unloaded_entry_aborts(
    hass: HomeAssistant, setup_entry: SetupEntry, manager: RepairsFlowManager
) -> None:
    """A flow whose entry unloaded meanwhile ends without changing anything."""
    entry = await setup_entry(conversation={CONF_CHAT_MODEL: "gone-model"})
    result = await start_fix(manager, entry, SUBENTRY_CONVERSATION, CONF_CHAT_MODEL)
    assert await hass.config_entries.async_unload(entry.entry_id)

    result = await manager.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: "gpt-4o-mini"}
    )

    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "not_loaded"
    agent = subentry_id(entry, SUBENTRY_CONVERSATION)
    assert entry.subentries[agent].data[CONF_CHAT_MODEL] == "gone-model"


# --- translations ------------------------------------------------------------


@pytest.mark.parametrize("key", MODEL_ISSUES)
def test_issue_texts_use_only_given_placeholders(key: str) -> None:
    """Each text of a model issue names only what the issue gives it."""
    texts = json.dumps(EN["issues"][key])
    assert set(re.findall(r"{(\w+)}", texts)) <= {"name", "model", "server", "shutdown"}


@pytest.mark.parametrize("key", MODEL_ISSUES)
def test_fix_flow_errors_and_aborts_are_used(key: str) -> None:
    """The fix flow's errors and abort reasons are the ones repairs.py raises."""
    source = (PACKAGE / "repairs.py").read_text(encoding="utf-8")
    fix_flow = EN["issues"][key]["fix_flow"]
    named = set(fix_flow["error"]) | set(fix_flow["abort"])
    assert named == {"model_required", "same_model", "not_loaded"}
    assert all(f'"{word}"' in source for word in named)
    assert list(fix_flow["step"]) == ["model"]
    step = fix_flow["step"]["model"]
    assert set(step["data"]) == set(step["data_description"])
    assert set(step["data"]) == {CONF_AUDIO_MODEL, CONF_CHAT_MODEL, CONF_IMAGE_MODEL}
