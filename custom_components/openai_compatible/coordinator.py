"""One coordinator per entry: whether its server answers, and its model list."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, override

from homeassistant.config_entries import ConfigEntryState
from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryAuthFailed
from homeassistant.helpers.update_coordinator import DataUpdateCoordinator, UpdateFailed

from .const import (
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    CONF_SERVER_KIND,
    DOMAIN,
    LOGGER,
)
from .errors import AuthError, ServerError
from .models.listing import (
    MAX_LISTED_MODELS,
    MAX_LISTING_BYTES,
    ListedModels,
    async_fetch_models,
    listed_models,
)
from .models.providers import provider_for
from .models.server_info import ServerKind, ServerReport, async_server_report
from .net.readers import mebibytes
from .net.transport import Transport

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry

REFRESH_INTERVAL: Final = timedelta(hours=6)
CHECK_INTERVAL: Final = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Survey:
    """What the server has: its models and its report."""

    models: list[str]
    report: ServerReport
    listed: ListedModels
    # Why the model list was not read whole (it is too large), if it was not.
    unread: str | None = None

    @property
    def server(self) -> tuple[str | None, frozenset[str]]:
        """Return what identifies the server: what was learned holds while it stays."""
        return self.report.version, frozenset(self.models)


def entry_kind(data: Mapping[str, Any]) -> ServerKind | None:
    """Return an entry's server software: its preset's, else the one recognised."""
    if kind := provider_for(data.get(CONF_PROVIDER)).kind:
        return kind
    stored = str(data.get(CONF_SERVER_KIND))
    return ServerKind(stored) if stored in ServerKind else None


class ServerCoordinator(DataUpdateCoordinator[Survey]):
    """One entry's server: the connection, whether it answers, what it has."""

    config_entry: OpenAICompatibleConfigEntry

    def __init__(self, hass: HomeAssistant, entry: OpenAICompatibleConfigEntry) -> None:
        """Connect to the entry's server."""
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
        """Take a change in whether the server answers requests at all."""
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

    @callback
    @override
    def _async_refresh_finished(self) -> None:
        """Tell the transport what a refresh found, so it reports only changes."""
        self.transport.reachable = self.last_update_success

    @override
    async def _async_update_data(self) -> Survey:
        """Read the model list, keeping what is known; a refused key at setup reauths."""
        at_setup = self.config_entry.state is ConfigEntryState.SETUP_IN_PROGRESS
        try:
            listing = await async_fetch_models(self.transport)
        except ServerError as err:
            if at_setup and isinstance(err, AuthError):
                raise ConfigEntryAuthFailed(
                    translation_domain=DOMAIN, translation_key="invalid_auth"
                ) from err
            if at_setup or not self.last_update_success:
                raise UpdateFailed(
                    translation_domain=DOMAIN,
                    translation_key=err.translation_key,
                    translation_placeholders=err.translation_placeholders,
                ) from err
            LOGGER.debug("The models of %s were not refreshed: %s", self.name, err)
            return self.data
        if listing is None and not at_setup and self.data.models:
            LOGGER.debug("%s listed no models this time; keeping its list", self.name)
            return self.data
        entry = self.config_entry
        models = listing.ids if listing else []
        unread = None
        if listing is None:
            LOGGER.debug("%s lists no models; chat still works", self.name)
        elif listing.cut:
            cap = f"{MAX_LISTED_MODELS} models or {mebibytes(MAX_LISTING_BYTES)}"
            unread = f"over {cap}: the first {len(models)} read"
            if at_setup:
                LOGGER.warning(
                    "%s lists over %s; it is set up with the first %d",
                    self.name,
                    cap,
                    len(models),
                )
        in_use = {
            str(model)
            for subentry in entry.subentries.values()
            if (model := subentry.data.get(CONF_CHAT_MODEL))
        }
        report = await async_server_report(
            self.transport, entry_kind(entry.data), listing, in_use
        )
        listed = await self.hass.async_add_executor_job(listed_models, models)
        survey = Survey(models, report, listed, unread)
        if not at_setup:
            entry.runtime_data.capabilities.update_report(report, survey.server)
        return survey
