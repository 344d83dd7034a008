"""The agent's tools step: which tools are offered, on demand, and a call cap."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.selector import (
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
)
import probatio
from slugify import slugify

from ..const import (
    CONF_CALL_EXAMPLES,
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
    CONF_CALL_EXAMPLES,
)
LABEL_CHARACTERS: Final = 60


async def async_tool_options(
    hass: HomeAssistant, api_ids: list[str]
) -> list[SelectOptionDict]:
    """Return the APIs' tools: names, labeled with what they do and their API."""
    context = llm.LLMContext(
        platform=DOMAIN,
        context=Context(),
        language=hass.config.language,
        assistant=conversation.DOMAIN,
        device_id=None,
    )
    try:
        merged = await llm.async_get_api(hass, api_ids, context)
        apis = [await llm.async_get_api(hass, api_id, context) for api_id in api_ids]
    except HomeAssistantError:
        return []
    # Where two APIs have a tool of one name, the merged one is namespaced.
    sources: dict[str, str] = {}
    for api in apis:
        for tool in api.tools:
            sources.setdefault(tool.name, api.api.name)
            sources[f"{slugify(api.api.id)}__{tool.name}"] = api.api.name
    return [
        SelectOptionDict(
            value=tool.name,
            label=f"{_readable(tool)} ({sources.get(tool.name, merged.api.name)})",
        )
        for tool in merged.tools
    ]


def _readable(tool: llm.Tool) -> str:
    text = tool.title or (tool.description or "").split(". ")[0].split("\n")[0]
    text = text.strip().rstrip(".")
    if len(text) > LABEL_CHARACTERS:
        text = text[:LABEL_CHARACTERS].rsplit(" ", 1)[0] + "…"
    return text or tool.name


def tools_schema(
    options: list[SelectOptionDict], data: Mapping[str, Any], local: bool
) -> probatio.Schema:
    """Return the form: tools offered, on demand, the call cap; one round, examples (local: on)."""
    offered = {option["value"] for option in options}
    kept = [
        SelectOptionDict(value=name, label=name)
        for name in data.get(CONF_TOOLS, ())
        if name not in offered
    ]
    return probatio.Schema(
        {
            probatio.Optional(CONF_TOOLS): SelectSelector(
                SelectSelectorConfig(
                    options=sorted(
                        [*options, *kept], key=lambda option: option["label"]
                    ),
                    multiple=True,
                    mode=SelectSelectorMode.DROPDOWN,
                )
            ),
            probatio.Optional(CONF_TOOLS_ON_DEMAND, default=False): bool,
            probatio.Optional(CONF_MAX_TOOL_CALLS): whole_number(1, 100),
            probatio.Optional(CONF_ONE_ROUND, default=local): bool,
            probatio.Optional(CONF_CALL_EXAMPLES, default=local): bool,
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
    for key in (CONF_ONE_ROUND, CONF_CALL_EXAMPLES):
        if (value := user_input.get(key, local)) != local:
            kept[key] = value
    return kept
