"""The one round trip, over either wire API, against the simulator."""

from __future__ import annotations

from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
import pytest

from custom_components.openai_compatible.features import Feature
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
