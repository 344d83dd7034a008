"""The Responses API options step of the agent and task flows."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import CONF_NAME, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_CHAT_MODEL,
    CONF_RECOMMENDED,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    Feature,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.models.providers import (
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
)
from tests.conftest import SetupEntry

REASONING = [CONF_REASONING_EFFORT, CONF_REASONING_SUMMARY, CONF_VERBOSITY]
TOOLS = [
    CONF_WEB_SEARCH,
    CONF_WEB_SEARCH_CONTEXT_SIZE,
    CONF_WEB_SEARCH_USER_LOCATION,
    CONF_WEB_SEARCH_CITATIONS,
    CONF_CODE_INTERPRETER,
    CONF_IMAGE_GENERATION,
]


def subentry_of(entry: MockConfigEntry, kind: str) -> Any:
    """Return the entry's subentry of a kind."""
    return next(s for s in entry.subentries.values() if s.subentry_type == kind)


async def reconfigure(
    hass: HomeAssistant, entry: MockConfigEntry, kind: str, model: str
) -> dict[str, Any]:
    """Submit the settings step of a subentry with a model; return what follows."""
    subentry = subentry_of(entry, kind)
    started = await entry.start_subentry_reconfigure_flow(hass, subentry.subentry_id)
    settings = {CONF_CHAT_MODEL: model, CONF_RECOMMENDED: True}
    if kind == SUBENTRY_CONVERSATION:
        settings[CONF_PROMPT] = "Be brief."
    result = await hass.config_entries.subentries.async_configure(
        started["flow_id"], settings
    )
    return dict(result)


def fields(result: dict[str, Any]) -> list[str]:
    """Return the names of a form's fields, in order."""
    return [str(key) for key in result["data_schema"].schema]


async def test_reasoning_model_of_a_conversation(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A reasoning model on OpenAI gets reasoning options and every tool."""
    entry = await setup_entry(provider="openai")

    result = await reconfigure(hass, entry, SUBENTRY_CONVERSATION, "gpt-5-mini")

    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "responses"
    assert result["last_step"] is True
    assert fields(result) == [
        *REASONING,
        CONF_SERVICE_TIER,
        *TOOLS,
        CONF_STORE_RESPONSES,
    ]
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_REASONING_EFFORT: "low",
            CONF_REASONING_SUMMARY: False,
            CONF_SERVICE_TIER: "flex",
            CONF_WEB_SEARCH: True,
            CONF_WEB_SEARCH_CONTEXT_SIZE: "high",
            CONF_WEB_SEARCH_USER_LOCATION: True,
            CONF_WEB_SEARCH_CITATIONS: False,
            CONF_CODE_INTERPRETER: False,
            CONF_IMAGE_GENERATION: False,
            CONF_STORE_RESPONSES: True,
        },
    )
    assert result["type"] is FlowResultType.ABORT
    data = subentry_of(entry, SUBENTRY_CONVERSATION).data
    assert data[CONF_CHAT_MODEL] == "gpt-5-mini"
    assert data[CONF_PROMPT] == "Be brief."
    assert {key: data.get(key) for key in REASONING} == {
        CONF_REASONING_EFFORT: "low",
        CONF_REASONING_SUMMARY: False,
        CONF_VERBOSITY: None,
    }
    assert data[CONF_WEB_SEARCH_CONTEXT_SIZE] == "high"
    assert data[CONF_SERVICE_TIER] == "flex"
    assert data[CONF_STORE_RESPONSES] is True


async def test_values_left_empty_are_removed(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """An effort cleared in the form no longer stays saved."""
    entry = await setup_entry(
        provider="openai",
        conversation={CONF_CHAT_MODEL: "gpt-5-mini", CONF_REASONING_EFFORT: "high"},
    )
    result = await reconfigure(hass, entry, SUBENTRY_CONVERSATION, "gpt-5-mini")

    await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_REASONING_SUMMARY: True}
    )

    assert CONF_REASONING_EFFORT not in subentry_of(entry, SUBENTRY_CONVERSATION).data


@pytest.mark.parametrize(
    ("provider", "kind", "model", "expected"),
    [
        ("openai", SUBENTRY_CONVERSATION, "gpt-4o-mini", [CONF_SERVICE_TIER, *TOOLS]),
        ("azure", SUBENTRY_CONVERSATION, "gpt-4o-mini", TOOLS[4:]),
        ("openai", SUBENTRY_AI_TASK, "gpt-5-mini", [*REASONING, CONF_SERVICE_TIER]),
        ("openai", SUBENTRY_AI_TASK, "gpt-5-chat-latest", []),
    ],
)
async def test_what_each_model_and_preset_offers(
    hass: HomeAssistant,
    setup_entry: SetupEntry,
    provider: str,
    kind: str,
    model: str,
    expected: list[str],
) -> None:
    """Only what the model takes, and provider-run tools for agents only.

    Storing at the provider is offered whatever the model, last.
    """
    entry = await setup_entry(provider=provider)

    result = await reconfigure(hass, entry, kind, model)

    assert fields(result) == [*expected, CONF_STORE_RESPONSES]


@pytest.mark.parametrize(
    ("provider", "options", "kind", "model"),
    [
        ("custom", {}, SUBENTRY_CONVERSATION, "gpt-5-mini"),
        (
            "openai",
            {CONF_API: WireApi.CHAT_COMPLETIONS},
            SUBENTRY_CONVERSATION,
            "gpt-5-mini",
        ),
        (
            "openai",
            {CONF_API: WireApi.CHAT_COMPLETIONS},
            SUBENTRY_AI_TASK,
            "gpt-5-chat-latest",
        ),
    ],
)
async def test_no_step_over_chat_completions(
    hass: HomeAssistant,
    setup_entry: SetupEntry,
    provider: str,
    options: dict[str, Any],
    kind: str,
    model: str,
) -> None:
    """Over Chat Completions the settings are saved at once: no options apply."""
    entry = await setup_entry(provider=provider, options=options)

    result = await reconfigure(hass, entry, kind, model)

    assert result["type"] is FlowResultType.ABORT
    assert subentry_of(entry, kind).data[CONF_CHAT_MODEL] == model


@pytest.mark.parametrize(
    ("model", "tiers"),
    [
        ("gpt-5-mini", ["auto", "flex", "default", "priority"]),
        ("gpt-5-nano", ["auto", "flex", "default"]),
    ],
)
async def test_tiers_the_model_takes(
    hass: HomeAssistant, setup_entry: SetupEntry, model: str, tiers: list[str]
) -> None:
    """The service tier offers the model's own tiers, Auto first and chosen."""
    entry = await setup_entry(provider="openai")

    result = await reconfigure(hass, entry, SUBENTRY_AI_TASK, model)

    [key] = [key for key in result["data_schema"].schema if key == CONF_SERVICE_TIER]
    assert key.default() == "auto"
    assert result["data_schema"].schema[key].config["options"] == tiers


async def test_a_tier_the_new_model_lacks_is_not_suggested(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """Priority saved for one model is not shown for one without it."""
    entry = await setup_entry(
        provider="openai",
        ai_task={CONF_CHAT_MODEL: "gpt-5-mini", CONF_SERVICE_TIER: "priority"},
    )

    kept = await reconfigure(hass, entry, SUBENTRY_AI_TASK, "gpt-5-mini")
    result = await reconfigure(hass, entry, SUBENTRY_AI_TASK, "gpt-5-nano")

    assert suggested(kept, CONF_SERVICE_TIER) == "priority"
    assert suggested(result, CONF_SERVICE_TIER) is None
    assert suggested(result, CONF_STORE_RESPONSES) is None


def suggested(result: dict[str, Any], field: str) -> Any:
    """Return the value a form suggests for a field, if any."""
    [key] = [key for key in result["data_schema"].schema if key == field]
    return (key.description or {}).get("suggested_value")


async def test_refused_tools_are_not_offered(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A tool the model refused is no longer offered."""
    entry = await setup_entry(provider="openai")
    entry.runtime_data.capabilities.model("gpt-4o-mini").learn_refused(
        Feature.WEB_SEARCH, "HTTP 400: refused"
    )

    result = await reconfigure(hass, entry, SUBENTRY_CONVERSATION, "gpt-4o-mini")

    assert fields(result) == [
        CONF_SERVICE_TIER,
        CONF_CODE_INTERPRETER,
        CONF_IMAGE_GENERATION,
        CONF_STORE_RESPONSES,
    ]


async def test_new_agent_keeps_its_name_through_both_steps(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A name given in the first step names the agent made by the second."""
    entry = await setup_entry(provider="openai")
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_CONVERSATION), context={"source": SOURCE_USER}
    )
    # The model suggested takes options: another step follows.
    assert result["last_step"] is False
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_NAME: "Searcher", CONF_CHAT_MODEL: "gpt-4o-mini", CONF_RECOMMENDED: True},
    )
    assert result["step_id"] == "responses"

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_WEB_SEARCH: True}
    )

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Searcher"
    assert result["data"][CONF_WEB_SEARCH] is True
