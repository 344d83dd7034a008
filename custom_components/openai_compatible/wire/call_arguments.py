"""A call's arguments cleaned before it runs, against the home's names.

Small models fill optional arguments with placeholders (`"floor": "unknown"`),
write names in code style (`garageDoor`), in part or in another form, put a
kind of device where an area goes, and add places, classes or settings the
device does not have; Home Assistant's intents then match nothing. Each such
miss is read as meant; a required argument is never dropped.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
import re
from typing import Any, Final

from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.core import HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    device_registry as dr,
    entity_registry as er,
    floor_registry as fr,
    llm,
)

from ..net.transport import ToolSet
from .tool_calls import ToolParameters, words

# What small models write for "no value".
_PLACEHOLDERS: Final = frozenset(
    {"", "unknown", "none", "null", "nil", "n/a", "na", "0", "undefined", "-", "?"}
)
_DOMAIN: Final = "domain"
# An intent's arguments that say what it acts on; the others are settings.
_TARGETS: Final = frozenset({"name", "area", "floor", _DOMAIN, "device_class"})
# Two forms of one word (`curtain`, `curtains`; `Lampe`, `Lampen`): the same
# start of at least this many letters, and an ending of at most two. A setting
# is asked for by its value, or its name's stem ("brightness": "bright").
_STEM: Final = 4
_ENDING: Final = 2
_NUMBER: Final = re.compile(r"\d+(?:\.\d+)?")
# The keys of a schema a small model copies where the value goes.
_SCHEMA_KEYS: Final = frozenset({"type", "allOf", "anyOf", "oneOf", "description"})


class ArgumentCleaner:
    """Cleans the arguments of the calls of one turn."""

    def __init__(
        self,
        hass: HomeAssistant,
        tool_set: ToolSet,
        *,
        asked: str = "",
        intents: Collection[str] = (),
    ) -> None:
        """Know the offered tools; `asked`: the user's words."""
        self._hass = hass
        self._asked = words(asked)
        self._numbers = frozenset(_NUMBER.findall(asked))
        self._intents = intents
        self._tools = {
            tool_set.from_wire[function["name"]]: function
            for function in (tool["function"] for tool in tool_set.tools)
        }

    @cached_property
    def home(self) -> _Home:
        """Read the home's names, at the first need this turn."""
        hass = self._hass
        areas, floors = ar.async_get(hass), fr.async_get(hass)
        home = _Home(hass)
        for level in floors.async_list_floors():
            _add(home.places["floor"], level.name, level.floor_id, *level.aliases)
        for area in areas.async_list_areas():
            _add(home.places["area"], area.name, area.id, *area.aliases)
            names = {area.name, area.id, *area.aliases}
            if area.floor_id and (floor := floors.async_get_floor(area.floor_id)):
                names |= {floor.name, floor.floor_id, *floor.aliases}
            home.area_words[area.id] = {words(name) for name in names}
        entities, by_words = er.async_get(hass), home.entities
        for state in hass.states.async_all():
            entity_id, name, domain = state.entity_id, state.name, state.domain
            if not async_should_expose(hass, CONVERSATION_DOMAIN, entity_id):
                continue
            home.entity_names[entity_id] = name
            home.domains.setdefault(domain, set()).add(name)
            entry = entities.async_get(entity_id)
            for found_by in (name, *(entry.aliases if entry else ())):
                if isinstance(found_by, str):
                    by_words.setdefault(words(found_by), set()).add((name, domain))
        return home

    def clean(self, call: llm.ToolInput) -> llm.ToolInput:
        """Return the call with its arguments cleaned; the same call if none changed."""
        function = self._tools.get(call.tool_name)
        if call.external or function is None:
            return call
        parameters = ToolParameters.of(function)
        given = call.tool_args
        if not isinstance(given.get("name", ""), str) or any(
            isinstance(item, (dict, list))
            for key in parameters.words.intersection(given)
            for item in _listed(given[key])
        ):
            return call  # not words: Home Assistant's check answers the model
        required = parameters.required
        arguments: dict[str, Any] = {}
        for key, value in call.tool_args.items():
            cleaned = _without_blanks(value, words=key in parameters.words)
            if (isinstance(cleaned, str) and words(cleaned) == words(key)) or (
                key in parameters.numbers
                and isinstance(cleaned, Mapping)
                and not _SCHEMA_KEYS.isdisjoint(cleaned)
            ):
                cleaned = None  # the key or its schema copied in its place
            if key in parameters.choices:
                cleaned = _kept(cleaned, parameters.choices[key])
            if cleaned is not None:
                arguments[key] = cleaned
            elif key in required:
                arguments[key] = value
        if call.tool_name in self._intents:
            # Small models copy the schema's own keys ("required") into a call.
            for key in set(arguments).difference(parameters.keys):
                del arguments[key]
            # Settings nobody asked for (a colour) go, where one was (brightness).
            settings = [key for key in arguments if key not in _TARGETS | required]
            asked = [key for key in settings if self._is_asked(key, arguments[key])]
            if asked:
                for key in set(settings).difference(asked):
                    del arguments[key]
            # The one number the user said goes to the one number the call left out.
            missing = [
                key
                for key in required & parameters.numbers
                if not isinstance(arguments.get(key), (int, float))
            ]
            if len(missing) == 1 and len(self._numbers) == 1:
                number = float(next(iter(self._numbers)))
                arguments[missing[0]] = int(number) if number.is_integer() else number
        if not _TARGETS.isdisjoint(parameters.keys):
            self._named(arguments, parameters)
        if arguments == call.tool_args:
            return call
        return llm.ToolInput(call.tool_name, arguments, id=call.id)

    def _named(self, arguments: dict[str, Any], parameters: ToolParameters) -> None:
        """Give the domains, places and name as the home has them."""
        home, required = self.home, parameters.required
        if _DOMAIN in parameters.words:
            self._kinds(arguments, required)
        if _DOMAIN in arguments:
            given = arguments[_DOMAIN]
            found = [_domain(item, home.domains) for item in _listed(given)]
            arguments[_DOMAIN] = found if isinstance(given, list) else found[0]
        domains = frozenset(_listed(arguments.get(_DOMAIN))) & home.domains.keys()
        if isinstance(value := arguments.get("name"), str):
            found_name = home.entity_name(value, domains)
            if not found_name and domains and _DOMAIN not in required:
                # A device named, of another domain than the one given.
                if found_name := home.entity_name(value, frozenset()):
                    del arguments[_DOMAIN]
            arguments["name"] = found_name or value
            if not found_name and "name" not in required:
                # A name no device has but a place has (or that repeats it) is that place.
                for key, names in home.places.items():
                    given, place = arguments.get(key), _match(names, value)
                    if place and (given is None or _match(names, str(given)) == place):
                        del arguments["name"]
                        arguments[key] = place
                        break
        # What the named device lacks goes; without a name, the places the
        # home lacks (`floor: all`) where one it has says where.
        named = "name" in arguments
        about = home.about(arguments["name"]) if named else None
        located, classes = about or (None, None)
        known: dict[str, bool] = {}
        for key, names in home.places.items():
            if isinstance(value := arguments.get(key), str):
                arguments[key] = value = _match(names, value) or value
                known[key] = words(value) in names and (
                    located is None or words(value) in located
                )
        if named or any(known.values()):
            for key, is_known in known.items():
                if not is_known and key not in required:
                    del arguments[key]
        if not named:
            return
        if classes is not None and "device_class" not in required:
            given = _listed(arguments.get("device_class"))
            if given and not classes.intersection(given):
                del arguments["device_class"]
        if _DOMAIN in arguments and _DOMAIN not in required:
            arguments[_DOMAIN] = _kept(arguments[_DOMAIN], home.domains)
            if arguments[_DOMAIN] is None:
                del arguments[_DOMAIN]

    def _is_asked(self, key: str, value: Any) -> bool:
        """Tell whether the user's words name a setting or hold its value."""
        stems = {part[:_STEM] for part in words(key).split()}
        return any(word[:_STEM] in stems for word in self._asked.split()) or any(
            f"{item:g}" in self._numbers
            if isinstance(item, (int, float))
            else bool(said := words(str(item))) and said in self._asked
            for item in _listed(value)
        )

    def _kinds(self, arguments: dict[str, Any], required: frozenset[str]) -> None:
        """Read a kind of device where a place or a name goes as the home has it.

        A place the home lacks is the domain it names; a kind in a known place
        (`light` + Kitchen) is the device both name, else the place's devices.
        """
        home, name = self.home, arguments.get("name")
        if _DOMAIN not in arguments:
            for key, names in home.places.items():
                value = arguments.get(key)
                if isinstance(value, str) and words(value) not in names:
                    if (domain := _domain(value, home.domains)) in home.domains:
                        arguments[_DOMAIN] = [domain]
                        if key not in required:
                            del arguments[key]
                        break
        if (
            not isinstance(name, str)
            or "name" in required
            or words(name) in home.entities
        ):
            return
        domain = _domain(name, home.domains)
        for key, names in home.places.items():
            place = arguments.get(key)
            if not isinstance(place, str) or not _match(names, place):
                continue
            together = f"{place} {name}"
            if domain not in home.domains:
                # A curtain in the bedroom: the bedroom's curtains.
                found = _match(home.entities, together)
            elif not (found := _match(home.entities, together, {domain}, whole=True)):
                del arguments["name"]
                arguments[_DOMAIN] = [domain]
            if found:
                arguments["name"] = found
            return


def _domain(item: Any, known: Collection[str]) -> Any:
    """Return the home's domain a value names (`lights`: `light`), else the value."""
    if not isinstance(item, str):
        return item
    domain = words(item).replace(" ", "_")
    return next(
        (name for name in (domain, domain.removesuffix("s")) if name in known), item
    )


def _listed(value: Any) -> list[Any]:
    return [] if value is None else value if isinstance(value, list) else [value]


def _kept(value: Any, choices: Collection[str]) -> Any:
    """Return the value without the items not among the choices; None if none is."""
    kept = [item for item in _listed(value) if item in choices]
    return (kept if isinstance(value, list) else kept[0]) if kept else None


def _without_blanks(value: Any, *, words: bool) -> Any:
    """Return the value without empty parts (in words, placeholders); or None."""
    if isinstance(value, str) and words:
        return None if value.strip().casefold() in _PLACEHOLDERS else value
    if isinstance(value, list):
        value = [
            item for item in value if _without_blanks(item, words=words) is not None
        ]
    return None if value in (None, "", [], {}) else value


# Names of one kind the home has (with their domains), by their words.
type _Names = dict[str, set[tuple[str, str]]]


def _add(names: _Names, name: str, *others: str, domain: str = "") -> None:
    """Add a name as the home writes it, found by it and by its other names."""
    for found_by in (name, *others):
        names.setdefault(words(found_by), set()).add((name, domain))


def _match(
    names: _Names, value: str, domains: Collection[str] = (), *, whole: bool = False
) -> str | None:
    """Return the one name (of the domains) the words are, or (not `whole`) are in."""
    key = words(value)
    if not key:
        return None
    if (found := _in_domains(names.get(key, set()), domains)) or whole:
        return _only(found)
    return _only(
        {
            name
            for phrase, entries in names.items()
            if all(
                any(_same_word(word, other) for other in phrase.split())
                for word in key.split()
            )
            for name in _in_domains(entries, domains)
        }
    )


def _same_word(word: str, other: str) -> bool:
    """Tell whether two words are one, also in two forms (`curtain`, `curtains`)."""
    return word == other or (
        min(len(word), len(other)) >= _STEM
        and abs(len(word) - len(other)) <= _ENDING
        and (other.startswith(word) or word.startswith(other))
    )


def _in_domains(entries: set[tuple[str, str]], domains: Collection[str]) -> set[str]:
    return {name for name, domain in entries if not domains or domain in domains}


def _only(names: set[str]) -> str | None:
    return next(iter(names)) if len(names) == 1 else None


@dataclass(slots=True)
class _Home:
    """The names the home's exposed entities, areas and floors go by."""

    hass: HomeAssistant
    entities: _Names = field(default_factory=dict)
    # The names of the areas and floors, by the argument that names them.
    places: dict[str, _Names] = field(default_factory=lambda: {"area": {}, "floor": {}})
    # The names of the entities of each domain.
    domains: dict[str, set[str]] = field(default_factory=dict)
    entity_names: dict[str, str] = field(default_factory=dict)
    # The words of each area and its floor, by name, id and alias.
    area_words: dict[str, set[str]] = field(default_factory=dict)

    def about(self, name: str) -> tuple[set[str], set[str]] | None:
        """Return the words of the places the entities of that name are in, their classes."""
        ids = [entity_id for entity_id, of in self.entity_names.items() if of == name]
        if not ids:
            return None
        entities, devices = er.async_get(self.hass), dr.async_get(self.hass)
        located: set[str] = set()
        classes: set[str] = set()
        for entity_id in ids:
            if entry := entities.async_get(entity_id):
                area_id = entry.area_id
                if area_id is None and entry.device_id is not None:
                    device = devices.async_get(entry.device_id)
                    area_id = device.area_id if device is not None else None
                located |= self.area_words.get(area_id or "", set())
            state = self.hass.states.get(entity_id)
            if state and isinstance(kind := state.attributes.get("device_class"), str):
                classes.add(kind)
        return located, classes

    def entity_name(self, value: str, domains: frozenset[str]) -> str | None:
        """Return the entity a name means: by id, words, or domain (the one vacuum)."""
        if value in self.entity_names:
            return self.entity_names[value]
        domain = _domain(value, self.domains)
        if domain not in self.domains:
            return _match(self.entities, value, domains)
        return _match(self.entities, value, domains, whole=True) or _only(
            self.domains[domain]
        )
