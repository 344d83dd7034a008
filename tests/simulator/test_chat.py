"""Built-in chat answers, streamed and not, through the real OpenAI client."""

from __future__ import annotations

import json
import re
from typing import Any

import openai
import pydantic
import pytest

from simulator import OpenAISimulator, chunk, sse_text, sse_tool_calls

MODEL = "gpt-4o-mini"


def user(text: str) -> list[dict[str, Any]]:
    """Return a one-message conversation."""
    return [{"role": "user", "content": text}]


def tool(name: str) -> dict[str, Any]:
    """Return a function tool taking a name."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} a device",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            },
        },
    }


HASS_TOOLS = [tool("HassTurnOn"), tool("HassTurnOff")]


async def collect(
    client: openai.AsyncOpenAI, **kwargs: Any
) -> list[openai.types.chat.ChatCompletionChunk]:
    """Stream a completion and return all chunks."""
    stream = await client.chat.completions.create(model=MODEL, stream=True, **kwargs)
    return [part async for part in stream]


def streamed_text(chunks: list[openai.types.chat.ChatCompletionChunk]) -> str:
    """Join the content of streamed chunks."""
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


@pytest.mark.parametrize("question", ["Is it on?", "Is it on? ", "Είναι;", "开着吗？"])
async def test_echo_of_a_question_does_not_ask_back(
    client: openai.AsyncOpenAI, question: str
) -> None:
    """An echoed question ends with a statement: Home Assistant would keep listening.

    Home Assistant keeps the conversation open after an answer ending with a
    question mark; the built-in answer must not do that to every question.
    """
    answer = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": question}]
    )

    text = answer.choices[0].message.content
    assert text == f"You asked: {question.rstrip()} The simulator has no answer."


async def test_echo_not_streamed(client: openai.AsyncOpenAI) -> None:
    """Without tools or formats the answer echoes the last user text."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "Hello there"},
        ],
    )

    choice = answer.choices[0]
    assert choice.message.content == "You said: Hello there"
    assert choice.message.role == "assistant"
    assert choice.finish_reason == "stop"
    assert choice.logprobs is None
    assert answer.object == "chat.completion"
    assert answer.model == MODEL
    assert answer.usage is not None
    assert answer.usage.total_tokens == (
        answer.usage.prompt_tokens + answer.usage.completion_tokens
    )


async def test_echo_streamed_with_usage(client: openai.AsyncOpenAI) -> None:
    """A stream carries the text in pieces and ends with a usage chunk."""
    chunks = await collect(
        client,
        messages=user("Hello there"),
        stream_options={"include_usage": True},
    )

    assert chunks[0].choices[0].delta.role == "assistant"
    assert streamed_text(chunks) == "You said: Hello there"
    assert len(chunks) > 4
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens > 0


async def test_stream_usage_only_when_asked_and_supported(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """No usage chunk unless asked; servers that never send one are simulated."""
    plain = await collect(client, messages=user("hi"))
    assert all(c.usage is None for c in plain)

    sim.settings.stream_usage = False
    asked = await collect(
        client, messages=user("hi"), stream_options={"include_usage": True}
    )
    assert all(c.usage is None for c in asked)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_fields(
    sim: OpenAISimulator, client: openai.AsyncOpenAI, field: str
) -> None:
    """Reasoning arrives in the configured field before the answer."""
    sim.settings.reasoning = field  # type: ignore[assignment]

    chunks = await collect(client, messages=user("hi"))
    answer = await client.chat.completions.create(model=MODEL, messages=user("hi"))

    thinking = "".join(
        (c.choices[0].delta.model_extra or {}).get(field) or ""
        for c in chunks
        if c.choices
    )
    assert thinking == "The user wrote 1 words. I will answer briefly."
    assert streamed_text(chunks) == "You said: hi"
    first_text = next(
        i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content
    )
    first_thought = next(
        i
        for i, c in enumerate(chunks)
        if c.choices and (c.choices[0].delta.model_extra or {}).get(field)
    )
    assert first_thought < first_text
    assert (answer.choices[0].message.model_extra or {})[field] == thinking


async def test_reasoning_think_tags(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Think-tag servers put the reasoning inline in the content."""
    sim.settings.reasoning = "think_tags"

    text = streamed_text(await collect(client, messages=user("hi")))

    assert text == (
        "<think>\nThe user wrote 1 words. I will answer briefly.\n</think>\n\n"
        "You said: hi"
    )


@pytest.mark.parametrize(
    ("sentence", "name", "target"),
    [
        ("turn on the kitchen light", "HassTurnOn", "kitchen light"),
        ("Turn off the Porch Lamp.", "HassTurnOff", "Porch Lamp"),
        ("switch on fan", "HassTurnOn", "fan"),
        ("Please turn the kitchen light off", "HassTurnOff", "kitchen light"),
    ],
)
async def test_streamed_tool_call(
    client: openai.AsyncOpenAI, sentence: str, name: str, target: str
) -> None:
    """Simple commands become a tool call, its arguments in fragments."""
    chunks = await collect(client, messages=user(sentence), tools=HASS_TOOLS)

    fragments = [
        call
        for c in chunks
        if c.choices
        for call in c.choices[0].delta.tool_calls or ()
    ]
    assert len(fragments) >= 4
    assert {f.index for f in fragments} == {0}
    call_id = next(f.id for f in fragments if f.id)
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", call_id)
    assert (
        next(f.function.name for f in fragments if f.function and f.function.name)
        == name
    )
    arguments = "".join(f.function.arguments or "" for f in fragments if f.function)
    assert json.loads(arguments) == {"name": target}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_tool_call_not_streamed_with_prefixed_name(
    client: openai.AsyncOpenAI,
) -> None:
    """A tool ending in __HassTurnOn counts; the call is whole when not streamed."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user("Turn on the kitchen light"),
        tools=[tool("assist__HassTurnOn")],
    )

    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.type == "function"
    assert call.function.name == "assist__HassTurnOn"
    assert json.loads(call.function.arguments) == {"name": "kitchen light"}


async def test_no_matching_tool_echoes(client: openai.AsyncOpenAI) -> None:
    """A command without a fitting tool, or tool_choice none, gets text."""
    answer = await client.chat.completions.create(
        model=MODEL, messages=user("turn on the fan"), tools=[tool("HassTurnOff")]
    )
    assert answer.choices[0].message.content == "You said: turn on the fan"
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user("turn on the fan"),
        tools=HASS_TOOLS,
        tool_choice="none",
    )
    assert answer.choices[0].message.tool_calls is None


async def test_tool_choice_forces_a_call(client: openai.AsyncOpenAI) -> None:
    """tool_choice required or named calls a tool with schema-filled arguments."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user("what time is it?"),
        tools=HASS_TOOLS,
        tool_choice={"type": "function", "function": {"name": "HassTurnOff"}},
    )
    (call,) = answer.choices[0].message.tool_calls or []
    assert call.function.name == "HassTurnOff"
    assert json.loads(call.function.arguments) == {"name": "Kitchen light"}


def tool_round(
    result: dict[str, Any], name: str = "HassTurnOn"
) -> list[dict[str, Any]]:
    """Return a conversation that ends with one tool result."""
    return [
        {"role": "user", "content": "turn on the kitchen light"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": '{"name": "kitchen light"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(result)},
    ]


@pytest.mark.parametrize(
    ("result", "name", "expected"),
    [
        (
            {
                "response_type": "action_done",
                "data": {
                    "success": [{"name": "Kitchen light", "type": "entity"}],
                    "failed": [],
                },
            },
            "HassTurnOn",
            "Turned on Kitchen light.",
        ),
        ({"ok": True}, "HassTurnOff", "Turned off kitchen light."),
        ({"temperature": 21}, "GetLiveContext", "Done."),
        (
            {"error": "HomeAssistantError", "error_text": "Light is unavailable"},
            "HassTurnOn",
            "Sorry, HassTurnOn failed: Light is unavailable.",
        ),
        ({"error": True}, "HassTurnOn", "Sorry, HassTurnOn failed."),
    ],
)
async def test_tool_result_is_summarised(
    client: openai.AsyncOpenAI, result: dict[str, Any], name: str, expected: str
) -> None:
    """After a tool result the answer is a short sentence about it."""
    chunks = await collect(client, messages=tool_round(result, name), tools=HASS_TOOLS)
    assert streamed_text(chunks) == expected


class Address(pydantic.BaseModel):
    """A nested object."""

    street: str
    city: str


class Reminder(pydantic.BaseModel):
    """A schema with most kinds of fields."""

    title: str
    entity_id: str
    priority: int = pydantic.Field(ge=3, le=5)
    ratio: float = pydantic.Field(ge=0, le=1)
    urgent: bool
    tags: list[str]
    kind: str = pydantic.Field(json_schema_extra={"enum": ["home", "work"]})
    address: Address
    note: str | None


async def test_structured_output_through_parse(client: openai.AsyncOpenAI) -> None:
    """The client's strict pydantic schema is accepted and filled validly."""
    answer = await client.chat.completions.parse(
        model=MODEL, messages=user("Make a reminder"), response_format=Reminder
    )

    parsed = answer.choices[0].message.parsed
    assert isinstance(parsed, Reminder)
    assert parsed.entity_id == "light.kitchen"
    assert 3 <= parsed.priority <= 5
    assert 0 <= parsed.ratio <= 1
    assert parsed.urgent is True
    assert len(parsed.tags) == 1
    assert parsed.kind == "home"
    assert parsed.address.city
    assert parsed.note is not None


async def test_json_schema_formats_and_refs(client: openai.AsyncOpenAI) -> None:
    """Formats, $refs, nullable types and bounds are honoured."""
    schema = {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "time"},
            "when": {"type": "string", "format": "date-time"},
            "count": {"type": ["integer", "null"], "minimum": 10},
            "place": {"$ref": "#/$defs/place"},
            "items": {"type": "array", "items": {"type": "number", "maximum": 0}},
        },
        "$defs": {
            "place": {"type": "object", "properties": {"name": {"type": "string"}}}
        },
    }
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user("fill"),
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "x", "schema": schema},
        },
    )

    assert json.loads(answer.choices[0].message.content or "") == {
        "day": "2026-11-29",
        "at": "12:00:00",
        "when": "2026-11-29T12:00:00+00:00",
        "count": 10,
        "place": {"name": "Kitchen light"},
        "items": [0.0],
    }


async def test_structured_answer_after_tool_results(client: openai.AsyncOpenAI) -> None:
    """With a response format, the answer after tool results is JSON too."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=tool_round({"ok": True}),
        tools=HASS_TOOLS,
        response_format={
            "type": "json_schema",
            "json_schema": {
                "name": "done",
                "schema": {
                    "type": "object",
                    "properties": {"done": {"type": "boolean"}},
                },
            },
        },
    )
    assert json.loads(answer.choices[0].message.content or "") == {"done": True}


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (
            'Answer in JSON matching {"type": "object", "properties": {"color": {"type": "string"}}}',
            {"color": "red"},
        ),
        ("Reply with a JSON object.", {"result": "ok"}),
    ],
)
async def test_json_object_mode(
    client: openai.AsyncOpenAI, prompt: str, expected: dict[str, Any]
) -> None:
    """json_object fills a schema found in the prompt, else a stock object."""
    answer = await client.chat.completions.create(
        model=MODEL, messages=user(prompt), response_format={"type": "json_object"}
    )
    assert json.loads(answer.choices[0].message.content or "") == expected


STRICT_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": False,
        },
    },
}
LOOSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "answer",
        "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
    },
}
OBJECT_FORMAT = {"type": "json_object"}


@pytest.mark.parametrize(
    ("mode", "accepted", "rejected"),
    [
        ("strict", [STRICT_FORMAT, LOOSE_FORMAT, OBJECT_FORMAT], []),
        ("non_strict", [LOOSE_FORMAT, OBJECT_FORMAT], [STRICT_FORMAT]),
        ("json_object", [OBJECT_FORMAT], [STRICT_FORMAT, LOOSE_FORMAT]),
        ("none", [], [STRICT_FORMAT, LOOSE_FORMAT, OBJECT_FORMAT]),
    ],
)
async def test_json_schema_settings(
    sim: OpenAISimulator,
    client: openai.AsyncOpenAI,
    mode: str,
    accepted: list[dict[str, Any]],
    rejected: list[dict[str, Any]],
) -> None:
    """Each structured-output level accepts and rejects what such servers do."""
    sim.settings.json_schema = mode  # type: ignore[assignment]
    messages = user("Answer in JSON.")
    for response_format in accepted:
        answer = await client.chat.completions.create(
            model=MODEL, messages=messages, response_format=response_format
        )
        assert isinstance(json.loads(answer.choices[0].message.content or ""), dict)
    for response_format in rejected:
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(
                model=MODEL, messages=messages, response_format=response_format
            )


@pytest.mark.parametrize(
    ("prompt", "token", "alternative"),
    [
        ('Is the door open? Answer "yes" or "no".', "yes", "no"),
        ("Is it on? Answer Yes or No only.", "Yes", "No"),
        ("Which room?\nA) kitchen\nB) garage\nC) attic", "A", "B"),
        ("Rate the comfort from 1 to 5.", "1", "2"),
        ("Pick 'cold', 'warm' or 'hot'.", "cold", "warm"),
    ],
)
async def test_logprobs_single_label(
    client: openai.AsyncOpenAI, prompt: str, token: str, alternative: str
) -> None:
    """A classification prompt gets one label token with realistic alternatives."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user(prompt),
        logprobs=True,
        top_logprobs=8,
        max_completion_tokens=1,
    )

    choice = answer.choices[0]
    assert choice.message.content == token
    assert choice.logprobs is not None and choice.logprobs.content is not None
    (entry,) = choice.logprobs.content
    assert entry.token == token
    assert entry.bytes == list(token.encode())
    assert entry.logprob < 0
    tops = [top.token for top in entry.top_logprobs]
    assert len(tops) == 8
    assert tops[0] == token
    assert f" {token}" in tops
    assert alternative in tops
    logprobs = [top.logprob for top in entry.top_logprobs]
    assert logprobs == sorted(logprobs, reverse=True)


async def test_logprobs_streamed_and_echo(client: openai.AsyncOpenAI) -> None:
    """Streamed logprobs ride on the chunk choices, one per token."""
    chunks = await collect(
        client, messages=user("Tell me something"), logprobs=True, top_logprobs=2
    )

    entries = [
        entry
        for c in chunks
        if c.choices and c.choices[0].logprobs
        for entry in c.choices[0].logprobs.content or ()
    ]
    assert "".join(e.token for e in entries) == "You said: Tell me something"
    assert all(len(e.top_logprobs) == 2 for e in entries)
    assert streamed_text(chunks) == "You said: Tell me something"


async def test_logprobs_switched_off(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A server without logprobs ignores the request fields."""
    sim.settings.logprobs = False
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user('Answer "yes" or "no".'),
        logprobs=True,
        top_logprobs=3,
    )
    assert answer.choices[0].logprobs is None
    assert answer.choices[0].message.content == 'You said: Answer "yes" or "no".'


async def test_helpers_build_wire_chunks(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """sse_text and sse_tool_calls make streams the client parses."""
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    sim.enqueue(
        "/chat/completions",
        sse=sse_text(
            "Hello world",
            split=3,
            reasoning="hmm",
            reasoning_field="reasoning",
            usage=usage,
        ),
    )
    sim.enqueue(
        "/chat/completions",
        sse=sse_tool_calls(
            [
                ("call_a", "first", {"x": 1}),
                ("call_b", "second", '{"y": 2}'),
                ("call_c", "third", None),
            ],
            text="On it.",
        ),
    )

    text_chunks = await collect(client, messages=user("hi"))
    call_chunks = await collect(client, messages=user("hi"))

    assert streamed_text(text_chunks) == "Hello world"
    assert text_chunks[-1].usage is not None and text_chunks[-1].usage.total_tokens == 5
    assert streamed_text(call_chunks) == "On it."
    calls: dict[int, list[str]] = {}
    for c in call_chunks:
        for fragment in (c.choices[0].delta.tool_calls or ()) if c.choices else ():
            calls.setdefault(fragment.index, []).append(
                fragment.function.arguments or "" if fragment.function else ""
            )
    assert {i: "".join(parts) for i, parts in calls.items()} == {
        0: '{"x": 1}',
        1: '{"y": 2}',
        2: "",
    }
    assert call_chunks[-1].choices[0].finish_reason == "tool_calls"
    assert chunk(None, usage=usage) == {"choices": [], "usage": usage}


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
    assert (
        answer.choices[0].message.content
        == "You asked: What is this? The simulator has no answer."
    )
