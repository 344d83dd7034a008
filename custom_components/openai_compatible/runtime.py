"""What a loaded entry holds: its coordinator, capabilities, slots and usage."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from homeassistant.core import CALLBACK_TYPE, callback

from .models.kinds import offered

if TYPE_CHECKING:
    from .coordinator import ServerCoordinator
    from .models.capabilities import Capabilities
    from .net.transport import Transport


def _count(value: Any) -> int:
    """Return a count the server reported; 0 for anything odd."""
    return value if type(value) is int and value > 0 else 0


class UsageTracker:
    """Each subentry's counts (`sensor.USAGE_KEYS`), and who listens to them."""

    def __init__(self) -> None:
        """Start with nothing counted."""
        self.counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self._listeners: defaultdict[str, list[Callable[[], None]]] = defaultdict(list)

    @callback
    def record_request(self, subentry_id: str) -> None:
        """Count one request to the server."""
        self._add(subentry_id, requests=1)

    @callback
    def record_error(self, subentry_id: str) -> None:
        """Count one request that the server failed or refused."""
        self._add(subentry_id, errors=1)

    @callback
    def record_usage(self, subentry_id: str, usage: Mapping[str, Any]) -> None:
        """Add the usage block of an answer, in OpenAI's shape."""
        details = usage.get("prompt_tokens_details")
        self._add(
            subentry_id,
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            cached_tokens=_count(details.get("cached_tokens"))
            if isinstance(details, Mapping)
            else 0,
        )

    @callback
    def async_add_listener(
        self, subentry_id: str, listener: Callable[[], None]
    ) -> CALLBACK_TYPE:
        """Call the listener after each change of a subentry's counts."""
        self._listeners[subentry_id].append(listener)
        return partial(self._listeners[subentry_id].remove, listener)

    def _add(self, subentry_id: str, **counts: int) -> None:
        self.counts[subentry_id].update(counts)
        for listener in list(self._listeners[subentry_id]):
            listener()


@dataclass(slots=True)
class RuntimeData:
    """Everything a loaded entry holds."""

    coordinator: ServerCoordinator
    capabilities: Capabilities
    # AI-task requests at once, for all the entry's entities; turns are not held back.
    task_slots: asyncio.Semaphore
    # What a change must touch to need a reload (__init__.setup_basis).
    basis: tuple[object, ...]
    usage: UsageTracker = field(default_factory=UsageTracker)

    @property
    def transport(self) -> Transport:
        """Return the connection to the server."""
        return self.coordinator.transport

    @property
    def models(self) -> list[str]:
        """Return the models the server lists that the pickers offer (or none)."""
        return offered(self.coordinator.data.models)
