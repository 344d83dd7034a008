"""The one round trip, over either wire API, against the simulator.

And the extra request fields with the thinking switch, as the server receives them.
"""

from __future__ import annotations

from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.helpers.json import json_bytes
import pytest

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_CHAT_MODEL,
    CONF_EXTRA_FIELDS,
    CONF_MAX_TOKENS,
    CONF_RECOMMENDED,
    CONF_TEMPERATURE,
    CONF_THINKING,
    CONF_TIMEOUT,
    Feature,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.net.readers import MAX_TOKENS, MIN_WINDOW
from custom_components.openai_compatible.wire import round_trip
from custom_components.openai_compatible.wire.round_trip import says_something
from simulator import OpenAISimulator, response_stream
from tests.conftest import SetupEntry, converse, speech
from tests.test_ai_task import generate_data

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


# --- extra request fields and the thinking switch -----------------------------

EXTRA = {"min_p": 0.05, "top_k": 40, "chat_template_kwargs": {"enable_thinking": False}}
THINKING_KEYS = ("chat_template_kwargs", "reasoning_effort", "reasoning", "think")


def _advanced(**data: Any) -> dict[str, Any]:
    """Return a subentry's data with the recommended settings off."""
    return {CONF_RECOMMENDED: False, **data}


async def test_extra_fields_sent_over_chat_completions(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Every request of the agent and of the task carries the extra fields."""
    extra = _advanced(**{CONF_EXTRA_FIELDS: EXTRA})
    await setup_entry(conversation=extra, ai_task=extra)

    assert speech(await converse(hass, "Hi")) == "You said: Hi"
    await generate_data(hass, instructions="Say hi")

    for body in simulator.chat_requests():
        assert {key: body[key] for key in EXTRA} == EXTRA
        assert body["stream"] is True or "stream" not in body


async def test_extra_fields_sent_over_responses(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The Responses API gets the same fields beside its own."""
    await setup_entry(
        provider="openai",
        options={CONF_API: WireApi.RESPONSES},
        conversation=_advanced(**{CONF_EXTRA_FIELDS: {"top_k": 40}}),
    )

    assert speech(await converse(hass, "Hi")) == "You said: Hi"

    (body,) = simulator.responses_requests()
    assert body["top_k"] == 40
    assert body["store"] is False


async def test_a_refused_extra_field_is_dropped_and_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 400 naming top_k: sent again without it, and not sent again after."""
    simulator.settings.refused_fields = ("top_k",)
    entry = await setup_entry(
        conversation=_advanced(**{CONF_EXTRA_FIELDS: {"min_p": 0.05, "top_k": 40}})
    )

    assert speech(await converse(hass, "Hi")) == "You said: Hi"
    assert speech(await converse(hass, "Again")) == "You said: Again"

    refused, answered, learned = simulator.chat_requests()
    assert refused["top_k"] == 40
    assert "top_k" not in answered and answered["min_p"] == 0.05
    assert "top_k" not in learned and learned["min_p"] == 0.05
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refused_fields() == {"top_k"}
    assert "top_k" in model.lessons.diagnostics()["fields"]


async def test_a_refused_field_is_learned_again_after_a_reload(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The lesson lives while the entry is loaded: a reload sends top_k once more."""
    simulator.settings.refused_fields = ("top_k",)
    entry = await setup_entry(
        conversation=_advanced(**{CONF_EXTRA_FIELDS: {"top_k": 1}})
    )
    await converse(hass, "Hi")
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()

    await converse(hass, "Again")

    sent = ["top_k" in body for body in simulator.chat_requests()]
    assert sent == [True, False, True, False]


@pytest.mark.parametrize(
    ("provider", "model", "sent"),
    [
        ("vllm", "gpt-4o-mini", {"chat_template_kwargs": {"enable_thinking": False}}),
        (
            "llama_cpp",
            "gpt-4o-mini",
            {"chat_template_kwargs": {"enable_thinking": False}},
        ),
        ("ollama", "llama3.2:3b", {"reasoning_effort": "none"}),
        ("openai", "gpt-5-mini", {"reasoning_effort": "minimal"}),
    ],
)
async def test_thinking_off_by_server_kind(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    model: str,
    sent: dict[str, Any],
) -> None:
    """Each kind of server gets the field it reads to turn thinking off."""
    await setup_entry(
        provider=provider,
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        conversation=_advanced(**{CONF_CHAT_MODEL: model, CONF_THINKING: "off"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.chat_requests()
    assert {key: body[key] for key in THINKING_KEYS if key in body} == sent


async def test_thinking_on_merges_into_the_extra_fields(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The switch goes into the user's chat_template_kwargs, over what it says."""
    kwargs = {"chat_template_kwargs": {"enable_thinking": False, "x": 1}}
    await setup_entry(
        provider="vllm",
        conversation=_advanced(**{CONF_EXTRA_FIELDS: kwargs, CONF_THINKING: "on"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.chat_requests()
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "x": 1}


async def test_thinking_off_over_responses_is_the_reasoning_effort(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The Responses API takes the effort in its reasoning object."""
    await setup_entry(
        provider="openai",
        options={CONF_API: WireApi.RESPONSES},
        conversation=_advanced(**{CONF_CHAT_MODEL: "gpt-5-mini", CONF_THINKING: "off"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.responses_requests()
    assert body["reasoning"]["effort"] == "minimal"
    assert "reasoning_effort" not in body


@pytest.mark.parametrize("provider", ["vllm", "ollama", "openai"])
async def test_server_default_sends_nothing(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
) -> None:
    """Without a switch or extra fields, no thinking field is sent."""
    await setup_entry(
        provider=provider,
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        conversation=_advanced(**{CONF_CHAT_MODEL: "gpt-5-mini"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.chat_requests()
    assert not set(THINKING_KEYS) & set(body)
