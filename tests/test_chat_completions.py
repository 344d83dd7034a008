"""The Chat Completions adapter: rendering, stream parsing, odd servers."""

from __future__ import annotations

import json
from pathlib import Path

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import chat_session, intent, llm
import pytest
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.chat_completions import (
    ChatStreamParser,
    RequestSettings,
    ThinkTagSplitter,
    ToolSet,
    build_tool_set,
)
from custom_components.openai_compatible.errors import ModelError
from simulator import OpenAISimulator, chunk, sse_text

from .conftest import AGENT, SetupEntry, converse

NO_TOOLS = ToolSet([], {}, {})


def parse(chunks: list[dict], settings: RequestSettings | None = None) -> list[dict]:
    """Feed chunks to a parser and return every delta."""
    parser = ChatStreamParser(NO_TOOLS, settings or RequestSettings(model="m"))
    deltas = [delta for item in chunks for delta in parser.feed(item)]
    return [*deltas, *parser.close()]


def test_think_splitter_handles_every_split_point() -> None:
    """However a think block is cut into chunks, the split is the same."""
    text = "<think>plan</think>  Answer <b>bold</b>"
    for cut in range(1, len(text)):
        splitter = ThinkTagSplitter()
        pieces = splitter.feed(text[:cut]) + splitter.feed(text[cut:])
        pieces += splitter.flush()
        thinking = "".join(t for is_thinking, t in pieces if is_thinking)
        spoken = "".join(t for is_thinking, t in pieces if not is_thinking)
        assert (thinking, spoken) == ("plan", "Answer <b>bold</b>"), cut


def test_unclosed_think_tag_stays_thinking() -> None:
    """A stream that ends inside a think block never speaks it."""
    deltas = parse([chunk({"content": "<think>still pondering <"})])
    assert deltas == [
        {"thinking_content": "still pondering "},
        {"thinking_content": "<"},
    ]


def test_calls_sharing_an_index_without_ids() -> None:
    """Two whole calls under one index and no ids become two calls."""
    deltas = parse(
        [
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "function": {"name": "a", "arguments": "{}"}}
                    ]
                }
            ),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "function": {"name": "b", "arguments": '{"x": 1}'},
                        }
                    ]
                }
            ),
            # A trailing fragment repeating the name adds nothing.
            chunk(
                {"tool_calls": [{"index": 0, "function": {"name": "b"}}]},
                finish_reason="tool_calls",
            ),
        ]
    )
    (delta,) = deltas
    calls = delta["tool_calls"]
    assert [(c.tool_name, c.tool_args) for c in calls] == [("a", {}), ("b", {"x": 1})]
    assert all(c.id.startswith("call_") for c in calls)


def test_calls_without_index_and_double_encoded_arguments() -> None:
    """Calls without an index each stand alone; string-encoded JSON is decoded."""
    deltas = parse(
        [
            chunk(
                {
                    "tool_calls": [
                        {"id": "1", "function": {"name": "a", "arguments": '"{}"'}},
                        {"id": "2", "function": {"name": "b", "arguments": "null"}},
                        {"id": "3", "function": {"arguments": "{}"}},
                    ]
                }
            ),
        ]
    )
    calls = deltas[0]["tool_calls"]
    assert [(c.id, c.tool_name, c.tool_args) for c in calls] == [
        ("1", "a", {}),
        ("2", "b", {}),
    ]


def test_invalid_arguments_raise_translated_error() -> None:
    """Arguments that are not JSON end the turn with a clear error."""
    with pytest.raises(ModelError) as err:
        parse(
            [
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "x",
                                "function": {"name": "a", "arguments": "{oops"},
                            }
                        ]
                    },
                    finish_reason="tool_calls",
                )
            ]
        )
    assert err.value.translation_key == "invalid_tool_arguments"


def test_short_ids_for_mistral() -> None:
    """Servers that want nine-character ids get them for missing ids."""
    deltas = parse(
        [chunk({"tool_calls": [{"index": 0, "function": {"name": "a"}}]})],
        RequestSettings(model="m", short_tool_call_ids=True),
    )
    assert len(deltas[0]["tool_calls"][0].id) == 9


def test_only_the_first_choice_speaks() -> None:
    """Servers asked for one answer sometimes send more choices."""
    parser = ChatStreamParser(NO_TOOLS, RequestSettings(model="m"))
    token = {"token": "yes", "logprob": -0.1, "top_logprobs": []}
    deltas = parser.feed(
        {
            "choices": [
                {"index": 1, "delta": {"content": "other"}},
                {
                    "index": 0,
                    "delta": {"content": "yes"},
                    "logprobs": {"content": [token]},
                },
            ]
        }
    )
    assert deltas == [{"content": "yes"}]


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


async def test_stream_oddities_over_http(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Keep-alives, comments and garbage lines are skipped; no finish is fine."""
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    simulator.enqueue(
        "/chat/completions",
        sse=[
            ": keep-alive\n\n",
            "data: not json\n\n",
            chunk({"role": "assistant", "content": "Hel"}),
            chunk({"content": "lo"}),
        ],
    )

    result = await converse(hass, "Hi")

    assert result.response.speech["plain"]["speech"] == "Hello"


async def test_error_event_mid_stream(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An error event inside the stream becomes a translated error."""
    await setup_entry(conversation={CONF_LLM_HASS_API: []})
    simulator.enqueue(
        "/chat/completions",
        sse=[
            chunk({"role": "assistant", "content": "Hel"}),
            {"error": {"message": "model crashed"}},
        ],
    )

    result = await converse(hass, "Hi")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "model crashed" in result.response.speech["plain"]["speech"]


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


LIGHT_TOOLS = ToolSet(
    [{"type": "function", "function": {"name": "intent__HassTurnOn"}}],
    {"HassTurnOn": "intent__HassTurnOn"},
    {"intent__HassTurnOn": "HassTurnOn"},
)


def parse_with_tools(pieces: list[str]) -> list[list[dict]]:
    """Feed text pieces with tools offered; return the deltas of each step."""
    parser = ChatStreamParser(LIGHT_TOOLS, RequestSettings(model="m"))
    steps = [parser.feed(chunk({"content": piece})) for piece in pieces]
    return [*steps, parser.close()]


def test_text_that_cannot_be_a_call_streams_at_once() -> None:
    """Held text is let go as soon as it can no longer be a call."""
    steps = parse_with_tools(["`", "light.kitchen", "` is on.", " More."])
    assert steps == [
        [],
        [{"content": "`light.kitchen"}],
        [{"content": "` is on."}],
        [{"content": " More."}],
        [],
    ]
    assert parse_with_tools(["{", " 42 }"])[1] == [{"content": "{ 42 }"}]


@pytest.mark.parametrize(
    "written",
    [
        '\n\n[{"name": "HassTurnOn", "arguments": {"name": "Kitchen"}}]',
        '{"name": "HassTurnOn", "arguments": "{\\"name\\": \\"Kitchen\\"}"}',
    ],
)
def test_calls_written_as_text(written: str) -> None:
    """Arrays of calls and string arguments work; nothing is spoken."""
    steps = parse_with_tools([written[:5], written[5:]])
    *spoken, last = steps
    assert not any(spoken)
    (delta,) = last
    (call,) = delta["tool_calls"]
    assert (call.tool_name, call.tool_args) == ("HassTurnOn", {"name": "Kitchen"})


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "HassTurnOn", "arguments": {}}</tool_call>\nDone, it is on.',
        '<tool_call>{"name": "HassTurnOn", "arguments": {}}</tool_call><tool_call>{"na',
        '{"name": "HassTurnOn", "arguments": "the kitchen"}',
        "[1, 2, 3]",
    ],
)
def test_text_that_is_not_only_calls_is_spoken(text: str) -> None:
    """Words besides the calls, a call cut short or odd arguments: all spoken."""
    steps = parse_with_tools([text])
    assert "".join(d["content"] for step in steps for d in step) == text


def test_text_repeating_native_calls_is_not_spoken() -> None:
    """A server that sends a call natively and as text runs it once, silently."""
    parser = ChatStreamParser(LIGHT_TOOLS, RequestSettings(model="m"))
    deltas = parser.feed(
        chunk(
            {
                "content": '{"name": "HassTurnOn", "arguments": {}}',
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c1",
                        "function": {"name": "intent__HassTurnOn", "arguments": "{}"},
                    }
                ],
            },
            finish_reason="tool_calls",
        )
    )
    assert deltas == [
        {"tool_calls": [llm.ToolInput(tool_name="HassTurnOn", tool_args={}, id="c1")]}
    ]
