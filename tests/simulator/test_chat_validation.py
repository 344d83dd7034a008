"""Chat request validation: each rejection is a 400 the client parses."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from simulator import OpenAISimulator
from tests.simulator.chat_client import MODEL

USER = {"role": "user", "content": "hi"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "HassTurnOn", "arguments": "{}"},
        }
    ],
}
OBJECT = {"type": "object", "properties": {}}


def function(name: str, parameters: Any = OBJECT, **extra: Any) -> dict[str, Any]:
    """Return a function tool definition."""
    return {
        "type": "function",
        "function": {"name": name, "parameters": parameters, **extra},
    }


def schema_format(schema: Any, strict: bool = True) -> dict[str, Any]:
    """Return a json_schema response format."""
    return {
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": strict, "schema": schema},
    }


def image(url: str) -> dict[str, Any]:
    """Return a user message with one image."""
    return {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": url}}],
    }


CASES: list[tuple[str, dict[str, Any], str, str | None]] = [
    ("no model", {"model": ""}, "you must provide a model parameter", "model"),
    (
        "no messages",
        {"messages": []},
        (
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead."
        ),
        "messages",
    ),
    (
        "unknown role",
        {"messages": [{"role": "robot", "content": "x"}]},
        (
            "Invalid value: 'robot'. Supported values are: 'system', 'assistant', "
            "'user', 'function', 'tool', and 'developer'."
        ),
        "messages[0].role",
    ),
    (
        "orphan tool result",
        {
            "messages": [
                USER,
                {"role": "tool", "tool_call_id": "call_9", "content": "{}"},
            ]
        },
        (
            "Invalid parameter: messages with role 'tool' must be a response to a "
            "preceeding message with 'tool_calls'."
        ),
        "messages.[1].role",
    ),
    (
        "unanswered tool call",
        {"messages": [USER, CALL, USER]},
        (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not "
            "have response messages: call_1"
        ),
        "messages.[1].role",
    ),
    (
        "conversation ends on a call",
        {"messages": [USER, CALL]},
        "The following tool_call_ids did not have response messages: call_1",
        "messages.[1].role",
    ),
    (
        "assistant without content",
        {"messages": [USER, {"role": "assistant", "content": None}, USER]},
        "Invalid type for 'messages[1].content': expected a string, but got null instead.",
        "messages[1].content",
    ),
    (
        "image in a system message",
        {
            "messages": [
                {
                    "role": "system",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
                    ],
                },
                USER,
            ]
        },
        "Invalid value: 'image_url'. Supported values are: 'text'.",
        "messages[0].content[0].type",
    ),
    (
        "data URL that is not an image",
        {"messages": [image("data:text/plain;base64,aGk=")]},
        (
            "Invalid 'messages[0].content[0].image_url.url'. Expected a base64-encoded "
            "data URL with an image MIME type"
        ),
        "messages[0].content[0].image_url.url",
    ),
    (
        "data URL with broken base64",
        {"messages": [image("data:image/png;base64,@@@")]},
        "data that is not valid base64",
        "messages[0].content[0].image_url.url",
    ),
    (
        "image that is not a URL",
        {"messages": [image("cat.png")]},
        "a value that is not a base64 data URL",
        "messages[0].content[0].image_url.url",
    ),
    (
        "file that is not a data URL",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "file", "file": {"file_data": "JVBERi0="}}],
                }
            ]
        },
        "Invalid 'messages[0].content[0].file.file_data'.",
        "messages[0].content[0].file.file_data",
    ),
    (
        "tool of another type",
        {"tools": [{"type": "retrieval"}]},
        "Invalid value: 'retrieval'. Supported values are: 'function'.",
        "tools[0].type",
    ),
    (
        "tool name with a space",
        {"tools": [function("turn on")]},
        (
            "Invalid 'tools[0].function.name': string does not match pattern. Expected "
            "a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        ),
        "tools[0].function.name",
    ),
    (
        "tool name too long",
        {"tools": [function("x" * 65)]},
        (
            "Invalid 'tools[0].function.name': string too long. Expected a string with "
            "maximum length 64, but got a string with length 65 instead."
        ),
        "tools[0].function.name",
    ),
    (
        "tool parameters not an object schema",
        {"tools": [function("f", {"type": "string"})]},
        (
            "Invalid schema for function 'f': schema must be a JSON Schema of "
            "'type: \"object\"', got 'type: \"string\"'."
        ),
        "tools[0].function.parameters",
    ),
    (
        "strict tool without additionalProperties",
        {"tools": [function("f", OBJECT, strict=True)]},
        (
            "Invalid schema for function 'f': In context=(), 'additionalProperties' is "
            "required to be supplied and to be false."
        ),
        "tools[0].function.parameters",
    ),
    (
        "empty tools",
        {"tools": []},
        "Invalid 'tools': empty array.",
        "tools",
    ),
    (
        "tool_choice without tools",
        {"tool_choice": "auto"},
        (
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
            "'tools' are specified."
        ),
        "tool_choice",
    ),
    (
        "schema that is not an object",
        {"response_format": schema_format("a string", strict=False)},
        (
            "Invalid type for 'response_format.json_schema.schema': expected an "
            "object, but got a string instead."
        ),
        "response_format.json_schema.schema",
    ),
    (
        "strict schema with an optional property",
        {
            "response_format": schema_format(
                {
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "required": ["a"],
                    "additionalProperties": False,
                }
            )
        },
        (
            "Invalid schema for response_format 'answer': In context=(), 'required' is "
            "required to be supplied and to be an array including every key in "
            "properties. Missing 'b'."
        ),
        "response_format",
    ),
    (
        "strict schema with an open nested object",
        {
            "response_format": schema_format(
                {
                    "type": "object",
                    "properties": {
                        "address": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        }
                    },
                    "required": ["address"],
                    "additionalProperties": False,
                }
            )
        },
        (
            "Invalid schema for response_format 'answer': In context=('properties', "
            "'address'), 'additionalProperties' is required to be supplied and to be "
            "false."
        ),
        "response_format",
    ),
    (
        "json_object without the word",
        {"messages": [USER], "response_format": {"type": "json_object"}},
        (
            "'messages' must contain the word 'json' in some form, to use "
            "'response_format' of type 'json_object'."
        ),
        "messages",
    ),
    (
        "temperature to a reasoning model",
        {"model": "gpt-5-mini", "temperature": 0.5},
        "Unsupported parameter: 'temperature' is not supported with this model.",
        "temperature",
    ),
    (
        "top_p to a reasoning model",
        {"model": "o3", "top_p": 0.9},
        "Unsupported parameter: 'top_p' is not supported with this model.",
        "top_p",
    ),
    (
        "max_tokens to a reasoning model",
        {"model": "openai/o4-mini", "max_tokens": 10},
        (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead."
        ),
        "max_tokens",
    ),
    (
        "stream_options without stream",
        {"stream_options": {"include_usage": True}},
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        "stream_options",
    ),
    (
        "top_logprobs without logprobs",
        {"top_logprobs": 3},
        "Error: 'logprobs' must be set to true in order to use top_logprobs",
        "top_logprobs",
    ),
    (
        "too many top_logprobs",
        {"logprobs": True, "top_logprobs": 21},
        "Invalid 'top_logprobs': integer out of range.",
        "top_logprobs",
    ),
]


@pytest.mark.parametrize(
    ("fields", "message", "param"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_rejected(
    client: openai.AsyncOpenAI, fields: dict[str, Any], message: str, param: str | None
) -> None:
    """The request is rejected with OpenAI's message and param."""
    request: dict[str, Any] = {"model": "gpt-4o-mini", "messages": [USER], **fields}

    with pytest.raises(openai.BadRequestError) as err:
        await client.chat.completions.create(**request)

    assert message in err.value.body["message"]
    assert err.value.body["type"] == "invalid_request_error"
    assert err.value.param == param


async def test_valid_tool_round_passes(client: openai.AsyncOpenAI) -> None:
    """An answered call, reasoning-model params and a strict tool are fine."""
    answer = await client.chat.completions.create(
        model="gpt-5-mini",
        max_completion_tokens=50,
        messages=[
            USER,
            CALL,
            {"role": "tool", "tool_call_id": "call_1", "content": "{}"},
            {"role": "assistant", "content": ""},
            USER,
        ],
        tools=[
            function(
                "HassTurnOn",
                {**OBJECT, "required": [], "additionalProperties": False},
                strict=True,
            )
        ],
    )
    assert answer.choices[0].message.content == "You said: hi"


async def test_tools_unsupported(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Servers whose model cannot call tools answer like Ollama."""
    sim.settings.supports_tools = False

    with pytest.raises(openai.BadRequestError) as err:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[USER], tools=[function("f")]
        )

    assert err.value.body["message"] == (
        "registry.ollama.ai/library/gemma:2b does not support tools"
    )
    answer = await client.chat.completions.create(model="gpt-4o-mini", messages=[USER])
    assert answer.choices[0].message.content


async def test_prompt_cache_key_switch(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """OpenAI accepts prompt_cache_key; stricter servers reject the field."""
    request: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [USER],
        "prompt_cache_key": "conversation-1",
    }
    assert (await client.chat.completions.create(**request)).choices

    sim.settings.prompt_cache_key = False
    with pytest.raises(openai.BadRequestError) as err:
        await client.chat.completions.create(**request)
    assert err.value.body["message"] == (
        "Unrecognized request argument supplied: prompt_cache_key"
    )


async def test_body_that_is_not_json(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A body that does not parse is a 400, and is recorded with json None."""
    with pytest.raises(openai.BadRequestError, match="could not parse the JSON body"):
        await client.post(
            "/chat/completions",
            cast_to=object,
            content=b"{nope",
            options={"headers": {"Content-Type": "application/json"}},
        )
    assert sim.requests[-1].json is None
    assert sim.requests[-1].body == b"{nope"


async def test_multimodal_content_is_accepted(client: openai.AsyncOpenAI) -> None:
    """Text, data-URL images, remote images and files pass validation."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                    },
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": "https://example.com/a.png",
                            "detail": "low",
                        },
                    },
                    {
                        "type": "file",
                        "file": {
                            "filename": "a.pdf",
                            "file_data": "data:application/pdf;base64,JVBERi0=",
                        },
                    },
                ],
            }
        ],
    )
    assert (answer.choices[0].message.content or "").startswith(
        "You asked: What is this? The simulator has no answer."
    )
