"""The chat entity's round trips: rounds of tools, usage and errors counted, reauth."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import SOURCE_REAUTH
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
import pytest

from custom_components.openai_compatible.const import (
    DOMAIN,
    MAX_TOOL_ROUNDS_CONVERSATION,
)
from custom_components.openai_compatible.entity import usage_counts
from simulator import OpenAISimulator, sse_tool_calls

from .conftest import SetupEntry, converse


async def test_a_refused_key_mid_conversation_starts_reauth(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 401 on a turn asks for a new key, and counts as the agent's error."""
    entry = await setup_entry()
    simulator.enqueue("/chat/completions", status=401)

    result = await converse(hass, "Hello")
    await hass.async_block_till_done()

    assert result.response.response_type is intent.IntentResponseType.ERROR
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [flow["context"]["source"] for flow in flows] == [SOURCE_REAUTH]
    subentry_id = next(iter(entry.subentries))
    assert entry.runtime_data.usage[subentry_id]["errors"] == 1


async def test_a_refused_request_counts_as_an_error(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A request the server refuses is told, counted, and asks for no new key."""
    entry = await setup_entry()
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json={"error": {"message": "Something is off", "type": "invalid_request"}},
    )

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert not hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    subentry_id = next(iter(entry.subentries))
    assert entry.runtime_data.usage[subentry_id]["errors"] == 1


async def test_a_model_that_keeps_calling_tools_stops_at_the_round_limit(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """Each round's calls run; past the limit the turn ends with an error."""
    await setup_entry()
    for round_ in range(MAX_TOOL_ROUNDS_CONVERSATION):
        call = (f"call_{round_}", "HassTurnOn", {"name": f"Kitchen light {round_}"})
        simulator.enqueue("/chat/completions", sse=sse_tool_calls([call]))

    result = await converse(hass, "Turn on the kitchen light, forever")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert len(simulator.chat_requests()) == MAX_TOOL_ROUNDS_CONVERSATION
    assert hass.states.get(kitchen_light).state == "off"


def test_a_usage_block_is_counted() -> None:
    """Prompt, completion and cached tokens are read from OpenAI's usage block."""
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "total_tokens": 1230,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    assert usage_counts(usage) == {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "cached_tokens": 1024,
    }


@pytest.mark.parametrize(
    "usage",
    [
        {},
        {"prompt_tokens": None, "completion_tokens": "12"},
        {"prompt_tokens": -5, "completion_tokens": 2.5},
        {"prompt_tokens": True, "prompt_tokens_details": None},
        {"prompt_tokens_details": {"cached_tokens": "all"}},
        {"prompt_tokens_details": ["cached_tokens", 3]},
    ],
)
def test_odd_usage_blocks_count_nothing(usage: dict[str, Any]) -> None:
    """Missing, negative or non-integer figures from a server are not counted."""
    assert not any(usage_counts(usage).values())
