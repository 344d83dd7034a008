"""The server's model list, kept fresh, and a repair for each model that will not do.

Setup reads what the server has (`async_survey`); every REFRESH_INTERVAL the
`ModelWatch` reads it again, so that a model the server stopped listing, or
one it or its provider will shut down, is noticed while Home Assistant runs.

A refresh updates the loaded entry in place rather than reloading it: agents,
tasks and voice entities keep running, and a new model list or server version
gives the capabilities a new fingerprint, which forgets what was learned about
the old server (capabilities.py). A refresh that fails changes nothing and is
logged at debug level only; whether the server answers is health.py's concern.

Each model a subentry names gets at most one repair issue, fixable by picking
another model (repairs.py): shut down (its date has passed), not listed (the
server lists models, but not this one), or deprecated (a shutdown date lies
ahead). Issues follow every setup and refresh, and go with the unloaded entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from homeassistant.config_entries import ConfigSubentry
from homeassistant.const import CONF_API_KEY
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.event import async_track_time_interval
from homeassistant.util import dt as dt_util

from .api import ModelListing, async_fetch_models
from .const import (
    CONF_AUDIO_MODEL,
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_IMAGE_MODEL,
    CONF_PROVIDER,
    DOMAIN,
    LOGGER,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .errors import ServerError
from .models.capabilities import server_fingerprint
from .models.lifecycle import is_listed
from .models.providers import provider_for
from .models.reports import ServerReport
from .server_info import async_server_report
from .transport import Transport

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry

REFRESH_INTERVAL: Final = timedelta(hours=6)

# The settings that name a model, by subentry type.
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


@dataclass(frozen=True, slots=True)
class Survey:
    """What the server has: its models, its report, and their fingerprint."""

    models: list[str]
    report: ServerReport
    fingerprint: str


def models_in_use(entry: OpenAICompatibleConfigEntry) -> set[str]:
    """Return the chat models the entry's subentries use."""
    return {
        str(model)
        for subentry in entry.subentries.values()
        if (model := subentry.data.get(CONF_CHAT_MODEL))
    }


async def async_survey(
    entry: OpenAICompatibleConfigEntry,
    transport: Transport,
    listing: ModelListing | None,
) -> Survey:
    """Return what the server has, from its model list and its report."""
    models = listing.ids if listing else []
    report = await async_server_report(
        transport,
        provider_for(entry.data.get(CONF_PROVIDER)).kind,
        listing,
        models_in_use(entry),
    )
    fingerprint = server_fingerprint(
        entry.data[CONF_BASE_URL], entry.data.get(CONF_API_KEY), report, models
    )
    return Survey(models, report, fingerprint)


def model_issue_id(subentry_id: str, model_key: str) -> str:
    """Return the id of the repair issue about one model setting of a subentry."""
    return f"model_{subentry_id}_{model_key}"


class ModelWatch:
    """One loaded entry's refreshes of the model list, and its model issues."""

    def __init__(self, hass: HomeAssistant, entry: OpenAICompatibleConfigEntry) -> None:
        """Watch the entry; `async_start` begins."""
        self._hass = hass
        self._entry = entry
        self._open: set[str] = set()
        self._stop_refreshes: CALLBACK_TYPE | None = None

    @callback
    def async_start(self) -> None:
        """Open the issues the models call for, and refresh every interval."""
        self._sync_issues()
        self._stop_refreshes = async_track_time_interval(
            self._hass,
            self._refresh,
            REFRESH_INTERVAL,
            name=f"{DOMAIN} model list",
            cancel_on_shutdown=True,
        )

    @callback
    def async_stop(self) -> None:
        """Stop refreshing and close every issue (the entry is unloading)."""
        if self._stop_refreshes is not None:
            self._stop_refreshes()
            self._stop_refreshes = None
        for issue_id in self._open:
            ir.async_delete_issue(self._hass, DOMAIN, issue_id)
        self._open.clear()

    @callback
    def _refresh(self, _now: datetime) -> None:
        """Start a refresh, which the entry cancels if it unloads meanwhile."""
        self._entry.async_create_background_task(
            self._hass, self._async_refresh(), f"{DOMAIN} model list refresh"
        )

    async def _async_refresh(self) -> None:
        """Read the model list again; take what changed and follow with the issues."""
        runtime = self._entry.runtime_data
        try:
            listing = await async_fetch_models(runtime.transport)
        except ServerError as err:
            LOGGER.debug(
                "The models of %s were not refreshed: %s", self._entry.title, err
            )
            return
        if listing is None and runtime.models:
            LOGGER.debug(
                "%s listed no models this time; keeping its list", self._entry.title
            )
            return
        survey = await async_survey(self._entry, runtime.transport, listing)
        runtime.models = survey.models
        runtime.models_unread = None
        runtime.capabilities.update_report(survey.report, survey.fingerprint)
        self._sync_issues()

    @callback
    def _sync_issues(self) -> None:
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
        """Return why a model will not do, if it will not."""
        runtime = self._entry.runtime_data
        shutdown = runtime.capabilities.shutdown(model)
        if shutdown is not None and shutdown <= today:
            return ModelProblem.SHUT_DOWN
        if (
            runtime.models
            and runtime.capabilities.provider.lists_every_model
            and not is_listed(model, runtime.models)
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
