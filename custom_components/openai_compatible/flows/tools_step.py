"""The agent's tools step: which tools are offered, on demand, and a call cap.

The tools are chosen by their names in Home Assistant. Nothing chosen offers
every tool, new ones too; a chosen name the API no longer has stays listed, so
it can be taken out, and is not offered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
)
import probatio

from ..const import (
    CONF_MAX_TOOL_CALLS,
    CONF_ONE_ROUND,
    CONF_TOOLS,
    CONF_TOOLS_ON_DEMAND,
    DOMAIN,
)
from .fields import whole_number

TOOL_KEYS: Final = (
    CONF_TOOLS,
    CONF_TOOLS_ON_DEMAND,
    CONF_MAX_TOOL_CALLS,
    CONF_ONE_ROUND,
)


async def async_tool_names(hass: HomeAssistant, api_ids: list[str]) -> list[str]:
    """Return the names of the tools the LLM APIs provide today."""
    context = llm.LLMContext(
        platform=DOMAIN,
        context=Context(),
        language=hass.config.language,
        assistant=conversation.DOMAIN,
        device_id=None,
    )
    try:
        api = await llm.async_get_api(hass, api_ids, context)
    except HomeAssistantError:
        return []
    return [tool.name for tool in api.tools]


def tools_schema(
    names: list[str], data: Mapping[str, Any], local: bool
) -> probatio.Schema:
    """Return the form: the tools to offer, on demand, the cap on calls, rounds.

    One-round answers are on by default for a local server.
    """
    return probatio.Schema(
        {
            probatio.Optional(CONF_TOOLS): SelectSelector(
                SelectSelectorConfig(
                    options=sorted({*names, *data.get(CONF_TOOLS, ())}),
                    multiple=True,
                    mode=SelectSelectorMode.DROPDOWN,
                )
            ),
            probatio.Optional(CONF_TOOLS_ON_DEMAND, default=False): bool,
            probatio.Optional(CONF_MAX_TOOL_CALLS): whole_number(1, 100),
            probatio.Optional(CONF_ONE_ROUND, default=local): bool,
        }
    )


def tools_data(
    data: Mapping[str, Any], user_input: Mapping[str, Any], local: bool
) -> dict[str, Any]:
    """Return the subentry's data with the step's values; defaults are not kept."""
    kept = {key: value for key, value in data.items() if key not in TOOL_KEYS}
    if tools := user_input.get(CONF_TOOLS):
        kept[CONF_TOOLS] = list(tools)
    if user_input.get(CONF_TOOLS_ON_DEMAND):
        kept[CONF_TOOLS_ON_DEMAND] = True
    if (cap := user_input.get(CONF_MAX_TOOL_CALLS)) is not None:
        kept[CONF_MAX_TOOL_CALLS] = int(cap)
    if (one_round := user_input.get(CONF_ONE_ROUND, local)) != local:
        kept[CONF_ONE_ROUND] = one_round
    return kept
