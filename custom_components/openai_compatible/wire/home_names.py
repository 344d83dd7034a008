"""The names a home's exposed entities, areas and floors go by, read as words."""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from typing import Final

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    device_registry as dr,
    entity_registry as er,
    floor_registry as fr,
)

# Where a word starts inside a name written in code style.
_WORD_BREAK: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.\s]+")
# Two forms of one word (`curtain`, `curtains`; `Lampe`, `Lampen`): the same
# start of at least this many letters, and an ending of at most two.
_STEM: Final = 4
_ENDING: Final = 2


def words(name: str) -> str:
    """Return a name as lower-case words: `garageDoor`, `garage_door`: `garage door`."""
    return " ".join(part for part in _WORD_BREAK.split(name) if part).casefold()


@dataclass(slots=True)
class Names:
    """Names of one kind the home has (with their domains), by their words."""

    by_words: dict[str, set[tuple[str, str]]] = field(default_factory=dict)

    def add(self, name: str, *others: str, domain: str = "") -> None:
        """Add a name as the home writes it, found by it and by its other names."""
        for found_by in (name, *others):
            self.by_words.setdefault(words(found_by), set()).add((name, domain))

    def match(
        self, value: str, domains: frozenset[str] = frozenset(), *, whole: bool = False
    ) -> str | None:
        """Return the one name the value means, among the domains if any are given.

        The value's words are the whole of a name, else (unless `whole`) part of one.
        """
        key = words(value)
        if not key:
            return None
        if (found := in_domains(self.by_words.get(key, set()), domains)) or whole:
            return only(found)
        wanted = key.split()
        return only(
            {
                name
                for phrase, entries in self.by_words.items()
                if all(_in_words(word, phrase.split()) for word in wanted)
                for name in in_domains(entries, domains)
            }
        )

    def only_of(self, domain: str) -> str | None:
        """Return the name of the one entity of a domain, if there is one."""
        return only(
            {
                name
                for entries in self.by_words.values()
                for name, of in entries
                if of == domain
            }
        )

    def knows(self, value: str) -> bool:
        """Tell whether the value is one of the names, read as words."""
        return words(value) in self.by_words


def _in_words(word: str, phrase: list[str]) -> bool:
    """Tell whether a word is among a phrase's, also in another form (`curtain`)."""
    return any(
        word == other
        or (
            min(len(word), len(other)) >= _STEM
            and abs(len(word) - len(other)) <= _ENDING
            and (other.startswith(word) or word.startswith(other))
        )
        for other in phrase
    )


def in_domains(entries: set[tuple[str, str]], domains: frozenset[str]) -> set[str]:
    """Return the names of the entries in the domains (all, if none given)."""
    return {name for name, domain in entries if not domains or domain in domains}


def only(names: set[str]) -> str | None:
    """Return the one name, if there is exactly one."""
    return next(iter(names)) if len(names) == 1 else None


@dataclass(slots=True)
class Home:
    """The names the home's exposed entities, areas and floors go by."""

    entities: Names
    areas: Names
    floors: Names
    domains: frozenset[str]
    entity_names: dict[str, str]
    # The words of the areas and floors the entities of each name are in.
    places: dict[str, set[str]]
    # The device classes of the entities of each name.
    classes: dict[str, set[str]]


def read_home(hass: HomeAssistant) -> Home:
    """Read the names of the home's areas, floors and exposed entities."""
    home = Home(Names(), Names(), Names(), frozenset(), {}, {}, {})
    areas, floors, devices = ar.async_get(hass), fr.async_get(hass), dr.async_get(hass)
    entities = er.async_get(hass)
    for state in hass.states.async_all():
        if not async_should_expose(hass, CONVERSATION_DOMAIN, state.entity_id):
            continue
        home.entity_names[state.entity_id] = state.name
        entry = entities.async_get(state.entity_id)
        aliases = entry.aliases if entry is not None else ()
        others = (alias for alias in aliases if isinstance(alias, str))
        home.entities.add(state.name, *others, domain=state.domain)
        # The words of the entity's area and floor, by name, id and alias.
        area_id = entry.area_id if entry is not None else None
        if area_id is None and entry is not None and entry.device_id is not None:
            device = devices.async_get(entry.device_id)
            area_id = device.area_id if device is not None else None
        places = home.places.setdefault(state.name, set())
        if area := areas.async_get_area(area_id) if area_id else None:
            names = {area.name, area.id, *area.aliases}
            if area.floor_id and (floor := floors.async_get_floor(area.floor_id)):
                names |= {floor.name, floor.floor_id, *floor.aliases}
            places.update(words(name) for name in names)
        classes = home.classes.setdefault(state.name, set())
        if isinstance(device_class := state.attributes.get("device_class"), str):
            classes.add(device_class)
    for area in areas.async_list_areas():
        home.areas.add(area.name, area.id, *area.aliases)
    for floor in floors.async_list_floors():
        home.floors.add(floor.name, floor.floor_id, *floor.aliases)
    home.domains = frozenset(
        entity_id.partition(".")[0] for entity_id in home.entity_names
    )
    return home
