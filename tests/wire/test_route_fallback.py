"""Which wire API a round trip takes, and the fall back to Chat Completions."""

from __future__ import annotations

from typing import Any

from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
import pytest

from custom_components.openai_compatible.const import CONF_API, Feature
from custom_components.openai_compatible.models.capabilities import WireApi
from simulator import OpenAISimulator
from tests.conftest import SetupEntry, converse, speech

NO_TOOLS = {CONF_LLM_HASS_API: [], CONF_PROMPT: "You are a test assistant."}


def paths(simulator: OpenAISimulator) -> list[str]:
    """Return the API routes the integration posted to, in order."""
    return [
        request.path.removeprefix("/v1")
        for request in simulator.requests
        if request.method == "POST"
    ]


async def test_automatic_falls_back_to_chat_completions(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A server without /responses is answered over Chat Completions, and learned."""
    simulator.settings.responses = False
    entry = await setup_entry(provider="openai", conversation=NO_TOOLS)

    result = await converse(hass, "Hello")
    assert speech(result) == "You said: Hello"
    assert paths(simulator) == ["/responses", "/chat/completions"]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.RESPONSES_API)

    simulator.requests.clear()
    await converse(hass, "Again")
    assert paths(simulator) == ["/chat/completions"]


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (404, {"detail": "Not Found"}),
        (405, "Method Not Allowed"),
        (404, "<html><head><title>404 Not Found</title></head></html>"),
        (501, {"error": {"message": "Not Implemented"}}),
    ],
)
async def test_route_refusals_of_other_servers(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    status: int,
    body: Any,
) -> None:
    """Each server's way of saying it has no such route makes the fall back."""
    await setup_entry(provider="azure", conversation=NO_TOOLS)
    if isinstance(body, str):
        simulator.enqueue("/responses", status=status, raw=body)
    else:
        simulator.enqueue("/responses", status=status, json=body)

    result = await converse(hass, "Hello")

    assert speech(result) == "You said: Hello"
    assert paths(simulator)[-2:] == ["/responses", "/chat/completions"]


async def test_an_item_not_found_is_no_missing_route(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 404 about something else is an error, not a reason to fall back."""
    entry = await setup_entry(provider="openai", conversation=NO_TOOLS)
    simulator.enqueue(
        "/responses",
        status=404,
        json={"error": {"message": "Item with id 'rs_1' not found.", "type": "x"}},
    )

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "Item with id 'rs_1' not found." in speech(result)
    assert paths(simulator) == ["/responses"]
    assert not entry.runtime_data.capabilities.model("gpt-4o-mini").refuses(
        Feature.RESPONSES_API
    )


async def test_chosen_responses_api_does_not_fall_back(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Chosen explicitly, the Responses API is used on any preset, refusal or not."""
    simulator.settings.responses = False
    await setup_entry(options={CONF_API: WireApi.RESPONSES}, conversation=NO_TOOLS)

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "Invalid URL (POST /v1/responses)" in speech(result)
    assert paths(simulator) == ["/responses"]


async def test_chosen_chat_completions_on_openai(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Chat Completions chosen for OpenAI: no /responses request at all."""
    await setup_entry(
        provider="openai",
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        conversation=NO_TOOLS,
    )

    await converse(hass, "Hello")

    assert paths(simulator) == ["/chat/completions"]


async def test_a_structured_task_falls_back_with_its_format(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The body built again for Chat Completions asks for the same structure."""
    simulator.settings.responses = False
    await setup_entry(provider="openai")

    response = await hass.services.async_call(
        "ai_task",
        "generate_data",
        {
            "task_name": "Weather",
            "entity_id": "ai_task.openai_compatible_ai_task",
            "instructions": "Describe the weather",
            "structure": {
                "condition": {"required": True, "selector": {"text": {}}},
            },
        },
        blocking=True,
        return_response=True,
    )

    assert isinstance(response, dict)
    assert set(response["data"]) == {"condition"}
    assert paths(simulator) == ["/responses", "/chat/completions"]
    [body] = simulator.chat_requests()
    assert body["response_format"]["type"] == "json_schema"
