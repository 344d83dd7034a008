"""Responses API answers: output items, the response object and its events.

Built-in answers, in order of precedence, when the last input item is the
user's message: an image when `image_generation` is forced or the user asks to
"draw ..."; a web search when `web_search` is offered and the user says
"search ..." (its answer cites a source inline); a run of code when
`code_interpreter` is offered and the user says "calculate A op B". Otherwise
chat.py answers (a tool call, JSON, a summary of tool results, a label with
log-probabilities, an echo). Reasoning models begin with a reasoning item.
"""

from __future__ import annotations

import base64
import json
import math
import re
import time
from typing import TYPE_CHECKING, Any

from . import chat
from .imagegen import draw_png
from .responses import chat_body, encrypt_reasoning
from .window import prompt_tokens

if TYPE_CHECKING:
    from .server import SimulatorSettings

type Item = dict[str, Any]
type Event = dict[str, Any]

_SEARCH = re.compile(
    r"^\s*(?:search(?: the web)?(?: for)?|look up)\s+(.+?)[.!?]*\s*$", re.IGNORECASE
)
_CALCULATE = re.compile(
    r"^\s*(?:calculate|compute)\s+(-?\d+)\s*([-+*/])\s*(-?\d+)", re.IGNORECASE
)
_DRAW = re.compile(r"^\s*draw\s+(.+?)[.!?]*\s*$", re.IGNORECASE)
_SPLIT = 4


def _id(prefix: str) -> str:
    """Return a new item id such as `msg_` followed by hex digits."""
    return chat.new_id(prefix, 32)


# --- items ----------------------------------------------------------------------


def message_item(
    text: str,
    *,
    annotations: list[dict[str, Any]] | None = None,
    logprobs: list[dict[str, Any]] | None = None,
) -> Item:
    """Return an assistant message item with one output_text part."""
    part: dict[str, Any] = {
        "type": "output_text",
        "text": text,
        "annotations": annotations or [],
    }
    if logprobs is not None:
        part["logprobs"] = logprobs
    return {
        "id": _id("msg_"),
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }


def function_call_item(call_id: str, name: str, arguments: str) -> Item:
    """Return a function call item."""
    return {
        "id": _id("fc_"),
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def reasoning_item(summary: str | None, *, encrypted: bool = True) -> Item:
    """Return a reasoning item, its content encrypted the way this server checks."""
    item_id = _id("rs_")
    return {
        "id": item_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
        "encrypted_content": encrypt_reasoning(item_id, summary or "")
        if encrypted
        else None,
    }


def web_search_item(query: str, sources: list[str] | None = None) -> Item:
    """Return a finished web search; `sources` are given when included."""
    action: dict[str, Any] = {"type": "search", "query": query}
    if sources is not None:
        action["sources"] = [{"type": "url", "url": url} for url in sources]
    return {
        "id": _id("ws_"),
        "type": "web_search_call",
        "status": "completed",
        "action": action,
    }


def code_interpreter_item(code: str, logs: str | None) -> Item:
    """Return a finished run of code; its logs are given when included."""
    return {
        "id": _id("ci_"),
        "type": "code_interpreter_call",
        "status": "completed",
        "code": code,
        "container_id": "cntr_simulator",
        "outputs": None if logs is None else [{"type": "logs", "logs": logs}],
    }


def image_generation_item(prompt: str, size: str = "256x256") -> Item:
    """Return a finished image generation with a freshly drawn PNG."""
    width, _, height = size.partition("x")
    png = draw_png(prompt, int(width), int(height))
    return {
        "id": _id("ig_"),
        "type": "image_generation_call",
        "status": "completed",
        "result": base64.b64encode(png).decode(),
        "revised_prompt": prompt,
        "output_format": "png",
        "size": size,
    }


# --- built-in answers ---------------------------------------------------------------


def respond(body: dict[str, Any], settings: SimulatorSettings) -> dict[str, Any]:
    """Return the response object that answers a valid request."""
    chat_request = chat_body(body)
    output = _output(body, chat_request, settings)
    usage = _usage(chat_request, output)
    status, reason = "completed", None
    limit = body.get("max_output_tokens")
    if limit is not None and usage["output_tokens"] > limit:
        status, reason = "incomplete", "max_output_tokens"
    return response_object(
        output, model=body["model"], usage=usage, status=status, reason=reason
    )


def _output(
    body: dict[str, Any], chat_request: dict[str, Any], settings: SimulatorSettings
) -> list[Item]:
    """Return the output items: reasoning first, then the answer."""
    output: list[Item] = []
    include = body.get("include") or ()
    if chat.is_reasoning_model(body["model"]):
        words = len(_user_text(body).split())
        wants_summary = (body.get("reasoning") or {}).get("summary") is not None
        output.append(
            reasoning_item(
                f"The user wrote {words} words. I will answer briefly."
                if wants_summary
                else None,
                encrypted="reasoning.encrypted_content" in include,
            )
        )
    hosted = _hosted_answer(body, include)
    if hosted is not None:
        return output + hosted
    result = chat.answer(chat_request, settings)
    if result.text or not result.tool_calls:
        logprobs = result.tokens if "message.output_text.logprobs" in include else None
        output.append(message_item(result.text, logprobs=logprobs))
    output.extend(
        function_call_item(call_id, name, arguments)
        for call_id, name, arguments in result.tool_calls
    )
    return output


def _user_text(body: dict[str, Any]) -> str:
    """Return the text of the last input item when the user sent it, else ''."""
    request_input = body["input"]
    if isinstance(request_input, str):
        return request_input
    last = request_input[-1]
    if last.get("type", "message") != "message" or last.get("role") != "user":
        return ""
    content = last.get("content")
    if isinstance(content, str):
        return content
    return " ".join(
        part["text"] for part in content if isinstance(part.get("text"), str)
    )


def _hosted_answer(body: dict[str, Any], include: Any) -> list[Item] | None:
    """Return the answer a provider-run tool gives, if the request calls for one."""
    tools = {tool["type"]: tool for tool in body.get("tools") or ()}
    text = _user_text(body)
    choice = body.get("tool_choice")
    forced = choice.get("type") if isinstance(choice, dict) else None
    if "image_generation" in tools and (
        forced == "image_generation" or _DRAW.match(text)
    ):
        match = _DRAW.match(text)
        prompt = match[1] if match else text
        size = str(tools["image_generation"].get("size") or "256x256")
        size = "256x256" if size == "auto" else size
        image = image_generation_item(prompt, size)
        if match is None:
            return [image]
        return [image, message_item(f"Here is {prompt}.")]
    search = tools.get("web_search") or tools.get("web_search_preview")
    if search is not None and (match := _SEARCH.match(text)):
        return _web_search_answer(match[1], "web_search_call.action.sources" in include)
    if "code_interpreter" in tools and (match := _CALCULATE.match(text)):
        return _calculation_answer(
            int(match[1]),
            match[2],
            int(match[3]),
            "code_interpreter_call.outputs" in include,
        )
    return None


def _web_search_answer(query: str, with_sources: bool) -> list[Item]:
    """Search, then answer with one inline citation, the way OpenAI writes them."""
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "result"
    url = f"https://example.com/{slug}?utm_source=openai"
    lead = f"Here is what I found about {query}"
    citation = f" ([example.com]({url}))"
    text = f"{lead}{citation}."
    annotation = {
        "type": "url_citation",
        "start_index": len(lead) + 1,
        "end_index": len(lead) + len(citation),
        "url": url,
        "title": f"{query} - Example",
    }
    return [
        web_search_item(query, [url] if with_sources else None),
        message_item(text, annotations=[annotation]),
    ]


def _calculation_answer(
    left: int, operator: str, right: int, with_logs: bool
) -> list[Item]:
    """Run a calculation in the 'container', then state its result."""
    if operator == "+":
        value: float = left + right
    elif operator == "-":
        value = left - right
    elif operator == "*":
        value = left * right
    else:
        value = left / right if right else math.nan
    shown = f"{value:g}"
    return [
        code_interpreter_item(
            f"print({left} {operator} {right})", shown if with_logs else None
        ),
        message_item(f"The result is {shown}."),
    ]


def _usage(chat_request: dict[str, Any], output: list[Item]) -> dict[str, Any]:
    """Return the usage block: input, output and reasoning tokens."""
    reasoning = sum(
        chat.count_tokens(part["text"])
        for item in output
        if item["type"] == "reasoning"
        for part in item["summary"]
    )
    produced = reasoning
    for item in output:
        if item["type"] == "message":
            produced += sum(chat.count_tokens(part["text"]) for part in item["content"])
        elif item["type"] == "function_call":
            produced += chat.count_tokens(item["name"] + item["arguments"])
    prompt = prompt_tokens(chat_request)
    return usage_block(prompt, produced, reasoning=reasoning)


def usage_block(
    input_tokens: int, output_tokens: int, *, cached: int = 0, reasoning: int = 0
) -> dict[str, Any]:
    """Return a Responses usage block."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def response_object(
    output: list[Item],
    *,
    model: str = "gpt-4o-mini",
    usage: dict[str, Any] | None = None,
    status: str = "completed",
    reason: str | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a response object as OpenAI sends it."""
    return {
        "id": _id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": error,
        "incomplete_details": {"reason": reason} if reason else None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }


# --- the event stream -------------------------------------------------------------


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


def sse_bytes(event: Event | str | bytes) -> bytes:
    """Return one event as the server writes it: named, then its data."""
    if isinstance(event, bytes):
        return event
    if isinstance(event, str):
        return event.encode()
    name = event.get("type", "message")
    return f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()
