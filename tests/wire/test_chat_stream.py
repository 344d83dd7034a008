"""Chat Completions answers read into chat log deltas."""

from __future__ import annotations

from collections.abc import AsyncIterator
import json
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
import httpx2
import pytest

from custom_components.openai_compatible.errors import ModelError, ServerError
from custom_components.openai_compatible.wire.chat_stream import (
    ANSWER_CUT,
    ChatStreamParser,
    ThinkTagSplitter,
    async_read_answer,
)
from custom_components.openai_compatible.wire.tool_calls import AnsweredCalls
from simulator import chunk

LIGHT_TOOLS = {"intent__HassTurnOn": "HassTurnOn"}
WRITTEN_CALL = '{"name": "HassTurnOn", "arguments": {"name": "Kitchen"}}'


def parse(
    chunks: list[dict[str, Any]],
    tool_names: dict[str, str] | None = None,
    *,
    short_call_ids: bool = False,
) -> list[dict[str, Any]]:
    """Feed chunks to a parser and return every delta of a whole answer."""
    parser = ChatStreamParser(tool_names or {}, short_call_ids=short_call_ids)
    deltas = [delta for item in chunks for delta in parser.feed(item)]
    return [*deltas, *parser.close(ended=True)]


def parse_with_tools(pieces: list[str]) -> list[list[dict[str, Any]]]:
    """Feed text pieces with tools offered; return the deltas of each step."""
    parser = ChatStreamParser(LIGHT_TOOLS)
    steps = [parser.feed(chunk({"content": piece})) for piece in pieces]
    return [*steps, parser.close(ended=True)]


def call_fragment(**fields: Any) -> dict[str, Any]:
    """Return a chunk with one tool call fragment."""
    return chunk({"tool_calls": [{"index": 0, **fields}]})


async def body(*chunks: bytes) -> AsyncIterator[bytes]:
    """Yield the chunks as a response body would."""
    for piece in chunks:
        yield piece


async def read(
    parser: ChatStreamParser, *chunks: bytes, streamed: bool = True
) -> list[dict[str, Any]]:
    """Return the deltas of an answer read from the body's chunks."""
    return await read_from(parser, body(*chunks), streamed=streamed)


async def read_from(
    parser: ChatStreamParser,
    source: AsyncIterator[bytes],
    *,
    streamed: bool = True,
    into: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Collect the deltas of an answer into a list, which stays if it fails."""
    deltas = [] if into is None else into
    async for delta in async_read_answer(parser, source, streamed=streamed):
        deltas.append(delta)  # noqa: PERF401 (what came before an error counts)
    return deltas


def sse(*events: dict[str, Any], done: bool = True) -> bytes:
    """Return a stream of events, ended with [DONE] or not."""
    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    return (text + ("data: [DONE]\n\n" if done else "")).encode()


def test_reasoning_think_tags_and_refusals() -> None:
    """Reasoning fields and think blocks think; refusals are spoken."""
    deltas = parse(
        [
            chunk({"reasoning_content": "plan "}),
            chunk({"reasoning": "more", "content": "<think>own</think>Hi"}),
            chunk({"content": None, "refusal": "No."}),
        ]
    )
    assert deltas == [
        {"thinking_content": "plan "},
        {"thinking_content": "moreown"},
        {"content": "Hi"},
        {"content": "No."},
    ]


def test_unclosed_think_tag_stays_thinking() -> None:
    """A stream that ends inside a think block never speaks it."""
    assert parse([chunk({"content": "<think>still pondering <"})]) == [
        {"thinking_content": "still pondering "},
        {"thinking_content": "<"},
    ]


def test_the_first_choice_of_a_chunk() -> None:
    """Index 0 speaks, as often as sent (servers asked for one sometimes send more).

    Text falls back to a refusal; logprobs are not read.
    """
    parser = ChatStreamParser({"a": "A"})
    call = {"index": 0, "id": "c", "function": {"name": "a", "arguments": "{}"}}
    first = {
        "content": None,
        "refusal": "No.",
        "reasoning": "Hm.",
        "tool_calls": [call],
    }
    token = {"token": "No.", "logprob": -0.1, "top_logprobs": []}
    deltas = parser.feed(
        {
            "choices": [
                {"index": 1, "delta": "never read"},
                {
                    "index": 0,
                    "delta": first,
                    "logprobs": {"content": [token]},
                    "finish_reason": "tool_calls",
                },
                {"delta": {"content": "Hi", "reasoning_content": "Plan."}},
            ]
        }
    )
    assert deltas[:2] == [{"thinking_content": "Hm."}, {"content": "No."}]
    assert deltas[2]["tool_calls"] == [llm.ToolInput("A", {}, id="c")]
    assert deltas[3:] == [{"thinking_content": "Plan."}, {"content": "Hi"}]


@pytest.mark.parametrize(
    "bare",
    [
        {},
        {"choices": None},
        {"choices": []},
        {"choices": [{"index": 0, "delta": None, "finish_reason": ""}]},
        {"choices": [{"index": 0, "delta": {"content": None, "tool_calls": []}}]},
    ],
)
def test_chunks_that_add_nothing(bare: dict[str, Any]) -> None:
    """No choices, or a first choice with nothing in it, adds nothing."""
    parser = ChatStreamParser({})
    assert parser.feed(bare) == []
    assert parser.close(ended=False) == []
    with pytest.raises(ServerError) as err:  # an empty finish reason is none
        parser.raise_if_cut()
    assert err.value.translation_key == "answer_cut_short"


def test_call_fragments() -> None:
    """A fragment's index, id, name and arguments are read; empty strings are none."""
    deltas = parse(
        [
            call_fragment(id="c1", function={"name": "a", "arguments": '{"x": '}),
            call_fragment(id="", function={"name": "", "arguments": "1}"}),
            # Not an index: the call gets the next one (1).
            chunk({"tool_calls": [{"index": "0", "function": {"name": "b"}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": {"y": 2}}}]}),
            chunk({"tool_calls": [{"function": None}]}),
        ],
        {"a": "A", "b": "B"},
    )
    (delta,) = deltas
    first, second = delta["tool_calls"]
    assert (first.id, first.tool_name, first.tool_args) == ("c1", "A", {"x": 1})
    assert (second.tool_name, second.tool_args) == ("B", {"y": 2})


def test_calls_are_handed_over_once_at_the_finish() -> None:
    """Calls go out with the first finish; ids are made for calls without."""
    parser = ChatStreamParser({"a": "A"}, short_call_ids=True)
    assert parser.feed(call_fragment(function={"name": "a", "arguments": "{}"})) == []
    (delta,) = parser.feed(chunk({}, finish_reason="tool_calls"))
    (call,) = delta["tool_calls"]
    assert (call.tool_name, call.tool_args, len(call.id)) == ("A", {}, 9)
    assert parser.feed(chunk({}, finish_reason="tool_calls")) == []
    assert parser.close(ended=True) == []
    parser.raise_if_cut()
    (delta,) = parse([call_fragment(function={"name": "a"})], {"a": "A"})
    assert delta["tool_calls"][0].id.startswith("call_")


def test_invalid_arguments_are_answered_to_the_model() -> None:
    """A call whose arguments are no JSON is not run: a result tells the model."""
    calls, answer = parse(
        [call_fragment(id="x", function={"name": "a", "arguments": "{oops"})],
        {"a": "A"},
    )
    assert calls == {
        "tool_calls": [llm.ToolInput("A", {}, id="x", external=True)],
        "native": AnsweredCalls(frozenset({"x"})),
    }
    assert answer["role"] == "tool_result"
    assert answer["tool_call_id"] == "x"
    assert answer["result"].error
    assert answer["result"].data["error"] == "invalid_tool_arguments"


@pytest.mark.parametrize(
    ("bad", "part"),
    [
        ({"choices": "none"}, "choices"),
        ({"choices": {"index": 0}}, "choices"),
        ({"choices": ["a"]}, "choices"),
        ({"choices": [{"index": 1}, "a"]}, "choices"),
        ({"choices": [{"delta": ["a"]}]}, "choices.delta"),
        ({"choices": [{"delta": {"tool_calls": "a"}}]}, "tool_calls"),
        ({"choices": [{"index": 0, "delta": ["a"]}]}, "choices.delta"),
        ({"choices": [{"index": 0, "delta": "a"}]}, "choices.delta"),
        (
            {"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]},
            "choices.finish_reason",
        ),
        ({"choices": [{"index": 0, "delta": {"tool_calls": {"a": 1}}}]}, "tool_calls"),
        (call_fragment(function={"name": {"a": 1}}), "tool_calls.function.name"),
        (
            call_fragment(function={"name": "a", "arguments": 5}),
            "tool_calls.function.arguments",
        ),
        (
            call_fragment(function={"name": "a", "arguments": [1]}),
            "tool_calls.function.arguments",
        ),
        ({"usage": "many"}, "usage"),
    ],
)
def test_chunks_of_the_wrong_shape(bad: dict[str, Any], part: str) -> None:
    """Any part of the wrong shape is an unreadable answer, naming the part."""
    with pytest.raises(ServerError) as err:
        parse([bad])
    assert err.value.translation_key == "answer_malformed"
    assert err.value.translation_placeholders == {"part": part}


def test_an_error_event_is_raised() -> None:
    """An error inside the stream becomes the server's error."""
    with pytest.raises(ServerError) as err:
        parse([{"error": {"message": "model crashed"}}])
    assert err.value.translation_placeholders == {"message": "model crashed"}
    with pytest.raises(ServerError) as err:
        parse([{"error": "overloaded"}])
    assert err.value.translation_placeholders == {"message": "overloaded"}


def test_usage_is_kept() -> None:
    """The last usage figures are kept, only its counts; null changes nothing."""
    parser = ChatStreamParser({})
    parser.feed(chunk(None, usage={"prompt_tokens": 3, "cost": {"usd": [1]}}))
    parser.feed({"choices": [], "usage": None})
    assert parser.usage == {
        "prompt_tokens": 3,
        "completion_tokens": None,
        "total_tokens": None,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


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


def test_held_whitespace_is_spoken_with_the_words() -> None:
    """Whitespace before the first word is held, then spoken with it.

    A first word alone may still name a tool called as code (`Name(...)`).
    """
    steps = parse_with_tools(["\n", " " * 100, "\n", "Hi", " there"])
    assert steps == [[], [], [], [], [{"content": "\n" + " " * 100 + "\nHi there"}], []]
    assert parse_with_tools(["  "]) == [[], [{"content": "  "}]]


@pytest.mark.parametrize(
    "written",
    [
        "\n\n[" + WRITTEN_CALL + "]",
        '{"name": "HassTurnOn", "arguments": "{\\"name\\": \\"Kitchen\\"}"}',
        "<tool_call>" + WRITTEN_CALL + "</tool_call>",
        "<tool_call>" + WRITTEN_CALL + "</tool_call>\nDone, it is on.",
    ],
)
def test_calls_written_as_text(written: str) -> None:
    """Arrays of calls and string arguments work; nothing is spoken.

    Words after a call are not the answer: the next round says it.
    """
    steps = parse_with_tools([written[:5], written[5:]])
    *spoken, last = steps
    assert not any(spoken)
    (delta,) = last
    (call,) = delta["tool_calls"]
    assert (call.tool_name, call.tool_args) == ("HassTurnOn", {"name": "Kitchen"})


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "HassTurnOn", "arguments": "the kitchen"}',
        "[1, 2, 3]",
        "[" * 5000,
    ],
)
def test_text_that_is_not_only_calls_is_spoken(text: str) -> None:
    """Odd arguments, or data that is no call: all spoken."""
    steps = parse_with_tools([text])
    assert "".join(d["content"] for step in steps for d in step) == text


def test_text_repeating_native_calls_is_not_spoken() -> None:
    """A server that sends a call natively and as text runs it once, silently."""
    parser = ChatStreamParser(LIGHT_TOOLS)
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


@pytest.mark.parametrize(
    ("finish_reason", "error", "key"),
    [
        ("length", ModelError, "answer_cut_at_token_limit"),
        ("content_filter", ModelError, "answer_cut_by_content_filter"),
        (None, ServerError, "answer_cut_short"),
    ],
)
def test_a_cut_answer_runs_no_tool_and_says_why(
    finish_reason: str | None, error: type[Exception], key: str
) -> None:
    """A call cut short is not spoken, calls are dropped, the cause is raised."""
    parser = ChatStreamParser(LIGHT_TOOLS)
    chunks = [
        chunk({"content": '{"name": "HassTurnOn", "argu'}),
        call_fragment(id="c1", function={"name": "intent__HassTurnOn"}),
        call_fragment(function={"arguments": '{"na'}),
    ]
    if finish_reason:
        chunks.append(chunk({}, finish_reason=finish_reason))
    deltas = [delta for item in chunks for delta in parser.feed(item)]
    deltas += parser.close(ended=False)
    assert deltas == ([{"native": ANSWER_CUT}] if finish_reason == "length" else [])
    with pytest.raises(error) as err:
        parser.raise_if_cut()
    assert getattr(err.value, "translation_key", None) == key


def test_a_piece_of_a_native_call_is_not_said() -> None:
    """llama-server streamed a `{` as words, then the call it parsed, live."""
    parser = ChatStreamParser(LIGHT_TOOLS)
    deltas = parser.feed(chunk({"content": "{"}))
    deltas += parser.feed(
        call_fragment(
            id="c1", function={"name": "intent__HassTurnOn", "arguments": "{}"}
        )
    )
    deltas += parser.feed(chunk({}, finish_reason="tool_calls"))

    (handed,) = deltas
    assert handed["tool_calls"][0].id == "c1"


def test_calls_written_whole_before_the_limit_run() -> None:
    """A model that wrote its call, then made up its result until the limit.

    The call runs; what it made up is not said; the answer is not an error.
    """
    parser = ChatStreamParser(LIGHT_TOOLS)
    made_up = '\n{"speech": {}, "response_type": "action_done"}\n{"name": "Hass'
    deltas = parser.feed(chunk({"content": WRITTEN_CALL + made_up}))
    deltas += parser.feed(chunk({}, finish_reason="length"))
    deltas += parser.close(ended=True)

    (handed,) = deltas
    (call,) = handed["tool_calls"]
    assert (call.tool_name, call.tool_args) == ("HassTurnOn", {"name": "Kitchen"})
    parser.raise_if_cut()


def test_an_answer_without_finish_but_with_done_is_whole() -> None:
    """[DONE] without a finish reason ends the answer as it is."""
    parser = ChatStreamParser({"a": "A"})
    parser.feed(call_fragment(id="c1", function={"name": "a", "arguments": "{}"}))
    (delta,) = parser.close(ended=True)
    assert delta["tool_calls"][0].id == "c1"
    parser.raise_if_cut()


def test_whole_answer_as_a_chunk() -> None:
    """A whole answer's message is the delta of its one chunk."""
    answer = {
        "choices": [
            {"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1},
    }
    parser = ChatStreamParser({})
    assert parser.feed_whole(json.dumps(answer).encode()) == [{"content": "Hi"}]
    assert parser.usage is not None
    assert parser.usage["prompt_tokens"] == 1
    with pytest.raises(ServerError) as err:
        parser.feed_whole(b'{"error": {"message": "overloaded"}}')
    assert err.value.translation_placeholders == {"message": "overloaded"}


@pytest.mark.parametrize(
    ("raw", "key", "placeholders"),
    [
        (b"<html>oops</html>", "answer_not_json", None),
        (b"[1]", "answer_malformed", {"part": "the answer"}),
        (b'{"choices": "none"}', "answer_malformed", {"part": "choices"}),
        (b'{"choices": [1]}', "answer_malformed", {"part": "choices"}),
    ],
)
def test_whole_answers_that_are_no_chat_completion(
    raw: bytes, key: str, placeholders: dict[str, str] | None
) -> None:
    """A whole answer that cannot be read says so."""
    with pytest.raises(ServerError) as err:
        ChatStreamParser({}).feed_whole(raw)
    assert err.value.translation_key == key
    assert err.value.translation_placeholders == placeholders


async def test_read_a_streamed_answer() -> None:
    """A streamed answer is read from bytes cut anywhere."""
    stream = sse(
        chunk({"content": "Hello\u2028world"}), chunk({}, finish_reason="stop")
    )
    parser = ChatStreamParser({})
    assert await read(parser, stream[:11], stream[11:]) == [
        {"content": "Hello\u2028world"}
    ]


async def test_read_what_the_end_of_the_stream_releases() -> None:
    """A cut tag start held at the end is spoken once the stream is over."""
    stream = sse(chunk({"content": "Hi <"}), {"choices": [{"index": 0, "delta": None}]})
    parser = ChatStreamParser({})
    assert await read(parser, stream) == [{"content": "Hi "}, {"content": "<"}]


async def test_text_cut_at_the_token_limit_is_the_answer(hass: HomeAssistant) -> None:
    """Text the limit cut, with no tool call under way, stands, with a note."""
    parser = ChatStreamParser(LIGHT_TOOLS)
    stream = sse(
        chunk({"content": "You may call these "}),
        chunk({"content": "functions"}, finish_reason="length"),
    )
    deltas = await read(parser, stream)
    assert "".join(d.get("content", "") for d in deltas) == (
        "You may call these functions… (answer_cut)"
    )
    parser.raise_if_cut()


async def test_an_answer_cut_before_any_word_is_an_error() -> None:
    """Only thinking before the limit: no note alone is said, the cut is told."""
    parser = ChatStreamParser(LIGHT_TOOLS)
    stream = sse(chunk({"content": "\n\n<think>Let me"}, finish_reason="length"))
    with pytest.raises(ModelError) as err:
        await read(parser, stream)
    assert err.value.translation_key == "answer_cut_at_token_limit"


async def test_read_a_whole_answer() -> None:
    """A whole answer is read the same way, in one chunk."""
    answer = {"choices": [{"message": {"content": "Hi"}, "finish_reason": "stop"}]}
    raw = json.dumps(answer).encode()
    parser = ChatStreamParser({})
    assert await read(parser, raw[:5], raw[5:], streamed=False) == [{"content": "Hi"}]


@pytest.mark.parametrize(
    ("stream", "key"),
    [
        (sse(chunk({"content": "Hel"}), done=False), "answer_cut_short"),
        (sse(chunk({"content": "Hel"}), {"choices": 5}), "answer_malformed"),
    ],
)
async def test_reading_that_fails_keeps_the_streamed_words(
    stream: bytes, key: str
) -> None:
    """The words already streamed are closed as a message before the error."""
    parser = ChatStreamParser({})
    deltas: list[dict[str, Any]] = []
    with pytest.raises((ServerError, ModelError)) as err:
        await read_from(parser, body(stream), into=deltas)
    assert getattr(err.value, "translation_key", None) == key
    assert deltas == [{"content": "Hel"}, {"role": "assistant"}]


async def test_a_connection_lost_mid_answer_keeps_the_words() -> None:
    """A transport error mid-answer also closes the words as a message first."""

    async def broken() -> AsyncIterator[bytes]:
        yield sse(chunk({"content": "Hel"}), done=False)
        raise httpx2.ReadError("reset")

    parser = ChatStreamParser({})
    deltas: list[dict[str, Any]] = []
    with pytest.raises(httpx2.ReadError):
        await read_from(parser, broken(), into=deltas)
    assert deltas == [{"content": "Hel"}, {"role": "assistant"}]


def split(*pieces: str) -> tuple[str, str]:
    """Feed the pieces to a splitter; return all (thinking, spoken) text."""
    splitter = ThinkTagSplitter()
    results = [splitter.feed(piece) for piece in pieces]
    results.append(splitter.flush())
    return (
        "".join(thinking for thinking, _ in results),
        "".join(spoken for _, spoken in results),
    )


def test_think_splitter_handles_every_split_point() -> None:
    """However a think block is cut into chunks, the split is the same."""
    text = "<think>plan</think>  Answer <b>bold</b>"
    for cut in range(1, len(text)):
        assert split(text[:cut], text[cut:]) == ("plan", "Answer <b>bold</b>"), cut


def test_only_a_cut_tag_is_held_back() -> None:
    """Text is given at once, except the start of a tag at the chunk's end."""
    splitter = ThinkTagSplitter()
    assert splitter.feed("Hi <thi") == ("", "Hi ")
    assert splitter.feed("nk>plan</th") == ("plan", "")
    assert splitter.feed("ink>\n") == ("", "")
    assert splitter.feed(" done") == ("", "done")
    assert splitter.flush() == ("", "")


def test_many_blocks_in_one_chunk() -> None:
    """Many blocks in one chunk come out joined, in one piece each."""
    assert split("<think>a</think>b" * 1000) == ("a" * 1000, "b" * 1000)
