"""Requests and answers of the Chat Completions form, over the Responses API.

Evaluate and the structured-output ladder build Chat Completions requests;
over the Responses API they are sent as the same Responses request and their
answer is given back as a chat completion.
"""

from __future__ import annotations

from typing import Final

from ..errors import MalformedAnswerError, ServerError
from ..net.readers import read_list, read_object
from ..net.shapes import ChatBody, ChatMessage, ChatPart, JsonObject, ResponseFormat
from .responses_stream import chat_usage

# OpenAI refuses a smaller limit on the answer's tokens.
MIN_OUTPUT_TOKENS: Final = 16
OUTPUT_LOGPROBS: Final = "message.output_text.logprobs"


def responses_request(chat_body: ChatBody) -> JsonObject:
    """Return a Chat Completions request as the same Responses request."""
    body: JsonObject = {
        "model": chat_body["model"],
        "input": [_input_message(message) for message in chat_body["messages"]],
    }
    limit = chat_body.get("max_completion_tokens", chat_body.get("max_tokens"))
    if limit is not None:
        body["max_output_tokens"] = max(limit, MIN_OUTPUT_TOKENS)
    for key in ("temperature", "top_p", "prompt_cache_key"):
        if key in chat_body:
            body[key] = chat_body.get(key)
    if chat_body.get("logprobs"):
        body["include"] = [OUTPUT_LOGPROBS]
        body["top_logprobs"] = chat_body.get("top_logprobs", 0)
    if text_format := responses_format(chat_body.get("response_format")):
        body["text"] = {"format": text_format}
    return body


def responses_format(response_format: ResponseFormat | None) -> JsonObject | None:
    """Return a Chat Completions response format as `text.format`."""
    if not response_format:
        return None
    if response_format["type"] != "json_schema":
        return {"type": response_format["type"]}
    return {"type": "json_schema", **response_format["json_schema"]}


def _input_message(message: ChatMessage) -> JsonObject:
    """Return one Chat Completions message as a Responses message item."""
    content: object = message["content"]
    if isinstance(content, list):
        content = [_input_part(part) for part in content]
    return {"type": "message", "role": message["role"], "content": content}


def _input_part(part: ChatPart) -> JsonObject:
    """Return one Chat Completions content part in the Responses form."""
    if part["type"] == "image_url":
        return {
            "type": "input_image",
            "image_url": part["image_url"]["url"],
            "detail": "auto",
        }
    if part["type"] == "file":
        return {"type": "input_file", **part["file"]}
    return {"type": "input_text", "text": part.get("text")}


def chat_completion(answer: JsonObject) -> JsonObject:
    """Return a whole Responses answer in the form of a chat completion."""
    output = answer.get("output")
    if answer.get("status") == "failed" or not isinstance(output, list):
        error = answer.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if message is None and output is not None:
            raise MalformedAnswerError(part="response.output")
        raise ServerError("api_error", message=str(message or "no output"))
    texts: list[str] = []
    refusal: str | None = None
    logprobs: list[object] | None = None
    for item in output:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        for value in read_list(item.get("content") or None, "message.content"):
            part = read_object(value, "message.content")
            if isinstance(text := part.get("text"), str):
                texts.append(text)
                if logprobs is None and isinstance(lp := part.get("logprobs"), list):
                    logprobs = lp
            elif isinstance(found := part.get("refusal"), str):
                refusal = found
    details = answer.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    usage = answer.get("usage")
    return {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "".join(texts) or None,
                    "refusal": refusal,
                },
                "logprobs": {"content": logprobs} if logprobs else None,
                "finish_reason": _FINISH.get(reason, "stop"),
            }
        ],
        "usage": chat_usage(usage) if isinstance(usage, dict) else None,
    }


_FINISH: Final[dict[object, str]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
