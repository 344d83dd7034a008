"""What new subentries start from: an agent, a task, and voice where it is evident."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.helpers import llm

from ..const import (
    CONF_AUDIO_FORMAT,
    CONF_AUDIO_MODEL,
    CONF_CHAT_MODEL,
    CONF_HINT_NAMES,
    CONF_IMAGE_MODEL,
    CONF_PROVIDER,
    CONF_RECOMMENDED,
    CONF_SPEED,
    CONF_STREAMING,
    CONF_VOICE,
    DEFAULT_AUDIO_FORMAT,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from ..models.audio_models import (
    known_voices,
    pick_speech_model,
    pick_transcription_model,
)
from ..models.kinds import pick_chat_model, pick_image_model
from ..models.lifecycle import lasting_models
from ..models.providers import provider_for
from .titles import subentry_title


def default_subentries(
    entry_title: str,
    entry_data: Mapping[str, Any],
    models: list[str],
    chat_model: str | None,
) -> list[ConfigSubentryData]:
    """Return an agent and a task for a new entry, with voice where evident (or alone)."""
    preset = provider_for(entry_data.get(CONF_PROVIDER))
    lasting = lasting_models(models, preset.shutdowns)
    preferred = chat_model or preset.recommended_model
    chat = [
        (kind, chat_defaults(kind, lasting, preferred))
        for kind in (SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK)
    ]
    voice = voice_defaults(lasting)
    if voice and pick_chat_model(lasting, preferred) is None:
        chat = []
    return [
        ConfigSubentryData(
            subentry_type=kind,
            data=data,
            title=subentry_title(kind, entry_title, entry_data, data),
            unique_id=None,
        )
        for kind, data in (*chat, *voice)
    ]


def chat_defaults(
    subentry_type: str, models: list[str], preferred: str | None
) -> dict[str, object]:
    """Return the settings a new agent or task starts from, of the lasting `models`."""
    data: dict[str, object] = {CONF_RECOMMENDED: True}
    if chat_model := pick_chat_model(models, preferred):
        data[CONF_CHAT_MODEL] = chat_model
    if subentry_type == SUBENTRY_CONVERSATION:
        data[CONF_PROMPT] = llm.DEFAULT_INSTRUCTIONS_PROMPT
        data[CONF_LLM_HASS_API] = [llm.LLM_API_ASSIST]
    elif image_model := pick_image_model(models):
        data[CONF_IMAGE_MODEL] = image_model
    return data


def voice_defaults(models: list[str]) -> list[tuple[str, dict[str, object]]]:
    """Return the voice subentries (type, data) whose evident model the server lists."""
    defaults: list[tuple[str, dict[str, object]]] = []
    if transcription_model := pick_transcription_model(models):
        defaults.append((SUBENTRY_STT, stt_defaults(transcription_model)))
    if speech_model := pick_speech_model(models):
        defaults.append((SUBENTRY_TTS, tts_defaults(speech_model)))
    return defaults


def stt_defaults(model: str | None) -> dict[str, object]:
    """Return the settings of a new speech-to-text subentry."""
    data: dict[str, object] = {CONF_HINT_NAMES: False}
    if model:
        data[CONF_AUDIO_MODEL] = model
    return data


def tts_defaults(model: str | None) -> dict[str, object]:
    """Return the settings of a new text-to-speech subentry."""
    data: dict[str, object] = {
        CONF_SPEED: 1.0,
        CONF_AUDIO_FORMAT: DEFAULT_AUDIO_FORMAT,
        CONF_STREAMING: True,
    }
    if model:
        data[CONF_AUDIO_MODEL] = model
        data[CONF_VOICE] = known_voices(model)[0]
    return data
