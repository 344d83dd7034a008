"""The Responses options of providers.py: provider-run tools, reasoning, over HTTP."""

from __future__ import annotations

from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
import pytest

from custom_components.openai_compatible.const import CONF_CHAT_MODEL, Feature
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
from simulator import OpenAISimulator, image_generation_item, response_stream
from tests.conftest import SetupEntry, converse, speech, stored_chat_log

SEARCH = "Search the web for the tides in Brest"


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Keep the date in the system prompt stable."""
    freezer.move_to("2026-11-29 12:00:00+00:00")


def contents(hass: HomeAssistant, conversation_id: str) -> list[Any]:
    """Return the content of a conversation's chat log after its system prompt."""
    return stored_chat_log(hass, conversation_id).content[1:]


async def test_web_search_in_a_conversation(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The search shows as an external call with its sources; citations go unsaid."""
    hass.config.country = "FR"
    await hass.config.async_set_time_zone("Europe/Paris")
    await setup_entry(
        provider="openai",
        conversation={
            CONF_LLM_HASS_API: [],
            CONF_WEB_SEARCH: True,
            CONF_WEB_SEARCH_CONTEXT_SIZE: "low",
            CONF_WEB_SEARCH_USER_LOCATION: True,
        },
    )

    result = await converse(hass, SEARCH)

    assert speech(result) == "Here is what I found about the tides in Brest."
    user, call, output, answer = contents(hass, result.conversation_id)
    assert isinstance(user, conversation.UserContent)
    assert isinstance(call, conversation.AssistantContent)
    [search] = call.tool_calls or []
    assert search.external
    assert search.tool_name == "web_search"
    assert search.tool_args == {"type": "search", "query": "the tides in Brest"}
    assert isinstance(output, conversation.ToolResultContent)
    assert output.tool_call_id == search.id
    assert output.result.data["sources"][0].startswith("https://example.com/")
    assert isinstance(answer, conversation.AssistantContent)
    assert "example.com" not in (answer.content or "")
    [body] = simulator.responses_requests()
    assert body["tools"] == [
        {
            "type": "web_search",
            "search_context_size": "low",
            "user_location": {
                "type": "approximate",
                "country": "FR",
                "timezone": "Europe/Paris",
            },
        }
    ]
    assert body["include"] == ["web_search_call.action.sources"]

    await converse(hass, "Thanks", result.conversation_id)

    kinds = [item["type"] for item in simulator.responses_requests()[1]["input"]]
    assert kinds == ["message", "message", "web_search_call", "message", "message"]


async def test_web_search_citations_kept(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """With citations kept, the sources are said; no location is sent unasked."""
    await setup_entry(
        provider="openai",
        conversation={
            CONF_LLM_HASS_API: [],
            CONF_WEB_SEARCH: True,
            CONF_WEB_SEARCH_CITATIONS: True,
        },
    )

    result = await converse(hass, SEARCH)

    assert "([example.com](https://example.com/" in speech(result)
    [body] = simulator.responses_requests()
    assert body["tools"] == [{"type": "web_search", "search_context_size": "medium"}]


async def test_code_interpreter_in_a_conversation(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Code the provider ran shows with its output; Home Assistant runs nothing."""
    await setup_entry(
        provider="openai",
        conversation={CONF_LLM_HASS_API: [], CONF_CODE_INTERPRETER: True},
    )

    result = await converse(hass, "calculate 6 * 7")

    assert speech(result) == "The result is 42."
    _, call, output, _ = contents(hass, result.conversation_id)
    assert call.tool_calls == [
        llm.ToolInput(
            "code_interpreter",
            {"code": "print(6 * 7)"},
            id=call.tool_calls[0].id,
            external=True,
        )
    ]
    assert output.result.data == {
        "status": "completed",
        "outputs": [{"type": "logs", "logs": "42"}],
    }
    [body] = simulator.responses_requests()
    assert body["tools"] == [
        {"type": "code_interpreter", "container": {"type": "auto"}}
    ]
    assert body["include"] == ["code_interpreter_call.outputs"]


async def test_image_generation_in_a_conversation(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A generated image is noted in the chat log, its bytes are not kept."""
    await setup_entry(
        provider="openai",
        conversation={CONF_LLM_HASS_API: [], CONF_IMAGE_GENERATION: True},
    )

    result = await converse(hass, "Draw a lighthouse at dusk")
    second = await converse(hass, "Thanks", result.conversation_id)

    assert speech(result) == "Here is a lighthouse at dusk."
    _, call, output, _ = contents(hass, result.conversation_id)[:4]
    assert call.tool_calls[0].tool_args == {"prompt": "a lighthouse at dusk"}
    assert output.result.data == {
        "status": "completed",
        "size": "256x256",
        "output_format": "png",
    }
    assert speech(second).startswith("You said: Thanks")
    replayed = simulator.responses_requests()[1]["input"][2]
    assert replayed == {
        "type": "image_generation_call",
        "id": call.tool_calls[0].id,
        "status": "completed",
        "result": None,
    }


async def test_an_answer_that_ends_with_a_provider_call(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Nothing said after the provider's call ends the turn, without another round."""
    await setup_entry(
        provider="openai",
        conversation={CONF_LLM_HASS_API: [], CONF_IMAGE_GENERATION: True},
    )
    simulator.enqueue("/responses", sse=response_stream([image_generation_item("x")]))

    result = await converse(hass, "Make something")

    assert speech(result) == ""
    assert len(simulator.responses_requests()) == 1


async def test_reasoning_options_in_the_request(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Effort, summaries and verbosity are asked for; summaries show as thinking."""
    await setup_entry(
        provider="openai",
        conversation={
            CONF_LLM_HASS_API: [],
            CONF_CHAT_MODEL: "gpt-5-mini",
            CONF_REASONING_EFFORT: "low",
            CONF_VERBOSITY: "high",
        },
    )

    result = await converse(hass, "Hello there")

    [body] = simulator.responses_requests()
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["text"] == {"verbosity": "high"}
    answer = contents(hass, result.conversation_id)[-1]
    assert answer.thinking_content == "The user wrote 2 words. I will answer briefly."
    assert "words" not in speech(result)


@pytest.mark.parametrize(("tier", "sent"), [("flex", "flex"), ("auto", None)])
async def test_service_tier_in_the_request(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    tier: str,
    sent: str | None,
) -> None:
    """A tier other than the default goes with the request; the default does not."""
    await setup_entry(
        provider="openai",
        conversation={
            CONF_LLM_HASS_API: [],
            CONF_CHAT_MODEL: "gpt-5-mini",
            CONF_SERVICE_TIER: tier,
        },
    )

    result = await converse(hass, "Hello")

    assert speech(result) == "You said: Hello"
    [body] = simulator.responses_requests()
    assert body.get("service_tier") == sent


@pytest.mark.parametrize(("opted_in", "stored"), [(True, True), (None, False)])
async def test_storing_is_opt_in(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    opted_in: bool | None,
    stored: bool,
) -> None:
    """Requests are stored at the provider only when the subentry opts in."""
    options: dict[str, Any] = {CONF_LLM_HASS_API: []}
    if opted_in is not None:
        options[CONF_STORE_RESPONSES] = opted_in
    await setup_entry(provider="openai", conversation=options)

    result = await converse(hass, "Hello")
    await converse(hass, "Again", result.conversation_id)

    assert [body["store"] for body in simulator.responses_requests()] == [
        stored,
        stored,
    ]


async def test_refused_service_tier_is_dropped_and_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A server without service tiers answers without one from then on."""
    simulator.settings.service_tiers = ()
    entry = await setup_entry(
        provider="openai",
        conversation={
            CONF_LLM_HASS_API: [],
            CONF_CHAT_MODEL: "gpt-5-mini",
            CONF_SERVICE_TIER: "priority",
        },
    )

    result = await converse(hass, "Hello")
    await converse(hass, "Again", result.conversation_id)

    assert speech(result) == "You said: Hello"
    first, second, third = simulator.responses_requests()
    assert first["service_tier"] == "priority"
    assert "service_tier" not in second
    assert "service_tier" not in third
    model = entry.runtime_data.capabilities.model("gpt-5-mini")
    assert model.refuses(Feature.SERVICE_TIER)


async def test_full_flex_tier_is_left_for_this_request(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Flex processing with no room answers in the project's tier, not learned."""
    simulator.settings.flex_busy = True
    entry = await setup_entry(
        provider="openai",
        conversation={
            CONF_LLM_HASS_API: [],
            CONF_CHAT_MODEL: "gpt-5-mini",
            CONF_SERVICE_TIER: "flex",
        },
    )

    result = await converse(hass, "Hello")
    simulator.settings.flex_busy = False
    await converse(hass, "Again", result.conversation_id)

    assert speech(result) == "You said: Hello"
    assert [body.get("service_tier") for body in simulator.responses_requests()] == [
        "flex",
        None,
        "flex",
    ]
    model = entry.runtime_data.capabilities.model("gpt-5-mini")
    assert not model.refuses(Feature.SERVICE_TIER)


async def test_refused_summaries_are_dropped_and_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An organization not verified answers without summaries from then on."""
    simulator.settings.reasoning_summaries = False
    entry = await setup_entry(
        provider="openai",
        conversation={CONF_LLM_HASS_API: [], CONF_CHAT_MODEL: "gpt-5-mini"},
    )

    result = await converse(hass, "Hello")
    await converse(hass, "Again", result.conversation_id)

    assert speech(result) == "You said: Hello"
    first, second, third = simulator.responses_requests()
    assert first["reasoning"] == {"summary": "auto"}
    assert "reasoning" not in second
    assert "reasoning" not in third
    model = entry.runtime_data.capabilities.model("gpt-5-mini")
    assert model.refuses(Feature.REASONING_SUMMARY)


async def test_a_refused_tool_is_dropped(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A model that runs no web search answers without it, and it is learned."""
    simulator.settings.hosted_tools = frozenset({"code_interpreter"})
    entry = await setup_entry(
        provider="openai",
        conversation={
            CONF_LLM_HASS_API: [],
            CONF_WEB_SEARCH: True,
            CONF_CODE_INTERPRETER: True,
            CONF_REASONING_SUMMARY: False,
        },
    )

    result = await converse(hass, SEARCH)

    assert speech(result).startswith("You said: Search the web")
    first, second = simulator.responses_requests()
    assert [tool["type"] for tool in first["tools"]] == [
        "web_search",
        "code_interpreter",
    ]
    assert [tool["type"] for tool in second["tools"]] == ["code_interpreter"]
    assert second["include"] == ["code_interpreter_call.outputs"]
    assert entry.runtime_data.capabilities.model("gpt-4o-mini").refuses(
        Feature.WEB_SEARCH
    )
