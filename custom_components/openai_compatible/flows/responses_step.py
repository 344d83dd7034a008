"""The subentry step of Responses API options: reasoning and provider-run tools."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Final

from homeassistant import data_entry_flow
from homeassistant.helpers.field_visibility import FieldCondition
from homeassistant.helpers.typing import VolDictType
import probatio

from ..const import CONF_API, SUBENTRY_CONVERSATION, Feature
from ..models.capabilities import ModelCapabilities, WireApi, api_setting
from ..models.names import service_tiers
from ..models.providers import (
    CONF_CODE_INTERPRETER,
    CONF_IMAGE_GENERATION,
    CONF_REASONING_EFFORT,
    CONF_REASONING_SUMMARY,
    CONF_SERVICE_TIER,
    CONF_STORE_RESPONSES,
    CONF_VERBOSITY,
    CONF_WEB_SEARCH,
    CONF_WEB_SEARCH_CITATIONS,
    CONF_WEB_SEARCH_CONTEXT_SIZE,
    CONF_WEB_SEARCH_USER_LOCATION,
    DEFAULT_REASONING_SUMMARY,
    DEFAULT_SEARCH_CONTEXT_SIZE,
    DEFAULT_SERVICE_TIER,
    REASONING_EFFORTS,
    SEARCH_CONTEXT_SIZES,
    VERBOSITIES,
)
from .common import choice

RESPONSES_KEYS: Final = frozenset(
    {
        CONF_REASONING_EFFORT,
        CONF_REASONING_SUMMARY,
        CONF_VERBOSITY,
        CONF_SERVICE_TIER,
        CONF_WEB_SEARCH,
        CONF_WEB_SEARCH_CONTEXT_SIZE,
        CONF_WEB_SEARCH_USER_LOCATION,
        CONF_WEB_SEARCH_CITATIONS,
        CONF_CODE_INTERPRETER,
        CONF_IMAGE_GENERATION,
        CONF_STORE_RESPONSES,
    }
)
_SEARCHING: FieldCondition = {"field": CONF_WEB_SEARCH, "value": True}


def responses_schema(
    entry_options: Mapping[str, Any],
    capabilities: ModelCapabilities,
    subentry_type: str,
) -> probatio.Schema | None:
    """Return the step's form for the model; None when the API is not Responses."""
    api = capabilities.api(api_setting(entry_options.get(CONF_API)))
    if api is not WireApi.RESPONSES:
        return None
    schema: VolDictType = {}
    if not capabilities.refuses(Feature.REASONING):
        schema[probatio.Optional(CONF_REASONING_EFFORT)] = choice(
            CONF_REASONING_EFFORT, REASONING_EFFORTS
        )
    if not capabilities.refuses(Feature.REASONING_SUMMARY):
        schema[
            probatio.Optional(CONF_REASONING_SUMMARY, default=DEFAULT_REASONING_SUMMARY)
        ] = bool
    if not capabilities.refuses(Feature.VERBOSITY):
        schema[probatio.Optional(CONF_VERBOSITY)] = choice(CONF_VERBOSITY, VERBOSITIES)
    if not capabilities.refuses(Feature.SERVICE_TIER):
        tier = probatio.Optional(CONF_SERVICE_TIER, default=DEFAULT_SERVICE_TIER)
        schema[tier] = choice(CONF_SERVICE_TIER, service_tiers(capabilities.model))
    # Provider-run tools: an agent's only.
    agent = subentry_type == SUBENTRY_CONVERSATION
    if agent and not capabilities.refuses(Feature.WEB_SEARCH):
        schema[probatio.Optional(CONF_WEB_SEARCH, default=False)] = bool
        searching = partial(data_entry_flow.Optional, visible=_SEARCHING)
        size = searching(
            CONF_WEB_SEARCH_CONTEXT_SIZE, default=DEFAULT_SEARCH_CONTEXT_SIZE
        )
        schema[size] = choice(CONF_WEB_SEARCH_CONTEXT_SIZE, SEARCH_CONTEXT_SIZES)
        for key in (CONF_WEB_SEARCH_USER_LOCATION, CONF_WEB_SEARCH_CITATIONS):
            schema[searching(key, default=False)] = bool
    if agent and not capabilities.refuses(Feature.CODE_INTERPRETER):
        schema[probatio.Optional(CONF_CODE_INTERPRETER, default=False)] = bool
    if agent and not capabilities.refuses(Feature.IMAGE_GENERATION):
        schema[probatio.Optional(CONF_IMAGE_GENERATION, default=False)] = bool
    schema[probatio.Optional(CONF_STORE_RESPONSES, default=False)] = bool
    return probatio.Schema(schema)
