"""The scripted model's smart home: questions about devices, the thermostat, weather.

What a first try of `scripts/develop` asks goes through Home Assistant's
tools as a model would send it: a question ("is the front door open?", "what
is the weather like?") calls GetLiveContext, "set the thermostat to 22" calls
HassClimateSetTemperature, and the tool's result is put in one sentence
about the devices asked about; a question about none of them gets small talk.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from . import small_talk

type ToolCall = tuple[str, str, str]

LIVE_CONTEXT = "GetLiveContext"
SET_TEMPERATURE = "HassClimateSetTemperature"
_SET = re.compile(
    r"^\s*(?:please\s+)?set\s+(?:the\s+)?(?P<name>.+?)\s+to\s+"
    r"(?P<value>\d{1,2}(?:[.,]\d)?)\s*(?:°\s*c?|degrees?(?:\s+celsius)?)?"
    r"\s*(?:,?\s*please)?[.!]*\s*$",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"^\s*(?:is|are|what|what's|whats|how|which|does|do)\b", re.IGNORECASE
)
_WEATHER = re.compile(r"\b(?:weather|forecast|raining|sunny)\b", re.IGNORECASE)
# binary_sensor device classes whose "on" means open.
_OPENINGS = ("door", "garage_door", "opening", "window")
# Words that ask about a domain without naming it.
_TOPICS = {
    "climate": ("temperature", "thermostat", "heating", "warm", "cold"),
    "light": ("lights", "lamp", "lamps"),
    "lock": ("locked", "unlocked"),
}


def tool_for(text: str, tools: list[str]) -> ToolCall | None:
    """Return the tool call for a thermostat command or a question, if one fits."""
    if (match := _SET.match(text)) and (tool := _named(tools, SET_TEMPERATURE)):
        value = float(match["value"].replace(",", "."))
        arguments = {"name": match["name"], "temperature": value}
        return (f"call_{secrets.token_hex(8)}", tool, json.dumps(arguments))
    asked = _QUESTION.match(text) or text.rstrip().endswith("?")
    if asked and (tool := _named(tools, LIVE_CONTEXT)):
        arguments = {"domain": "weather"} if _WEATHER.search(text) else {}
        return (f"call_{secrets.token_hex(8)}", tool, json.dumps(arguments))
    return None


def _named(tools: list[str], intent: str) -> str | None:
    """Return the offered tool for an intent (Home Assistant prefixes its tools)."""
    return next((t for t in tools if t == intent or t.endswith(f"__{intent}")), None)


def sentence(name: str, arguments: Any, result: Any, question: str) -> str | None:
    """Return what the scripted model says about a home tool's result, if ours."""
    if name.endswith(LIVE_CONTEXT):
        return _live_context_sentence(arguments, result, question)
    if name.endswith(SET_TEMPERATURE) and isinstance(arguments, dict):
        success = isinstance(result, dict) and result.get("response_type") != "error"
        target = arguments.get("name", "the thermostat")
        if success:
            return f"Set {target} to {arguments.get('temperature'):g} degrees."
    return None


def _live_context_sentence(arguments: Any, result: Any, question: str) -> str | None:
    """Answer the question from GetLiveContext's overview of the home.

    None for an answer of another shape: the generic summary takes it.
    """
    weather = isinstance(arguments, dict) and arguments.get("domain") == "weather"
    text = result.get("result") if isinstance(result, dict) else None
    entities = live_entities(text) if isinstance(text, str) else []
    if weather and not entities:
        return (
            "Home Assistant shows me no weather entity, so I cannot tell the weather."
        )
    if not entities:
        return None
    if asked := _asked(entities, question.lower()):
        return " ".join(_state_sentence(entity) for entity in asked)
    return small_talk.reply(question)


def _asked(entities: list[dict[str, Any]], question: str) -> list[dict[str, Any]]:
    """Return the entities the question names, else those of the kind it names.

    "Is the front door open?" names an entity; "what's the temperature?" names
    a kind (a domain, a device class or one of _TOPICS).
    """
    if named := [e for e in entities if any(n in question for n in _names(e))]:
        return named
    words = set(re.findall(r"[a-z_]+", question))
    return [e for e in entities if words & _kinds(e)]


def _names(entity: dict[str, Any]) -> list[str]:
    """Return an entity's names and aliases, in lower case."""
    return [n.strip().lower() for n in str(entity.get("names", "")).split(",") if n]


def _kinds(entity: dict[str, Any]) -> set[str]:
    """Return the words that name an entity's kind."""
    domain = str(entity.get("domain"))
    device_class = (entity.get("attributes") or {}).get("device_class")
    return {domain, str(device_class), *_TOPICS.get(domain, ())}


def _state_sentence(entity: dict[str, Any]) -> str:
    """Say one entity's state in words."""
    name = str(entity.get("names", "")).split(",")[0] or "It"
    state = str(entity.get("state", "unknown"))
    attributes = entity.get("attributes") or {}
    domain = entity.get("domain")
    if domain == "binary_sensor" and attributes.get("device_class") in _OPENINGS:
        state = {"on": "open", "off": "closed"}.get(state, state)
    if domain == "climate":
        return (
            f"{name} is in {state} mode, set to {attributes.get('temperature')}"
            f" degrees; it is {attributes.get('current_temperature')} degrees now."
        )
    if domain == "weather":
        temperature = attributes.get("temperature")
        unit = attributes.get("temperature_unit", "")
        return f"{name}: {state}, {temperature} {unit}".rstrip() + "."
    return f"{name} is {state}."


def live_entities(text: str) -> list[dict[str, Any]]:
    """Read the entities of GetLiveContext's YAML: their keys and attributes."""
    entities: list[dict[str, Any]] = []
    nested: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("- "):
            entities.append({})
            nested, line = None, "  " + line[2:]
        if not entities or ":" not in line:
            continue
        key, _, value = line.strip().partition(":")
        value = value.strip().strip("'\"")
        if line.startswith("    ") and nested is not None:
            nested[key] = value
        elif not value:
            nested = entities[-1].setdefault(key, {})
        else:
            entities[-1][key] = value
            nested = None
    return entities
