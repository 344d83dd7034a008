"""Repair issues for subentry models that are shut down, not listed, or deprecated."""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util

from ..const import (
    CONF_AUDIO_MODEL,
    CONF_CHAT_MODEL,
    CONF_IMAGE_MODEL,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .lifecycle import is_listed

if TYPE_CHECKING:
    from .. import OpenAICompatibleConfigEntry

MODEL_KEYS: Final[dict[str, tuple[str, ...]]] = {
    SUBENTRY_CONVERSATION: (CONF_CHAT_MODEL,),
    SUBENTRY_AI_TASK: (CONF_CHAT_MODEL, CONF_IMAGE_MODEL),
    SUBENTRY_STT: (CONF_AUDIO_MODEL,),
    SUBENTRY_TTS: (CONF_AUDIO_MODEL,),
}

# What the fix flow is told about its issue.
ISSUE_ENTRY: Final = "entry_id"
ISSUE_SUBENTRY: Final = "subentry_id"
ISSUE_MODEL_KEY: Final = "model_key"


class ModelProblem(StrEnum):
    """Why a subentry's model will not do; the repair issue's translation key."""

    SHUT_DOWN = "model_shut_down"
    NOT_LISTED = "model_not_listed"
    DEPRECATED = "model_deprecated"


_SEVERITIES: Final = {
    ModelProblem.SHUT_DOWN: ir.IssueSeverity.ERROR,
    ModelProblem.NOT_LISTED: ir.IssueSeverity.ERROR,
    ModelProblem.DEPRECATED: ir.IssueSeverity.WARNING,
}


def model_issue_id(subentry_id: str, model_key: str) -> str:
    """Return the id of the repair issue about one model setting of a subentry."""
    return f"model_{subentry_id}_{model_key}"


class ModelIssues:
    """One loaded entry's model issues."""

    def __init__(self, hass: HomeAssistant, entry: OpenAICompatibleConfigEntry) -> None:
        """Keep the issues of the entry's subentries."""
        self._hass = hass
        self._entry = entry
        self._open: set[str] = set()

    @callback
    def async_clear(self) -> None:
        """Close every issue (the entry is unloading)."""
        for issue_id in self._open:
            ir.async_delete_issue(self._hass, DOMAIN, issue_id)
        self._open.clear()

    @callback
    def async_sync(self) -> None:
        """Open, update and close the issues to match the models now."""
        wanted: set[str] = set()
        today = dt_util.now().date()
        for subentry in self._entry.subentries.values():
            for key in MODEL_KEYS.get(subentry.subentry_type, ()):
                if not (model := str(subentry.data.get(key) or "").strip()):
                    continue
                problem = self._problem(model, today)
                if problem is None:
                    continue
                issue_id = model_issue_id(subentry.subentry_id, key)
                self._open_issue(issue_id, subentry, key, model, problem)
                wanted.add(issue_id)
        for issue_id in self._open - wanted:
            ir.async_delete_issue(self._hass, DOMAIN, issue_id)
        self._open = wanted

    def _problem(self, model: str, today: date) -> ModelProblem | None:
        runtime = self._entry.runtime_data
        shutdown = runtime.capabilities.shutdown(model)
        if shutdown is not None and shutdown <= today:
            return ModelProblem.SHUT_DOWN
        if (
            runtime.models
            and runtime.capabilities.provider.lists_every_model
            and not is_listed(model, runtime.coordinator.data.listed)
        ):
            return ModelProblem.NOT_LISTED
        if shutdown is not None:
            return ModelProblem.DEPRECATED
        return None

    def _open_issue(
        self,
        issue_id: str,
        subentry: ConfigSubentry,
        key: str,
        model: str,
        problem: ModelProblem,
    ) -> None:
        """Open or update the issue about one model setting of a subentry."""
        shutdown = self._entry.runtime_data.capabilities.shutdown(model)
        ir.async_create_issue(
            self._hass,
            DOMAIN,
            issue_id,
            config_entry_id=self._entry.entry_id,
            data={
                ISSUE_ENTRY: self._entry.entry_id,
                ISSUE_SUBENTRY: subentry.subentry_id,
                ISSUE_MODEL_KEY: key,
            },
            is_fixable=True,
            severity=_SEVERITIES[problem],
            translation_key=problem,
            translation_placeholders={
                "name": subentry.title,
                "model": model,
                "server": self._entry.title,
                "shutdown": shutdown.isoformat() if shutdown else "",
            },
        )
