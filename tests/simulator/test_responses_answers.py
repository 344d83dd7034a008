"""The built-in Responses API answers, through the real OpenAI client."""

from __future__ import annotations

import base64
import json

import openai

from simulator import OpenAISimulator
from simulator.imagegen import is_image
from tests.simulator.responses_client import (
    MODEL,
    REASONING_MODEL,
    collect,
    completed,
    rejected,
    user,
)

TURN_ON = {
    "type": "function",
    "name": "HassTurnOn",
    "description": "Turn on a device",
    "parameters": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    },
}


async def test_plain_answer_streams_text_and_usage(client: openai.AsyncOpenAI) -> None:
    """Text arrives in deltas between item events; usage ends the stream."""
    events = await collect(client, input=user("Hello"), store=False)

    types = [event.type for event in events]
    assert types[:3] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
    ]
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "You said: Hello"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    response = completed(events)
    assert response.output_text == "You said: Hello"
    assert response.usage is not None
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens == 4


async def test_whole_answer_without_stream(client: openai.AsyncOpenAI) -> None:
    """Without `stream`, the whole response object comes back."""
    response = await client.responses.create(
        model=MODEL, input="Hello", instructions="Be brief."
    )

    assert response.status == "completed"
    assert response.output_text == "You said: Hello"


async def test_function_call_and_its_output(client: openai.AsyncOpenAI) -> None:
    """A command calls the tool; its output makes the answer."""
    events = await collect(client, input=user("Turn on the kitchen"), tools=[TURN_ON])
    [call] = completed(events).output
    assert call.type == "function_call"
    assert call.name == "HassTurnOn"
    deltas = [
        e.delta for e in events if e.type == "response.function_call_arguments.delta"
    ]
    assert json.loads("".join(deltas)) == {"name": "kitchen"}

    response = await client.responses.create(
        model=MODEL,
        tools=[TURN_ON],
        input=[
            *user("Turn on the kitchen"),
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": json.dumps({"success": True}),
            },
        ],
    )

    assert response.output_text == "Turned on kitchen."


async def test_reasoning_item_round_trip(client: openai.AsyncOpenAI) -> None:
    """A reasoning model gives its summary and encrypted content to send back."""
    events = await collect(
        client,
        model=REASONING_MODEL,
        input=user("Turn on the kitchen"),
        tools=[TURN_ON],
        reasoning={"effort": "low", "summary": "auto"},
        include=["reasoning.encrypted_content"],
        store=False,
    )
    summary = "".join(
        e.delta for e in events if e.type == "response.reasoning_summary_text.delta"
    )
    assert summary == "The user wrote 4 words. I will answer briefly."
    reasoning, call = completed(events).output
    assert reasoning.type == "reasoning"
    assert reasoning.encrypted_content
    assert call.type == "function_call"
    replay = [
        *user("Turn on the kitchen"),
        reasoning.model_dump(exclude_none=True),
        {
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        },
        {"type": "function_call_output", "call_id": call.call_id, "output": "{}"},
    ]

    response = await client.responses.create(
        model=REASONING_MODEL, input=replay, tools=[TURN_ON], store=False
    )
    assert response.output_text == "Turned on kitchen."

    forged = {**replay[1], "encrypted_content": "gAAAAsimZm9yZ2Vk"}
    error = await rejected(
        client, model=REASONING_MODEL, input=[replay[0], forged, *replay[2:]]
    )
    assert "could not be verified" in error.message
    alone = await rejected(client, model=REASONING_MODEL, input=replay[:2])
    assert "without its required following item" in alone.message
    unsent = {
        key: value for key, value in replay[1].items() if key != "encrypted_content"
    }
    lost = await rejected(
        client,
        model=REASONING_MODEL,
        input=[replay[0], unsent, *replay[2:]],
        store=False,
    )
    assert lost.status_code == 404
    assert "not persisted" in lost.message


async def test_reasoning_without_encrypted_content_when_not_included(
    client: openai.AsyncOpenAI,
) -> None:
    """Without the include, a reasoning item carries no content and no summary."""
    response = await client.responses.create(model=REASONING_MODEL, input="Hi")

    reasoning = response.output[0]
    assert reasoning.type == "reasoning"
    assert reasoning.encrypted_content is None
    assert reasoning.summary == []


async def test_web_search_with_citation_and_sources(client: openai.AsyncOpenAI) -> None:
    """A search runs on the server; the answer cites a source inline."""
    events = await collect(
        client,
        input=user("Search the web for the tides in Brest"),
        tools=[
            {
                "type": "web_search",
                "search_context_size": "low",
                "user_location": {"type": "approximate", "country": "FR"},
            }
        ],
        include=["web_search_call.action.sources"],
    )

    search, message = completed(events).output
    assert search.type == "web_search_call"
    assert search.action.query == "the tides in Brest"
    assert search.action.sources[0].url.startswith("https://example.com/")
    assert "response.web_search_call.searching" in [e.type for e in events]
    annotation = message.content[0].annotations[0]
    assert annotation.type == "url_citation"
    text = message.content[0].text
    assert text[annotation.start_index : annotation.end_index].startswith("([example")


async def test_code_interpreter_runs_a_calculation(client: openai.AsyncOpenAI) -> None:
    """A calculation runs in a container; its logs come back when included."""
    response = await client.responses.create(
        model=MODEL,
        input="calculate 6 * 7",
        tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
        include=["code_interpreter_call.outputs"],
    )

    run, message = response.output
    assert run.type == "code_interpreter_call"
    assert run.outputs[0].logs == "42"
    assert message.content[0].text == "The result is 42."


async def test_image_generation_when_forced(client: openai.AsyncOpenAI) -> None:
    """A forced image generation returns a PNG as base64."""
    response = await client.responses.create(
        model=MODEL,
        input="A lighthouse at dusk",
        tools=[{"type": "image_generation", "size": "1024x1024"}],
        tool_choice={"type": "image_generation"},
    )

    [image] = response.output
    assert image.type == "image_generation_call"
    assert is_image(base64.b64decode(image.result))


async def test_structured_output_and_logprobs(client: openai.AsyncOpenAI) -> None:
    """A schema gives JSON of it; the logprobs include gives the alternatives."""
    response = await client.responses.create(
        model=MODEL,
        input="Give a name",
        text={
            "format": {
                "type": "json_schema",
                "name": "person",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
            }
        },
    )
    assert set(json.loads(response.output_text)) == {"name"}

    labelled = await client.responses.create(
        model=MODEL,
        input="Is the door open? Answer Yes or No.",
        include=["message.output_text.logprobs"],
        top_logprobs=5,
        max_output_tokens=16,
    )
    part = labelled.output[0].content[0]
    assert part.text == "Yes"
    assert [alt.token for alt in part.logprobs[0].top_logprobs][:2] == ["Yes", " Yes"]


async def test_answer_over_the_token_limit_is_incomplete(
    client: openai.AsyncOpenAI,
) -> None:
    """An answer longer than max_output_tokens ends incomplete."""
    events = await collect(client, input="word " * 40, max_output_tokens=16)

    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"


async def test_route_switched_off(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A server without the Responses API answers 404."""
    sim.settings.responses = False

    error = await rejected(client, input="Hi")

    assert error.status_code == 404
    assert "/v1/responses" in error.message
