"""The request features that recordings and server profiles are keyed by."""

from __future__ import annotations

from simulator.features import chat_features, route_feature


def test_route_feature_names_known_routes() -> None:
    """Routes are named by their last part, whatever the prefix."""
    assert route_feature("/v1/chat/completions") == "chat"
    assert route_feature("/openai/v1/models") == "models"
    assert route_feature("/v1/decisions") == "decisions"
    assert route_feature("/v1/images/generations") == "images_generations"
    assert route_feature("/v1/props") is None


def test_chat_features_name_formats_tools_streams_and_parts() -> None:
    """Each way of asking that a server may refuse is named."""
    body = {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image_url", "image_url": {"url": "data:"}},
                ],
            },
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
            {"role": "tool", "tool_call_id": "1", "content": "{}"},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": {}, "strict": True},
        },
        "tools": [{"type": "function"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "logprobs": True,
        "top_logprobs": 5,
        "max_completion_tokens": 9,
    }
    assert chat_features(body) == {
        "content_parts",
        "image_url",
        "assistant_tool_calls",
        "assistant_null_content",
        "tool_result_message",
        "json_schema",
        "json_schema_strict",
        "tools",
        "stream",
        "stream_with_tools",
        "stream_options",
        "logprobs",
        "top_logprobs",
        "max_completion_tokens",
    }


def test_chat_features_of_other_formats_and_bodies() -> None:
    """json_object, a plain schema, no messages, and a body that is no object."""
    assert chat_features(
        {"messages": [], "response_format": {"type": "json_object"}}
    ) == {"no_messages", "json_object"}
    assert chat_features(
        {"messages": [], "response_format": {"type": "json_schema", "json_schema": {}}}
    ) == {"no_messages", "json_schema"}
    assert chat_features({"response_format": {"type": "text"}}) == {
        "response_format_text"
    }
    assert chat_features({"logprobs": False, "stream": False}) == frozenset()
    assert chat_features([1, 2]) == {"not_json_object"}
