"""The event stream of a Responses API answer."""

from __future__ import annotations

from typing import Any

from .responses_items import Item, response_object

type Event = dict[str, Any]

_SPLIT = 4


def events(response: dict[str, Any]) -> list[Event]:
    """Return the events that stream a response, numbered in order."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    stream: list[Event] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(response["output"]):
        stream.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": _started(item),
            }
        )
        stream.extend(_item_events(item, index))
        stream.append(
            {"type": "response.output_item.done", "output_index": index, "item": item}
        )
    terminal = {"completed": "response.completed", "incomplete": "response.incomplete"}
    stream.append(
        {
            "type": terminal.get(response["status"], "response.failed"),
            "response": response,
        }
    )
    return [{**event, "sequence_number": number} for number, event in enumerate(stream)]


def response_stream(
    output: list[Item],
    *,
    model: str = "gpt-4o-mini",
    usage: dict[str, Any] | None = None,
    status: str = "completed",
    reason: str | None = None,
) -> list[Event]:
    """Return a whole scripted stream of the given items, for `enqueue(sse=...)`."""
    return events(
        response_object(output, model=model, usage=usage, status=status, reason=reason)
    )


def _started(item: Item) -> Item:
    """Return an item as it looks when it starts."""
    kind = item["type"]
    started = {**item, "status": "in_progress"}
    if kind == "message":
        started["content"] = []
    elif kind == "function_call":
        started["arguments"] = ""
    elif kind == "reasoning":
        started = {"id": item["id"], "type": "reasoning", "summary": []}
    elif kind == "web_search_call":
        started.pop("action", None)
    elif kind == "code_interpreter_call":
        started |= {"code": "", "outputs": None}
    elif kind == "image_generation_call":
        started["result"] = None
    return started


def _item_events(item: Item, index: int) -> list[Event]:
    """Return the events between an item's start and its end."""
    kind = item["type"]
    where = {"item_id": item["id"], "output_index": index}
    if kind == "message":
        return _message_events(item, where)
    if kind == "reasoning":
        return _summary_events(item, where)
    if kind == "function_call":
        return [
            *(
                {
                    "type": "response.function_call_arguments.delta",
                    **where,
                    "delta": piece,
                }
                for piece in _pieces(item["arguments"])
            ),
            {
                "type": "response.function_call_arguments.done",
                **where,
                "arguments": item["arguments"],
            },
        ]
    prefix = f"response.{kind}"
    steps = {
        "web_search_call": ("in_progress", "searching", "completed"),
        "code_interpreter_call": ("in_progress", "interpreting", "completed"),
        "image_generation_call": ("in_progress", "generating", "completed"),
    }[kind]
    return [{"type": f"{prefix}.{step}", **where} for step in steps]


def _message_events(item: Item, where: dict[str, Any]) -> list[Event]:
    """Return the events of a message's text, its logprobs and annotations."""
    stream: list[Event] = []
    for content_index, part in enumerate(item["content"]):
        at = {**where, "content_index": content_index}
        empty = {**part, "text": "", "annotations": []}
        stream.append({"type": "response.content_part.added", **at, "part": empty})
        tokens = part.get("logprobs")
        if tokens:
            pieces = [(token["token"], [token]) for token in tokens]
        else:
            pieces = [(piece, []) for piece in _pieces(part["text"])]
        stream.extend(
            {
                "type": "response.output_text.delta",
                **at,
                "delta": piece,
                "logprobs": logprobs,
            }
            for piece, logprobs in pieces
        )
        stream.extend(
            {
                "type": "response.output_text.annotation.added",
                **at,
                "annotation_index": number,
                "annotation": annotation,
            }
            for number, annotation in enumerate(part["annotations"])
        )
        stream.append(
            {
                "type": "response.output_text.done",
                **at,
                "text": part["text"],
                "logprobs": tokens or [],
            }
        )
        stream.append({"type": "response.content_part.done", **at, "part": part})
    return stream


def _summary_events(item: Item, where: dict[str, Any]) -> list[Event]:
    """Return the events of a reasoning item's summary parts."""
    stream: list[Event] = []
    for summary_index, part in enumerate(item["summary"]):
        at = {**where, "summary_index": summary_index}
        stream.append(
            {
                "type": "response.reasoning_summary_part.added",
                **at,
                "part": {"type": "summary_text", "text": ""},
            }
        )
        stream.extend(
            {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
            for piece in _pieces(part["text"])
        )
        stream.append(
            {"type": "response.reasoning_summary_text.done", **at, "text": part["text"]}
        )
        stream.append(
            {"type": "response.reasoning_summary_part.done", **at, "part": part}
        )
    return stream


def _pieces(text: str) -> list[str]:
    """Cut text into the pieces a stream sends."""
    return [text[start : start + _SPLIT] for start in range(0, len(text), _SPLIT)]
