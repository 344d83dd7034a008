"""The scripted smart home: questions, the thermostat and weather, through tools."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from simulator.home import live_entities
from simulator.small_talk import CANNED

MODEL = "gpt-4o-mini"
LIVE = "homeassistant__GetLiveContext"
SET = "climate__HassClimateSetTemperature"
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in (LIVE, SET, "intent__HassTurnOn")
]
# What Home Assistant's GetLiveContext answers for the develop demo.
HOME = """Live Context: An overview of the areas and the devices in this smart home:
- names: Front door
  domain: binary_sensor
  state: 'off'
  attributes:
    device_class: door
- names: Kitchen light
  domain: light
  state: 'on'
- names: Thermostat
  domain: climate
  state: heat
  attributes:
    current_temperature: '20.5'
    temperature: '21.0'
"""


async def _call(client: openai.AsyncOpenAI, text: str) -> tuple[str, dict[str, Any]]:
    """Ask once; return the tool the model calls and its arguments."""
    answer = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": text}], tools=TOOLS
    )
    (call,) = answer.choices[0].message.tool_calls or ()
    return call.function.name, json.loads(call.function.arguments)


async def _answer(
    client: openai.AsyncOpenAI, text: str, name: str, arguments: Any, result: Any
) -> str:
    """Return what the model says once the tool answered."""
    messages: list[Any] = [
        {"role": "user", "content": text},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(result)},
    ]
    answer = await client.chat.completions.create(
        model=MODEL, messages=messages, tools=TOOLS
    )
    return answer.choices[0].message.content or ""


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Is the front door open?", "Front door is closed."),
        ("is the kitchen light on", "Kitchen light is on."),
    ],
)
async def test_state_question_reads_the_live_context(
    client: openai.AsyncOpenAI, question: str, said: str
) -> None:
    """A question about a device asks GetLiveContext, then says what it found."""
    name, arguments = await _call(client, question)
    assert (name, arguments) == (LIVE, {})

    text = await _answer(client, question, name, arguments, {"result": HOME})

    assert text == said


@pytest.mark.parametrize(
    ("question", "said"),
    [
        (
            "What's the temperature?",
            "Thermostat is in heat mode, set to 21.0 degrees; it is 20.5 degrees now.",
        ),
        ("Are the lights on?", "Kitchen light is on."),
        ("Is any door open?", "Front door is closed."),
        ("What is the capital of France?", f"You asked: What is the capital of France? {CANNED}"),
    ],
)  # fmt: skip
async def test_question_answers_only_what_it_asks(
    client: openai.AsyncOpenAI, question: str, said: str
) -> None:
    """A question naming a kind of device hears of those only; one naming none, small talk.

    Not every device of the home in one breath.
    """
    name, arguments = await _call(client, question)
    assert (name, arguments) == (LIVE, {})

    assert await _answer(client, question, name, arguments, {"result": HOME}) == said


async def test_thermostat_question_and_command(client: openai.AsyncOpenAI) -> None:
    """The thermostat's state is read, and its target set through its intent."""
    text = await _answer(
        client, "What is the thermostat set to?", LIVE, {}, {"result": HOME}
    )
    assert text == (
        "Thermostat is in heat mode, set to 21.0 degrees; it is 20.5 degrees now."
    )

    command = "Set the thermostat to 22.5 degrees"
    name, arguments = await _call(client, command)
    assert (name, arguments) == (SET, {"name": "thermostat", "temperature": 22.5})
    done = {"response_type": "action_done", "data": {"success": []}}
    assert await _answer(client, command, name, arguments, done) == (
        "Set thermostat to 22.5 degrees."
    )


async def test_weather_question(client: openai.AsyncOpenAI) -> None:
    """A weather question asks for weather entities; none is said plainly."""
    question = "What's the weather like?"
    name, arguments = await _call(client, question)
    assert (name, arguments) == (LIVE, {"domain": "weather"})

    none = {"error": "No entity matched domain weather"}
    assert await _answer(client, question, name, arguments, none) == (
        "Home Assistant shows me no weather entity, so I cannot tell the weather."
    )
    forecast = (
        "Live Context:\n- names: Home\n  domain: weather\n  state: sunny\n"
        "  attributes:\n    temperature: '18'\n    temperature_unit: °C\n"
    )
    assert await _answer(client, question, name, arguments, {"result": forecast}) == (
        "Home: sunny, 18 °C."
    )


async def test_without_tools_a_question_is_echoed(client: openai.AsyncOpenAI) -> None:
    """Without Home Assistant's tools there is nothing to ask: the echo stays."""
    answer = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Is the door open?"}]
    )
    assert answer.choices[0].message.content == (
        f"You asked: Is the door open? {CANNED}"
    )


def test_live_entities() -> None:
    """The YAML overview is read into entities with their attributes."""
    entities = live_entities(HOME)
    assert [e["names"] for e in entities] == [
        "Front door",
        "Kitchen light",
        "Thermostat",
    ]
    assert entities[0]["attributes"] == {"device_class": "door"}
    assert entities[1] == {"names": "Kitchen light", "domain": "light", "state": "on"}
