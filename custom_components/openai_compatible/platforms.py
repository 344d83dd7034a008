"""The platforms' setup: each adds its entities for each subentry of its kinds."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers.entity import Entity
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry

type BuildEntities = Callable[
    [OpenAICompatibleConfigEntry, ConfigSubentry], Iterable[Entity]
]
type SetupEntry = Callable[
    [HomeAssistant, OpenAICompatibleConfigEntry, AddConfigEntryEntitiesCallback],
    Coroutine[Any, Any, None],
]


def setup_per_subentry(build: BuildEntities, *kinds: str) -> SetupEntry:
    """Return a platform's `async_setup_entry`, adding `build`'s entities.

    Each subentry of one of `kinds` gets the entities `build` makes for it.
    """

    async def async_setup_entry(
        hass: HomeAssistant,
        entry: OpenAICompatibleConfigEntry,
        async_add_entities: AddConfigEntryEntitiesCallback,
    ) -> None:
        """Add the entities of each subentry of the platform's kinds."""
        for subentry in entry.subentries.values():
            if subentry.subentry_type in kinds:
                async_add_entities(
                    build(entry, subentry), config_subentry_id=subentry.subentry_id
                )

    return async_setup_entry
