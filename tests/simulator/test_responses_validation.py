"""Responses API requests the simulator refuses, as OpenAI does."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from simulator import OpenAISimulator
from tests.simulator.responses_client import REASONING_MODEL, rejected, user


async def test_output_without_its_call_is_refused(client: openai.AsyncOpenAI) -> None:
    """A function call output must answer a call given before it."""
    error = await rejected(
        client,
        input=[
            *user("Hi"),
            {"type": "function_call_output", "call_id": "call_x", "output": "{}"},
        ],
    )

    assert error.status_code == 400
    assert "No tool call found" in error.message


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"reasoning": {"effort": "low"}}, "reasoning.effort"),
        ({"text": {"verbosity": "low"}}, "text.verbosity"),
        ({"max_output_tokens": 1}, "max_output_tokens"),
        ({"service_tier": "turbo"}, "service_tier"),
        ({"top_logprobs": 21}, "top_logprobs"),
        ({"include": ["everything"]}, "include[0]"),
        ({"tools": [{"type": "code_interpreter"}]}, "tools[0].container"),
        ({"tools": [{"type": "shell"}]}, "tools[0].type"),
        ({"tools": [{"type": "function", "name": "x"}]}, "tools[0].parameters"),
        (
            {"tools": [{"type": "web_search", "search_context_size": "huge"}]},
            "tools[0].search_context_size",
        ),
        (
            {
                "tools": [
                    {
                        "type": "web_search",
                        "user_location": {"type": "approximate", "country": "France"},
                    }
                ]
            },
            "tools[0].user_location.country",
        ),
        ({"tool_choice": {"type": "web_search"}}, "tool_choice"),
        ({"text": {"format": {"type": "json_schema"}}}, "text.format.name"),
    ],
)
async def test_request_checks(
    client: openai.AsyncOpenAI, kwargs: dict[str, Any], param: str
) -> None:
    """What OpenAI refuses, the simulator refuses, naming the parameter."""
    error = await rejected(client, input="Hi", **kwargs)

    assert error.status_code == 400
    assert isinstance(error.body, dict)
    assert error.body["param"] == param


async def test_reasoning_models_refuse_sampling(client: openai.AsyncOpenAI) -> None:
    """Reasoning models take no temperature."""
    error = await rejected(client, model=REASONING_MODEL, input="Hi", temperature=0.5)

    assert "'temperature' is not supported" in error.message


async def test_summaries_of_an_unverified_organization(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A switch refuses reasoning summaries, as OpenAI does before verification."""
    sim.settings.reasoning_summaries = False

    error = await rejected(
        client, model=REASONING_MODEL, input="Hi", reasoning={"summary": "auto"}
    )

    assert "must be verified" in error.message


@pytest.mark.parametrize(
    ("tiers", "words"),
    [((), "Unknown parameter: 'service_tier'"), (("auto", "default"), "'flex'")],
)
async def test_service_tiers_a_server_refuses(
    sim: OpenAISimulator,
    client: openai.AsyncOpenAI,
    tiers: tuple[str, ...],
    words: str,
) -> None:
    """A switch sets the tiers taken; a server with none refuses the field."""
    sim.settings.service_tiers = tiers

    error = await rejected(client, input="Hi", service_tier="flex")

    assert words in error.message
    assert (await client.responses.create(model=REASONING_MODEL, input="Hi")).output


async def test_flex_processing_when_full(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A switch fills flex processing: flex requests answer 429, others answer."""
    sim.settings.flex_busy = True

    with pytest.raises(openai.RateLimitError) as caught:
        await client.with_options(max_retries=0).responses.create(
            model=REASONING_MODEL, input="Hi", service_tier="flex"
        )

    assert "Resource unavailable" in caught.value.message
    assert await client.responses.create(
        model=REASONING_MODEL, input="Hi", service_tier="priority"
    )


async def test_hosted_tool_the_server_lacks(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A provider-run tool the server does not run is refused by name."""
    sim.settings.hosted_tools = frozenset()

    error = await rejected(client, input="Hi", tools=[{"type": "web_search"}])

    assert "Hosted tool 'web_search' is not supported" in error.message
