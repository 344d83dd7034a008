"""Subentry flows of speech-to-text and text-to-speech: model, then its settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from homeassistant.config_entries import SubentryFlowResult
from homeassistant.const import CONF_NAME, CONF_PROMPT
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
)
from ..models.audio_models import (
    is_speech_model,
    is_transcription_model,
    known_voices,
    pick_speech_model,
    pick_transcription_model,
)
from ..models.kinds import ModelKind, model_kind
from ..models.providers import Provider
from ..voice.audio import MAX_SPEED, MIN_SPEED, async_fetch_voices
from .defaults import stt_defaults, tts_defaults
from .fields import choice, dropdown
from .subentry_base import SubentryFlow

# The formats of OpenAI's speech route, which the others copy.
AUDIO_FORMATS: Final = ("mp3", "wav", "flac", "opus", "aac", "pcm")


def _voice_models(models: list[str], evident: Callable[[str], bool]) -> list[str]:
    """Return the models evidently of the picker's kind, then those of unknown kind.

    Chat, image and other audio models are left out; any name can be typed.
    """
    unknown = [model for model in models if model_kind(model) is ModelKind.UNKNOWN]
    return [*filter(evident, models), *unknown]


def _keep_text(options: dict[str, object], key: str, value: object) -> None:
    """Keep a text field's value without its spaces; drop it when blank."""
    if text := str(value or "").strip():
        options[key] = text
    else:
        options.pop(key, None)


class _VoiceSubentryFlow(SubentryFlow):
    """What the speech-to-text and text-to-speech flows share: the model step."""

    # Whether the model step is the last one.
    _model_step_last: bool

    def _evident(self, model: str) -> bool:
        """Tell whether a model is evidently of the flow's kind: its picker's first."""
        raise NotImplementedError

    def _fields(self) -> VolDictType:
        """Return the model step's fields besides name and model."""
        return {}

    async def _async_model_taken(
        self, user_input: Mapping[str, Any]
    ) -> SubentryFlowResult:
        """Go on once the model step is filled in."""
        raise NotImplementedError

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the model (and a name for a new subentry)."""
        entry = self._entry()
        errors: dict[str, str] = {}
        if user_input is not None and (model := self._model_from(user_input, errors)):
            self.options.update(user_input, **{CONF_AUDIO_MODEL: model})
            return await self._async_model_taken(user_input)

        schema: VolDictType = {}
        if self._is_new:
            # Left empty, server and model name the subentry.
            schema[probatio.Optional(CONF_NAME)] = str
        models = _voice_models(entry.runtime_data.models, self._evident)
        schema[probatio.Required(CONF_AUDIO_MODEL)] = dropdown(
            models, self.options.get(CONF_AUDIO_MODEL)
        )
        schema.update(self._fields())
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(schema), user_input or self.options
            ),
            errors=errors,
            last_step=self._model_step_last,
        )

    def _model_from(
        self, user_input: Mapping[str, Any], errors: dict[str, str]
    ) -> str | None:
        """Return the model typed or picked; note an error when it is blank."""
        if model := str(user_input[CONF_AUDIO_MODEL]).strip():
            return model
        errors[CONF_AUDIO_MODEL] = "model_required"
        return None

    def _async_save(self) -> SubentryFlowResult:
        """Create the subentry, or save the changed one, under its name if given."""
        data = {key: value for key, value in self.options.items() if key != CONF_NAME}
        name = str(self.options.get(CONF_NAME) or "").strip()
        return self._async_store(data, name)


class SpeechToTextSubentryFlowHandler(_VoiceSubentryFlow):
    """Add or change a speech-to-text entity of a server."""

    _model_step_last = True

    def _evident(self, model: str) -> bool:
        """Tell whether a model is evidently a transcription model."""
        return is_transcription_model(model)

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, object]:
        """Start from the first evident transcription model, else the preset's."""
        return stt_defaults(
            pick_transcription_model(models) or preset.transcription_model
        )

    def _fields(self) -> VolDictType:
        """Ask for a prompt, and whether to hint the home's names."""
        return {
            probatio.Optional(CONF_PROMPT): TextSelector(
                TextSelectorConfig(multiline=True)
            ),
            probatio.Required(CONF_HINT_NAMES, default=False): bool,
        }

    async def _async_model_taken(
        self, user_input: Mapping[str, Any]
    ) -> SubentryFlowResult:
        """Save the subentry with its prompt, if one is given."""
        _keep_text(self.options, CONF_PROMPT, user_input.get(CONF_PROMPT))
        return self._async_save()


class TextToSpeechSubentryFlowHandler(_VoiceSubentryFlow):
    """Add or change a text-to-speech entity of a server."""

    _model_step_last = False

    def _evident(self, model: str) -> bool:
        """Tell whether a model is evidently a speech model."""
        return is_speech_model(model)

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, object]:
        """Start from the first evident speech model, else the preset's."""
        return tts_defaults(pick_speech_model(models) or preset.speech_model)

    async def _async_model_taken(
        self, user_input: Mapping[str, Any]
    ) -> SubentryFlowResult:
        """Ask for the model's voice next."""
        return await self.async_step_voice()

    async def async_step_voice(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the voice, speed, instructions, format and streaming."""
        errors: dict[str, str] = {}
        entry = self._entry()
        if user_input is not None:
            if voice := str(user_input[CONF_VOICE]).strip():
                self.options.update(user_input, **{CONF_VOICE: voice})
                instructions = user_input.get(CONF_INSTRUCTIONS)
                _keep_text(self.options, CONF_INSTRUCTIONS, instructions)
                return self._async_save()
            errors[CONF_VOICE] = "voice_required"

        model = str(self.options[CONF_AUDIO_MODEL])
        voices = await async_fetch_voices(entry.runtime_data.transport) or known_voices(
            model
        )
        suggested = {**self.options, **(user_input or {})}
        if suggested.get(CONF_VOICE) not in voices and user_input is None:
            # A voice of another model would not fit this one.
            suggested[CONF_VOICE] = voices[0]
        return self.async_show_form(
            step_id="voice",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(_voice_fields(voices)), suggested
            ),
            errors=errors,
            description_placeholders={"model": model},
            last_step=True,
        )


def _voice_fields(voices: list[str]) -> VolDictType:
    """Return the voice step's fields, the voice picked from those given."""
    return {
        probatio.Required(CONF_VOICE): dropdown(voices),
        probatio.Required(CONF_SPEED, default=1.0): NumberSelector(
            NumberSelectorConfig(
                min=MIN_SPEED, max=MAX_SPEED, step=0.05, mode=NumberSelectorMode.SLIDER
            )
        ),
        probatio.Optional(CONF_INSTRUCTIONS): TextSelector(
            TextSelectorConfig(multiline=True)
        ),
        probatio.Required(CONF_AUDIO_FORMAT, default=DEFAULT_AUDIO_FORMAT): choice(
            CONF_AUDIO_FORMAT, AUDIO_FORMATS
        ),
        probatio.Required(CONF_STREAMING, default=True): bool,
    }
