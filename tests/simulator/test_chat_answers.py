"""The built-in chat answers, through the real OpenAI client."""

from __future__ import annotations

import json
import re
from typing import Any

import openai
import pydantic
import pytest

from simulator import OpenAISimulator
from simulator.small_talk import CANNED, JOKE
from tests.simulator.chat_client import MODEL, collect, streamed_text, user


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
    assert text == f"You asked: {question.rstrip()} {CANNED}"


@pytest.mark.parametrize(
    ("said", "answered"),
    [
        ("tell me a joke", JOKE),
        ("Do you know any jokes?", JOKE),
        ("Tell me about the moon", f"You asked: Tell me about the moon. {CANNED}"),
        ("why is the sky blue", f"You asked: why is the sky blue. {CANNED}"),
        ("Thanks!", "You said: Thanks!"),
    ],
)
async def test_general_questions_get_a_canned_answer(
    client: openai.AsyncOpenAI, said: str, answered: str
) -> None:
    """A joke asked for is told; other questions and requests get the canned answer.

    Statements are still echoed.
    """
    answer = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": said}]
    )

    assert answer.choices[0].message.content == answered


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
