"""What a loaded entry holds: its coordinator, capabilities, slots and usage."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .models.kinds import offered
from .usage import UsageTracker

if TYPE_CHECKING:
    from .coordinator import ServerCoordinator
    from .models.capabilities import Capabilities
    from .net.transport import Transport


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
