"""Faults in the answer's body: bounds, linear time, SSE lines, shapes, cuts.

Every fault goes through the local server at the HTTP level, while a healthy
agent keeps answering (see conftest.py).
"""

from __future__ import annotations

import gzip
import json
import logging
from typing import Any

from homeassistant.components import ai_task, conversation
from homeassistant.components.conversation.chat_log import DATA_CHAT_LOGS
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import intent
import probatio
import pytest

from custom_components.openai_compatible.net.readers import (
    MAX_ANSWER_BYTES,
    MAX_LINE_BYTES,
)
from custom_components.openai_compatible.wire.tool_calls import MAX_TOOL_CALLS
from simulator import chunk, sse_text

from .conftest import FaultHarness, FaultHarnessFactory

CHAT = "/chat/completions"
NO_TOOLS = {CONF_LLM_HASS_API: []}
STREAMING_OFF = {CONF_LLM_HASS_API: [], "streaming": False}


def event(data: dict[str, Any], end: str = "\n\n") -> str:
    """Return one event with its JSON written raw, nothing escaped to ASCII."""
    return f"data: {json.dumps(data, ensure_ascii=False)}{end}"


def speech(result: conversation.ConversationResult) -> str:
    """Return what the agent said."""
    return str(result.response.speech["plain"]["speech"])


def failed(result: conversation.ConversationResult) -> bool:
    """Tell whether the turn ended in an error."""
    return result.response.response_type == intent.IntentResponseType.ERROR


def call_chunk(index: int, call_id: str | None, name: str, arguments: str) -> str:
    """Return one raw event carrying a whole tool call."""
    call: dict[str, Any] = {
        "index": index,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    if call_id is not None:
        call["id"] = call_id
    return event(chunk({"tool_calls": [call]}))


def chat_log_of(harness: FaultHarness, question: str) -> conversation.ChatLog:
    """Return the chat log of the conversation that asked the question."""
    (log,) = (
        log
        for log in harness.hass.data[DATA_CHAT_LOGS].values()
        if any(content.content == question for content in log.content)
    )
    return log


# --- 1. Bounds ---------------------------------------------------------------


async def test_one_line_is_read_up_to_its_limit(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A line just under MAX_LINE_BYTES reads; one past it fails, translated."""
    assert MAX_LINE_BYTES == 1024 * 1024
    harness = await fault_harness(conversation=NO_TOOLS)
    fits = "x" * (MAX_LINE_BYTES - 300)
    harness.faulty.enqueue(CHAT, sse=sse_text(fits, split=len(fits)))
    result = await harness.run(harness.converse("Hi"))
    assert speech(result) == fits

    harness.faulty.enqueue(CHAT, sse=[event(chunk({"content": "x" * MAX_LINE_BYTES}))])
    result = await harness.run(harness.converse("Hi"))
    assert failed(result)
    assert "line longer than 1 MiB" in speech(result)


async def test_a_streamed_answer_is_read_up_to_its_limit(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A stream past MAX_ANSWER_BYTES fails, translated.

    Home Assistant's chat log writes each delta and content whole in its own
    debug lines (off unless asked for): 16 MiB of them would be its stall.
    """
    assert MAX_ANSWER_BYTES == 16 * 1024 * 1024
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.caplog.set_level(logging.INFO, "homeassistant.components.conversation")
    piece = event(chunk({"content": "x" * (MAX_LINE_BYTES // 2)}))
    harness.faulty.enqueue(CHAT, sse=[piece] * (2 * MAX_ANSWER_BYTES // len(piece) + 1))

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert "larger than 16 MiB" in speech(result)


@pytest.mark.parametrize(
    "answer",
    [
        {"json": {"choices": [{"message": {"content": "x" * MAX_ANSWER_BYTES}}]}},
        {
            "raw": gzip.compress(b" " * (MAX_ANSWER_BYTES + 1)),
            "headers": {
                "Content-Encoding": "gzip",
                "Content-Type": "application/json",
            },
        },
    ],
    ids=["plain", "gzip"],
)
async def test_a_whole_answer_is_read_up_to_its_limit(
    fault_harness: FaultHarnessFactory, answer: dict[str, Any]
) -> None:
    """A whole answer is capped too, counted after decompression."""
    harness = await fault_harness(conversation=STREAMING_OFF)
    harness.faulty.enqueue(CHAT, **answer)

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert "larger than 16 MiB" in speech(result)


async def test_at_most_max_calls_in_one_answer(
    fault_harness: FaultHarnessFactory,
) -> None:
    """An answer with more than MAX_TOOL_CALLS calls runs none of them."""
    assert MAX_TOOL_CALLS == 32
    harness = await fault_harness()
    calls = [
        call_chunk(index, f"c{index}", "GetDateTime", "{}")
        for index in range(MAX_TOOL_CALLS + 1)
    ]
    harness.faulty.enqueue(CHAT, sse=[*calls, event(chunk({}, finish_reason="stop"))])

    result = await harness.run(harness.converse("What time is it?"))

    assert failed(result)
    assert "more than 32 tool calls" in speech(result)
    assert len(harness.faulty.chat_requests()) == 1


async def test_a_repeated_call_id_runs_once(
    fault_harness: FaultHarnessFactory,
) -> None:
    """Two calls with one id run one tool; the server gets one result."""
    harness = await fault_harness()
    harness.faulty.enqueue(
        CHAT,
        sse=[
            call_chunk(0, "same", "GetDateTime", "{}"),
            call_chunk(1, "same", "GetDateTime", "{}"),
            event(chunk({}, finish_reason="tool_calls")),
        ],
    )
    harness.faulty.enqueue(CHAT, sse=sse_text("It is noon."))

    result = await harness.run(harness.converse("What time is it?"))

    assert speech(result) == "It is noon."
    messages = harness.faulty.chat_requests()[1]["messages"]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["same"]


# --- 2. Linear time on the event loop ------------------------------------------


async def test_held_whitespace_is_spoken_with_the_words(
    fault_harness: FaultHarnessFactory,
) -> None:
    """1 MiB of whitespace in many pieces, held while tools are offered."""
    harness = await fault_harness()
    spaces = event(chunk({"content": " \n" * 512}))
    harness.faulty.enqueue(
        CHAT,
        sse=[spaces * 1024, event(chunk({"content": "Hi"}, finish_reason="stop"))],
    )

    result = await harness.run(harness.converse("Hello"))

    assert speech(result).strip() == "Hi"


async def test_leading_brackets_are_spoken(
    fault_harness: FaultHarnessFactory,
) -> None:
    """Thousands of leading `[` neither recurse nor hide the text."""
    harness = await fault_harness()
    text = "[" * 100_000 + " not a call"
    harness.faulty.enqueue(CHAT, sse=sse_text(text, split=1000))

    result = await harness.run(harness.converse("Hello"))

    assert speech(result) == text


@pytest.mark.parametrize("arguments", ["[" * 100_000, '{"a":' * 300 + "1" + "}" * 300])
async def test_deep_arguments_are_answered_to_the_model(
    fault_harness: FaultHarnessFactory, arguments: str
) -> None:
    """Arguments nested too deeply to parse or to write back: the model is told."""
    harness = await fault_harness()
    harness.faulty.enqueue(
        CHAT,
        sse=[
            call_chunk(0, "c1", "GetDateTime", arguments),
            event(chunk({}, finish_reason="tool_calls")),
        ],
    )
    harness.faulty.enqueue(CHAT, sse=sse_text("Done."))

    result = await harness.run(harness.converse("What time is it?"))

    assert speech(result) == "Done."
    call, answer = harness.faulty.chat_requests()[1]["messages"][-2:]
    assert call["tool_calls"][0]["function"]["arguments"] == "{}"
    assert answer["tool_call_id"] == "c1"
    assert json.loads(answer["content"])["error"] == "invalid_tool_arguments"


async def test_many_tool_call_fragments(fault_harness: FaultHarnessFactory) -> None:
    """A call whose arguments come in 20,000 fragments is assembled."""
    harness = await fault_harness()
    value = "y" * 20_000
    fragments = [call_chunk(0, "c1", "GetDateTime", '{"x": "')]
    fragments += [
        event(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "y"}}]}))
    ] * len(value)
    fragments.append(
        event(
            chunk(
                {"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]},
                finish_reason="tool_calls",
            )
        )
    )
    harness.faulty.enqueue(CHAT, sse=["".join(fragments)])
    harness.faulty.enqueue(CHAT, sse=sse_text("Done."))

    result = await harness.run(harness.converse("What time is it?"))

    assert speech(result) == "Done."
    (call,) = harness.faulty.chat_requests()[1]["messages"][-2]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"x": value}


# --- 3. SSE decoding by the spec -------------------------------------------------


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
async def test_unicode_line_separators_stay_in_the_text(
    fault_harness: FaultHarnessFactory, separator: str
) -> None:
    """Raw U+2028, U+2029 and U+0085 inside JSON strings are text."""
    harness = await fault_harness(conversation=NO_TOOLS)
    text = f"Hello{separator}world"
    harness.faulty.enqueue(
        CHAT,
        sse=[
            event(chunk({"content": text})),
            event(chunk({}, finish_reason="stop")),
        ],
    )

    result = await harness.run(harness.converse("Hi"))

    assert speech(result) == text


async def test_line_ends_and_characters_cut_between_writes(
    fault_harness: FaultHarnessFactory,
) -> None:
    """CR, LF and CRLF end lines, even cut apart; a character cut in two joins."""
    harness = await fault_harness(conversation=NO_TOOLS)
    house = event(chunk({"content": "🏠 "}), end="\r").encode()
    harness.faulty.enqueue(
        CHAT,
        sse=[
            house[:-5],
            house[-5:],  # the emoji's bytes arrive in two writes
            b"\r",
            event(chunk({"content": "is"}), end="\r\n"),
            "\r\n",
            event(chunk({"content": " home"}), end="\n\n"),
            event(chunk({}, finish_reason="stop"), end="\r\n\r\n"),
        ],
    )

    result = await harness.run(harness.converse("Hi"))

    assert speech(result) == "🏠 is home"


async def test_comments_fields_and_garbage_are_skipped(
    fault_harness: FaultHarnessFactory,
) -> None:
    """Keep-alives, other fields and lines that are not JSON are skipped."""
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(
        CHAT,
        sse=[
            ": keep-alive\n\n",
            "event: message\nid: 1\nretry: 10\n",
            "data: not json\n\n",
            chunk({"role": "assistant", "content": "Hel"}),
            chunk({"content": "lo"}),
        ],
    )

    result = await harness.run(harness.converse("Hi"))

    assert speech(result) == "Hello"


# --- 4. Every chunk shape checked ----------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"choices": "none"},
        {"choices": [{"index": 0, "delta": ["a"]}]},
        {"choices": [{"index": 0, "delta": "text"}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": {"a": 1}}]},
        chunk({"tool_calls": {"index": 0}}),
        chunk({"tool_calls": [{"index": 0, "function": {"name": {"n": "x"}}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 42}}]}),
        chunk({"tool_calls": [{"index": 0, "function": "GetDateTime"}]}),
        chunk({"tool_calls": ["GetDateTime"]}),
        {"choices": [], "usage": "lots"},
        "data: [1, 2]\n\n",
    ],
)
async def test_chunks_of_the_wrong_shape(
    fault_harness: FaultHarnessFactory, bad: dict[str, Any] | str
) -> None:
    """Any part of the wrong shape ends the turn with a translated error."""
    harness = await fault_harness()
    harness.faulty.enqueue(CHAT, sse=[chunk({"content": "Hi"}), bad])

    result = await harness.run(harness.converse("Hello"))

    assert failed(result)
    assert "answer could not be read" in speech(result)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"raw": "<html>oops</html>"}, "it is not JSON"),
        ({"json": {"choices": "none"}}, "choices is not in the form"),
        ({"json": ["not", "an", "object"]}, "the answer is not in the form"),
        ({"json": {"error": {"message": "overloaded"}}}, "overloaded"),
    ],
)
async def test_whole_answers_of_the_wrong_shape(
    fault_harness: FaultHarnessFactory, answer: dict[str, Any], problem: str
) -> None:
    """A whole answer that is no chat completion gives a readable error."""
    harness = await fault_harness(conversation=STREAMING_OFF)
    harness.faulty.enqueue(CHAT, **answer)

    result = await harness.run(harness.converse("Hello"))

    assert failed(result)
    assert problem in speech(result)


async def test_error_event_mid_stream(fault_harness: FaultHarnessFactory) -> None:
    """An error event inside the stream becomes a translated error."""
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(
        CHAT,
        sse=[
            chunk({"role": "assistant", "content": "Hel"}),
            {"error": {"message": "model crashed"}},
        ],
    )

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert "model crashed" in speech(result)


# --- 5. Cut answers are told ------------------------------------------------------------


@pytest.mark.parametrize(
    ("ending", "done", "cause"),
    [
        ([], False, "stopped sending the answer before it was complete"),
        ([chunk({}, finish_reason="length")], True, "maximum number of tokens"),
        ([chunk({}, finish_reason="content_filter")], True, "content filter"),
    ],
    ids=["unended", "length", "content_filter"],
)
async def test_a_cut_answer_is_told_and_runs_no_tool(
    fault_harness: FaultHarnessFactory,
    ending: list[dict[str, Any]],
    done: bool,
    cause: str,
) -> None:
    """The cause is told, no half-assembled call runs, the words stay in the log."""
    harness = await fault_harness()
    harness.faulty.enqueue(
        CHAT,
        sse=[
            chunk({"content": "Let me check the "}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "function": {"name": "GetDateTime", "arguments": '{"a'},
                        }
                    ]
                }
            ),
            *ending,
        ],
        done=done,
    )

    result = await harness.run(harness.converse("What time is it?"))

    assert failed(result)
    assert cause in speech(result)
    assert len(harness.faulty.chat_requests()) == 1
    log = chat_log_of(harness, "What time is it?")
    said = [c for c in log.content if isinstance(c, conversation.AssistantContent)]
    assert [(c.content, c.tool_calls) for c in said] == [
        ("Let me check the ", None),
        (f"Error: {speech(result)}", None),
    ]
    # The next turn sends the words the user already heard.
    harness.faulty.enqueue(CHAT, sse=sse_text("Noon."))
    await harness.converse("And now?", log.conversation_id)
    messages = harness.faulty.chat_requests()[1]["messages"]
    assert {"role": "assistant", "content": "Let me check the "} in messages


async def test_a_task_answer_cut_at_the_token_limit_is_told(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A structured task cut off says so, not that its JSON is broken."""
    harness = await fault_harness()
    harness.faulty.enqueue(
        CHAT,
        sse=[
            chunk({"content": '{"condition": "sun'}),
            chunk({}, finish_reason="length"),
        ],
    )

    with pytest.raises(HomeAssistantError, match="maximum number of tokens"):
        await harness.run(
            ai_task.async_generate_data(
                harness.hass,
                task_name="Weather",
                entity_id=harness.faulty_ai_task,
                instructions="Describe today's weather",
                structure=probatio.Schema({probatio.Required("condition"): str}),
            )
        )


async def test_an_event_of_two_million_lines_keeps_the_loop_free(
    fault_harness: FaultHarnessFactory,
) -> None:
    """One event of 2 million short data lines is read in bounded batches."""
    harness = await fault_harness(conversation=NO_TOOLS)
    lines = "data: x\n" * 2_000_000
    harness.faulty.enqueue(CHAT, sse=[lines + "\n", event(chunk({"content": "Hi"}))])

    result = await harness.run(harness.converse("Hi"))

    assert speech(result) == "Hi"


# A server's message inside a stream: markup, then half a million characters.
HOSTILE_MESSAGE = "<script>alert(1)</script><b>Overloaded</b> " + "y" * 500_000
HOSTILE_EVENTS = {
    "chat_error_chunk": ("custom", CHAT, [{"error": {"message": HOSTILE_MESSAGE}}]),
    "responses_error": (
        "openai",
        "/responses",
        [{"type": "error", "code": "server_error", "message": HOSTILE_MESSAGE}],
    ),
    "responses_failed": (
        "openai",
        "/responses",
        [
            {
                "type": "response.failed",
                "response": {"status": "failed", "error": {"message": HOSTILE_MESSAGE}},
            }
        ],
    ),
}


@pytest.mark.parametrize(
    ("provider", "route", "events"), HOSTILE_EVENTS.values(), ids=HOSTILE_EVENTS
)
async def test_an_error_in_a_stream_is_shown_short_and_plain(
    fault_harness: FaultHarnessFactory,
    provider: str,
    route: str,
    events: list[Any],
) -> None:
    """An error event's message is told without markup, at most 200 characters."""
    harness = await fault_harness(provider=provider, conversation=NO_TOOLS)
    harness.faulty.enqueue(route, sse=events)

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    said = speech(result)
    assert "Overloaded y" in said
    assert "<" not in said
    assert "alert" not in said
    assert len(said) < 300
