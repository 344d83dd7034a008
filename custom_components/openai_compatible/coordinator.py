"""One coordinator per entry: whether its server answers, and its model list.

The transport reports every request (`async_report`): an answer of any status
means the server is there; a failure to connect or a timeout means it is not.
The entities follow the coordinator, so they are unavailable while it is not.
Each change is logged once: a warning when the server goes, an info line when
it comes back.

The coordinator reads the model list again every REFRESH_INTERVAL, and every
CHECK_INTERVAL while the server does not answer, so that the entities come
back even when nothing asks. A refresh updates the loaded entry in place
rather than reloading it: agents, tasks and voice entities keep running, and a
new model list or server version gives the capabilities a new fingerprint,
which forgets what was learned about the old server (capabilities.py). A
refresh the server answers but fails changes nothing and is logged at debug
level only. Its listeners (the entities, the model issues of model_issues.py)
hear of every refresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, override

from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed

from .const import (
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    CONF_SERVER_KIND,
    LOGGER,
)
from .errors import ServerError
from .models.capabilities import server_fingerprint
from .models.lifecycle import ListedModels, listed_models
from .models.listing import ModelListing, async_fetch_models
from .models.providers import provider_for
from .models.reports import ServerKind, ServerReport
from .models.server_info import async_server_report
from .net.transport import Transport

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry

REFRESH_INTERVAL: Final = timedelta(hours=6)
CHECK_INTERVAL: Final = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Survey:
    """What the server has: its models, its report, and their fingerprint."""

    models: list[str]
    report: ServerReport
    fingerprint: str
    # The models as they are looked up in, read once per list.
    listed: ListedModels
    # Why the model list was not read (it is too large), if it was not.
    unread: str | None = None


def models_in_use(entry: OpenAICompatibleConfigEntry) -> set[str]:
    """Return the chat models the entry's subentries use."""
    return {
        str(model)
        for subentry in entry.subentries.values()
        if (model := subentry.data.get(CONF_CHAT_MODEL))
    }


def entry_kind(data: Mapping[str, Any]) -> ServerKind | None:
    """Return an entry's server software: its preset's, else the one recognised."""
    if kind := provider_for(data.get(CONF_PROVIDER)).kind:
        return kind
    stored = str(data.get(CONF_SERVER_KIND))
    return ServerKind(stored) if stored in ServerKind else None


async def async_survey(
    entry: OpenAICompatibleConfigEntry,
    transport: Transport,
    listing: ModelListing | None,
) -> Survey:
    """Return what the server has, from its model list and its report.

    The fingerprint and the lookup are made in the executor: they read the
    whole list.
    """
    models = listing.ids if listing else []
    report = await async_server_report(
        transport,
        entry_kind(entry.data),
        listing,
        models_in_use(entry),
    )
    fingerprint = await transport.hass.async_add_executor_job(
        server_fingerprint,
        entry.data[CONF_BASE_URL],
        entry.data.get(CONF_API_KEY),
        report,
        models,
    )
    listed = await transport.hass.async_add_executor_job(listed_models, models)
    return Survey(models, report, fingerprint, listed)


class ServerCoordinator(DataUpdateCoordinator[Survey]):
    """One entry's server: the connection, whether it answers, what it has."""

    config_entry: OpenAICompatibleConfigEntry

    def __init__(self, hass: HomeAssistant, entry: OpenAICompatibleConfigEntry) -> None:
        """Connect to the entry's server; the setup hands over the first survey."""
        super().__init__(
            hass,
            LOGGER,
            config_entry=entry,
            name=entry.title,
            update_interval=REFRESH_INTERVAL,
        )
        self.transport = Transport(
            hass,
            entry.data[CONF_BASE_URL],
            entry.data.get(CONF_API_KEY),
            on_reachable=self.async_report,
        )

    @callback
    def async_report(self, reachable: bool) -> None:
        """Take the outcome of a request: whether the server answered at all."""
        if reachable == self.last_update_success:
            return
        self.last_update_success = reachable
        if reachable:
            LOGGER.info("%s answers again", self.name)
        else:
            LOGGER.warning(
                "%s cannot be reached; its agents and tasks are unavailable "
                "until it answers",
                self.name,
            )
        self.update_interval = REFRESH_INTERVAL if reachable else CHECK_INTERVAL
        if self._listeners:
            self._schedule_refresh()
        self.async_update_listeners()

    @override
    async def _async_update_data(self) -> Survey:
        """Read the model list again; keep what is known when it cannot be read."""
        try:
            listing = await async_fetch_models(self.transport)
        except ServerError as err:
            if not self.last_update_success:
                raise UpdateFailed(err.translation_key) from err
            LOGGER.debug("The models of %s were not refreshed: %s", self.name, err)
            return self.data
        if listing is None and self.data.models:
            LOGGER.debug("%s listed no models this time; keeping its list", self.name)
            return self.data
        survey = await async_survey(self.config_entry, self.transport, listing)
        self.config_entry.runtime_data.capabilities.update_report(
            survey.report, survey.fingerprint
        )
        return survey
