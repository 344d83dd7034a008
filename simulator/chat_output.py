"""Chat Completions answers on the wire: the completion, its chunks, usage."""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, Any

from .answer import Answer
from .ids import new_id
from .tokens import count_tokens
from .window import prompt_tokens

if TYPE_CHECKING:
    from .settings import SimulatorSettings

type Chunk = dict[str, Any]


def _usage(body: dict[str, Any], result: Answer) -> dict[str, Any]:
    """Return the usage block of an answer."""
    prompt = prompt_tokens(body)
    reasoning = count_tokens(result.reasoning or "")
    completion = (
        count_tokens(result.text)
        + sum(count_tokens(name + args) for _, name, args in result.tool_calls)
        + reasoning
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _spoken(result: Answer, reasoning_mode: str | None) -> str:
    """Return the content text, with reasoning inlined for think-tag servers."""
    if reasoning_mode == "think_tags" and result.reasoning:
        return f"<think>\n{result.reasoning}\n</think>\n\n{result.text}"
    return result.text


def completion(
    body: dict[str, Any], result: Answer, settings: SimulatorSettings
) -> dict[str, Any]:
    """Return the non-streamed answer to a request."""
    return _completion(
        result,
        model=body["model"],
        reasoning_mode=settings.reasoning,
        usage=_usage(body, result),
    )


def stream(
    body: dict[str, Any], result: Answer, settings: SimulatorSettings
) -> list[Chunk]:
    """Return the chunks of a streamed answer; usage last where asked and sent."""
    wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return stream_chunks(
        result,
        reasoning_mode=settings.reasoning,
        usage=_usage(body, result) if wants_usage and settings.stream_usage else None,
    )


def _completion(
    result: Answer, *, model: str, reasoning_mode: str | None, usage: dict[str, Any]
) -> dict[str, Any]:
    """Return the non-streamed `chat.completion` body."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": _spoken(result, reasoning_mode) or None,
        "refusal": None,
        "annotations": [],
    }
    if result.reasoning and reasoning_mode not in (None, "think_tags"):
        message[str(reasoning_mode)] = result.reasoning
    if result.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
            for call_id, name, args in result.tool_calls
        ]
    logprobs = {"content": result.tokens, "refusal": None} if result.tokens else None
    return {
        "id": new_id("chatcmpl-", 29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": logprobs,
                "finish_reason": result.finish_reason,
            }
        ],
        "usage": usage,
        "system_fingerprint": "fp_simulator",
    }


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    index: int = 0,
    usage: dict[str, Any] | None = None,
    logprobs: dict[str, Any] | None = None,
) -> Chunk:
    """Return one `chat.completion.chunk`; without a delta it has no choices.

    The server fills in id, object, created and model when it sends the chunk.
    """
    result: Chunk = {"choices": []}
    if delta is not None:
        result["choices"].append(
            {
                "index": index,
                "delta": delta,
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }
        )
    if usage is not None:
        result["usage"] = usage
    return result


def _pieces(text: str, size: int) -> list[str]:
    """Cut text into pieces of `size` characters."""
    size = max(1, size)
    return [text[start : start + size] for start in range(0, len(text), size)]


def stream_chunks(
    result: Answer,
    *,
    reasoning_mode: str | None,
    usage: dict[str, Any] | None,
    split: int = 4,
) -> list[Chunk]:
    """Return the chunks of a streamed answer, from role to usage."""
    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if result.reasoning and reasoning_mode not in (None, "think_tags"):
        chunks += [
            chunk({str(reasoning_mode): piece})
            for piece in _pieces(result.reasoning, split)
        ]
    if result.tokens:
        chunks += [
            chunk({"content": t["token"]}, logprobs={"content": [t], "refusal": None})
            for t in result.tokens
        ]
    else:
        chunks += [
            chunk({"content": piece})
            for piece in _pieces(_spoken(result, reasoning_mode), split)
        ]
    for position, (call_id, name, arguments) in enumerate(result.tool_calls):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": position,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks += [
            chunk(
                {"tool_calls": [{"index": position, "function": {"arguments": piece}}]}
            )
            for piece in _pieces(arguments, math.ceil(len(arguments) / 4))
        ]
    chunks.append(chunk({}, finish_reason=result.finish_reason))
    if usage is not None:
        chunks.append(chunk(None, usage=usage))
    return chunks


def sse_text(
    text: str,
    *,
    split: int = 4,
    reasoning: str | None = None,
    reasoning_field: str = "reasoning_content",
    usage: dict[str, Any] | None = None,
) -> list[Chunk]:
    """Return a complete streamed text answer, for `enqueue(..., sse=...)`."""
    return stream_chunks(
        Answer(text, reasoning=reasoning),
        reasoning_mode=reasoning_field,
        usage=usage,
        split=split,
    )


def sse_tool_calls(
    calls: list[tuple[str, str, dict[str, Any] | str | None]],
    *,
    text: str | None = None,
) -> list[Chunk]:
    """Return a streamed tool-call answer; each call's arguments arrive in fragments.

    Arguments given as a dict are sent as JSON, a string as is, None as nothing.
    """
    wire_calls = [
        (call_id, name, json.dumps(args) if isinstance(args, dict) else args or "")
        for call_id, name, args in calls
    ]
    return stream_chunks(
        Answer(text or "", tool_calls=wire_calls), reasoning_mode=None, usage=None
    )
