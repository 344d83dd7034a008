"""A call's arguments cleaned before it runs: placeholders out, names matched.

Small models fill optional arguments with placeholders (`"floor": "unknown"`),
write names in code style (`garageDoor`), in part or in another form, put a
kind of device where an area goes, and add places, classes or settings the
device does not have; Home Assistant's intents then match nothing. Each
method below reads one such miss as meant; a required argument is never
dropped. The home is read once per turn, when a call first needs it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
import re
from typing import Any, Final

from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from ..net.transport import ToolSet
from .home_names import Home, in_domains, only, read_home, words
from .tool_answers import required_keys

# What small models write for "no value".
_PLACEHOLDERS: Final = frozenset(
    {"", "unknown", "none", "null", "nil", "n/a", "na", "0", "undefined", "-", "?"}
)
# The arguments that name places, and the argument of kinds of device.
_PLACES: Final = ("area", "floor")
_DOMAIN: Final = "domain"
# An intent's arguments that say what it acts on; the others are settings.
_TARGETS: Final = frozenset({"name", *_PLACES, _DOMAIN, "device_class"})
# A setting is asked for when the user's words hold its value, or a word
# starting as its name's words do ("brightness": "bright").
_STEM: Final = 4
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
        """Learn each offered tool's arguments; `asked`: the user's words."""
        self._hass = hass
        self._asked = words(asked)
        self._numbers = frozenset(_NUMBER.findall(asked))
        self._intents = intents
        self._tools = {
            tool_set.from_wire[tool["function"]["name"]]: _Parameters.of(
                tool["function"].get("parameters")
            )
            for tool in tool_set.tools
        }
        self._home: Home | None = None

    @property
    def home(self) -> Home:
        """Return what the home is called, read at the first need this turn."""
        if self._home is None:
            self._home = read_home(self._hass)
        return self._home

    def clean(self, call: llm.ToolInput) -> llm.ToolInput:
        """Return the call with its arguments cleaned; the same call if none changed."""
        parameters = self._tools.get(call.tool_name)
        if call.external or parameters is None:
            return call
        required = parameters.required
        arguments: dict[str, Any] = {}
        for key, value in call.tool_args.items():
            cleaned = _without_blanks(value, words=key in parameters.words)
            if (isinstance(cleaned, str) and words(cleaned) == words(key)) or (
                key in parameters.numbers and _is_schema(cleaned)
            ):
                cleaned = None
            if cleaned is not None and key in parameters.choices:
                cleaned = _chosen(cleaned, parameters.choices[key])
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
        if arguments:
            self._named(arguments, parameters)
        if arguments == call.tool_args:
            return call
        return llm.ToolInput(call.tool_name, arguments, id=call.id)

    def _named(self, arguments: dict[str, Any], parameters: _Parameters) -> None:
        """Give the domains, places and name as the home has them."""
        home, required = self.home, parameters.required
        if _DOMAIN in parameters.words and _DOMAIN not in arguments:
            self._places_as_domains(arguments, parameters)
        self._kind_in_place(arguments, parameters)
        if _DOMAIN in arguments:
            arguments[_DOMAIN] = _known_domains(arguments[_DOMAIN], home.domains)
        domains = frozenset(_listed(arguments.get(_DOMAIN))) & home.domains
        places = tuple(zip(_PLACES, (home.areas, home.floors), strict=True))
        if isinstance(value := arguments.get("name"), str):
            found = self._entity_name(value, domains)
            if not found and domains and _DOMAIN not in required:
                # A device named, of another domain than the one given.
                if found := self._entity_name(value, frozenset()):
                    del arguments[_DOMAIN]
            arguments["name"] = found or value
            if not found and "name" not in required:
                # A name no device has but a place has (or that repeats it) is that place.
                for key, names in places:
                    given, place = arguments.get(key), names.match(value)
                    if place and (given is None or names.match(str(given)) == place):
                        del arguments["name"]
                        arguments[key] = place
                        break
        for key, names in places:
            if isinstance(value := arguments.get(key), str):
                arguments[key] = names.match(value) or value
        self._drop_places(arguments, required)

    def _is_asked(self, key: str, value: Any) -> bool:
        """Tell whether the user's words name a setting or hold its value."""
        stems = {part[:_STEM] for part in words(key).split()}
        if any(word[:_STEM] in stems for word in self._asked.split()):
            return True
        for item in _listed(value):
            if isinstance(item, (int, float)):
                if f"{item:g}" in self._numbers:
                    return True
            elif (said := words(str(item))) and said in self._asked:
                return True
        return False

    def _kind_in_place(
        self, arguments: dict[str, Any], parameters: _Parameters
    ) -> None:
        """Read a kind of device in a known place (`light` + Kitchen) as what is there.

        The device the place and the name name together, else the place's
        devices of that domain.
        """
        home, name = self.home, arguments.get("name")
        if (
            not isinstance(name, str)
            or "name" in parameters.required
            or _DOMAIN not in parameters.words
            or home.entities.knows(name)
        ):
            return
        domain = _domain(name, home.domains)
        for key, names in zip(_PLACES, (home.areas, home.floors), strict=True):
            place = arguments.get(key)
            if not isinstance(place, str) or not names.match(place):
                continue
            together = f"{place} {name}"
            if domain not in home.domains:
                # A curtain in the bedroom: the bedroom's curtains.
                found = home.entities.match(together)
            else:
                kind = frozenset({domain})
                named = home.entities.by_words.get(words(together), set())
                if not (found := only(in_domains(named, kind))):
                    del arguments["name"]
                    arguments[_DOMAIN] = [domain]
            if found:
                arguments["name"] = found
            return

    def _entity_name(self, value: str, domains: frozenset[str]) -> str | None:
        """Return the entity a name means: by id, words, or domain (the one vacuum)."""
        home = self.home
        if value in home.entity_names:
            return home.entity_names[value]
        domain = _domain(value, home.domains)
        if domain not in home.domains:
            return home.entities.match(value, domains)
        return home.entities.match(value, domains, whole=True) or (
            home.entities.only_of(domain)
        )

    def _places_as_domains(
        self, arguments: dict[str, Any], parameters: _Parameters
    ) -> None:
        """Take an area or floor the home lacks that names a domain as the domain."""
        home = self.home
        for key, names in zip(_PLACES, (home.areas, home.floors), strict=True):
            value = arguments.get(key)
            if not isinstance(value, str) or names.knows(value):
                continue
            if (domain := _domain(value, home.domains)) in home.domains:
                arguments[_DOMAIN] = [domain]
                if key not in parameters.required:
                    del arguments[key]
                return

    def _drop_places(self, arguments: dict[str, Any], required: frozenset[str]) -> None:
        """Drop the places, domains and device classes the named device lacks.

        Without a name, drop the places the home lacks (`floor: all`) where
        one it has says where.
        """
        home = self.home
        if "name" not in arguments:
            known = {
                key: names.knows(value)
                for key, names in zip(_PLACES, (home.areas, home.floors), strict=True)
                if isinstance(value := arguments.get(key), str)
            }
            if any(known.values()):
                for key in [k for k, is_known in known.items() if not is_known]:
                    if key not in required:
                        del arguments[key]
            return
        name = arguments["name"]
        classes = home.classes.get(name)
        if classes is not None and "device_class" not in required:
            given = _listed(arguments.get("device_class"))
            if given and not classes.intersection(given):
                del arguments["device_class"]
        places = home.places.get(name)
        for key, names in zip(_PLACES, (home.areas, home.floors), strict=True):
            value = arguments.get(key)
            if key in required or not isinstance(value, str):
                continue
            if not names.knows(value) or (
                places is not None and words(value) not in places
            ):
                del arguments[key]
        if _DOMAIN not in arguments or _DOMAIN in required:
            return
        domains = arguments[_DOMAIN]
        if kept := [item for item in _listed(domains) if item in home.domains]:
            arguments[_DOMAIN] = kept if isinstance(domains, list) else kept[0]
        else:
            del arguments[_DOMAIN]


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
    """Return a value as a list of its items (none for no value)."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _chosen(value: Any, choices: frozenset[str]) -> Any:
    """Return the value without the items its schema does not offer; None if none is."""
    kept = [item for item in _listed(value) if item in choices]
    if not kept:
        return None
    return kept if isinstance(value, list) else kept[0]


def _is_schema(value: Any) -> bool:
    """Tell whether a value is a schema copied in its place."""
    return isinstance(value, Mapping) and bool(_SCHEMA_KEYS.intersection(value))


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
    # The values an argument takes, where its schema lists them.
    choices: Mapping[str, frozenset[str]] = field(default_factory=dict)
    keys: frozenset[str] = frozenset()
    # Arguments that are numbers.
    numbers: frozenset[str] = frozenset()

    @classmethod
    def of(cls, schema: object) -> _Parameters:
        """Read a tool's parameters schema."""
        if not isinstance(schema, Mapping):
            return cls(frozenset(), frozenset())
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        properties = {
            key: value
            for key, value in properties.items()
            if isinstance(value, Mapping)
        }
        return cls(
            required_keys(schema),
            frozenset(
                key
                for key, value in properties.items()
                if value.get("type") in ("string", "array")
            ),
            {
                key: frozenset(map(str, enum))
                for key, value in properties.items()
                if isinstance(enum := (_items(value) or value).get("enum"), list)
            },
            frozenset(properties),
            frozenset(key for key, value in properties.items() if _is_number(value)),
        )


def _is_number(schema: Mapping[str, Any]) -> bool:
    """Tell whether a schema is of a number, also as one of all it must be."""
    parts = [
        schema,
        *(part for part in schema.get("allOf") or () if isinstance(part, Mapping)),
    ]
    return any(part.get("type") in ("integer", "number") for part in parts)


def _items(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Return the schema of an array's items, if it gives one."""
    items = schema.get("items")
    return items if isinstance(items, Mapping) else None
