"""Subentry flow of speech-to-text and text-to-speech: model, then its settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from homeassistant.config_entries import SubentryFlowResult
from homeassistant.const import CONF_PROMPT
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    TextSelector,
    TextSelectorConfig,
)
from homeassistant.helpers.typing import VolDictType
import probatio

from ..const import (
    CONF_AUDIO_FORMAT,
    CONF_AUDIO_MODEL,
    CONF_HINT_NAMES,
    CONF_INSTRUCTIONS,
    CONF_SPEED,
    CONF_STREAMING,
    CONF_VOICE,
    DEFAULT_AUDIO_FORMAT,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from ..models.names import (
    ModelKind,
    is_speech_model,
    is_transcription_model,
    known_voices,
    model_kind,
)
from ..models.providers import Provider
from ..voice.audio import MAX_SPEED, MIN_SPEED, async_fetch_voices
from .common import Input, SubentryFlow, choice, dropdown

# The formats of OpenAI's speech route, which the others copy.
AUDIO_FORMATS: Final = ("mp3", "wav", "flac", "opus", "aac", "pcm")
MULTILINE: Final = TextSelector(TextSelectorConfig(multiline=True))
# What is asked beside the voice, which the model's voices offer.
VOICE_SETTINGS: Final[VolDictType] = {
    probatio.Required(CONF_SPEED, default=1.0): NumberSelector(
        NumberSelectorConfig(
            min=MIN_SPEED, max=MAX_SPEED, step=0.05, mode=NumberSelectorMode.SLIDER
        )
    ),
    probatio.Optional(CONF_INSTRUCTIONS): MULTILINE,
    probatio.Required(CONF_AUDIO_FORMAT, default=DEFAULT_AUDIO_FORMAT): choice(
        CONF_AUDIO_FORMAT, AUDIO_FORMATS
    ),
    probatio.Required(CONF_STREAMING, default=True): bool,
}


# How each kind tells the evident models of a server's list.
PICKS: Final = {SUBENTRY_STT: is_transcription_model, SUBENTRY_TTS: is_speech_model}


def voice_defaults(models: list[str]) -> list[tuple[str, dict[str, object]]]:
    """Return the voice subentries (type, data) whose evident model the server lists."""
    return [
        (kind, _voice_data(kind, model))
        for kind, evident in PICKS.items()
        if (model := next(filter(evident, models), None))
    ]


def _voice_data(kind: str, model: str | None) -> dict[str, object]:
    data: dict[str, object] = (
        {CONF_SPEED: 1.0, CONF_AUDIO_FORMAT: DEFAULT_AUDIO_FORMAT, CONF_STREAMING: True}
        if kind == SUBENTRY_TTS
        else {CONF_HINT_NAMES: False}
    )
    if model:
        data[CONF_AUDIO_MODEL] = model
        if kind == SUBENTRY_TTS:
            data[CONF_VOICE] = known_voices(model)[0]
    return data


class VoiceSubentryFlowHandler(SubentryFlow):
    """Add or change a speech-to-text or text-to-speech entity of a server."""

    @property
    def _speaks(self) -> bool:
        return self._subentry_type == SUBENTRY_TTS

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, object]:
        known = preset.speech_model if self._speaks else preset.transcription_model
        model = next(filter(PICKS[self._subentry_type], models), known)
        return _voice_data(self._subentry_type, model)

    def _take(self, user_input: Mapping[str, Any], required: str) -> bool:
        """Take the values if the required one is given; blank or left-out text goes."""
        values = {
            key: value.strip() if isinstance(value, str) else value
            for key, value in user_input.items()
        }
        if not values.get(required):
            return False
        self.options = self._taken(values)
        return True

    async def async_step_init(self, user_input: Input = None) -> SubentryFlowResult:
        """Ask for the model (and a name for a new subentry)."""
        entry = self._entry()
        models = entry.runtime_data.models
        unknown = [model for model in models if model_kind(model) is ModelKind.UNKNOWN]
        # Evident models of the kind first; chat, image and the other kind's audio
        # models are left out.
        picks = [*filter(PICKS[self._subentry_type], models), *unknown]
        schema = self._model_fields(CONF_AUDIO_MODEL, picks)
        if not self._speaks:  # speech-to-text's settings come with its model
            schema[probatio.Optional(CONF_PROMPT)] = MULTILINE
            schema[probatio.Required(CONF_HINT_NAMES, default=False)] = bool
        errors: dict[str, str] = {}
        if user_input is not None:
            if not self._take(user_input, CONF_AUDIO_MODEL):
                errors[CONF_AUDIO_MODEL] = "model_required"
            elif self._speaks:
                return await self.async_step_voice()
            else:
                return self._async_store(self.options)
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(schema), user_input or self.options
            ),
            errors=errors,
            last_step=not self._speaks,
        )

    async def async_step_voice(self, user_input: Input = None) -> SubentryFlowResult:
        """Ask for the voice, speed, instructions, format and streaming."""
        entry = self._entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            if self._take(user_input, CONF_VOICE):
                return self._async_store(self.options)
            errors[CONF_VOICE] = "voice_required"
        model = str(self.options[CONF_AUDIO_MODEL])
        fetched = await async_fetch_voices(entry.runtime_data.transport)
        voices = fetched or known_voices(model)
        schema = {probatio.Required(CONF_VOICE): dropdown(voices), **VOICE_SETTINGS}
        suggested = {**self.options, **(user_input or {})}
        if suggested.get(CONF_VOICE) not in voices and user_input is None:
            # A voice of another model would not fit this one.
            suggested[CONF_VOICE] = voices[0]
        return self.async_show_form(
            step_id="voice",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(schema), suggested
            ),
            errors=errors,
            description_placeholders={"model": model},
            last_step=True,
        )
