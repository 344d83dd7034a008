"""Fix flows of the model issues (models/issues.py): pick another model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from homeassistant.components.repairs import RepairsFlow, RepairsFlowResult
from homeassistant.config_entries import ConfigEntryState, ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import probatio

from .const import (
    CONF_AUDIO_MODEL,
    CONF_IMAGE_MODEL,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .flows.fields import dropdown
from .flows.titles import followed_title
from .models.audio_models import is_speech_model, is_transcription_model, known_voices
from .models.issues import ISSUE_ENTRY, ISSUE_MODEL_KEY, ISSUE_SUBENTRY, MODEL_KEYS
from .models.kinds import chat_models_first, image_models_first
from .voice.audio import async_fetch_voices

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry


def _ordered(subentry_type: str, key: str, models: list[str]) -> list[str]:
    """Return the models with those of the setting's kind first."""
    if key == CONF_IMAGE_MODEL:
        return image_models_first(models)
    if key == CONF_AUDIO_MODEL:
        evident = (
            is_transcription_model if subentry_type == SUBENTRY_STT else is_speech_model
        )
        return sorted(models, key=lambda model: not evident(model))
    return chat_models_first(models)


class ModelRepairFlow(RepairsFlow):
    """Pick another model for the subentry setting an issue is about."""

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> RepairsFlowResult:
        """Show the form."""
        return await self.async_step_model()

    async def async_step_model(
        self, user_input: dict[str, Any] | None = None
    ) -> RepairsFlowResult:
        """Offer the server's models; save the one picked or typed."""
        if (target := self._target()) is None:
            return self.async_abort(reason="not_loaded")
        entry, subentry, key = target
        current = str(subentry.data.get(key) or "")
        errors: dict[str, str] = {}
        if user_input is not None:
            model = str(user_input.get(key) or "").strip()
            if not model:
                errors[key] = "model_required"
            elif model == current:
                errors[key] = "same_model"
            else:
                await self._async_save(entry, subentry, key, model)
                return self.async_create_entry(data={})
        runtime = entry.runtime_data
        choices = _ordered(
            subentry.subentry_type,
            key,
            [
                model
                for model in runtime.models
                if model != current and runtime.capabilities.shutdown(model) is None
            ],
        )
        issue = ir.async_get(self.hass).async_get_issue(DOMAIN, self.issue_id)
        return self.async_show_form(
            step_id="model",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema({probatio.Required(key): dropdown(choices)}),
                user_input or ({key: choices[0]} if choices else {}),
            ),
            errors=errors,
            description_placeholders=dict(
                (issue.translation_placeholders if issue else None) or {}
            ),
        )

    def _target(
        self,
    ) -> tuple[OpenAICompatibleConfigEntry, ConfigSubentry, str] | None:
        data = self.data or {}
        entry = self.hass.config_entries.async_get_entry(str(data.get(ISSUE_ENTRY)))
        if entry is None or entry.state is not ConfigEntryState.LOADED:
            return None
        subentry = entry.subentries.get(str(data.get(ISSUE_SUBENTRY)))
        key = str(data.get(ISSUE_MODEL_KEY))
        if subentry is None or key not in MODEL_KEYS.get(subentry.subentry_type, ()):
            return None
        return entry, subentry, key

    async def _async_save(
        self,
        entry: OpenAICompatibleConfigEntry,
        subentry: ConfigSubentry,
        key: str,
        model: str,
    ) -> None:
        """Save the model; the entry takes it in place and checks its models again."""
        data = {**subentry.data, key: model}
        if subentry.subentry_type == SUBENTRY_TTS:
            voices = await async_fetch_voices(entry.runtime_data.transport)
            if data.get(CONF_VOICE) not in [*(voices or ()), *known_voices(model)]:
                # A voice of the old model; the new one's first voice is used.
                data.pop(CONF_VOICE, None)
        self.hass.config_entries.async_update_subentry(
            entry,
            subentry,
            data=data,
            title=followed_title(
                subentry.title,
                subentry.subentry_type,
                entry.title,
                entry.data,
                subentry.data,
                data,
            ),
        )


async def async_create_fix_flow(
    hass: HomeAssistant,
    issue_id: str,
    data: dict[str, str | int | float | None] | None,
) -> RepairsFlow:
    """Return the fix flow of a model issue (the only fixable issues there are)."""
    return ModelRepairFlow()
