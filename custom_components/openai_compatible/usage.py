"""Token usage of each agent and task, counted for the usage sensors."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from homeassistant.core import CALLBACK_TYPE, callback


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
