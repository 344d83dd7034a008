"""The AI task entity, over HTTP against the simulator."""

from __future__ import annotations

import base64
from collections.abc import Callable
import io
import json
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import ai_task, conversation
from homeassistant.components.conversation.chat_log import DATA_CHAT_LOGS
from homeassistant.config_entries import ConfigEntryState, ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import entity_registry as er, llm
from PIL import Image
import probatio
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.ai_task import schema_name
from custom_components.openai_compatible.const import (
    CONF_CHAT_MODEL,
    CONF_IMAGE_MODEL,
    CONF_RECOMMENDED,
    SUBENTRY_AI_TASK,
    Feature,
)
from custom_components.openai_compatible.media.images import GeneratedImageInfo
from custom_components.openai_compatible.structured.rungs import (
    RUNG_INSTRUCTIONS,
    RUNG_JSON_OBJECT,
    RUNG_SCHEMA,
    RUNG_STRICT,
    structured_request,
)
from simulator import OpenAISimulator, chunk, sse_text, sse_tool_calls

from .conftest import SetupEntry, learned

ENTITY = "ai_task.openai_compatible_ai_task"
CHAT = "/chat/completions"
MODEL = "gpt-4o-mini"

WEATHER = {
    "condition": {
        "description": "The sky today",
        "required": True,
        "selector": {"select": {"options": ["sunny", "cloudy", "rainy"]}},
    },
    "temperature": {
        "description": "Degrees Celsius",
        "required": True,
        "selector": {"number": {"min": -50, "max": 60, "mode": "box"}},
    },
    "note": {"description": "Anything else", "selector": {"text": {}}},
}
WEATHER_ANSWER = {"condition": "sunny", "temperature": 21}


# ---------------------------------------------------------------------------
# Fixtures and helpers
# ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Keep the date in the system prompt stable for snapshots."""
    freezer.move_to("2026-11-29 12:00:00+00:00")


def png(width: int = 4, height: int = 3) -> bytes:
    """Return a small PNG."""
    return _encode("PNG", width, height)


def _encode(kind: str, width: int, height: int, **options: Any) -> bytes:
    """Return a small image in a format Pillow writes."""
    buffer = io.BytesIO()
    mode = "P" if kind == "GIF" else "RGB"
    Image.new(mode, (width, height)).save(buffer, format=kind, **options)
    return buffer.getvalue()


def media(name: str, mime_type: str) -> dict[str, str]:
    """Return an attachment of the local media folder, as the media selector gives it."""
    return {
        "media_content_id": f"media-source://media_source/local/{name}",
        "media_content_type": mime_type,
    }


async def generate_data(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    """Call ai_task.generate_data on our entity and return its response."""
    response = await hass.services.async_call(
        "ai_task",
        "generate_data",
        {"task_name": "Test task", "entity_id": ENTITY, **data},
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response


async def generate_image(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    """Call ai_task.generate_image on our entity and return its response."""
    response = await hass.services.async_call(
        "ai_task",
        "generate_image",
        {"task_name": "Test image", "entity_id": ENTITY, **data},
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response


def chat_log(hass: HomeAssistant, conversation_id: str) -> conversation.ChatLog:
    """Return the stored chat log of a task."""
    return hass.data[DATA_CHAT_LOGS][conversation_id]


def user_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the content parts of the last user message of a request."""
    message = next(m for m in reversed(body["messages"]) if m["role"] == "user")
    content = message["content"]
    return content if isinstance(content, list) else [content]


# ---------------------------------------------------------------------------
# The entity
# ---------------------------------------------------------------------------


async def test_entity_features_and_state(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Data, attachments and images; the state is the last task's time."""
    entry = await setup()
    state = hass.states.get(ENTITY)
    assert state is not None
    assert state.state == "unknown"
    features = ai_task.AITaskEntityFeature(state.attributes["supported_features"])
    assert ai_task.AITaskEntityFeature.GENERATE_DATA in features
    assert ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS in features
    assert ai_task.AITaskEntityFeature.GENERATE_IMAGE in features
    registered = er.async_get(hass).async_get(ENTITY)
    assert registered is not None
    subentry = next(
        s for s in entry.subentries.values() if s.subentry_type == SUBENTRY_AI_TASK
    )
    assert registered.unique_id == subentry.subentry_id
    assert registered.config_subentry_id == subentry.subentry_id

    simulator.enqueue(CHAT, sse=text_answer("Fine."))
    await generate_data(hass, instructions="How are you?")

    assert hass.states.get(ENTITY).state == "2026-11-29T12:00:00+00:00"


def text_answer(text: str) -> list[Any]:
    """Return a streamed text answer."""
    return sse_text(text)


async def test_no_image_model_no_image_feature(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Without an image model the entity cannot generate images."""
    await setup(ai_task={CONF_IMAGE_MODEL: ""})

    state = hass.states.get(ENTITY)
    assert state is not None
    features = ai_task.AITaskEntityFeature(state.attributes["supported_features"])
    assert ai_task.AITaskEntityFeature.GENERATE_DATA in features
    assert ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS in features
    assert ai_task.AITaskEntityFeature.GENERATE_IMAGE not in features
    with pytest.raises(ServiceValidationError):
        await generate_image(hass, instructions="A cat")
    assert not [r for r in simulator.requests if "/images/" in r.path]


async def test_one_entity_per_subentry(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    make_config_entry: Callable[..., MockConfigEntry],
    media_dir: Path,
) -> None:
    """A second AI task subentry gets its own entity with its own features."""
    entry = make_config_entry()
    hass.config_entries.async_add_subentry(
        entry,
        ConfigSubentry(
            data={CONF_RECOMMENDED: True, CONF_CHAT_MODEL: "llama3.2:3b"},
            subentry_type=SUBENTRY_AI_TASK,
            title="Local task",
            unique_id=None,
        ),
    )
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED

    entities = er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
    tasks = sorted(e.entity_id for e in entities if e.domain == "ai_task")
    assert tasks == ["ai_task.local_task", ENTITY]
    local = hass.states.get("ai_task.local_task")
    assert local is not None
    assert not (
        local.attributes["supported_features"]
        & ai_task.AITaskEntityFeature.GENERATE_IMAGE
    )


# ---------------------------------------------------------------------------
# generate_data: text
# ---------------------------------------------------------------------------


async def test_generate_text(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """Without a structure the answer is the model's text."""
    await setup()
    simulator.enqueue(CHAT, sse=sse_text("It is sunny.", reasoning="Look outside."))

    response = await generate_data(hass, instructions="What is the weather?")

    assert response["data"] == "It is sunny."
    (body,) = simulator.chat_requests()
    assert "response_format" not in body
    assert body == snapshot


async def test_generate_text_empty_answer(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """An empty answer is an error, not empty data."""
    await setup()
    simulator.enqueue(CHAT, sse=[chunk({"role": "assistant"}, finish_reason="stop")])

    with pytest.raises(HomeAssistantError) as err:
        await generate_data(hass, instructions="Say nothing")
    assert err.value.translation_key == "no_answer"


async def test_task_with_llm_api_runs_tools(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A Python caller's API reaches the model and its tool runs."""
    await setup()
    calls: list[dict[str, Any]] = []

    class ForecastTool(llm.Tool):
        name = "weather__forecast"
        description = "Tell tomorrow's weather."
        parameters = probatio.Schema({probatio.Required("city"): str})

        async def async_call(
            self,
            hass: HomeAssistant,
            tool_input: llm.ToolInput,
            llm_context: llm.LLMContext,
        ) -> llm.ToolResult:
            calls.append(tool_input.tool_args)
            return llm.ToolResult({"forecast": "rain"})

    class WeatherAPI(llm.API):
        async def async_get_api_instance(
            self, llm_context: llm.LLMContext
        ) -> llm.APIInstance:
            return llm.APIInstance(
                self, "Use the weather tools.", llm_context, [ForecastTool()]
            )

    api = WeatherAPI(hass=hass, id="weather", name="Weather")
    simulator.enqueue(
        CHAT, sse=sse_tool_calls([("call_w1", "weather__forecast", {"city": "Oslo"})])
    )
    simulator.enqueue(CHAT, sse=sse_text("Rain tomorrow."))

    result = await ai_task.async_generate_data(
        hass,
        task_name="Forecast",
        entity_id=ENTITY,
        instructions="Will it rain in Oslo tomorrow?",
        llm_api=api,
    )

    assert result.data == "Rain tomorrow."
    assert calls == [{"city": "Oslo"}]
    first, second = simulator.chat_requests()
    assert [tool["function"]["name"] for tool in first["tools"]] == [
        "weather__forecast"
    ]
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_w1",
        "content": json.dumps({"forecast": "rain"}, separators=(",", ":")),
    }


# ---------------------------------------------------------------------------
# generate_data: structured output
# ---------------------------------------------------------------------------


async def test_structured_strict(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """A structure is asked for in strict form and the answer validated."""
    entry = await setup()

    response = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    data = response["data"]
    assert data["condition"] in ("sunny", "cloudy", "rainy")
    assert -50 <= data["temperature"] <= 60
    (body,) = simulator.chat_requests()
    response_format = body["response_format"]
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["name"] == "test_task"
    assert body == snapshot
    assert learned(entry, MODEL).structured_output_rung == RUNG_STRICT


async def test_optional_nulls_dropped(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A strict answer's null for an optional key is left out of the data."""
    await setup()
    simulator.enqueue(CHAT, sse=sse_text(json.dumps({**WEATHER_ANSWER, "note": None})))

    response = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    assert response["data"] == WEATHER_ANSWER
    assert len(simulator.chat_requests()) == 1


@pytest.mark.parametrize(
    "answer",
    [
        [
            chunk({"role": "assistant", "content": "<think>I could say {oops</think>"}),
            chunk({"content": json.dumps(WEATHER_ANSWER)}, finish_reason="stop"),
        ],
        sse_text(json.dumps(WEATHER_ANSWER), reasoning="{not: json}"),
        sse_text(f"Here you go:\n```json\n{json.dumps(WEATHER_ANSWER)}\n```"),
    ],
    ids=["think_tags", "reasoning_field", "fenced"],
)
async def test_reasoning_never_reaches_the_parser(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    answer: list[Any],
) -> None:
    """Think tags, reasoning fields and fences around the JSON do not matter."""
    await setup()
    simulator.enqueue(CHAT, sse=answer)

    response = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    assert response["data"] == WEATHER_ANSWER
    assert len(simulator.chat_requests()) == 1


@pytest.mark.parametrize(
    ("server", "rung", "rejected"),
    [
        ("non_strict", RUNG_SCHEMA, 1),
        # The refusal names the JSON schema: plain json_schema is skipped.
        ("json_object", RUNG_JSON_OBJECT, 1),
    ],
)
async def test_ladder_walks_down_once(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    server: Any,
    rung: int,
    rejected: int,
) -> None:
    """A server that rejects a form is asked the next way at once, then remembered."""
    entry = await setup()
    simulator.settings.json_schema = server

    first = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    requests = simulator.chat_requests()
    assert len(requests) == rejected + 1
    accepted = requests[-1]
    expected = structured_request(rung, "test_task", {}, {})
    if expected.response_format is None:
        assert "response_format" not in accepted
    else:
        assert accepted["response_format"]["type"] == expected.response_format["type"]
        assert "strict" not in accepted["response_format"].get("json_schema", {})
    task_text = user_parts(accepted)[0]
    if rung >= RUNG_JSON_OBJECT:
        assert "Answer with only a JSON object that matches this JSON schema" in (
            task_text
        )
    else:
        assert task_text == "Describe today's weather"
    assert first["data"]["condition"] in ("sunny", "cloudy", "rainy")
    assert learned(entry, MODEL).structured_output_rung == rung

    # Later tasks start at the rung found: one request each.
    second = await generate_data(
        hass, instructions="Describe tomorrow's weather", structure=WEATHER
    )

    assert len(simulator.chat_requests()) == rejected + 2
    assert simulator.chat_requests()[-1].get("response_format") == accepted.get(
        "response_format"
    )
    assert second["data"]["condition"] in ("sunny", "cloudy", "rainy")


async def test_ladder_down_to_instructions(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server that takes no response_format gets the schema in the task text."""
    entry = await setup()
    simulator.settings.json_schema = "none"
    rejection = {
        "error": {
            "message": "Unrecognized request argument supplied: response_format",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": None,
        }
    }
    # The simulator's own answers are no JSON without a response_format; script it.
    # The refusal names response_format: the plain schema is not tried.
    for _ in range(2):
        simulator.enqueue(CHAT, status=400, json=rejection)
    simulator.enqueue(CHAT, sse=sse_text(json.dumps(WEATHER_ANSWER)))

    first = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    assert first["data"] == WEATHER_ANSWER
    requests = simulator.chat_requests()
    assert [
        (
            r.get("response_format", {}).get("type"),
            r.get("response_format", {}).get("json_schema", {}).get("strict"),
        )
        for r in requests
    ] == [
        ("json_schema", True),
        ("json_object", None),
        (None, None),
    ]
    schema_text = user_parts(requests[-1])[0]
    assert schema_text.startswith("Describe today's weather\n\nAnswer with only a JSON")
    assert user_parts(requests[1])[0] == schema_text
    # The messages of the rejected rungs were not kept in the chat log.
    assert requests[-1]["messages"][:-1] == requests[0]["messages"][:-1]
    assert learned(entry, MODEL).structured_output_rung == RUNG_INSTRUCTIONS

    simulator.enqueue(CHAT, sse=sse_text(json.dumps(WEATHER_ANSWER)))
    await generate_data(hass, instructions="And tomorrow?", structure=WEATHER)

    assert len(simulator.chat_requests()) == 4
    last = simulator.chat_requests()[-1]
    assert "response_format" not in last
    assert "Answer with only a JSON object" in user_parts(last)[0]


async def test_ladder_all_rejected_is_not_remembered(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """When even a plain request is rejected, the problem is not the format."""
    entry = await setup()
    simulator.settings.fail_status = 400
    simulator.settings.fail_message = "The model does not exist"

    with pytest.raises(HomeAssistantError) as err:
        await generate_data(hass, instructions="Describe", structure=WEATHER)

    assert err.value.translation_key == "api_error"
    assert err.value.translation_placeholders == {"message": "The model does not exist"}
    assert len(simulator.chat_requests()) == 4
    assert learned(entry, MODEL).structured_output_rung == RUNG_STRICT


async def test_strict_unsupported_starts_lower_without_remembering(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A structure without a strict form starts at the plain schema, this time only."""
    entry = await setup()
    free_form = {
        "details": {"required": True, "selector": {"object": {}}},
    }

    response = await generate_data(
        hass, instructions="Give details", structure=free_form
    )

    assert isinstance(response["data"]["details"], dict)
    (body,) = simulator.chat_requests()
    assert body["response_format"]["type"] == "json_schema"
    assert "strict" not in body["response_format"]["json_schema"]
    assert learned(entry, MODEL).structured_output_rung == RUNG_STRICT

    await generate_data(hass, instructions="Describe", structure=WEATHER)

    assert simulator.chat_requests()[-1]["response_format"]["json_schema"]["strict"]


async def test_strict_unsupported_on_a_json_object_server(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Starting at the plain schema, a rejection still lowers the memory."""
    entry = await setup()
    simulator.settings.json_schema = "json_object"
    free_form = {"details": {"required": True, "selector": {"object": {}}}}

    await generate_data(hass, instructions="Give details", structure=free_form)

    assert len(simulator.chat_requests()) == 2
    assert learned(entry, MODEL).structured_output_rung == RUNG_JSON_OBJECT


async def test_ladder_rejection_not_about_the_format_is_not_remembered(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A rejection that names no format moves this task down, not the model."""
    entry = await setup()
    simulator.enqueue(
        CHAT,
        status=400,
        json={"error": {"message": "The image is too large for this model"}},
    )

    first = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    assert first["data"]["condition"] in ("sunny", "cloudy", "rainy")
    rejected, accepted = simulator.chat_requests()
    assert rejected["response_format"]["json_schema"]["strict"] is True
    assert "strict" not in accepted["response_format"]["json_schema"]
    assert learned(entry, MODEL).structured_output_rung == RUNG_STRICT

    await generate_data(hass, instructions="Describe", structure=WEATHER)

    assert simulator.chat_requests()[-1]["response_format"]["json_schema"]["strict"]


async def test_ladder_with_tools_is_not_remembered(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """With tools in the request, a rejection may be about their mix: not learned."""
    entry = await setup()

    class NoteTool(llm.Tool):
        name = "notes__read"
        description = "Read the notes."
        parameters = probatio.Schema({})

        async def async_call(
            self,
            hass: HomeAssistant,
            tool_input: llm.ToolInput,
            llm_context: llm.LLMContext,
        ) -> llm.ToolResult:
            return {}

    class NotesAPI(llm.API):
        async def async_get_api_instance(
            self, llm_context: llm.LLMContext
        ) -> llm.APIInstance:
            return llm.APIInstance(self, "Notes.", llm_context, [NoteTool()])

    simulator.enqueue(
        CHAT,
        status=400,
        json={
            "error": {
                "message": "Invalid 'response_format.json_schema.strict': not "
                "supported in this request"
            }
        },
    )
    simulator.enqueue(CHAT, sse=sse_text(json.dumps({"condition": "sunny"})))

    result = await ai_task.async_generate_data(
        hass,
        task_name="Weather",
        entity_id=ENTITY,
        instructions="Describe today's weather",
        structure=probatio.Schema({probatio.Required("condition"): str}),
        llm_api=NotesAPI(hass=hass, id="notes", name="Notes"),
    )

    assert result.data == {"condition": "sunny"}
    rejected, accepted = simulator.chat_requests()
    assert rejected["tools"] and accepted["tools"]
    assert "strict" not in accepted["response_format"]["json_schema"]
    assert learned(entry, MODEL).structured_output_rung == RUNG_STRICT


async def test_ladder_is_remembered_per_model(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """What one model needs does not move another model of the same server."""
    entry = await setup()
    other = entry.runtime_data.capabilities.model("llama3.2:3b")
    other.learn_refused(Feature.JSON_SCHEMA, "HTTP 400: refused")
    other.learn_refused(Feature.JSON_OBJECT, "HTTP 400: refused")

    await generate_data(hass, instructions="Describe", structure=WEATHER)

    (body,) = simulator.chat_requests()
    assert body["response_format"]["json_schema"]["strict"] is True
    assert learned(entry, MODEL).structured_output_rung == RUNG_STRICT


async def test_repair_round(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """An answer that does not parse gets one repair round with the same prefix."""
    await setup()
    simulator.enqueue(CHAT, sse=sse_text("Sunny and warm, about 21 degrees."))
    simulator.enqueue(CHAT, sse=sse_text(json.dumps(WEATHER_ANSWER)))

    response = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    assert response["data"] == WEATHER_ANSWER
    first, second = simulator.chat_requests()
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["response_format"] == first["response_format"]
    assistant, repair = second["messages"][len(first["messages"]) :]
    assert assistant == {
        "role": "assistant",
        "content": "Sunny and warm, about 21 degrees.",
    }
    assert repair["role"] == "user"
    assert "the answer is not valid JSON" in repair["content"]
    assert "only the JSON" in repair["content"]
    assert second == snapshot


async def test_repair_keeps_rung_instructions(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """On the instruction rungs, the repair request repeats the schema prefix."""
    entry = await setup()
    entry.runtime_data.capabilities.model(MODEL).learn_refused(
        Feature.JSON_SCHEMA, "HTTP 400: refused"
    )
    simulator.enqueue(CHAT, sse=sse_text(json.dumps({"condition": "snowy"})))

    response = await generate_data(
        hass, instructions="Describe today's weather", structure=WEATHER
    )

    assert response["data"]["condition"] in ("sunny", "cloudy", "rainy")
    first, second = simulator.chat_requests()
    assert first["response_format"]["type"] == "json_object"
    assert first["response_format"]["schema"]["required"] == [
        "condition",
        "temperature",
    ]
    assert second["response_format"] == first["response_format"]
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["messages"][-1] == {
        "role": "user",
        "content": "Your answer does not match the requested structure: value must "
        "be one of ['cloudy', 'rainy', 'sunny'] at 'condition'; required key "
        "'temperature' is missing. Answer again with only the JSON, nothing else.",
    }


async def test_invalid_twice_raises(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A second answer that does not fit raises an error quoting the problem."""
    await setup()
    simulator.enqueue(CHAT, sse=sse_text(json.dumps({"condition": "sunny"})))
    simulator.enqueue(CHAT, sse=sse_text(json.dumps({"condition": "hail"})))

    with pytest.raises(HomeAssistantError) as err:
        await generate_data(
            hass, instructions="Describe today's weather", structure=WEATHER
        )

    assert err.value.translation_key == "structured_output_invalid"
    assert err.value.translation_placeholders == {
        "problem": "value must be one of ['cloudy', 'rainy', 'sunny'] at "
        "'condition'; required key 'temperature' is missing"
    }
    first_repair = simulator.chat_requests()[1]["messages"][-1]["content"]
    assert "required key 'temperature' is missing" in first_repair
    assert len(simulator.chat_requests()) == 2


ANIMAL = {
    "name": {"required": True, "selector": {"text": {}}},
    "legs": {"required": True, "selector": {"number": {"min": 0, "mode": "box"}}},
    "tame": {"selector": {"boolean": {}}},
    "diet": {"selector": {"select": {"options": ["plants", "meat"]}}},
}
ANIMAL_ANSWER = {"name": "Rex", "legs": 4}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        pytest.param(
            '{"name": "falseo\\u0001", "legs": 4}',
            "the text holds control characters at 'name'",
            id="control character",
        ),
        pytest.param(
            '{"name": "Rex", "legs": 7.9E3667}',
            "the value must be a finite number at 'legs'",
            id="huge exponent",
        ),
        pytest.param(
            '{"name": "Rex", "legs": 1' + "0" * 5000 + "}",
            "the value must be a finite number at 'legs'",
            id="huge integer",
        ),
        pytest.param(
            '{"name": "Rex", "legs": Infinity}',
            "the value must be a finite number at 'legs'",
            id="infinity",
        ),
        pytest.param(
            '{"name": "Rex", "legs": "4"}',
            "the value must be a finite number at 'legs'",
            id="number as text",
        ),
        pytest.param(
            '{"name": "Rex", "legs": 4, "tame": "false"}',
            "the value must be true or false at 'tame'",
            id="boolean as text",
        ),
        pytest.param(
            '{"name": "Rex", "legs": true}',
            "the value must be a finite number at 'legs'",
            id="boolean for a number",
        ),
        pytest.param(
            '{"name": "Rex", "legs": null}',
            "the value must be a finite number at 'legs'",
            id="required null",
        ),
    ],
)
async def test_answer_breaking_the_structure_is_repaired(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    answer: str,
    problem: str,
) -> None:
    """What the selectors would coerce or let through is asked for again."""
    await setup()
    simulator.enqueue(CHAT, sse=sse_text(answer))
    simulator.enqueue(CHAT, sse=sse_text(json.dumps(ANIMAL_ANSWER)))

    response = await generate_data(hass, instructions="An animal", structure=ANIMAL)

    assert response["data"] == ANIMAL_ANSWER
    repair = simulator.chat_requests()[1]["messages"][-1]["content"]
    assert f"does not match the requested structure: {problem}." in repair


async def test_answer_breaking_the_structure_twice_raises(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server that ignores bounds and writes huge exponents gets our error."""
    await setup()
    simulator.settings.unbounded_number = "7.9E3667"

    with pytest.raises(HomeAssistantError) as err:
        await generate_data(hass, instructions="An animal", structure=ANIMAL)

    assert err.value.translation_key == "structured_output_invalid"
    assert err.value.translation_placeholders == {
        "problem": "the value must be a finite number at 'legs'"
    }
    assert len(simulator.chat_requests()) == 2


# ---------------------------------------------------------------------------
# Attachments
# ---------------------------------------------------------------------------

PDF = b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"


@pytest.mark.parametrize(
    ("filename", "content", "declared", "part_type", "mime_type"),
    [
        ("photo.png", png(), "image/png", "image_url", "image/png"),
        ("photo.jpeg", _encode("JPEG", 4, 3), "image/jpeg", "image_url", "image/jpeg"),
        ("photo.jpg", _encode("JPEG", 4, 3), "image/jpg", "image_url", "image/jpeg"),
        ("photo.webp", _encode("WEBP", 4, 3), "image/webp", "image_url", "image/webp"),
        ("photo.gif", _encode("GIF", 4, 3), "image/gif", "image_url", "image/gif"),
        ("report.pdf", PDF, "application/pdf", "file", "application/pdf"),
    ],
    ids=["png", "jpeg", "jpg_declared", "webp", "gif", "pdf"],
)
async def test_attachments(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
    filename: str,
    content: bytes,
    declared: str,
    part_type: str,
    mime_type: str,
) -> None:
    """Images go as data URLs, PDFs as files; the chat log keeps only paths."""
    await setup()
    (media_dir / filename).write_bytes(content)
    simulator.enqueue(CHAT, sse=sse_text("A picture."))

    response = await generate_data(
        hass, instructions="What is this?", attachments=[media(filename, declared)]
    )

    assert response["data"] == "A picture."
    (body,) = simulator.chat_requests()
    text, part = user_parts(body)
    assert text == {"type": "text", "text": "What is this?"}
    data_url = f"data:{mime_type};base64,{base64.b64encode(content).decode()}"
    if part_type == "image_url":
        assert part == {"type": "image_url", "image_url": {"url": data_url}}
    else:
        assert part == {
            "type": "file",
            "file": {"filename": filename, "file_data": data_url},
        }
    # Only the attachment's path stays in the chat log, not its bytes.
    log = chat_log(hass, response["conversation_id"])
    task_message = next(
        c for c in log.content if isinstance(c, conversation.UserContent)
    )
    assert task_message.attachments is not None
    (kept,) = task_message.attachments
    assert kept.path == media_dir / filename
    assert base64.b64encode(content).decode() not in repr(log.content)


@pytest.mark.parametrize(
    ("filename", "content", "mime_type"),
    [
        ("notes.txt", b"just some text", "text/plain"),
        ("sound.mp3", b"ID3\x03\x00\x00\x00", "audio/mpeg"),
    ],
    ids=["text", "audio"],
)
async def test_attachment_refused(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
    filename: str,
    content: bytes,
    mime_type: str,
) -> None:
    """Types the model cannot read are refused, naming the type."""
    await setup()
    (media_dir / filename).write_bytes(content)

    with pytest.raises(HomeAssistantError) as err:
        await generate_data(
            hass,
            instructions="What is this?",
            attachments=[media(filename, mime_type)],
        )

    assert err.value.translation_key == "unsupported_attachment"
    assert err.value.translation_placeholders["mime_type"] == mime_type
    assert simulator.chat_requests() == []


async def test_attachment_type_sniffed(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """An image declared with a vague type is sent as what its bytes are."""
    await setup()
    webp = _encode("WEBP", 4, 3)
    (media_dir / "photo.bin").write_bytes(webp)
    simulator.enqueue(CHAT, sse=sse_text("A picture."))

    await generate_data(
        hass,
        instructions="What is this?",
        attachments=[media("photo.bin", "application/octet-stream")],
    )

    (body,) = simulator.chat_requests()
    url = user_parts(body)[1]["image_url"]["url"]
    assert url == "data:image/webp;base64," + base64.b64encode(webp).decode()


async def test_attachment_unreadable(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """A file that cannot be read is a translated error naming it."""
    await setup()

    with pytest.raises(HomeAssistantError) as err:
        await generate_data(
            hass,
            instructions="What is this?",
            attachments=[media("gone.png", "image/png")],
        )

    assert err.value.translation_key == "attachment_unreadable"
    assert err.value.translation_placeholders == {"name": "gone.png"}
    assert simulator.chat_requests() == []


# ---------------------------------------------------------------------------
# generate_image
# ---------------------------------------------------------------------------


async def test_generate_image_b64(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """The image model draws through /images/generations; size read from the PNG."""
    await setup()

    response = await generate_image(hass, instructions="A red fox in snow")

    (request,) = [r for r in simulator.requests if "/images/" in r.path]
    assert request.path == "/v1/images/generations"
    assert request.json == {"model": "gpt-image-1", "prompt": "A red fox in snow"}
    assert response["mime_type"] == "image/png"
    assert (response["width"], response["height"]) == (1024, 1024)
    assert response["model"] == "gpt-image-1"
    # The server gave none, so Home Assistant reports the instructions.
    assert response["revised_prompt"] == "A red fox in snow"
    assert response["media_source_id"].startswith("media-source://ai_task/image/")
    log = chat_log(hass, response["conversation_id"])
    last = log.content[-1]
    assert isinstance(last, conversation.AssistantContent)
    assert last.native == GeneratedImageInfo(
        model="gpt-image-1",
        mime_type="image/png",
        width=1024,
        height=1024,
        revised_prompt=None,
    )
    assert simulator.chat_requests() == []


async def test_generate_image_url(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A URL answer is fetched; the server's revised prompt is passed on."""
    await setup(ai_task={CONF_IMAGE_MODEL: "dall-e-3"})
    simulator.settings.image_response = "url"

    response = await generate_image(hass, instructions="A lighthouse at dusk")

    paths = [r.path for r in simulator.requests]
    assert "/v1/images/generations" in paths
    assert any(path.startswith("/files/") for path in paths)
    assert response["mime_type"] == "image/png"
    assert response["model"] == "dall-e-3"
    assert response["revised_prompt"] == "A lighthouse at dusk"
    assert (response["width"], response["height"]) == (1024, 1024)


async def test_generate_image_edit(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """With image attachments the task edits them through /images/edits."""
    await setup()
    (media_dir / "cat.png").write_bytes(png(16, 8))

    response = await generate_image(
        hass,
        instructions="Give the cat a hat",
        attachments=[media("cat.png", "image/png")],
    )

    (request,) = [r for r in simulator.requests if "/images/" in r.path]
    assert request.path == "/v1/images/edits"
    assert request.headers["content-type"].startswith("multipart/form-data")
    assert b'name="prompt"' in request.body
    assert b"Give the cat a hat" in request.body
    assert b"gpt-image-1" in request.body
    assert png(16, 8) in request.body
    assert (
        b'name="image"; filename="cat.png"\r\nContent-Type: image/png' in request.body
    )
    assert response["mime_type"] == "image/png"


async def test_generate_image_edit_several(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """Several attachments are sent as a list of images."""
    await setup()
    (media_dir / "a.png").write_bytes(png(5, 5))
    (media_dir / "b.jpg").write_bytes(_encode("JPEG", 6, 6))

    await generate_image(
        hass,
        instructions="Combine them",
        attachments=[
            media("a.png", "image/png"),
            media("b.jpg", "image/jpeg"),
        ],
    )

    (request,) = [r for r in simulator.requests if "/images/" in r.path]
    assert request.path == "/v1/images/edits"
    assert request.body.count(b'name="image[]"') == 2
    assert b"Content-Type: image/jpeg" in request.body


async def test_generate_image_refuses_pdf(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """Only images can be edited."""
    await setup()
    (media_dir / "doc.pdf").write_bytes(PDF)

    with pytest.raises(HomeAssistantError) as err:
        await generate_image(
            hass,
            instructions="Draw this",
            attachments=[media("doc.pdf", "application/pdf")],
        )

    assert err.value.translation_key == "unsupported_attachment"
    assert err.value.translation_placeholders["mime_type"] == "application/pdf"
    assert not [r for r in simulator.requests if "/images/" in r.path]


async def test_generate_image_jpeg_detected(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """The type and size come from the bytes, not from assumptions."""
    await setup()
    jpeg = _encode("JPEG", 40, 30)
    simulator.enqueue(
        "/images/generations",
        json={
            "created": 1,
            "data": [
                {"b64_json": base64.b64encode(jpeg).decode(), "revised_prompt": "A fox"}
            ],
        },
    )

    response = await generate_image(hass, instructions="fox")

    assert response["mime_type"] == "image/jpeg"
    assert (response["width"], response["height"]) == (40, 30)
    assert response["revised_prompt"] == "A fox"


async def test_generate_image_webp_detected(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A WebP answer is reported as WebP with its own size."""
    await setup()
    webp = _encode("WEBP", 20, 10)
    simulator.enqueue(
        "/images/generations",
        json={"created": 1, "data": [{"b64_json": base64.b64encode(webp).decode()}]},
    )

    response = await generate_image(hass, instructions="fox")

    assert response["mime_type"] == "image/webp"
    assert (response["width"], response["height"]) == (20, 10)


async def test_generate_image_data_url(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server that puts a data URL in `url` is read without a fetch."""
    await setup()
    gif = _encode("GIF", 7, 9)
    simulator.enqueue(
        "/images/generations",
        json={
            "created": 1,
            "data": [
                {"url": "data:image/gif;base64," + base64.b64encode(gif).decode()}
            ],
        },
    )

    response = await generate_image(hass, instructions="fox")

    assert response["mime_type"] == "image/gif"
    assert (response["width"], response["height"]) == (7, 9)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"created": 1, "data": []}, "the server sent no image"),
        ({"created": 1}, "the server sent no image"),
        (
            {"created": 1, "data": [{"b64_json": base64.b64encode(b"hello").decode()}]},
            "the server sent data that is no image",
        ),
        ({"created": 1, "data": [{"b64_json": "a"}]}, "the image is not valid base64"),
    ],
)
async def test_generate_image_no_image(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    answer: dict[str, Any],
    message: str,
) -> None:
    """An answer without a usable image is a translated failure."""
    await setup()
    simulator.enqueue("/images/generations", json=answer)

    with pytest.raises(HomeAssistantError) as err:
        await generate_image(hass, instructions="fox")

    assert err.value.translation_key == "image_generation_failed"
    assert err.value.translation_placeholders["message"].startswith(message)


@pytest.mark.parametrize(
    "answer",
    [
        {"raw": "<html><body>Welcome</body></html>"},
        {"raw": "<html>", "headers": {"Content-Type": "text/html"}},
        {"raw": ""},
        {"raw": "", "headers": {"Content-Type": "application/json"}},
        {"json": ["not", "an", "object"]},
        {"raw": "[" * 1_000_000, "headers": {"Content-Type": "application/json"}},
    ],
)
async def test_generate_image_answer_not_json(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    answer: dict[str, Any],
) -> None:
    """A 200 that is no JSON object is a translated failure, not a traceback."""
    await setup()
    simulator.enqueue("/images/generations", **answer)

    with pytest.raises(HomeAssistantError) as err:
        await generate_image(hass, instructions="fox")

    assert err.value.translation_key == "image_generation_failed"
    assert err.value.translation_placeholders["message"].startswith(
        "the server sent an answer that is"
    )


async def test_generate_image_url_fetch_fails(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """An image URL that does not answer is a translated failure."""
    await setup()
    missing = simulator.base_url.removesuffix("/v1") + "/files/missing.png"
    simulator.enqueue(
        "/images/generations", json={"created": 1, "data": [{"url": missing}]}
    )

    with pytest.raises(HomeAssistantError) as err:
        await generate_image(hass, instructions="fox")

    assert err.value.translation_key == "image_generation_failed"
    assert "could not be fetched" in err.value.translation_placeholders["message"]


async def test_generate_image_server_error(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Server errors go through the one error mapper."""
    await setup()
    simulator.enqueue(
        "/images/generations",
        status=400,
        json={
            "error": {
                "message": "Your prompt was rejected",
                "type": "invalid_request_error",
            }
        },
    )

    with pytest.raises(HomeAssistantError) as err:
        await generate_image(hass, instructions="fox")

    assert err.value.translation_key == "api_error"
    assert err.value.translation_placeholders == {"message": "Your prompt was rejected"}


async def test_generate_image_no_images_route(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server without an images route is asked once per image model, for now."""
    entry = await setup()
    simulator.settings.images = False

    for _ in range(2):
        with pytest.raises(HomeAssistantError) as err:
            await generate_image(hass, instructions="fox")
        assert err.value.translation_key == "image_generation_unsupported"

    assert len([r for r in simulator.requests if "/images/" in r.path]) == 1
    capabilities = entry.runtime_data.capabilities
    assert capabilities.model("gpt-image-1").refuses(Feature.IMAGES_GENERATIONS)


async def test_generate_image_auth_error_starts_reauth(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A refused key while drawing starts reauthentication."""
    entry = await setup()
    simulator.enqueue("/images/generations", status=401)

    with pytest.raises(HomeAssistantError) as err:
        await generate_image(hass, instructions="fox")

    assert err.value.translation_key == "reauth_started"
    flows = hass.config_entries.flow.async_progress()
    assert [flow["context"]["source"] for flow in flows] == ["reauth"]
    assert flows[0]["context"]["entry_id"] == entry.entry_id


# ---------------------------------------------------------------------------
# Units: rung requests, schema names
# ---------------------------------------------------------------------------


def test_structured_requests() -> None:
    """Each rung asks its own way; strict falls back to the plain schema."""
    schema = {"type": "object"}
    strict = {"type": "object", "additionalProperties": False}
    assert structured_request(RUNG_STRICT, "n", schema, strict).response_format == {
        "type": "json_schema",
        "json_schema": {"name": "n", "schema": strict, "strict": True},
    }
    plain = structured_request(RUNG_STRICT, "n", schema, None)
    assert plain == structured_request(RUNG_SCHEMA, "n", schema, strict)
    assert plain.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "n", "schema": schema},
    }
    assert plain.instructions is None
    json_object = structured_request(RUNG_JSON_OBJECT, "n", schema, strict)
    assert json_object.response_format == {"type": "json_object", "schema": schema}
    assert json_object.instructions is not None
    assert json_object.instructions.endswith('{"type":"object"}')
    prompt_only = structured_request(RUNG_INSTRUCTIONS, "n", schema, strict)
    assert prompt_only.response_format is None
    assert prompt_only.instructions == json_object.instructions


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Weather report", "weather_report"),
        ("Übung: heute!", "ubung_heute"),
        ("???", "unknown"),
        ("", "result"),
        ("x" * 80, "x" * 64),
    ],
)
def test_schema_name(name: str, expected: str) -> None:
    """Schema names fit the API's pattern."""
    assert schema_name(name) == expected
