"""Token usage of each agent and task, counted for the usage sensors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from homeassistant.core import CALLBACK_TYPE, callback


@dataclass(slots=True)
class UsageCounts:
    """What one agent or task has used since the counts began."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Prompt tokens the server answered from its cache (part of prompt_tokens).
    cached_tokens: int = 0
    requests: int = 0
    errors: int = 0


def _count(value: Any) -> int:
    """Return a token count the server reported, 0 for anything else."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


class UsageTracker:
    """The usage counts of an entry's subentries, and who listens to them."""

    def __init__(self) -> None:
        """Start with nothing counted."""
        self._counts: dict[str, UsageCounts] = {}
        self._listeners: dict[str, list[Callable[[], None]]] = {}

    def counts(self, subentry_id: str) -> UsageCounts:
        """Return the counts of a subentry."""
        return self._counts.setdefault(subentry_id, UsageCounts())

    @callback
    def record_request(self, subentry_id: str) -> None:
        """Count one request to the server."""
        self.counts(subentry_id).requests += 1
        self._notify(subentry_id)

    @callback
    def record_error(self, subentry_id: str) -> None:
        """Count one request that the server failed or refused."""
        self.counts(subentry_id).errors += 1
        self._notify(subentry_id)

    @callback
    def record_usage(self, subentry_id: str, usage: Mapping[str, Any]) -> None:
        """Add the usage block of an answer, in OpenAI's shape."""
        counts = self.counts(subentry_id)
        counts.prompt_tokens += _count(usage.get("prompt_tokens"))
        counts.completion_tokens += _count(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        if isinstance(details, Mapping):
            counts.cached_tokens += _count(details.get("cached_tokens"))
        self._notify(subentry_id)

    @callback
    def restore(self, subentry_id: str, name: str, value: int) -> None:
        """Add a count saved before a restart to the one counted since."""
        counts = self.counts(subentry_id)
        setattr(counts, name, getattr(counts, name) + value)

    @callback
    def async_add_listener(
        self, subentry_id: str, listener: Callable[[], None]
    ) -> CALLBACK_TYPE:
        """Call the listener after each change of a subentry's counts."""
        listeners = self._listeners.setdefault(subentry_id, [])
        listeners.append(listener)

        @callback
        def remove() -> None:
            listeners.remove(listener)

        return remove

    def _notify(self, subentry_id: str) -> None:
        """Tell the subentry's listeners that its counts changed."""
        for listener in list(self._listeners.get(subentry_id, ())):
            listener()
