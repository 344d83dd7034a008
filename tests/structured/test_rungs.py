"""The structured-output ladder against refusals of every status and shape.

A refusal of the JSON schema moves the task to the next way of asking at once,
and a refusal that holds for any request is learned for the model, whether the
server answers 400, 422 or 500, and whether it words it as OpenAI, FastAPI, a
gateway rewrapping another server, plain text or a web page.
"""

from __future__ import annotations

import json
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import pytest

from custom_components.openai_compatible.const import Feature
from simulator import OpenAISimulator
from tests.conftest import SetupEntry

ENTITY = "ai_task.openai_compatible_ai_task"
CHAT = "/chat/completions"
MODEL = "gpt-4o-mini"
STRUCTURE = {
    "condition": {"required": True, "selector": {"text": {}}},
    "temperature": {"required": True, "selector": {"number": {}}},
}
PYDANTIC = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
    "'response_format', 'type'), 'msg': \"Input should be 'text' or "
    "'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or "
    "'json_object'\"}}"
)
# The same refusal as servers and gateways word it.
SHAPES: dict[str, dict[str, Any]] = {
    "openai": {
        "json": {
            "error": {
                "message": "Invalid parameter: 'response_format' of type "
                "'json_schema' is not supported with this model.",
                "type": "invalid_request_error",
                "param": "response_format",
                "code": None,
            }
        }
    },
    "fastapi": {
        "json": {
            "detail": [
                {
                    "type": "literal_error",
                    "loc": ["body", "response_format", "type"],
                    "msg": "Input should be 'text' or 'json_object'",
                    "input": "json_schema",
                    "ctx": {"expected": "'text' or 'json_object'"},
                }
            ]
        }
    },
    "llama_cpp_python": {
        "json": {"error": {"message": PYDANTIC, "type": "internal_server_error"}}
    },
    "gateway": {
        "json": {
            "error": {
                "message": "litellm.BadRequestError: OpenAIException - "
                + PYDANTIC
                + ". Received Model Group=tiny\nAvailable Model Group Fallbacks=None",
                "type": None,
                "param": None,
                "code": "400",
            }
        }
    },
    "plain": {"raw": "response_format json_schema is not supported"},
    "html": {
        "raw": "<html><body><h1>Error</h1><p>response_format: json_schema "
        "unsupported</p></body></html>",
        "headers": {"Content-Type": "text/html"},
    },
}


async def generate(hass: HomeAssistant, name: str = "Weather") -> dict[str, Any]:
    """Ask our AI task entity for data of the structure; return the data."""
    response = await hass.services.async_call(
        "ai_task",
        "generate_data",
        {
            "task_name": name,
            "entity_id": ENTITY,
            "instructions": "Describe the weather",
            "structure": STRUCTURE,
        },
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    data: dict[str, Any] = response["data"]
    return data


def formats(simulator: OpenAISimulator) -> list[str | None]:
    """Return the response format type of each chat request, in order."""
    return [
        (body.get("response_format") or {}).get("type")
        for body in simulator.chat_requests()
    ]


@pytest.mark.parametrize("status", [400, 422, 500])
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_a_refused_json_schema_steps_down_once_and_is_learned(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    status: int,
    shape: str,
) -> None:
    """One extra request for the first task; the next task asks the right way."""
    entry = await setup_entry()
    simulator.enqueue(CHAT, status=status, **SHAPES[shape])

    first = await generate(hass)

    assert set(first) == {"condition", "temperature"}
    assert isinstance(first["temperature"], (int, float))
    assert formats(simulator) == ["json_schema", "json_object"]
    model = entry.runtime_data.capabilities.model(MODEL)
    assert model.refuses(Feature.JSON_SCHEMA)

    second = await generate(hass, "Weather again")

    assert set(second) == {"condition", "temperature"}
    assert formats(simulator) == ["json_schema", "json_object", "json_object"]


async def test_a_restart_forgets_what_was_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Lessons live while the entry is loaded: after a reload, one refusal again."""
    entry = await setup_entry()
    simulator.enqueue(CHAT, status=500, **SHAPES["llama_cpp_python"])
    await generate(hass)
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    simulator.enqueue(CHAT, status=500, **SHAPES["llama_cpp_python"])

    await generate(hass, "After restart")
    await generate(hass, "And again")

    assert formats(simulator) == ["json_schema", "json_object"] * 2 + ["json_object"]


async def test_an_outage_is_not_walked_down(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 500 that names no request feature is the server's failure: raised."""
    entry = await setup_entry()
    simulator.enqueue(
        CHAT, status=500, json={"error": {"message": "CUDA out of memory"}}
    )

    with pytest.raises(HomeAssistantError) as err:
        await generate(hass)

    assert err.value.translation_key == "api_error"
    assert "CUDA out of memory" in str(err.value)
    assert formats(simulator) == ["json_schema"]
    assert not entry.runtime_data.capabilities.model(MODEL).lessons.refused


async def test_a_limit_of_one_schema_is_not_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A strict-mode limit of this schema moves this task only."""
    entry = await setup_entry()
    simulator.enqueue(
        CHAT,
        status=400,
        json={
            "error": {
                "message": "Invalid schema for response_format 'weather': In "
                "context=('properties', 'condition'), 'pattern' is not permitted.",
                "param": "response_format",
            }
        },
    )

    await generate(hass)
    await generate(hass, "Weather again")

    strict = [
        (body.get("response_format") or {}).get("json_schema", {}).get("strict")
        for body in simulator.chat_requests()
    ]
    assert strict == [True, None, True]
    assert not entry.runtime_data.capabilities.model(MODEL).lessons.refused


async def test_strict_refused_alone_keeps_the_plain_schema(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A server without strict mode gets the plain schema, from then on."""
    entry = await setup_entry()
    simulator.enqueue(
        CHAT,
        status=422,
        json={
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "response_format", "json_schema", "strict"],
                    "msg": "Extra inputs are not permitted",
                }
            ]
        },
    )

    await generate(hass)
    await generate(hass, "Weather again")

    assert formats(simulator) == ["json_schema", "json_schema", "json_schema"]
    model = entry.runtime_data.capabilities.model(MODEL)
    assert model.refuses(Feature.STRICT_SCHEMA)
    assert not model.refuses(Feature.JSON_SCHEMA)
    last = simulator.chat_requests()[-1]["response_format"]["json_schema"]
    assert "strict" not in last
    assert json.dumps(last["schema"])


async def test_a_schema_next_to_json_object_holds_the_answer(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """json_object carries the schema, which llama.cpp's servers hold answers to."""
    entry = await setup_entry()
    entry.runtime_data.capabilities.model(MODEL).learn_refused(
        Feature.JSON_SCHEMA, "HTTP 400: refused"
    )

    await generate(hass)

    (body,) = simulator.chat_requests()
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["required"] == ["condition", "temperature"]


async def test_a_server_that_refuses_the_schema_gets_plain_json_object(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A refusal of the schema next to json_object drops it, from then on."""
    entry = await setup_entry()
    model = entry.runtime_data.capabilities.model(MODEL)
    model.learn_refused(Feature.JSON_SCHEMA, "HTTP 400: refused")
    simulator.enqueue(
        CHAT,
        status=422,
        json={
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "response_format", "schema"],
                    "msg": "Extra inputs are not permitted",
                }
            ]
        },
    )

    await generate(hass)
    await generate(hass, "Weather again")

    assert [body["response_format"] for body in simulator.chat_requests()[1:]] == [
        {"type": "json_object"},
        {"type": "json_object"},
    ]
    assert model.refuses(Feature.JSON_OBJECT_SCHEMA)
    assert "schema" in simulator.chat_requests()[0]["response_format"]
