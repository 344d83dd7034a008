"""Fix flows of the model repairs: pick another model for a subentry.

The issues come from model_issues.py. The form offers the server's models of
the right kind (models/kinds.py) that are not known to shut down, and takes
any other name too. Saving updates the subentry (its title follows the model
unless the user named it), which the entry takes in place and checks again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from homeassistant.components.repairs import RepairsFlow, RepairsFlowResult
from homeassistant.config_entries import ConfigEntryState, ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.selector import (
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
)
import probatio

from .const import (
    CONF_AUDIO_MODEL,
    CONF_IMAGE_MODEL,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .flows.titles import followed_title
from .models.audio_models import is_speech_model, is_transcription_model, known_voices
from .models.issues import ISSUE_ENTRY, ISSUE_MODEL_KEY, ISSUE_SUBENTRY, MODEL_KEYS
from .models.kinds import chat_models_first, image_models_first
from .voice.audio import async_fetch_voices

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry


def _evident_first(first: Callable[[str], bool]) -> Callable[[list[str]], list[str]]:
    """Return an ordering that puts the models `first` picks out before the rest."""

    def order(models: list[str]) -> list[str]:
        return sorted(models, key=lambda model: not first(model))

    return order


def _ordering(subentry_type: str, key: str) -> Callable[[list[str]], list[str]]:
    """Return how the picker orders the models for one model setting."""
    if key == CONF_IMAGE_MODEL:
        return image_models_first
    if key == CONF_AUDIO_MODEL:
        if subentry_type == SUBENTRY_STT:
            return _evident_first(is_transcription_model)
        return _evident_first(is_speech_model)
    return chat_models_first


class ModelRepairFlow(RepairsFlow):
    """Pick another model for the subentry setting an issue is about."""

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> RepairsFlowResult:
        """Start with the form (Home Assistant passes the issue id as input)."""
        return await self.async_step_model()

    async def async_step_model(
        self, user_input: dict[str, Any] | None = None
    ) -> RepairsFlowResult:
        """Offer the server's models; save the one picked or typed."""
        target = self._target()
        if target is None:
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
        choices = _ordering(subentry.subentry_type, key)(
            [
                model
                for model in runtime.models
                if model != current and runtime.capabilities.shutdown(model) is None
            ]
        )
        schema = probatio.Schema(
            {
                probatio.Required(key): SelectSelector(
                    SelectSelectorConfig(
                        options=[SelectOptionDict(value=m, label=m) for m in choices],
                        custom_value=True,
                        mode=SelectSelectorMode.DROPDOWN,
                    )
                )
            }
        )
        suggested = user_input or ({key: choices[0]} if choices else {})
        return self.async_show_form(
            step_id="model",
            data_schema=self.add_suggested_values_to_schema(schema, suggested),
            errors=errors,
            description_placeholders=self._placeholders(),
        )

    def _target(
        self,
    ) -> tuple[OpenAICompatibleConfigEntry, ConfigSubentry, str] | None:
        """Return the loaded entry, the subentry and the setting to fix."""
        data = self.data or {}
        entry = self.hass.config_entries.async_get_entry(str(data.get(ISSUE_ENTRY)))
        if entry is None or entry.state is not ConfigEntryState.LOADED:
            return None
        subentry = entry.subentries.get(str(data.get(ISSUE_SUBENTRY)))
        key = str(data.get(ISSUE_MODEL_KEY))
        if subentry is None or key not in MODEL_KEYS.get(subentry.subentry_type, ()):
            return None
        return entry, subentry, key

    def _placeholders(self) -> dict[str, str]:
        """Return the issue's placeholders: the subentry, model, server and date."""
        issue = ir.async_get(self.hass).async_get_issue(DOMAIN, self.issue_id)
        return dict((issue.translation_placeholders if issue else None) or {})

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
