"""Responses API output items and the response object that holds them."""

from __future__ import annotations

import base64
import time
from typing import Any

from .ids import new_id
from .imagegen import draw_png
from .sealed_reasoning import encrypt_reasoning

type Item = dict[str, Any]


def _id(prefix: str) -> str:
    """Return a new item id such as `msg_` followed by 32 letters and digits."""
    return new_id(prefix, 32)


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
