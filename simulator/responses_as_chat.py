"""A Responses request in the Chat Completions form, for the built-in answers.

chat_answers.py answers it (see responses_answers.py), and window.py counts it.
"""

from __future__ import annotations

from typing import Any


def input_text(request_input: Any) -> str:
    """Return all the text of the input's messages, joined."""
    if isinstance(request_input, str):
        return request_input
    return "\n".join(
        _text(item.get("content"))
        for item in request_input or ()
        if isinstance(item, dict) and item.get("type", "message") == "message"
    )


def _text(content: Any) -> str:
    """Return the text of a message's content."""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text"))
        for part in content or ()
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """Return the request in the Chat Completions form that chat_answers.answer reads."""
    messages: list[dict[str, Any]] = []
    if isinstance(instructions := body.get("instructions"), str):
        messages.append({"role": "system", "content": instructions})
    request_input = body["input"]
    if isinstance(request_input, str):
        request_input = [{"role": "user", "content": request_input}]
    for item in request_input:
        _add_message(messages, item)
    if not messages:
        messages.append({"role": "user", "content": ""})
    chat: dict[str, Any] = {"model": body["model"], "messages": messages}
    if tools := [
        tool for tool in body.get("tools") or () if tool["type"] == "function"
    ]:
        chat["tools"] = [
            {
                "type": "function",
                "function": {
                    key: tool[key]
                    for key in ("name", "description", "parameters")
                    if key in tool
                },
            }
            for tool in tools
        ]
        chat["tool_choice"] = _chat_tool_choice(body.get("tool_choice"))
    if response_format := _response_format((body.get("text") or {}).get("format")):
        chat["response_format"] = response_format
    if "message.output_text.logprobs" in (body.get("include") or ()):
        chat["logprobs"] = True
        chat["top_logprobs"] = body.get("top_logprobs") or 0
    if (limit := body.get("max_output_tokens")) is not None:
        chat["max_tokens"] = limit
    return chat


def _add_message(messages: list[dict[str, Any]], item: dict[str, Any]) -> None:
    """Add the chat message an input item stands for, if any."""
    kind = item.get("type", "message")
    if kind == "message":
        role = "system" if item["role"] == "developer" else item["role"]
        messages.append({"role": role, "content": _chat_content(item["content"])})
    elif kind == "function_call":
        call = {
            "id": item["call_id"],
            "type": "function",
            "function": {"name": item["name"], "arguments": item["arguments"]},
        }
        last = messages[-1] if messages else None
        if last and last["role"] == "assistant" and "tool_calls" in last:
            last["tool_calls"].append(call)
        else:
            messages.append(
                {"role": "assistant", "content": None, "tool_calls": [call]}
            )
    elif kind == "function_call_output":
        output = item["output"]
        messages.append(
            {
                "role": "tool",
                "tool_call_id": item["call_id"],
                "content": output if isinstance(output, str) else _text(output),
            }
        )


def _chat_content(content: Any) -> Any:
    """Return message content with its parts in the Chat Completions form."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if part["type"] in ("input_text", "output_text"):
            parts.append({"type": "text", "text": part["text"]})
        elif part["type"] == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": "image"}})
    return parts or ""


def _chat_tool_choice(choice: Any) -> Any:
    """Return tool_choice in the Chat Completions form."""
    if isinstance(choice, dict):
        if choice.get("type") == "function":
            return {"type": "function", "function": {"name": choice["name"]}}
        return "auto"
    return choice or "auto"


def _response_format(text_format: Any) -> dict[str, Any] | None:
    """Return `text.format` as a Chat Completions response_format."""
    if not isinstance(text_format, dict) or text_format["type"] == "text":
        return None
    if text_format["type"] == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": text_format["name"],
            "schema": text_format["schema"],
            "strict": bool(text_format.get("strict")),
        },
    }
