"""Responses API event streams as tests script them."""

from __future__ import annotations

import time

import openai

from simulator import (
    OpenAISimulator,
    Pause,
    function_call_item,
    message_item,
    reasoning_item,
    response_stream,
)
from tests.simulator.responses_client import collect, completed


async def test_scripted_stream_and_error_event(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Scripted items stream as given; an error event ends a stream."""
    sim.enqueue(
        "/responses",
        sse=response_stream(
            [
                reasoning_item("Thinking."),
                message_item("Hi"),
                function_call_item("call_1", "HassTurnOn", "{}"),
            ]
        ),
    )
    sim.enqueue(
        "/responses",
        sse=[
            {"type": "error", "code": "server_error", "message": "Boom", "param": None}
        ],
    )

    events = await collect(client, input="Hi")
    assert [item.type for item in completed(events).output] == [
        "reasoning",
        "message",
        "function_call",
    ]
    failed = await collect(client, input="Hi")
    assert failed[-1].type == "error"
    assert sim.responses_requests()[0]["input"] == "Hi"


async def test_a_pause_in_a_scripted_stream_waits(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A Pause holds the stream back, then the events after it follow."""
    events = response_stream([message_item("Hi")])
    sim.enqueue("/responses", sse=[*events[:2], Pause(0.2), *events[2:]])

    started = time.monotonic()
    streamed = await collect(client, input="Hi")

    assert time.monotonic() - started >= 0.2
    assert [event.type for event in streamed] == [event["type"] for event in events]
