"""The request features that servers accept or refuse, named once.

The conformance lane names what it sends to real servers with these, and the
server profiles (profiles.py) replay what a real server answered to a request
with a feature. A request has every feature whose name it matches.
"""

from __future__ import annotations

from typing import Any

# Routes: named by what they are, for any method.
ROUTE_FEATURES = {
    "/chat/completions": "chat",
    "/models": "models",
    "/decisions": "decisions",
    "/images/generations": "images_generations",
    "/images/edits": "images_edits",
    "/responses": "responses",
}


def route_feature(path: str) -> str | None:
    """Return the feature of a request path (such as `/v1/models`), if known."""
    for suffix, feature in ROUTE_FEATURES.items():
        if path.endswith(suffix):
            return feature
    return None


def chat_features(body: Any) -> frozenset[str]:
    """Return the features of a chat completion request body."""
    if not isinstance(body, dict):
        return frozenset({"not_json_object"})
    found: set[str] = set()
    found.update(_format_features(body.get("response_format")))
    for name in (
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream_options",
        "max_completion_tokens",
        "max_tokens",
        "prompt_cache_key",
        "top_logprobs",
        "temperature",
        "top_p",
        "seed",
        "user",
        "reasoning_effort",
    ):
        if body.get(name) is not None:
            found.add(name)
    if body.get("logprobs"):
        found.add("logprobs")
    if body.get("stream"):
        found.add("stream")
        if body.get("tools"):
            found.add("stream_with_tools")
    messages = body.get("messages")
    if isinstance(messages, list):
        if not messages:
            found.add("no_messages")
        for message in messages:
            found.update(_message_features(message))
    return frozenset(found)


def _format_features(response_format: Any) -> set[str]:
    """Name the kind of response format asked for."""
    if not isinstance(response_format, dict):
        return set()
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = response_format.get("json_schema")
        strict = isinstance(schema, dict) and schema.get("strict") is True
        return {"json_schema", "json_schema_strict"} if strict else {"json_schema"}
    if kind == "json_object":
        return {"json_object"}
    return {f"response_format_{kind}"}


def _message_features(message: Any) -> set[str]:
    """Name what one message carries: its role and the kinds of its parts."""
    if not isinstance(message, dict):
        return set()
    found = set()
    role = message.get("role")
    if role == "tool":
        found.add("tool_result_message")
    if role == "assistant" and message.get("tool_calls"):
        found.add("assistant_tool_calls")
    content = message.get("content")
    if role == "assistant" and content is None:
        found.add("assistant_null_content")
    if isinstance(content, list):
        found.add("content_parts")
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("image_url", "file"):
                found.add(str(part["type"]))
    return found
