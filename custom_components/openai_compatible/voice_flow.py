"""Subentry flows of speech-to-text and text-to-speech, and their defaults."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from homeassistant.config_entries import (
    SOURCE_USER,
    ConfigEntry,
    ConfigEntryState,
    ConfigSubentryFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_NAME, CONF_PROMPT
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TextSelector,
    TextSelectorConfig,
)
from homeassistant.helpers.typing import VolDictType
import probatio

from .audio import async_fetch_voices
from .audio_models import (
    is_speech_model,
    is_transcription_model,
    known_voices,
    pick_speech_model,
    pick_transcription_model,
)
from .capabilities import Provider, provider_for
from .const import (
    CONF_AUDIO_FORMAT,
    CONF_AUDIO_MODEL,
    CONF_HINT_NAMES,
    CONF_INSTRUCTIONS,
    CONF_PROVIDER,
    CONF_SPEED,
    CONF_STREAMING,
    CONF_VOICE,
    DEFAULT_AUDIO_FORMAT,
    MAX_SPEED,
    MIN_SPEED,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .model_kinds import ModelKind, model_kind
from .naming import followed_title, subentry_title

# The formats of OpenAI's speech route, which the others copy.
AUDIO_FORMATS: Final = ("mp3", "wav", "flac", "opus", "aac", "pcm")
# A voice model picker's order after the evident voice models.
_LATER: Final = (ModelKind.UNKNOWN, ModelKind.OTHER, ModelKind.IMAGE, ModelKind.CHAT)


def voice_defaults(models: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Return the types and data of a new entry's voice subentries.

    Speech-to-text and text-to-speech come only where the server lists an
    evident model for them.
    """
    defaults: list[tuple[str, dict[str, Any]]] = []
    if transcription_model := pick_transcription_model(models):
        defaults.append((SUBENTRY_STT, _stt_defaults(transcription_model)))
    if speech_model := pick_speech_model(models):
        defaults.append((SUBENTRY_TTS, _tts_defaults(speech_model)))
    return defaults


def _stt_defaults(model: str | None) -> dict[str, Any]:
    """Return the settings of a new speech-to-text subentry."""
    data: dict[str, Any] = {CONF_HINT_NAMES: False}
    if model:
        data[CONF_AUDIO_MODEL] = model
    return data


def _tts_defaults(model: str | None) -> dict[str, Any]:
    """Return the settings of a new text-to-speech subentry."""
    data: dict[str, Any] = {
        CONF_SPEED: 1.0,
        CONF_AUDIO_FORMAT: DEFAULT_AUDIO_FORMAT,
        CONF_STREAMING: True,
    }
    if model:
        data[CONF_AUDIO_MODEL] = model
        data[CONF_VOICE] = known_voices(model)[0]
    return data


def _options(
    values: list[str], first: Callable[[str], bool], current: str | None
) -> list[SelectOptionDict]:
    """Return dropdown options: the values matching `first` lead, the current one kept.

    Models of unknown kind come next and evident chat models last.
    """
    ordered = sorted(
        values,
        key=lambda value: -1 if first(value) else _LATER.index(model_kind(value)),
    )
    if current and current not in ordered:
        ordered.insert(0, current)
    return [SelectOptionDict(value=value, label=value) for value in ordered]


def _model_selector(
    models: list[str], first: Callable[[str], bool], current: str | None
) -> SelectSelector:
    """Return a dropdown of the listed models that takes any other name too."""
    return SelectSelector(
        SelectSelectorConfig(
            options=_options(models, first, current),
            custom_value=True,
            mode=SelectSelectorMode.DROPDOWN,
        )
    )


class _VoiceSubentryFlow(ConfigSubentryFlow):
    """What the speech-to-text and text-to-speech flows share."""

    options: dict[str, Any]

    @property
    def _is_new(self) -> bool:
        """Tell whether the flow creates a subentry."""
        return self.source == SOURCE_USER

    def _loaded_entry(self) -> ConfigEntry | None:
        """Return the entry when it is loaded (its models are known)."""
        entry = self._get_entry()
        return entry if entry.state is ConfigEntryState.LOADED else None

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, Any]:
        """Return the settings a new subentry starts from."""
        raise NotImplementedError

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Add a subentry, starting from the model the server evidently has."""
        if (entry := self._loaded_entry()) is None:
            return self.async_abort(reason="entry_not_loaded")
        preset = provider_for(entry.data.get(CONF_PROVIDER))
        self.options = self._defaults(entry.runtime_data.models, preset)
        return await self.async_step_init()

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change a subentry, starting from its saved settings."""
        if self._loaded_entry() is None:
            return self.async_abort(reason="entry_not_loaded")
        self.options = dict(self._get_reconfigure_subentry().data)
        return await self.async_step_init()

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the model (and a name for a new subentry)."""
        raise NotImplementedError

    def _name_field(self, schema: VolDictType) -> None:
        """Add the name to a new subentry's form; empty, server and model name it."""
        if self._is_new:
            schema[probatio.Optional(CONF_NAME)] = str

    def _model_from(
        self, user_input: dict[str, Any], errors: dict[str, str]
    ) -> str | None:
        """Return the model typed or picked; note an error when it is blank."""
        if model := str(user_input[CONF_AUDIO_MODEL]).strip():
            return model
        errors[CONF_AUDIO_MODEL] = "model_required"
        return None

    def _async_save(self) -> SubentryFlowResult:
        """Create the subentry, or save the changed one.

        A title the integration made follows the model; a given name stays.
        """
        data = {key: value for key, value in self.options.items() if key != CONF_NAME}
        entry = self._get_entry()
        if self._is_new:
            name = str(self.options.get(CONF_NAME) or "").strip()
            return self.async_create_entry(
                title=name or subentry_title(self._subentry_type, entry.data, data),
                data=data,
            )
        subentry = self._get_reconfigure_subentry()
        title = followed_title(
            subentry.title, self._subentry_type, entry.data, subentry.data, data
        )
        return self.async_update_and_abort(entry, subentry, data=data, title=title)


class SpeechToTextSubentryFlowHandler(_VoiceSubentryFlow):
    """Add or change a speech-to-text entity of a server."""

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, Any]:
        """Start from the first evident transcription model, else the preset's."""
        return _stt_defaults(
            pick_transcription_model(models) or preset.transcription_model
        )

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the model, a prompt, and whether to hint the home's names."""
        if (entry := self._loaded_entry()) is None:
            return self.async_abort(reason="entry_not_loaded")
        errors: dict[str, str] = {}
        if user_input is not None and (model := self._model_from(user_input, errors)):
            self.options.update(user_input, **{CONF_AUDIO_MODEL: model})
            if prompt := str(user_input.get(CONF_PROMPT) or "").strip():
                self.options[CONF_PROMPT] = prompt
            else:
                self.options.pop(CONF_PROMPT, None)
            return self._async_save()

        schema: VolDictType = {}
        self._name_field(schema)
        schema[probatio.Required(CONF_AUDIO_MODEL)] = _model_selector(
            entry.runtime_data.models,
            is_transcription_model,
            self.options.get(CONF_AUDIO_MODEL),
        )
        schema[probatio.Optional(CONF_PROMPT)] = TextSelector(
            TextSelectorConfig(multiline=True)
        )
        schema[probatio.Required(CONF_HINT_NAMES, default=False)] = bool
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(schema), user_input or self.options
            ),
            errors=errors,
            last_step=True,
        )


class TextToSpeechSubentryFlowHandler(_VoiceSubentryFlow):
    """Add or change a text-to-speech entity of a server."""

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, Any]:
        """Start from the first evident speech model, else the preset's."""
        return _tts_defaults(pick_speech_model(models) or preset.speech_model)

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the model; its voices come next."""
        if (entry := self._loaded_entry()) is None:
            return self.async_abort(reason="entry_not_loaded")
        errors: dict[str, str] = {}
        if user_input is not None and (model := self._model_from(user_input, errors)):
            self.options.update(user_input, **{CONF_AUDIO_MODEL: model})
            return await self.async_step_voice()

        schema: VolDictType = {}
        self._name_field(schema)
        schema[probatio.Required(CONF_AUDIO_MODEL)] = _model_selector(
            entry.runtime_data.models,
            is_speech_model,
            self.options.get(CONF_AUDIO_MODEL),
        )
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(schema), user_input or self.options
            ),
            errors=errors,
            last_step=False,
        )

    async def async_step_voice(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Ask for the voice, speed, instructions, format and streaming."""
        if (entry := self._loaded_entry()) is None:
            return self.async_abort(reason="entry_not_loaded")
        errors: dict[str, str] = {}
        if user_input is not None:
            if voice := str(user_input[CONF_VOICE]).strip():
                self.options.update(user_input, **{CONF_VOICE: voice})
                instructions = str(user_input.get(CONF_INSTRUCTIONS) or "").strip()
                if instructions:
                    self.options[CONF_INSTRUCTIONS] = instructions
                else:
                    self.options.pop(CONF_INSTRUCTIONS, None)
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
        schema: VolDictType = {
            probatio.Required(CONF_VOICE): SelectSelector(
                SelectSelectorConfig(
                    options=[SelectOptionDict(value=v, label=v) for v in voices],
                    custom_value=True,
                    mode=SelectSelectorMode.DROPDOWN,
                )
            ),
            probatio.Required(CONF_SPEED, default=1.0): NumberSelector(
                NumberSelectorConfig(
                    min=MIN_SPEED,
                    max=MAX_SPEED,
                    step=0.05,
                    mode=NumberSelectorMode.SLIDER,
                )
            ),
            probatio.Optional(CONF_INSTRUCTIONS): TextSelector(
                TextSelectorConfig(multiline=True)
            ),
            probatio.Required(
                CONF_AUDIO_FORMAT, default=DEFAULT_AUDIO_FORMAT
            ): SelectSelector(
                SelectSelectorConfig(
                    options=list(AUDIO_FORMATS),
                    mode=SelectSelectorMode.DROPDOWN,
                    translation_key=CONF_AUDIO_FORMAT,
                )
            ),
            probatio.Required(CONF_STREAMING, default=True): bool,
        }
        return self.async_show_form(
            step_id="voice",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(schema), suggested
            ),
            errors=errors,
            description_placeholders={"model": model},
            last_step=True,
        )
