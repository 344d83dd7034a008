"""The Responses API adapter: conversations over /responses against the simulator.

And the fall back to Chat Completions where the route is refused.
"""

from __future__ import annotations

from typing import Any, cast

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session, intent, llm
import pytest
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.const import CONF_API, CONF_STREAMING, Feature
from custom_components.openai_compatible.models.capabilities import (
    Lessons,
    ModelCapabilities,
    WireApi,
)
from custom_components.openai_compatible.models.providers import PROVIDERS
from custom_components.openai_compatible.models.server_info import ModelReport
from custom_components.openai_compatible.net.shapes import ResponsesBody
from custom_components.openai_compatible.net.transport import (
    RequestSettings,
    ToolSet,
    build_tool_set,
)
from custom_components.openai_compatible.wire.responses import (
    ResponsesDialect,
    ResponsesOptions,
    body_features,
    without_feature,
)
from custom_components.openai_compatible.wire.responses_stream import ResponsesReplay
from simulator import (
    OpenAISimulator,
    function_call_item,
    message_item,
    reasoning_item,
    response_stream,
    usage_block,
)
from tests.conftest import SetupEntry, converse, speech, stored_chat_log

REASONING_MODEL = "gpt-5-mini"
NO_TOOLS = {CONF_LLM_HASS_API: [], CONF_PROMPT: "You are a test assistant."}


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Keep the date in the system prompt stable for snapshots."""
    freezer.move_to("2026-11-29 12:00:00+00:00")


def paths(simulator: OpenAISimulator) -> list[str]:
    """Return the API routes the integration posted to, in order."""
    return [
        request.path.removeprefix("/v1")
        for request in simulator.requests
        if request.method == "POST"
    ]


def without_cache_key(body: dict[str, Any]) -> dict[str, Any]:
    """Return a request body without its cache key (the random subentry id)."""
    assert body["prompt_cache_key"]
    return {key: value for key, value in body.items() if key != "prompt_cache_key"}


def last_answer(
    hass: HomeAssistant, conversation_id: str
) -> conversation.AssistantContent:
    """Return the last message of the conversation's chat log."""
    last = stored_chat_log(hass, conversation_id).content[-1]
    assert isinstance(last, conversation.AssistantContent)
    return last


async def test_plain_answer(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """The OpenAI preset talks to /responses, statelessly, by default."""
    entry = await setup_entry(provider="openai", conversation=NO_TOOLS)

    result = await converse(hass, "Hello")

    assert speech(result) == "You said: Hello"
    assert paths(simulator) == ["/responses"]
    [body] = simulator.responses_requests()
    assert body["store"] is False
    assert body["stream"] is True
    assert without_cache_key(body) == snapshot
    counts = entry.runtime_data.usage[next(iter(entry.subentries.values())).subentry_id]
    assert (counts["requests"], counts["completion_tokens"]) == (1, 4)


async def test_tool_loop_turns_on_light(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    snapshot: SnapshotAssertion,
) -> None:
    """A function call runs in Home Assistant; its output goes back as an item."""
    await setup_entry(provider="openai")
    simulator.enqueue(
        "/responses",
        sse=response_stream(
            [
                function_call_item(
                    "call_light1", "intent__HassTurnOn", '{"name": "Kitchen light"}'
                )
            ]
        ),
    )

    result = await converse(hass, "Turn on the kitchen light")

    assert hass.states.get(kitchen_light).state == "on"
    assert speech(result) == "Turned on Kitchen light."
    first, second = simulator.responses_requests()
    assert second["input"][: len(first["input"])] == first["input"]
    call, output = second["input"][-2:]
    assert call["type"] == "function_call"
    assert call["name"] == "intent__HassTurnOn"
    assert output["type"] == "function_call_output"
    assert output["call_id"] == call["call_id"]
    assert all(tool.get("strict") is False for tool in first["tools"])
    assert first["prompt_cache_key"] == second["prompt_cache_key"]
    assert [without_cache_key(first), without_cache_key(second)] == snapshot


async def test_reasoning_chain_goes_back_encrypted(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A reasoning model's items go back as given, across rounds and turns."""
    await setup_entry(provider="openai", conversation={"chat_model": REASONING_MODEL})

    first = await converse(hass, "Turn on the kitchen light")
    second = await converse(hass, "Thanks", first.conversation_id)

    assert speech(first) == "Turned on Kitchen light."
    assert speech(second).startswith("You said: Thanks")
    requests = simulator.responses_requests()
    assert len(requests) == 3
    assert all(body["include"] == ["reasoning.encrypted_content"] for body in requests)
    kinds = [item["type"] for item in requests[2]["input"]]
    assert kinds[2:] == [
        "message",  # the user's first message
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "message",  # the answer
        "message",  # the user's thanks
    ]
    assert requests[1]["input"] == requests[2]["input"][: len(requests[1]["input"])]


async def test_thinking_is_shown_not_spoken(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Reasoning summaries and think tags become thinking, never speech."""
    await setup_entry(provider="openai", conversation=NO_TOOLS)
    simulator.enqueue(
        "/responses",
        sse=response_stream(
            [
                reasoning_item("The user greets."),
                reasoning_item("Answer kindly."),
                message_item("<think>hidden</think>Hi there"),
            ],
            usage=usage_block(20, 8, cached=16, reasoning=5),
        ),
    )

    result = await converse(hass, "Hello")

    assert speech(result) == "Hi there"
    answer = last_answer(hass, result.conversation_id)
    assert answer.thinking_content == "The user greets.\n\nAnswer kindly.hidden"


async def test_whole_answer_when_streaming_is_off(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """With streaming off, the whole response object is read."""
    await setup_entry(
        provider="openai",
        conversation={**NO_TOOLS, "chat_model": REASONING_MODEL, CONF_STREAMING: False},
    )
    simulator.enqueue(
        "/responses",
        json={
            "status": "completed",
            "output": [
                reasoning_item("Plan."),
                message_item("Hi"),
            ],
            "usage": usage_block(10, 2),
        },
    )

    result = await converse(hass, "Hello")

    assert speech(result) == "Hi"
    assert last_answer(hass, result.conversation_id).thinking_content == "Plan."
    assert "stream" not in simulator.responses_requests()[0]


@pytest.mark.parametrize(
    ("events", "error"),
    [
        (
            [{"type": "error", "code": "server_error", "message": "Boom"}],
            "Boom",
        ),
        (
            [
                {
                    "type": "response.failed",
                    "response": {"status": "failed", "error": {"message": "Overload"}},
                }
            ],
            "Overload",
        ),
        (
            response_stream(
                [message_item("Hello wor")],
                status="incomplete",
                reason="max_output_tokens",
            ),
            "maximum number of tokens",
        ),
        (response_stream([message_item("Hello wor")])[:-1], "before it was complete"),
        ([{"type": "response.output_item.done", "item": "not an item"}], "item"),
        (
            [{"type": "response.output_text.delta", "delta": "Hello <thi"}],
            "before it was complete",
        ),
    ],
)
async def test_answers_that_end_badly(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    events: list[dict[str, Any]],
    error: str,
) -> None:
    """An error, a failure, a cut or a malformed event is told in our words."""
    await setup_entry(provider="openai", conversation=NO_TOOLS)
    simulator.enqueue("/responses", sse=events)

    result = await converse(hass, "Hello")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert error in speech(result)


async def test_calls_of_a_cut_answer_do_not_run(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A function call in an answer cut at the token limit is not run."""
    await setup_entry(provider="openai")
    simulator.enqueue(
        "/responses",
        sse=response_stream(
            [
                function_call_item(
                    "call_1", "intent__HassTurnOn", '{"name": "Kitchen light"}'
                )
            ],
            status="incomplete",
            reason="max_output_tokens",
        ),
    )

    result = await converse(hass, "Turn on the kitchen light")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert hass.states.get(kitchen_light).state == "off"


async def test_history_from_chat_completions_and_other_agents(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A conversation begun over Chat Completions goes on over Responses."""
    entry = await setup_entry(
        provider="openai", options={CONF_API: WireApi.CHAT_COMPLETIONS}
    )
    first = await converse(hass, "Turn on the kitchen light")
    hass.config_entries.async_update_entry(entry, options={CONF_API: WireApi.RESPONSES})
    await hass.async_block_till_done()

    second = await converse(hass, "Thanks", first.conversation_id)

    assert speech(second).startswith("You said: Thanks")
    body = simulator.responses_requests()[0]
    kinds = [item["type"] for item in body["input"]]
    assert kinds == [
        "message",
        "message",
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]


# ---------------------------------------------------------------------------
# AI tasks over the Responses API
# ---------------------------------------------------------------------------

TASK = "ai_task.openai_compatible_ai_task"
WEATHER = {
    "condition": {
        "required": True,
        "selector": {"select": {"options": ["sunny", "cloudy", "rainy"]}},
    },
    "temperature": {"required": True, "selector": {"number": {"min": -50, "max": 60}}},
}
PNG = b"\x89PNG\r\n\x1a\n" + b"garage camera"
PDF = b"%PDF-1.4 delivery note"


async def task(hass: HomeAssistant, action: str, **data: Any) -> dict[str, Any]:
    """Call an ai_task action on our entity and return its response."""
    response = await hass.services.async_call(
        "ai_task",
        action,
        {"task_name": "Test task", "entity_id": TASK, **data},
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response


def attachment(name: str, mime_type: str) -> dict[str, str]:
    """Return an attachment of the local media folder."""
    return {
        "media_content_id": f"media-source://media_source/local/{name}",
        "media_content_type": mime_type,
    }


async def test_structured_data_through_text_format(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """A structure is asked for as a strict `text.format` and validated."""
    await setup(provider="openai")

    response = await task(
        hass, "generate_data", instructions="Describe the weather", structure=WEATHER
    )

    assert response["data"]["condition"] in ("sunny", "cloudy", "rainy")
    [body] = simulator.responses_requests()
    assert body["text"]["format"]["strict"] is True
    assert without_cache_key(body) == snapshot


async def test_structured_ladder_over_text_format(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server without json_schema is asked for a JSON object, then remembered."""
    entry = await setup(provider="openai")
    simulator.settings.json_schema = "json_object"

    response = await task(
        hass, "generate_data", instructions="Describe the weather", structure=WEATHER
    )

    assert response["data"]["condition"] in ("sunny", "cloudy", "rainy")
    formats = [
        body["text"]["format"]["type"] for body in simulator.responses_requests()
    ]
    assert formats == ["json_schema", "json_object"]
    assert entry.runtime_data.capabilities.model("gpt-4o-mini").refuses(
        Feature.JSON_SCHEMA
    )


async def test_attachments_as_input_parts(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry, media_dir: Any
) -> None:
    """Images go as input_image, PDFs as input_file, both as data URLs."""
    await setup(provider="openai")
    (media_dir / "cam.png").write_bytes(PNG)
    (media_dir / "note.pdf").write_bytes(PDF)

    response = await task(
        hass,
        "generate_data",
        instructions="What is this?",
        attachments=[
            attachment("cam.png", "image/png"),
            attachment("note.pdf", "application/pdf"),
        ],
    )

    assert response["data"].startswith("You asked: What is this?")
    [body] = simulator.responses_requests()
    text, image, document = body["input"][-1]["content"]
    assert text == {"type": "input_text", "text": "What is this?"}
    assert image["type"] == "input_image"
    assert image["image_url"].startswith("data:image/png;base64,")
    assert document["type"] == "input_file"
    assert document["filename"] == "note.pdf"
    assert document["file_data"].startswith("data:application/pdf;base64,")


async def test_generate_image_on_a_responses_entry(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Images come from the image model, whichever API the chat goes over."""
    await setup(provider="openai")

    response = await task(hass, "generate_image", instructions="A red fox in snow")

    assert response["mime_type"] == "image/png"
    assert paths(simulator)[-1] == "/images/generations"


# ---------------------------------------------------------------------------
# History, and requests reshaped
# ---------------------------------------------------------------------------


async def test_history_of_other_agents_and_unanswered_calls(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    tmp_path: Any,
) -> None:
    """Other agents' answers go as text and calls; provider-run calls stay out."""
    await setup_entry(provider="openai", conversation=NO_TOOLS)
    image = tmp_path / "photo.png"
    image.write_bytes(PNG)
    with (
        chat_session.async_get_chat_session(hass, context=Context()) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        conversation_id = session.conversation_id
        chat_log.async_add_user_content(
            conversation.UserContent(
                "What is this?",
                attachments=[conversation.Attachment("media://1", "image/png", image)],
            )
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(
                agent_id="conversation.other",
                thinking_content="Let me search.",
                tool_calls=[
                    llm.ToolInput("web_search", {"q": "x"}, id="ws1", external=True)
                ],
            )
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.ToolResultContent(
                agent_id="conversation.other",
                tool_call_id="ws1",
                tool_name="web_search",
                result=llm.ToolResult({"hits": 1}),
            )
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(agent_id="conversation.other")
        )
        chat_log.content.append(
            conversation.AssistantContent(
                agent_id="conversation.other",
                content="Checking.",
                tool_calls=[llm.ToolInput("HassTurnOn", {}, id="call_open")],
            )
        )

    await converse(hass, "Thanks", conversation_id)

    items = simulator.responses_requests()[0]["input"]
    assert [item["content"][0]["type"] for item in items[1:2]] == ["input_text"]
    assert items[1]["content"][1]["type"] == "input_image"
    assert items[2:] == [
        {"type": "message", "role": "assistant", "content": ""},
        {"type": "message", "role": "assistant", "content": "Checking."},
        {
            "type": "function_call",
            "call_id": "call_open",
            "name": "HassTurnOn",
            "arguments": "{}",
        },
        {
            "type": "function_call_output",
            "call_id": "call_open",
            "output": '{"error":"no result"}',
        },
        {"type": "message", "role": "user", "content": "Thanks"},
    ]


@pytest.mark.parametrize(
    ("feature", "expected"),
    [
        (Feature.PROMPT_CACHE_KEY, {"prompt_cache_key"}),
        (Feature.SAMPLING, {"temperature", "top_p"}),
        (Feature.STREAM_WITH_TOOLS, {"stream"}),
        (Feature.REASONING, {"reasoning", "include"}),
        (Feature.REASONING_SUMMARY, {"reasoning"}),
        (Feature.VERBOSITY, {"text"}),
        (Feature.SERVICE_TIER, {"service_tier"}),
        (Feature.WEB_SEARCH, {"tools"}),
    ],
)
def test_features_that_can_go(feature: Feature, expected: set[str]) -> None:
    """What only tunes the answer is dropped, and nothing else."""
    body = {
        "model": "m",
        "input": [],
        "tools": [{"type": "web_search"}],
        "temperature": 1,
        "top_p": 1,
        "prompt_cache_key": "k",
        "stream": True,
        "reasoning": {"summary": "auto"},
        "text": {"verbosity": "low"},
        "include": ["reasoning.encrypted_content"],
        "service_tier": "flex",
    }

    changed = without_feature(body, feature)

    assert changed is not None
    assert set(body) - set(changed) == expected
    assert without_feature(body, Feature.JSON_SCHEMA) is None


def test_a_provider_tool_goes_with_what_is_included_of_it() -> None:
    """Dropping a provider-run tool keeps the others and their includes."""
    body = {
        "tools": [{"type": "web_search"}, {"type": "code_interpreter"}],
        "include": ["web_search_call.action.sources", "code_interpreter_call.outputs"],
        "reasoning": {"effort": "low", "summary": "auto"},
    }

    changed = without_feature(body, Feature.WEB_SEARCH)
    assert changed == {
        "tools": [{"type": "code_interpreter"}],
        "include": ["code_interpreter_call.outputs"],
        "reasoning": {"effort": "low", "summary": "auto"},
    }
    assert without_feature(body, Feature.REASONING_SUMMARY) == {
        **body,
        "reasoning": {"effort": "low"},
    }


def settings_body(
    hass: HomeAssistant, settings: RequestSettings, options: ResponsesOptions
) -> dict[str, Any]:
    """Return the fields of an empty request but its model and input."""
    capabilities = ModelCapabilities(
        settings.model, PROVIDERS["openai"], ModelReport(), Lessons(), lambda: None
    )
    dialect = ResponsesDialect(
        hass, capabilities, settings, options, build_tool_set(None), AGENT
    )
    body = dialect.body([], None)
    assert body.pop("input") == []
    assert body.pop("model") == settings.model
    return dict(body)


def test_settings_and_options_in_the_body(hass: HomeAssistant) -> None:
    """Tuned settings, reasoning options and verbosity become request fields."""
    settings = RequestSettings(
        model="gpt-5-mini", max_tokens=5, temperature=0.2, reasoning_model=True
    )
    options = ResponsesOptions(
        reasoning_effort="low", reasoning_summary=True, verbosity="high"
    )

    # The answer's limit is the round trip's to put.
    assert settings_body(hass, settings, options) == {
        "reasoning": {"effort": "low", "summary": "auto"},
        "text": {"verbosity": "high"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
    }


def test_sampling_settings_of_other_models(hass: HomeAssistant) -> None:
    """Models that do not reason take the sampling settings."""
    settings = RequestSettings(model="gpt-4o-mini", temperature=0.2, top_p=0.5)

    assert settings_body(hass, settings, ResponsesOptions()) == {
        "temperature": 0.2,
        "top_p": 0.5,
        "store": False,
    }


def test_how_the_provider_handles_the_request(hass: HomeAssistant) -> None:
    """A chosen tier is sent and named as a feature; storing is opted into."""
    settings = RequestSettings(model="gpt-5-mini")
    chosen = settings_body(hass, settings, ResponsesOptions(service_tier="flex"))

    assert (chosen["service_tier"], chosen["store"]) == ("flex", False)
    assert Feature.SERVICE_TIER in body_features(cast("ResponsesBody", chosen))
    assert "service_tier" not in settings_body(hass, settings, ResponsesOptions())
    stored = settings_body(hass, settings, ResponsesOptions(store=True))
    assert stored["store"] is True


# --- the chat log as input items ---------------------------------------------

AGENT = "conversation.other"
TOOLS = ToolSet([], {"Hass Turn On": "Hass_Turn_On"}, {"Hass_Turn_On": "Hass Turn On"})


def renderer_of(hass: HomeAssistant) -> ResponsesDialect:
    """Return the dialect of AGENT, offering the one tool."""
    capabilities = ModelCapabilities(
        "gpt-5-mini", PROVIDERS["openai"], ModelReport(), Lessons(), lambda: None
    )
    settings = RequestSettings(model="gpt-5-mini")
    return ResponsesDialect(
        hass, capabilities, settings, ResponsesOptions(), TOOLS, AGENT
    )


def _call(call_id: str, *, external: bool = False) -> llm.ToolInput:
    """Return a call of the one tool."""
    return llm.ToolInput(
        "Hass Turn On", {"name": "light"}, id=call_id, external=external
    )


def _result(call_id: str) -> conversation.ToolResultContent:
    """Return the result of a call."""
    return conversation.ToolResultContent(
        AGENT, call_id, "Hass Turn On", llm.ToolResult({"success": True})
    )


async def test_another_agents_answer_goes_back_as_a_message_and_calls(
    hass: HomeAssistant,
) -> None:
    """Text and calls become items under wire names; each call keeps its result."""
    renderer = renderer_of(hass)
    answer = conversation.AssistantContent(
        AGENT, content="On it", tool_calls=[_call("call_1")]
    )

    items = await renderer.async_render([answer, _result("call_1")])

    assert items == [
        {"type": "message", "role": "assistant", "content": "On it"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "Hass_Turn_On",
            "arguments": '{"name":"light"}',
        },
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": '{"success":true}',
        },
    ]


async def test_calls_without_a_result_and_results_without_a_call(
    hass: HomeAssistant,
) -> None:
    """An unanswered call gets a placeholder; a provider-run result is left out."""
    renderer = renderer_of(hass)
    contents: list[conversation.Content] = [
        conversation.AssistantContent(
            AGENT, tool_calls=[_call("call_1"), _call("ws_1", external=True)]
        ),
        _result("ws_1"),
        conversation.UserContent("And now?"),
    ]

    items = await renderer.async_render(contents)

    assert [item["type"] for item in items] == [
        "function_call",
        "function_call_output",
        "message",
    ]
    assert items[1] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": '{"error":"no result"}',
    }


async def test_an_answer_of_this_api_goes_back_as_it_came(
    hass: HomeAssistant,
) -> None:
    """Reasoning and provider-run calls go back exactly, not as text."""
    replayed = (
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "secret"},
        {"type": "message", "role": "assistant", "content": []},
    )
    answer = conversation.AssistantContent(
        AGENT, content="Hi", native=ResponsesReplay(replayed)
    )

    items = await renderer_of(hass).async_render([answer])

    assert items == list(replayed)


async def test_instructions_go_with_the_tasks_own_message(
    hass: HomeAssistant,
) -> None:
    """The task's instructions follow its message, not a later one."""
    task = conversation.UserContent("Describe the room")
    later = conversation.UserContent("More")
    renderer = renderer_of(hass)

    first = await renderer.async_render([task], (task, "Answer in JSON."))
    again = await renderer.async_render([task, later], (task, "Answer in JSON."))
    plain = await renderer.async_render([task, later])

    assert first[0]["content"] == "Describe the room\n\nAnswer in JSON."
    assert again[0] == first[0]
    assert again[1]["content"] == "More"
    assert plain[0]["content"] == "Describe the room"


async def test_another_agents_native_answer_goes_back_as_a_message(
    hass: HomeAssistant,
) -> None:
    """Reasoning of another agent (a turn handed over) stays with its server."""
    replayed = (
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "secret"},
        {"type": "message", "role": "assistant", "content": []},
    )
    answer = conversation.AssistantContent(
        "conversation.first", content="Hi", native=ResponsesReplay(replayed)
    )

    items = await renderer_of(hass).async_render([answer])

    assert items == [{"type": "message", "role": "assistant", "content": "Hi"}]


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
