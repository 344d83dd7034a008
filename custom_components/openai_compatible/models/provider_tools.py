"""The Responses API options of a subentry: reasoning, verbosity, provider-run tools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from homeassistant.core import HomeAssistant

from ..net.shapes import JsonObject


@dataclass(frozen=True, slots=True)
class ResponsesOptions:
    """What a subentry asks of the Responses API beyond the common settings."""

    reasoning_effort: str | None = None
    reasoning_summary: bool = False
    verbosity: str | None = None
    service_tier: str | None = None
    # The provider keeps the requests and answers (and shows them in its logs).
    store: bool = False
    provider_tools: tuple[JsonObject, ...] = ()
    remove_citations: bool = False


CONF_REASONING_EFFORT: Final = "reasoning_effort"
CONF_REASONING_SUMMARY: Final = "reasoning_summary"
CONF_VERBOSITY: Final = "verbosity"
CONF_SERVICE_TIER: Final = "service_tier"
CONF_STORE_RESPONSES: Final = "store_responses"
CONF_WEB_SEARCH: Final = "web_search"
CONF_WEB_SEARCH_CONTEXT_SIZE: Final = "web_search_context_size"
CONF_WEB_SEARCH_USER_LOCATION: Final = "web_search_user_location"
CONF_WEB_SEARCH_CITATIONS: Final = "web_search_citations"
CONF_CODE_INTERPRETER: Final = "code_interpreter"
CONF_IMAGE_GENERATION: Final = "image_generation"

REASONING_EFFORTS: Final = ("minimal", "low", "medium", "high")
VERBOSITIES: Final = ("low", "medium", "high")
SEARCH_CONTEXT_SIZES: Final = ("low", "medium", "high")
DEFAULT_SEARCH_CONTEXT_SIZE: Final = "medium"
# "auto", the project's own tier, is what a request without a tier gets.
DEFAULT_SERVICE_TIER: Final = "auto"
SENT_SERVICE_TIERS: Final = ("flex", "default", "priority")
# Summaries are asked for unless switched off; a refusal is learned.
DEFAULT_REASONING_SUMMARY: Final = True


def responses_options(
    hass: HomeAssistant, options: Mapping[str, Any]
) -> ResponsesOptions:
    """Return what a subentry's options ask of the Responses API."""
    tools: list[JsonObject] = []
    web_search = bool(options.get(CONF_WEB_SEARCH))
    if web_search:
        tool: JsonObject = {
            "type": "web_search",
            "search_context_size": _choice(
                options.get(CONF_WEB_SEARCH_CONTEXT_SIZE), SEARCH_CONTEXT_SIZES
            )
            or DEFAULT_SEARCH_CONTEXT_SIZE,
        }
        if options.get(CONF_WEB_SEARCH_USER_LOCATION):
            location: dict[str, str] = {"type": "approximate"}
            if hass.config.country:
                location["country"] = hass.config.country
            if hass.config.time_zone:
                location["timezone"] = hass.config.time_zone
            tool["user_location"] = location
        tools.append(tool)
    if options.get(CONF_CODE_INTERPRETER):
        tools.append({"type": "code_interpreter", "container": {"type": "auto"}})
    if options.get(CONF_IMAGE_GENERATION):
        tools.append({"type": "image_generation", "output_format": "png"})
    return ResponsesOptions(
        reasoning_effort=_choice(options.get(CONF_REASONING_EFFORT), REASONING_EFFORTS),
        reasoning_summary=bool(
            options.get(CONF_REASONING_SUMMARY, DEFAULT_REASONING_SUMMARY)
        ),
        verbosity=_choice(options.get(CONF_VERBOSITY), VERBOSITIES),
        service_tier=_choice(options.get(CONF_SERVICE_TIER), SENT_SERVICE_TIERS),
        store=bool(options.get(CONF_STORE_RESPONSES)),
        provider_tools=tuple(tools),
        remove_citations=web_search and not options.get(CONF_WEB_SEARCH_CITATIONS),
    )


def _choice(value: Any, choices: tuple[str, ...]) -> str | None:
    return value if value in choices else None
