"""Whether the server answers: the entities are unavailable while it does not.

The transport reports every request: an answer of any status means the server
is there; a failure to connect or a timeout means it is not. While it is not,
a light check runs every CHECK_INTERVAL, so the entities come back even when
nothing asks. Each change is logged once: a warning when the server goes,
an info line when it comes back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Final

from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_track_time_interval

from .const import LOGGER
from .errors import ServerError

CHECK_INTERVAL: Final = timedelta(minutes=1)


class ServerHealth:
    """The reachability of one entry's server, with listeners."""

    def __init__(
        self, hass: HomeAssistant, name: str, check: Callable[[], Awaitable[object]]
    ) -> None:
        """Start as available; `check` is the light request made while down."""
        self._hass = hass
        self._name = name
        self._check = check
        self.available = True
        self._listeners: list[Callable[[], None]] = []
        self._stop_checks: CALLBACK_TYPE | None = None

    @callback
    def report(self, reachable: bool) -> None:
        """Take the outcome of a request: whether the server answered at all."""
        if reachable == self.available:
            return
        self.available = reachable
        if reachable:
            LOGGER.info("%s answers again", self._name)
            self._cancel_checks()
        else:
            LOGGER.warning(
                "%s cannot be reached; its agents and tasks are unavailable "
                "until it answers",
                self._name,
            )
            self._stop_checks = async_track_time_interval(
                self._hass, self._async_check, CHECK_INTERVAL, cancel_on_shutdown=True
            )
        for listener in list(self._listeners):
            listener()

    @callback
    def async_add_listener(self, listener: Callable[[], None]) -> CALLBACK_TYPE:
        """Call `listener` on every change; return what removes it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    @callback
    def async_stop(self) -> None:
        """Stop checking (the entry is unloading)."""
        self._cancel_checks()

    async def _async_check(self, _now: datetime) -> None:
        """Ask the server something light; the transport reports the outcome."""
        try:
            await self._check()
        except ServerError as err:
            LOGGER.debug("%s is still not answering: %s", self._name, err)

    def _cancel_checks(self) -> None:
        """Stop the periodic check, if it runs."""
        if self._stop_checks is not None:
            self._stop_checks()
            self._stop_checks = None
