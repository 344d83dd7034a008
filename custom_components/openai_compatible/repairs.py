"""Repair issues for subentry models shut down, not listed or deprecated; their fix flows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from homeassistant.components.repairs import RepairsFlow, RepairsFlowResult
from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util
import probatio

from .const import (
    CONF_AUDIO_MODEL,
    CONF_CHAT_MODEL,
    CONF_IMAGE_MODEL,
    CONF_VOICE,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .flows.common import Input, dropdown, followed_title
from .flows.voice_subentry import PICKS
from .models.listing import is_listed
from .models.names import ModelKind, known_voices, models_first
from .voice.audio import async_fetch_voices

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry, RuntimeData


MODEL_KEYS: Final[dict[str, tuple[str, ...]]] = {
    SUBENTRY_CONVERSATION: (CONF_CHAT_MODEL,),
    SUBENTRY_AI_TASK: (CONF_CHAT_MODEL, CONF_IMAGE_MODEL),
    SUBENTRY_STT: (CONF_AUDIO_MODEL,),
    SUBENTRY_TTS: (CONF_AUDIO_MODEL,),
}


def model_issue_id(subentry_id: str, model_key: str) -> str:
    """Return the id of the repair issue about one model setting of a subentry."""
    return f"model_{subentry_id}_{model_key}"


@callback
def async_track_model_issues(
    hass: HomeAssistant, entry: OpenAICompatibleConfigEntry
) -> None:
    """Keep the entry's model issues in step with its models until it unloads."""
    opened: set[str] = set()

    @callback
    def sync() -> None:
        wanted: set[str] = set()
        for subentry in entry.subentries.values():
            for key in MODEL_KEYS.get(subentry.subentry_type, ()):
                model = str(subentry.data.get(key) or "").strip()
                if not model or not (problem := _problem(entry.runtime_data, model)):
                    continue
                issue_id = model_issue_id(subentry.subentry_id, key)
                shutdown = entry.runtime_data.capabilities.shutdown(model)
                ir.async_create_issue(
                    hass,
                    DOMAIN,
                    issue_id,
                    config_entry_id=entry.entry_id,
                    data={  # what the fix flow is told
                        "entry_id": entry.entry_id,
                        "subentry_id": subentry.subentry_id,
                        "model_key": key,
                    },
                    is_fixable=True,
                    severity=ir.IssueSeverity.WARNING
                    if problem == "model_deprecated"
                    else ir.IssueSeverity.ERROR,
                    translation_key=problem,
                    translation_placeholders={
                        "name": subentry.title,
                        "model": model,
                        "server": entry.title,
                        "shutdown": shutdown.isoformat() if shutdown else "",
                    },
                )
                wanted.add(issue_id)
        close(opened - wanted)
        opened.clear()
        opened.update(wanted)

    @callback
    def close(issue_ids: set[str]) -> None:
        for issue_id in issue_ids:
            ir.async_delete_issue(hass, DOMAIN, issue_id)

    sync()
    entry.async_on_unload(entry.runtime_data.coordinator.async_add_listener(sync))
    entry.async_on_unload(lambda: close(opened))


def _problem(runtime: RuntimeData, model: str) -> str | None:
    """Return why a model will not do (the issue's translation key), if it will not."""
    shutdown = runtime.capabilities.shutdown(model)
    if shutdown is not None and shutdown <= dt_util.now().date():
        return "model_shut_down"
    if (
        runtime.models
        and runtime.capabilities.provider.lists_every_model
        and not is_listed(model, runtime.coordinator.data.listed)
    ):
        return "model_not_listed"
    return None if shutdown is None else "model_deprecated"


class ModelRepairFlow(RepairsFlow):
    """Pick another model for the subentry setting an issue is about."""

    async def async_step_init(self, user_input: Input = None) -> RepairsFlowResult:
        """Show the form; the input here is the issue's id, not an answer."""
        return await self.async_step_model()

    async def async_step_model(self, user_input: Input = None) -> RepairsFlowResult:
        """Offer the server's models; save the one picked or typed."""
        data = self.data or {}
        entry = self.hass.config_entries.async_get_entry(str(data.get("entry_id")))
        if entry is None or entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="not_loaded")
        subentry = entry.subentries.get(str(data.get("subentry_id")))
        key = str(data.get("model_key"))
        if subentry is None or key not in MODEL_KEYS.get(subentry.subentry_type, ()):
            return self.async_abort(reason="not_loaded")
        current = str(subentry.data.get(key) or "")
        errors: dict[str, str] = {}
        if user_input is not None:
            model = str(user_input.get(key) or "").strip()
            if not model:
                errors[key] = "model_required"
            elif model == current:
                errors[key] = "same_model"
            else:
                # The entry takes the model in place and checks its models again.
                new = {**subentry.data, key: model}
                if subentry.subentry_type == SUBENTRY_TTS:
                    fetched = await async_fetch_voices(entry.runtime_data.transport)
                    if new.get(CONF_VOICE) not in (fetched or []) + known_voices(model):
                        # A voice of the old model; the new one's first voice is used.
                        new.pop(CONF_VOICE, None)
                title = followed_title(subentry, entry, new)
                self.hass.config_entries.async_update_subentry(
                    entry, subentry, data=new, title=title
                )
                return self.async_create_entry(data={})
        runtime = entry.runtime_data
        others = [
            model
            for model in runtime.models
            if model != current and runtime.capabilities.shutdown(model) is None
        ]
        # The models of the setting's kind first.
        if key == CONF_AUDIO_MODEL:
            evident = PICKS[subentry.subentry_type]
            choices = sorted(others, key=lambda model: not evident(model))
        else:
            kind = ModelKind.IMAGE if key == CONF_IMAGE_MODEL else ModelKind.CHAT
            choices = models_first(others, kind)
        issue = ir.async_get(self.hass).async_get_issue(DOMAIN, self.issue_id)
        placeholders = issue.translation_placeholders if issue else None
        return self.async_show_form(
            step_id="model",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema({probatio.Required(key): dropdown(choices)}),
                user_input or ({key: choices[0]} if choices else {}),
            ),
            errors=errors,
            description_placeholders=dict(placeholders or {}),
        )


async def async_create_fix_flow(
    hass: HomeAssistant, issue_id: str, data: dict[str, str | int | float | None] | None
) -> RepairsFlow:
    """Return the fix flow of a model issue (the only fixable issues there are)."""
    return ModelRepairFlow()
