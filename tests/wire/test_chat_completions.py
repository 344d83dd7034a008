"""The Chat Completions dialect: tools and the chat log rendered as requests.

Also the order of a rendered request, over either wire API: a satellite starts
a new conversation for every command, and its first request repeats the
previous command's as far as the two agree: the system prompt and the tools
first, what varies by device or command (the area, timers, a satellite's extra
system prompt, the date) at the start of the user's message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.components.intent import async_register_timer_handler
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    chat_session,
    device_registry as dr,
    floor_registry as fr,
    llm,
)
from homeassistant.setup import async_setup_component
import probatio
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_HISTORY_TURNS,
    Feature,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.net.transport import build_tool_set
from custom_components.openai_compatible.wire.chat_completions import (
    fold_system,
    split_instructions,
)
from simulator import OpenAISimulator, chunk, sse_text, sse_tool_calls
from tests.conftest import AGENT, SetupEntry, converse, speech


def test_tool_names_are_sanitized_and_mapped_back() -> None:
    """Names the server would refuse get a stable safe form and map back."""

    class NamedTool(llm.Tool):
        def __init__(self, name: str) -> None:
            self.name = name

        async def async_call(
            self,
            hass: HomeAssistant,
            tool_input: llm.ToolInput,
            llm_context: llm.LLMContext,
        ) -> llm.ToolResult:
            raise NotImplementedError

    class EmptyAPI(llm.API):
        async def async_get_api_instance(
            self, llm_context: llm.LLMContext
        ) -> llm.APIInstance:
            raise NotImplementedError

    long_name = "x" * 70
    api = llm.APIInstance(
        api=EmptyAPI(hass=None, id="empty", name="Empty"),
        api_prompt="",
        llm_context=llm.LLMContext(None, None, None, None, None),
        tools=[NamedTool("lights.on"), NamedTool("lights_on"), NamedTool(long_name)],
    )
    tool_set = build_tool_set(api)
    wire = [tool["function"]["name"] for tool in tool_set.tools]
    assert wire[0] == "lights_on"
    assert wire[1].startswith("lights_on_")
    assert len(wire[2]) == 64
    assert {tool_set.from_wire[name] for name in wire} == {
        "lights.on",
        "lights_on",
        long_name,
    }
    assert build_tool_set(api) == tool_set


async def test_history_from_other_agents_converts(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    tmp_path: Path,
    freezer: FrozenDateTimeFactory,
    snapshot: SnapshotAssertion,
) -> None:
    """Thinking, provider-run tool calls, orphans and attachments convert cleanly."""
    freezer.move_to("2026-11-29 12:00:00+00:00")
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
    document = tmp_path / "manual.pdf"
    document.write_bytes(b"%PDF-1.4 test")
    with (
        chat_session.async_get_chat_session(hass, context=Context()) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        conversation_id = session.conversation_id
        chat_log.async_add_user_content(
            conversation.UserContent(
                "What is this?",
                attachments=[
                    conversation.Attachment("media://1", "image/png", image),
                    conversation.Attachment("media://2", "application/pdf", document),
                ],
            )
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(
                agent_id="conversation.other",
                thinking_content="Let me search.",
                tool_calls=[
                    llm.ToolInput("web_search", {"q": "x"}, id="ext1", external=True)
                ],
            )
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.ToolResultContent(
                agent_id="conversation.other",
                tool_call_id="ext1",
                tool_name="web_search",
                result=llm.ToolResult({"hits": 1}),
            )
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(
                agent_id="conversation.other", content="A photo of a manual."
            )
        )
    simulator.enqueue("/chat/completions", sse=sse_text("Sure."))

    await converse(hass, "Thanks", conversation_id)

    messages = simulator.chat_requests()[0]["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    parts = messages[1]["content"]
    assert parts[0] == {"type": "text", "text": "What is this?"}
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert parts[2]["type"] == "file"
    assert parts[2]["file"]["filename"] == "manual.pdf"
    assert messages[2] == {"role": "assistant", "content": "A photo of a manual."}
    assert simulator.chat_requests()[0] == snapshot


async def test_unanswered_calls_get_a_result(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A call left without a result (an aborted turn) is answered; Mistral rules."""
    await setup_entry(provider="mistral", conversation={CONF_LLM_HASS_API: []})
    with (
        chat_session.async_get_chat_session(hass, context=Context()) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        conversation_id = session.conversation_id
        chat_log.async_add_user_content(conversation.UserContent("Lights on"))
        chat_log.content.append(
            conversation.AssistantContent(
                agent_id=AGENT,
                tool_calls=[
                    llm.ToolInput("HassTurnOn", {}, id="01JABCDEFGHJKMNPQRSTVWXYZ0")
                ],
            )
        )
    simulator.enqueue("/chat/completions", sse=sse_text("Sorry."))

    await converse(hass, "Hello?", conversation_id)

    body = simulator.chat_requests()[0]
    assert "stream_options" not in body  # Mistral refuses the field
    messages = body["messages"]
    call_id = messages[2]["tool_calls"][0]["id"]
    assert len(call_id) == 9
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": json.dumps({"error": "no result"}, separators=(",", ":")),
    }


# ---------------------------------------------------------------------------
# Features a server refuses: sent again at once without them, and learned
# ---------------------------------------------------------------------------


def _refusal(message: str) -> dict[str, Any]:
    """Return an OpenAI-style error body."""
    return {"error": {"message": message, "type": "invalid_request_error"}}


@pytest.mark.parametrize(
    ("settings", "refusal", "gone"),
    [
        pytest.param(
            {},
            "Streaming is not supported when tools are specified",
            ("stream", "stream_options"),
            id="streaming with tools",
        ),
        pytest.param(
            {},
            "Unrecognized request argument supplied: stream_options",
            ("stream_options",),
            id="stream options",
        ),
        pytest.param(
            {"recommended": False, "temperature": 0.5, "top_p": 0.9},
            "Unsupported value: 'temperature' does not support 0.5 with this "
            "model. Only the default (1) value is supported.",
            ("temperature", "top_p"),
            id="sampling",
        ),
    ],
)
async def test_a_refused_feature_is_dropped_and_learned(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    settings: dict[str, Any],
    refusal: str,
    gone: tuple[str, ...],
) -> None:
    """The same round goes again without it; the next turn never sends it."""
    await setup_entry(conversation=settings)
    simulator.enqueue("/chat/completions", status=400, json=_refusal(refusal))

    first = await converse(hass, "Hello")
    second = await converse(hass, "Hello again")

    assert "Hello" in speech(first)
    assert "Hello again" in speech(second)
    refused, accepted, later = simulator.chat_requests()
    assert all(key in refused for key in gone)
    assert not any(key in accepted for key in gone)
    assert not any(key in later for key in gone)
    assert accepted["messages"] == refused["messages"]


async def test_a_template_that_takes_one_system_message_gets_it_folded(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """Gemma's template on vLLM refuses the device's lines as a second one."""
    entry = await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json=_refusal(
            "Conversation roles must alternate user/assistant/user/assistant/..."
        ),
    )

    first = await converse(hass, "Hello")
    await converse(hass, "Hello again")

    assert "Hello" in speech(first)
    refused, accepted, later = simulator.chat_requests()
    assert [message["role"] for message in refused["messages"]] == [
        "system",
        "system",
        "user",
    ]
    for body in (accepted, later):
        [user] = body["messages"]
        assert user["content"].startswith(refused["messages"][0]["content"])
    assert accepted["messages"][0]["content"].endswith(f"{NO_TIMERS}\n\nHello")
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.SYSTEM_MESSAGES)


async def test_the_name_of_the_token_limit_is_switched(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A model that wants max_completion_tokens gets it, and keeps getting it."""
    entry = await setup_entry(conversation={"recommended": False, "max_tokens": 99})
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json=_refusal(
            "Unsupported parameter: 'max_tokens' is not supported with this "
            "model. Use 'max_completion_tokens' instead."
        ),
    )

    await converse(hass, "Hello")
    await converse(hass, "Hello again")

    assert [
        (body.get("max_tokens"), body.get("max_completion_tokens"))
        for body in simulator.chat_requests()
    ] == [(99, None), (None, 99), (None, 99)]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.MAX_TOKENS)


async def test_a_model_without_tools_says_so(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Tools cannot be dropped from an agent that controls the home: a clear error."""
    await setup_entry()
    simulator.settings.supports_tools = False

    result = await converse(hass, "Turn on the light")

    assert speech(result).startswith(
        "The model cannot call tools: registry.ollama.ai/library/gemma:2b does "
        "not support tools."
    )
    assert len(simulator.chat_requests()) == 1


async def test_a_refusal_that_names_nothing_is_not_repeated(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 400 that names no feature we can drop is the turn's error, sent once."""
    await setup_entry()
    simulator.enqueue(
        "/chat/completions", status=400, json=_refusal("Something is wrong")
    )

    result = await converse(hass, "Hello")

    assert "Something is wrong" in speech(result)
    assert len(simulator.chat_requests()) == 1


async def test_a_proxy_outage_is_not_taken_for_a_refusal(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A proxy's 502 about its upstream names no feature: sent once, not learned."""
    entry = await setup_entry()
    simulator.enqueue(
        "/chat/completions",
        status=502,
        raw="<html><body>Upstream server is not available</body></html>",
        headers={"Content-Type": "text/html"},
    )

    result = await converse(hass, "Hello")

    assert "A proxy in front of the model server answered 502" in speech(result)
    assert len(simulator.chat_requests()) == 1
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert not model.lessons.refused


async def test_tool_choice_refused_is_dropped(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """VLLM without its auto tool choice flag: the request goes without it."""
    entry = await setup_entry()
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json=_refusal(
            '"auto" tool choice requires --enable-auto-tool-choice and '
            "--tool-call-parser to be set"
        ),
    )

    await converse(hass, "Hello")
    await converse(hass, "Hello again")

    assert [body.get("tool_choice") for body in simulator.chat_requests()] == [
        "auto",
        None,
        None,
    ]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.TOOL_CHOICE)


async def test_a_stream_that_ends_before_it_begins_next_to_tools(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """llama-cpp-python ends a stream at once when it may choose a tool: unstreamed."""
    entry = await setup_entry()
    simulator.enqueue(
        "/chat/completions", raw="", headers={"Content-Type": "text/event-stream"}
    )

    first = await converse(hass, "Hello")
    await converse(hass, "Hello again")

    assert "Hello" in speech(first)
    assert [body.get("stream") for body in simulator.chat_requests()] == [
        True,
        None,
        None,
    ]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.STREAM_WITH_TOOLS)


@pytest.mark.parametrize("api", [WireApi.CHAT_COMPLETIONS, WireApi.RESPONSES])
async def test_a_refused_cache_key_is_dropped_and_learned(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    api: WireApi,
) -> None:
    """A server behind the OpenAI preset that refuses prompt_cache_key.

    The turn is sent again at once without it and answered; the next turn
    never sends it.
    """
    simulator.settings.prompt_cache_key = False
    entry = await setup_entry(
        provider="openai",
        conversation={CONF_LLM_HASS_API: []},
        options={CONF_API: api},
    )

    first = await converse(hass, "Hello")
    second = await converse(hass, "Hello again")

    assert speech(first) and speech(second)
    bodies = (
        simulator.chat_requests()
        if api is WireApi.CHAT_COMPLETIONS
        else simulator.responses_requests()
    )
    assert ["prompt_cache_key" in body for body in bodies] == [True, False, False]
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert set(model.lessons.refused) == {Feature.PROMPT_CACHE_KEY}


# ---------------------------------------------------------------------------
# What Home Assistant gives a model to read: sentence triggers, thinking, errors
# ---------------------------------------------------------------------------


async def test_a_sentence_trigger_is_told_as_a_call_and_its_result(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A sentence trigger Home Assistant answered earlier reaches the model."""
    assert await async_setup_component(
        hass,
        "automation",
        {
            "automation": {
                "triggers": {"trigger": "conversation", "command": "open sesame"},
                "actions": {"set_conversation_response": "The cave is open"},
            }
        },
    )
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    user_input = conversation.ConversationInput(
        text="open sesame",
        context=Context(),
        conversation_id=None,
        device_id=None,
        satellite_id=None,
        language="en",
        agent_id=AGENT,
    )
    with (
        chat_session.async_get_chat_session(hass, context=Context()) as session,
        conversation.async_get_chat_log(hass, session, user_input) as chat_log,
    ):
        said = await conversation.async_handle_sentence_triggers(
            hass, user_input, chat_log
        )
    simulator.enqueue("/chat/completions", sse=sse_text("It is."))

    await converse(hass, "Is the cave open?", session.conversation_id)

    assert said == "The cave is open"
    messages = simulator.chat_requests()[0]["messages"]
    call = messages[2]["tool_calls"][0]
    assert call["function"] == {"name": "trigger_sentence", "arguments": "{}"}
    assert messages[3]["tool_call_id"] == call["id"]
    assert json.loads(messages[3]["content"]) == {"response": "The cave is open"}


async def test_a_failed_result_reaches_the_model_as_an_error(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A result marked as an error says so, whatever its data holds."""
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    with (
        chat_session.async_get_chat_session(hass, context=Context()) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        chat_log.async_add_user_content(conversation.UserContent("Water the garden"))
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(
                agent_id=AGENT,
                tool_calls=[
                    llm.ToolInput("trigger_sentence", {}, id="t1", external=True)
                ],
            )
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.ToolResultContent(
                agent_id=AGENT,
                tool_call_id="t1",
                tool_name="trigger_sentence",
                result=llm.ToolResult({"valve": "stuck"}, error=True),
            )
        )
    simulator.enqueue("/chat/completions", sse=sse_text("Sorry."))

    await converse(hass, "Did it work?", session.conversation_id)

    result = simulator.chat_requests()[0]["messages"][3]
    assert json.loads(result["content"]) == {"error": {"valve": "stuck"}}


async def test_thinking_is_given_back_until_refused(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """The model's thinking goes back with its call; a refusal drops it, learned."""
    entry = await setup_entry()
    simulator.enqueue(
        "/chat/completions",
        sse=[
            chunk({"reasoning_content": "The user wants light."}),
            *sse_tool_calls([("c1", "intent__HassTurnOn", {"name": "Kitchen light"})]),
        ],
    )
    simulator.enqueue("/chat/completions", sse=sse_text("It is on."))
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json=_refusal(
            "Unrecognized request argument supplied: messages[2].reasoning_content"
        ),
    )
    simulator.enqueue("/chat/completions", sse=sse_text("Welcome."))

    first = await converse(hass, "Turn on the kitchen light")
    await converse(hass, "Thanks", first.conversation_id)

    taken, refused, accepted = simulator.chat_requests()[1:]
    assert taken["messages"][3]["reasoning_content"] == "The user wants light."
    assert "reasoning_content" in refused["messages"][3]
    assert not any("reasoning_content" in m for m in accepted["messages"])
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refuses(Feature.REASONING_CONTENT)


SYSTEM = {"role": "system", "content": "You control a home."}


def _said(role: str, text: str) -> dict[str, Any]:
    """Return a message of a role."""
    return {"role": role, "content": text}


def test_fold_system_into_the_first_user_message() -> None:
    """The system prompt goes first in the first user message, the rest as it was."""
    second = [_said("user", "b"), _said("assistant", "B")]
    messages = [SYSTEM, _said("user", "a"), _said("assistant", "A"), *second]

    folded = fold_system(messages)

    assert folded == [
        _said("user", f"{SYSTEM['content']}\n\na"),
        _said("assistant", "A"),
        *second,
    ]
    # The next request of the conversation starts with this one, folded alike.
    later = fold_system([*messages, _said("user", "c")])
    assert later[: len(folded)] == folded
    assert messages[0] == SYSTEM  # the input is left as it was


def test_fold_system_without_a_user_message_first() -> None:
    """Attachments keep their parts; with no user message first, one is made."""
    parts = {"role": "user", "content": [{"type": "text", "text": "look"}]}
    assert fold_system([SYSTEM, parts])[0]["content"] == [
        {"type": "text", "text": f"{SYSTEM['content']}\n\n"},
        {"type": "text", "text": "look"},
    ]
    assert fold_system([SYSTEM, _said("assistant", "Hi")]) == [
        _said("user", SYSTEM["content"]),
        _said("assistant", "Hi"),
    ]
    assert fold_system([_said("user", "a")]) == [_said("user", "a")]


# --- the order of a rendered request ------------------------------------------

KITCHEN_AREA = "You are in area Kitchen and all generic commands"
BEDROOM_AREA = "You are in area Bedroom (floor Upstairs)"
NO_TIMERS = "This device is not able to start timers."
SATELLITE_PROMPT = "The user is in a hurry."


@pytest.fixture
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Keep the date line stable."""
    freezer.move_to("2026-11-29 12:00:00+00:00")


def _device(hass: HomeAssistant, name: str, area: str, floor: str | None) -> str:
    """Return a new satellite device, in an area (on a floor)."""
    source = MockConfigEntry(domain="satellite_maker")
    source.add_to_hass(hass)
    floor_id = fr.async_get(hass).async_create(floor).floor_id if floor else None
    area_id = ar.async_get(hass).async_create(area, floor_id=floor_id).id
    devices = dr.async_get(hass)
    device = devices.async_get_or_create(
        config_entry_id=source.entry_id, identifiers={("satellite_maker", name)}
    )
    devices.async_update_device(device.id, area_id=area_id)
    return device.id


async def _command(
    hass: HomeAssistant, text: str, device_id: str, extra: str | None = None
) -> None:
    """Say a command on a satellite: a new conversation."""
    await conversation.async_converse(
        hass,
        text,
        None,
        Context(),
        agent_id=AGENT,
        device_id=device_id,
        extra_system_prompt=extra,
    )


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body["tools"]]


@pytest.mark.usefixtures("frozen_time")
@pytest.mark.parametrize("api", [WireApi.CHAT_COMPLETIONS, WireApi.RESPONSES])
async def test_commands_of_two_satellites_share_the_system_prompt_and_tools(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
    api: WireApi,
) -> None:
    """What varies by device or command comes after the system prompt and tools."""
    await setup_entry(
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]},
        options={CONF_API: api.value},
    )
    kitchen = _device(hass, "kitchen", "Kitchen", None)
    bedroom = _device(hass, "bedroom", "Bedroom", "Upstairs")

    await _command(hass, "Good morning", kitchen)
    await _command(hass, "Good morning", bedroom, SATELLITE_PROMPT)

    if api is WireApi.CHAT_COMPLETIONS:
        first, second = (body["messages"] for body in simulator.chat_requests())
        tools = [_tool_names(body) for body in simulator.chat_requests()]
    else:
        first, second = (body["input"] for body in simulator.responses_requests())
        tools = [
            [tool["name"] for tool in body["tools"]]
            for body in simulator.responses_requests()
        ]
    assert first[0] == second[0]
    assert tools[0] == tools[1]
    assert [message["role"] for message in first] == ["system", "system", "user"]
    system = first[0]["content"]
    assert "Static Context" in system
    for varying in (KITCHEN_AREA, BEDROOM_AREA, NO_TIMERS, SATELLITE_PROMPT):
        assert varying not in system
    # Never in the user's words, which small models then take for the request.
    assert first[1]["content"].startswith(KITCHEN_AREA)
    assert first[1]["content"].endswith(NO_TIMERS)
    assert second[1]["content"].startswith(BEDROOM_AREA)
    assert second[1]["content"].endswith(f"{NO_TIMERS}\n{SATELLITE_PROMPT}")
    assert first[2]["content"] == second[2]["content"] == "Good morning"


@pytest.mark.usefixtures("frozen_time")
async def test_the_tools_only_some_devices_get_come_last(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A satellite that takes timers gets the timer tools after everyone's tools."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    kitchen = _device(hass, "kitchen", "Kitchen", None)
    bedroom = _device(hass, "bedroom", "Bedroom", None)
    async_register_timer_handler(hass, bedroom, lambda *_: None)

    await _command(hass, "Good morning", kitchen)
    await _command(hass, "Good morning", bedroom)

    without, with_timers = map(_tool_names, simulator.chat_requests())
    assert "intent__HassStartTimer" in with_timers
    assert with_timers[: len(without)] == without
    assert without == sorted(without)


@pytest.mark.usefixtures("frozen_time")
async def test_the_varying_part_stays_when_old_turns_are_dropped(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """It stays second, before the first user message the fitted request keeps."""
    await setup_entry(
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST], CONF_HISTORY_TURNS: 1}
    )
    conversation_id = None
    for text in ("Hello", "How are you", "Goodbye"):
        result = await converse(hass, text, conversation_id)
        conversation_id = result.conversation_id

    last = simulator.chat_requests()[-1]["messages"]
    users = [message["content"] for message in last if message["role"] == "user"]
    assert users == ["How are you", "Goodbye"]
    assert last[1]["content"].startswith("When a user asks to turn on all devices")
    assert last[1]["content"].endswith(NO_TIMERS)
    assert NO_TIMERS not in last[0]["content"]


class _ClockTool(llm.Tool):
    """A tool of an API that tells no time."""

    name = "wind_clock"
    description = "Wind the clock."
    parameters = probatio.Schema({})

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> llm.ToolResult:
        """Wind it."""
        return llm.ToolResult({"wound": True})


class _ClockAPI(llm.API):
    """An API without Home Assistant's date tool: the prompt gets a date line."""

    async def async_get_api_instance(
        self, llm_context: llm.LLMContext
    ) -> llm.APIInstance:
        """Offer the one tool."""
        return llm.APIInstance(self, "Wind it daily.", llm_context, [_ClockTool()])


@pytest.mark.usefixtures("frozen_time")
async def test_the_date_line_goes_after_the_tools(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """Where the API tells no time, the date line moves; without tools, it stays."""
    llm.async_register_api(hass, _ClockAPI(hass=hass, id="clock", name="Clock"))
    await setup_entry(conversation={CONF_LLM_HASS_API: ["clock"]})

    await converse(hass, "Hello")
    freezer.tick(61)
    await converse(hass, "Hello")

    first, second = (body["messages"] for body in simulator.chat_requests())
    assert first[0] == second[0]
    assert first[0]["content"].endswith("Wind it daily.")
    assert first[1]["content"].startswith("Current time is 04:00:00.")
    assert second[1]["content"].startswith("Current time is 04:01:01.")


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        (
            "Be brief.\nCurrent time is 04:00:00.\n",
            ("Be brief.", "Current time is 04:00:00."),
        ),
        ("Be brief.", ("Be brief.", "")),
    ],
)
def test_split_instructions(text: str, parts: tuple[str, str]) -> None:
    """The date line and what follows it vary; a prompt without it does not."""
    assert split_instructions(text) == parts
