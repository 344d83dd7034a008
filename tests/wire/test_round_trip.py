"""The one round trip, over either wire API, against the simulator."""

from __future__ import annotations

from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.helpers.json import json_bytes
import pytest

from custom_components.openai_compatible.const import (
    CONF_MAX_TOKENS,
    CONF_RECOMMENDED,
    CONF_TEMPERATURE,
    CONF_TIMEOUT,
    Feature,
)
from custom_components.openai_compatible.net.readers import MAX_TOKENS, MIN_WINDOW
from custom_components.openai_compatible.wire import round_trip
from custom_components.openai_compatible.wire.round_trip import says_something
from simulator import OpenAISimulator, response_stream
from tests.conftest import SetupEntry, converse, speech

NO_TOOLS = {CONF_LLM_HASS_API: [], CONF_PROMPT: "You are a test assistant."}
# A preset and the route its conversations take.
APIS = pytest.mark.parametrize(
    ("provider", "route"),
    [("custom", "/chat/completions"), ("openai", "/responses")],
    ids=["chat_completions", "responses"],
)
# Settings that send an answer limit and a temperature.
TUNED = {
    **NO_TOOLS,
    CONF_RECOMMENDED: False,
    CONF_MAX_TOKENS: 100,
    CONF_TEMPERATURE: 0.5,
}
OVERFLOW = {
    "error": {
        "message": (
            "This model's maximum context length is 4096 tokens. However, your "
            "messages resulted in 9000 tokens."
        ),
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def posted(simulator: OpenAISimulator, route: str) -> list[dict[str, Any]]:
    """Return the bodies the integration posted to a route, in order."""
    if route == "/chat/completions":
        return simulator.chat_requests()
    return simulator.responses_requests()


@APIS
async def test_an_overflow_is_fitted_to_the_window_it_names_and_sent_again(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    route: str,
) -> None:
    """The window an overflow names is learned; the same request goes again."""
    entry = await setup_entry(provider=provider, conversation=NO_TOOLS)
    simulator.enqueue(route, status=400, json=OVERFLOW)

    result = await converse(hass, "Hello")

    assert speech(result) == "You said: Hello"
    first, second = posted(simulator, route)
    conversation_key = "messages" if route == "/chat/completions" else "input"
    assert first[conversation_key] == second[conversation_key]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.context_window == 4096


@APIS
async def test_the_answer_limit_is_put_where_the_api_takes_it(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    route: str,
) -> None:
    """The round trip puts the limit, no less than the API takes."""
    await setup_entry(provider=provider, conversation={**TUNED, CONF_MAX_TOKENS: 5})

    await converse(hass, "Hello")

    chat = route == "/chat/completions"
    key, limit = ("max_tokens", 5) if chat else ("max_output_tokens", 16)
    assert posted(simulator, route)[-1][key] == limit


@APIS
async def test_a_second_overflow_is_the_translated_error(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    route: str,
) -> None:
    """A request is fitted again once; overflowing again, it is told, not retried."""
    await setup_entry(provider=provider, conversation=NO_TOOLS)
    simulator.enqueue(route, status=400, json=OVERFLOW)
    simulator.enqueue(route, status=400, json=OVERFLOW)

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert len(posted(simulator, route)) == 2


async def test_an_empty_responses_stream_is_not_asked_again(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Only Chat Completions servers fail to stream next to tools: no retry here."""
    entry = await setup_entry(provider="openai")
    simulator.enqueue("/responses", sse=response_stream([]))

    await converse(hass, "Hello")

    assert [body.get("stream") for body in posted(simulator, "/responses")] == [True]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert not model.refuses(Feature.STREAM_WITH_TOOLS)


@pytest.mark.parametrize(
    ("delta", "said"),
    [
        ({"role": "assistant"}, False),
        ({"content": ""}, False),
        ({"content": "Hi"}, True),
        ({"thinking_content": "Hm"}, True),
        ({"tool_calls": []}, False),
        ({"native": object()}, True),
    ],
)
def test_what_says_something(delta: Any, said: bool) -> None:
    """Anything beyond the role and empty values counts as said."""
    assert says_something(delta) is said


def _refusal(message: str) -> dict[str, Any]:
    """Return an OpenAI-style error body refusing with `message`."""
    return {"error": {"message": message, "type": "invalid_request_error"}}


async def test_a_field_once_dropped_is_not_sent_again(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A refusal naming both answer limits swaps them once, then is told."""
    await setup_entry(conversation=TUNED)
    both = _refusal("max_tokens and max_completion_tokens are not supported")
    for _ in range(2):
        simulator.enqueue("/chat/completions", status=400, json=both)

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "not supported" in speech(result)
    first, second = posted(simulator, "/chat/completions")
    limits = ("max_tokens", "max_completion_tokens")
    assert {key for key in limits if key in first} != {
        key for key in limits if key in second
    }


async def test_the_tries_of_a_round_trip_are_counted(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the cap on tries, the last refusal is told, with features left."""
    monkeypatch.setattr(round_trip, "MAX_TRIES", 2)
    await setup_entry(conversation=TUNED)
    for name in ("stream_options", "temperature"):
        simulator.enqueue(
            "/chat/completions", status=400, json=_refusal(f"{name} is unsupported")
        )

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "temperature" in speech(result)
    assert len(posted(simulator, "/chat/completions")) == 2


async def test_one_deadline_covers_the_whole_round_trip(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Slow answers, each within the timeout, end the turn once it is spent."""
    await setup_entry(conversation=TUNED, options={CONF_TIMEOUT: 1.0})
    simulator.settings.latency = 0.4
    for name in ("stream_options", "temperature"):
        simulator.enqueue(
            "/chat/completions", status=400, json=_refusal(f"{name} is unsupported")
        )

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "did not answer in time" in speech(result)


def _overflow_naming(n_ctx: int, **counted: int) -> dict[str, Any]:
    """Return llama.cpp's overflow error naming a window (and what it counted)."""
    return {
        "error": {
            "message": "the request exceeds the available context size",
            "type": "exceed_context_size_error",
            "n_ctx": n_ctx,
            **counted,
        }
    }


async def test_a_window_of_400_digits_is_taken_as_the_largest_believed(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The turn is answered, the next one too, and the lessons can be shown."""
    entry = await setup_entry(conversation=NO_TOOLS)
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json=_overflow_naming(10**400, n_prompt_tokens=10**400),
    )

    first = await converse(hass, "Hello")
    second = await converse(hass, "Again")

    assert speech(first) == "You said: Hello"
    assert speech(second) == "You said: Again"
    capabilities = entry.runtime_data.capabilities
    assert capabilities.model("gpt-4o-mini").context_window == MAX_TOKENS
    assert json_bytes(capabilities.diagnostics([]))


async def test_a_window_of_one_token_is_taken_as_the_least_believed(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Before any answer, a window of 1 reads as MIN_WINDOW."""
    entry = await setup_entry(conversation=NO_TOOLS)
    simulator.enqueue("/chat/completions", status=400, json=_overflow_naming(1))

    await converse(hass, "Hello")

    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.context_window == MIN_WINDOW


async def test_a_window_smaller_than_an_answered_prompt_is_not_believed(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """After an answer to a longer prompt, the error is told, the window not kept."""
    entry = await setup_entry(conversation=NO_TOOLS)
    await converse(hass, "Hello " * 1000)
    simulator.enqueue("/chat/completions", status=400, json=_overflow_naming(300))

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "300" not in speech(result)
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.context_window is None
    assert len(posted(simulator, "/chat/completions")) == 2
