"""A call's arguments cleaned before it runs: placeholders out, names matched.

Small models fill optional arguments with placeholders (`"floor": "unknown"`,
`"0"`, `"None"`) and write names in code style (`living_room_light`,
`garageDoor`), and Home Assistant's intents then match nothing. So an
optional argument that is empty or a placeholder goes; a name, area or floor
that the home knows only when read as words (exactly one fits) is given as
the home writes it; an area, floor or domain the home lacks goes where a name
still says what is meant. A required argument is never dropped.

What the home holds is read once per turn, and only when a call needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import re
from typing import Any, Final

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    entity_registry as er,
    floor_registry as fr,
    llm,
)

from ..net.request import ToolSet
from .tool_answers import required_keys

# What small models write for "no value".
_PLACEHOLDERS: Final = frozenset(
    {"", "unknown", "none", "null", "nil", "n/a", "na", "0", "undefined", "-", "?"}
)
# Where a word starts inside a name written in code style.
_WORD_BREAK: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.\s]+")


def words(name: str) -> str:
    """Return a name as lower-case words: `garageDoor`, `garage_door`: `garage door`."""
    return " ".join(part for part in _WORD_BREAK.split(name) if part).casefold()


@dataclass(slots=True)
class _Names:
    """Names of one kind the home has, by their words."""

    by_words: dict[str, set[str]] = field(default_factory=dict)

    def add(self, name: str, *others: str) -> None:
        """Add a name as the home writes it, found by it and by its other names."""
        for found_by in (name, *others):
            self.by_words.setdefault(words(found_by), set()).add(name)

    def match(self, value: str) -> str | None:
        """Return the one name the value means when read as words, if one."""
        found = self.by_words.get(words(value), set())
        return next(iter(found)) if len(found) == 1 else None

    def knows(self, value: str) -> bool:
        """Tell whether the value is one of the names, read as words."""
        return words(value) in self.by_words


@dataclass(slots=True)
class _Home:
    """The names the home's exposed entities, areas and floors go by."""

    entities: _Names
    areas: _Names
    floors: _Names
    domains: frozenset[str]
    entity_names: dict[str, str]


def _read_home(hass: HomeAssistant) -> _Home:
    """Read the names of the home's areas, floors and exposed entities."""
    entities, areas, floors = _Names(), _Names(), _Names()
    entity_names: dict[str, str] = {}
    domains: set[str] = set()
    registry = er.async_get(hass)
    for state in hass.states.async_all():
        if not async_should_expose(hass, CONVERSATION_DOMAIN, state.entity_id):
            continue
        entity_names[state.entity_id] = state.name
        domains.add(state.domain)
        entry = registry.async_get(state.entity_id)
        aliases = entry.aliases if entry is not None else ()
        entities.add(
            state.name, *(alias for alias in aliases if isinstance(alias, str))
        )
    for area in ar.async_get(hass).async_list_areas():
        areas.add(area.name, area.id, *area.aliases)
    for floor in fr.async_get(hass).async_list_floors():
        floors.add(floor.name, floor.floor_id, *floor.aliases)
    return _Home(entities, areas, floors, frozenset(domains), entity_names)


class ArgumentCleaner:
    """Cleans the arguments of the calls of one turn."""

    def __init__(self, hass: HomeAssistant, tool_set: ToolSet) -> None:
        """Learn which arguments each offered tool requires, and which are words."""
        self._hass = hass
        self._tools = {
            tool_set.from_wire[tool["function"]["name"]]: _Parameters.of(
                tool["function"].get("parameters")
            )
            for tool in tool_set.tools
        }
        self._home: _Home | None = None

    def clean(self, call: llm.ToolInput) -> llm.ToolInput:
        """Return the call with its arguments cleaned; the same call if none changed."""
        parameters = self._tools.get(call.tool_name)
        if call.external or parameters is None:
            return call
        arguments: dict[str, Any] = {}
        for key, value in call.tool_args.items():
            cleaned = _without_blanks(value, words=key in parameters.words)
            if cleaned is not None:
                arguments[key] = self._named(key, cleaned)
            elif key in parameters.required:
                arguments[key] = value
        if "domain" in arguments:
            arguments["domain"] = _known_domains(arguments["domain"], self.home.domains)
        if "name" in arguments:
            self._drop_unknown_places(arguments, parameters.required)
        if arguments == call.tool_args:
            return call
        return llm.ToolInput(call.tool_name, arguments, id=call.id)

    @property
    def home(self) -> _Home:
        """Return what the home is called, read at the first need this turn."""
        if self._home is None:
            self._home = _read_home(self._hass)
        return self._home

    def _named(self, key: str, value: Any) -> Any:
        """Return a name, area or floor as the home writes it, where one fits."""
        if not isinstance(value, str) or key not in ("name", "area", "floor"):
            return value
        if key == "name" and value in self.home.entity_names:
            return self.home.entity_names[value]
        names = {"name": self.home.entities, "area": self.home.areas}.get(
            key, self.home.floors
        )
        return names.match(value) or value

    def _drop_unknown_places(
        self, arguments: dict[str, Any], required: frozenset[str]
    ) -> None:
        """Drop the areas, floors and domains the home lacks, the name says enough."""
        home = self.home
        for key, names in (("area", home.areas), ("floor", home.floors)):
            value = arguments.get(key)
            if (
                key not in required
                and isinstance(value, str)
                and not names.knows(value)
            ):
                del arguments[key]
        if "domain" not in arguments or "domain" in required:
            return
        domains = arguments["domain"]
        if kept := [item for item in _listed(domains) if item in home.domains]:
            arguments["domain"] = kept if isinstance(domains, list) else kept[0]
        else:
            del arguments["domain"]


def _known_domains(value: Any, known: frozenset[str]) -> Any:
    """Return the domains as the home has them: `lights` is `light`."""
    found = [_domain(item, known) for item in _listed(value)]
    return found if isinstance(value, list) else found[0]


def _domain(item: Any, known: frozenset[str]) -> Any:
    """Return the domain of the home a value names, else the value."""
    if not isinstance(item, str):
        return item
    domain = words(item).replace(" ", "_")
    return next(
        (name for name in (domain, domain.removesuffix("s")) if name in known), item
    )


def _listed(value: Any) -> list[Any]:
    """Return a value as a list of its items."""
    return value if isinstance(value, list) else [value]


def _without_blanks(value: Any, *, words: bool) -> Any:
    """Return the value without empty parts; None where nothing is left.

    In arguments that are words, placeholders count as empty.
    """
    if isinstance(value, str):
        blank = value.strip().casefold() in _PLACEHOLDERS if words else not value
        return None if blank else value
    if isinstance(value, list):
        kept = [
            item for item in value if _without_blanks(item, words=words) is not None
        ]
        return kept or None
    return None if value is None or value == {} else value


@dataclass(frozen=True, slots=True)
class _Parameters:
    """What a tool's parameters say of its arguments."""

    required: frozenset[str]
    # Arguments given as text or lists of text (names, areas, domains).
    words: frozenset[str]

    @classmethod
    def of(cls, schema: object) -> _Parameters:
        """Read a tool's parameters schema."""
        if not isinstance(schema, Mapping):
            return cls(frozenset(), frozenset())
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        return cls(
            required_keys(schema),
            frozenset(
                key
                for key, value in properties.items()
                if isinstance(value, Mapping)
                and value.get("type") in ("string", "array")
            ),
        )
