"""Responses API events read into chat log deltas, one event at a time."""

from __future__ import annotations

from typing import Any

from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import llm
from homeassistant.helpers.json import json_bytes
import pytest

from custom_components.openai_compatible.errors import (
    MalformedAnswerError,
    ModelError,
    ServerError,
)
from custom_components.openai_compatible.wire.responses_stream import (
    CitationFilter,
    ResponsesReplay,
    ResponsesStreamParser,
)
from custom_components.openai_compatible.wire.tool_calls import MAX_TOOL_CALLS
from simulator import (
    code_interpreter_item,
    function_call_item,
    image_generation_item,
    message_item,
    reasoning_item,
    response_stream,
    usage_block,
    web_search_item,
)

TOOLS = {"intent__HassTurnOn": "HassTurnOn"}


def read(
    events: list[dict[str, Any]], *, remove_citations: bool = False
) -> tuple[ResponsesStreamParser, list[Any]]:
    """Feed every event to a new parser; return it and the deltas."""
    parser = ResponsesStreamParser(TOOLS, remove_citations=remove_citations)
    deltas = [delta for event in events for delta in parser.feed(event)]
    deltas += parser.close()
    return parser, deltas


def spoken(deltas: list[Any]) -> str:
    """Return the spoken text of the deltas."""
    return "".join(delta.get("content") or "" for delta in deltas)


def natives(deltas: list[Any]) -> list[ResponsesReplay]:
    """Return the native values the deltas set."""
    return [delta["native"] for delta in deltas if "native" in delta]


def test_web_search_is_an_external_call_with_its_result() -> None:
    """A search the provider ran shows as a call and result; the answer follows."""
    search = web_search_item("tides", ["https://tides.example"])
    answer = message_item("High at noon ([tides.example](https://tides.example)).")
    parser, deltas = read(response_stream([search, answer]), remove_citations=True)
    parser.raise_if_cut()

    roles = [delta.get("role") for delta in deltas if "role" in delta]
    assert roles == ["tool_result", "assistant"]
    [call_delta] = [delta for delta in deltas if "tool_calls" in delta]
    assert call_delta["tool_calls"] == [
        llm.ToolInput(
            "web_search",
            {"type": "search", "query": "tides"},
            id=search["id"],
            external=True,
        )
    ]
    result = next(delta for delta in deltas if delta.get("role") == "tool_result")
    assert result["tool_name"] == "web_search"
    assert result["result"] == llm.ToolResult(
        {"status": "completed", "sources": ["https://tides.example"]}
    )
    assert spoken(deltas) == "High at noon."
    first, second = natives(deltas)
    assert first.items == (
        {key: search[key] for key in ("type", "id", "status", "action")},
    )
    assert second.items == (
        {"type": "message", "role": "assistant", "content": "High at noon."},
    )


def test_code_and_image_generation_results() -> None:
    """A run of code keeps its outputs; a generated image goes back without bytes."""
    code = {**code_interpreter_item("print(1)", "1"), "status": "failed"}
    image = image_generation_item("a fox")
    _, deltas = read(response_stream([code, image]))

    results = [delta for delta in deltas if delta.get("role") == "tool_result"]
    assert [r["tool_name"] for r in results] == ["code_interpreter", "image_generation"]
    assert results[0]["result"] == llm.ToolResult(
        {"status": "failed", "outputs": [{"type": "logs", "logs": "1"}]}, error=True
    )
    assert results[1]["result"].data == {
        "status": "completed",
        "size": "256x256",
        "output_format": "png",
    }
    assert image["result"] not in repr(deltas)
    [replayed] = [
        item
        for replay in natives(deltas)
        for item in replay.items
        if item["type"] == "image_generation_call"
    ]
    assert replayed == {
        "type": "image_generation_call",
        "id": image["id"],
        "status": "completed",
        "result": None,
    }


def test_calls_wait_for_the_end_unless_a_provider_call_ends_the_message() -> None:
    """Function calls come when the answer is whole, or before a provider result."""
    call = function_call_item("call_1", "intent__HassTurnOn", '{"name": "x"}')
    _, deltas = read(response_stream([call, web_search_item("x")]))

    held = llm.ToolInput("HassTurnOn", {"name": "x"}, id="call_1")
    position = deltas.index({"tool_calls": [held]})
    assert position < next(n for n, delta in enumerate(deltas) if "role" in delta)


def test_reasoning_of_local_servers() -> None:
    """Plain reasoning text is thinking and goes back; none at all does not."""
    plain = {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "Think."}],
    }
    hidden = reasoning_item("Secret.", encrypted=False)
    parser = ResponsesStreamParser(TOOLS)
    deltas = parser.feed_whole(
        json_bytes(
            {"status": "completed", "output": [plain, hidden, message_item("Hi")]}
        )
    )

    thinking = "".join(delta.get("thinking_content") or "" for delta in deltas)
    assert thinking == "Think.Secret."
    [replay] = natives(deltas)
    assert [item["type"] for item in replay.items] == ["reasoning", "message"]
    assert replay.items[0] == plain


def test_streamed_reasoning_text_and_refusal() -> None:
    """Reasoning text deltas are thinking; a refusal is said."""
    events = [
        {"type": "response.reasoning_text.delta", "output_index": 0, "delta": "Hm."},
        {"type": "response.refusal.delta", "output_index": 1, "delta": "No."},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    _, deltas = read(events)

    assert deltas[0] == {"thinking_content": "Hm."}
    assert spoken(deltas) == "No."
    [replay] = natives(deltas)
    assert replay.items == ({"type": "message", "role": "assistant", "content": "No."},)


def test_whole_answer_with_refusal_and_decoded_arguments() -> None:
    """A whole answer: a refusal part is said, decoded arguments go back as JSON."""
    parser = ResponsesStreamParser(TOOLS)
    message = {
        "type": "message",
        "content": [{"type": "refusal", "refusal": "I cannot."}],
    }
    call = {
        "type": "function_call",
        "call_id": "call_1",
        "name": "intent__HassTurnOn",
        "arguments": {"name": "x"},
    }
    deltas = parser.feed_whole(
        json_bytes(
            {
                "status": "completed",
                "output": [message, call],
                "usage": usage_block(5, 3),
            }
        )
    )

    assert spoken(deltas) == "I cannot."
    [replay] = natives(deltas)
    assert replay.items[1]["arguments"] == '{"name":"x"}'
    assert parser.usage == {
        "prompt_tokens": 5,
        "completion_tokens": 3,
        "total_tokens": 8,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def test_calls_without_name_or_id_are_skipped_and_counted() -> None:
    """A call without a name is dropped; too many calls are refused."""
    nameless = {**function_call_item("c", "", "{}"), "name": None}
    _, deltas = read(response_stream([nameless, message_item("Ok")]))
    assert not [delta for delta in deltas if "tool_calls" in delta]

    calls = [
        function_call_item(f"call_{n}", "intent__HassTurnOn", "{}")
        for n in range(MAX_TOOL_CALLS + 1)
    ]
    with pytest.raises(ModelError) as err:
        read(response_stream(calls))
    assert err.value.translation_key == "too_many_tool_calls"


@pytest.mark.parametrize(
    ("event", "part"),
    [
        ({"type": "response.output_text.delta", "output_index": "0"}, "output_index"),
        ({"type": "response.output_text.delta", "delta": 5}, "delta"),
        ({"type": "response.completed", "response": []}, "response"),
        (
            {"type": "response.completed", "response": {"output": {}}},
            "response.output",
        ),
        (
            {"type": "response.completed", "response": {"usage": 3}},
            "response.usage",
        ),
        (
            {
                "type": "response.output_item.done",
                "item": {"type": "message", "content": [3]},
            },
            "message.content",
        ),
        (
            {
                "type": "response.output_item.done",
                "item": {
                    "type": "function_call",
                    "call_id": "c",
                    "name": "n",
                    "arguments": 3,
                },
            },
            "function_call.arguments",
        ),
    ],
)
def test_malformed_parts_are_named(event: dict[str, Any], part: str) -> None:
    """A part not in the API's form gets a translated error naming it."""
    with pytest.raises(MalformedAnswerError) as err:
        ResponsesStreamParser(TOOLS).feed(event)

    assert err.value.translation_placeholders == {"part": part}


@pytest.mark.parametrize(
    ("response", "key", "kind"),
    [
        (
            {
                "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"},
            },
            "answer_cut_by_content_filter",
            ModelError,
        ),
        ({"status": "incomplete"}, "answer_cut_short", ServerError),
    ],
)
def test_incomplete_answers(
    response: dict[str, Any], key: str, kind: type[HomeAssistantError]
) -> None:
    """Why an answer stopped short is told."""
    parser, _ = read([{"type": "response.incomplete", "response": response}])

    with pytest.raises(kind) as err:
        parser.raise_if_cut()
    assert err.value.translation_key == key


@pytest.mark.parametrize(
    "response",
    [
        {"status": "failed", "error": {"message": "Overload"}},
        {"error": {"message": "Overload"}},
    ],
)
def test_whole_answers_that_failed(response: dict[str, Any]) -> None:
    """A whole answer that failed, or is only an error, raises its message."""
    with pytest.raises(ServerError) as err:
        ResponsesStreamParser(TOOLS).feed_whole(json_bytes(response))

    assert err.value.translation_placeholders == {"message": "Overload"}


def test_unclosed_think_tag_and_call_without_id() -> None:
    """An unclosed think block is thinking; a provider call without id is left out."""
    nameless = {**web_search_item("x"), "id": None}
    parser = ResponsesStreamParser(TOOLS)
    deltas = parser.feed_whole(
        json_bytes(
            {
                "status": "completed",
                "output": [nameless, message_item("<think>plan</thi")],
            }
        )
    )

    thinking = "".join(delta.get("thinking_content") or "" for delta in deltas)
    assert thinking == "plan</thi"
    assert not [delta for delta in deltas if "tool_calls" in delta]


def test_usage_without_details() -> None:
    """Usage without details counts no cached or reasoning tokens."""
    parser = ResponsesStreamParser(TOOLS)
    usage = {"input_tokens": 3, "output_tokens": 1}
    parser.feed_whole(json_bytes({"status": "completed", "output": [], "usage": usage}))
    assert parser.usage is not None
    assert parser.usage["prompt_tokens_details"] == {"cached_tokens": 0}


def test_unknown_items_and_events_are_ignored() -> None:
    """Items and events we do not know are left alone."""
    events = response_stream([message_item("Hi")])
    events.insert(2, {"type": "response.mcp_list_tools.in_progress"})
    events[-1]["response"]["output"].append({"type": "mcp_list_tools", "id": "m"})
    _, deltas = read(events)

    assert spoken(deltas) == "Hi"


def test_an_answer_completed_with_nothing_said_is_silent() -> None:
    """A completed answer without words or calls is an explicit, silent answer."""
    _, deltas = read(response_stream([reasoning_item("Nothing to add.")]))

    assert {"content": ""} in deltas
    assert spoken(deltas) == ""


# --- inline citations, across stream deltas ---------------------------------

CITED = (
    "The tide is high at noon ([tides.example](https://tides.example/brest?utm=1)). "
    "It turns (slowly) at six ([b.example](http://b.example/x))"
)
SPOKEN = "The tide is high at noon. It turns (slowly) at six"


def filtered(text: str, size: int) -> str:
    """Return the text fed in pieces of `size` characters, filtered."""
    citations = CitationFilter()
    pieces = [
        citations.feed(text[start : start + size])
        for start in range(0, len(text), size)
    ]
    return "".join(pieces) + citations.flush()


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 1000])
def test_citations_removed_however_the_text_is_cut(size: int) -> None:
    """The same spoken text comes out for any split of the stream."""
    assert filtered(CITED, size) == SPOKEN


def test_text_is_held_only_while_it_can_be_a_citation() -> None:
    """A parenthesis that cannot start a citation goes on at once."""
    citations = CitationFilter()

    assert citations.feed("Hello (there") == "Hello (there"
    assert citations.feed(" and ([ti") == " and"
    assert citations.feed("tle](ftp://x)") == " ([title](ftp://x)"
    assert citations.feed(" end ") == " end"
    assert citations.flush() == " "


def test_unfinished_citation_is_spoken_at_the_end() -> None:
    """A citation cut by the end of the answer is not lost."""
    citations = CitationFilter()

    assert citations.feed("See ([a](https://a.example") == "See"
    assert citations.flush() == " ([a](https://a.example"


def test_overlong_title_is_no_citation() -> None:
    """Past the longest title, the text is given on."""
    text = "([" + "x" * 400 + "](https://a.example))"

    assert filtered(text, 7) == text
