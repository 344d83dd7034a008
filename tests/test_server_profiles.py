"""The integration against the recorded behaviour of real server software.

The simulator imitates each configuration of the conformance lane (its server
profile: conformance/recordings/<name>.json) by replaying the real server's
refusals byte for byte. Each scenario of the lane is asserted here against
every profile: a correct result, or a clear error with no raw server text.
"""

from __future__ import annotations

import re
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import intent
import pytest

from simulator import OpenAISimulator, SimulatorSettings
from simulator.features import chat_features
from simulator.profiles import load_profile, profile_names

from .conftest import SetupEntry, converse, speech

ENTITY = "ai_task.openai_compatible_ai_task"
STRUCTURE = {
    "name": {"required": True, "selector": {"text": {}}},
    "pet": {"required": True, "selector": {"select": {"options": ["cat", "dog"]}}},
}
NOUL = {"type": "noul", "instructions": "Was the kitchen light left on?"}
# Signs that a server's own error text reached the user.
RAW_DUMP = re.compile(
    r"validation error|literal_error|Traceback|\{'|OpenAIException|litellm\.",
    re.IGNORECASE,
)
PROFILES = profile_names()
REFUSING_JSON_SCHEMA = [
    name
    for name in PROFILES
    if any(replay.probe == "json_schema" for replay in load_profile(name).replays)
]
FUNCTION_CALLING = "llama_cpp_python_chatml_function_calling"
# Refuse json_schema with a 500 literal_error and take json_object.
STEPPING_DOWN = [name for name in PROFILES if "llama_cpp_python" in name]
TAKING_JSON_SCHEMA = [name for name in PROFILES if name not in REFUSING_JSON_SCHEMA]


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest, simulator: OpenAISimulator) -> str:
    """Make the simulator imitate each recorded server in turn."""
    name: str = request.param
    simulator.settings = SimulatorSettings.imitating(name)
    return name


async def _call(hass: HomeAssistant, service: str, **data: Any) -> dict[str, Any]:
    response = await hass.services.async_call(
        "ai_task",
        service,
        {"task_name": "Conformance", "entity_id": ENTITY, **data},
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response


def _formats(simulator: OpenAISimulator) -> list[str | None]:
    """Return the response format type of each chat request, in order."""
    return [
        (body.get("response_format") or {}).get("type")
        for body in simulator.chat_requests()
    ]


def test_every_scenario_server_is_imitated() -> None:
    """Each configuration of the lane has its profile.

    llama-cpp-python (and LiteLLM in front of it) refuses json_schema;
    llama-server takes it with Gemma.
    """
    assert FUNCTION_CALLING in PROFILES
    assert set(STEPPING_DOWN) <= set(REFUSING_JSON_SCHEMA)
    assert TAKING_JSON_SCHEMA


async def test_assist_answers(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    profile: str,
) -> None:
    """An Assist turn gets a spoken answer from every imitated server."""
    await setup_entry()

    result = await converse(hass, "Turn on the kitchen light")

    assert result.response.response_type == intent.IntentResponseType.ACTION_DONE
    assert speech(result)


async def test_plain_data(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    profile: str,
) -> None:
    """generate_data without a structure answers text in one request."""
    await setup_entry()

    response = await _call(hass, "generate_data", instructions="Say hello.")

    assert isinstance(response["data"], str)
    assert len(simulator.chat_requests()) == 1


@pytest.mark.parametrize("profile", STEPPING_DOWN, indirect=True)
async def test_structure_steps_down_to_json_object(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    profile: str,
) -> None:
    """A 500 literal_error for json_schema costs one extra request, then none.

    The server (directly, or through the gateway that rewraps the message)
    says that response_format.type takes only 'text' or 'json_object': the
    next request asks with json_object, and the next task asks so at once.
    """
    await setup_entry()

    first = await _call(
        hass, "generate_data", instructions="Invent a person.", structure=STRUCTURE
    )
    second = await _call(
        hass, "generate_data", instructions="Invent a person.", structure=STRUCTURE
    )

    for response in (first, second):
        assert set(response["data"]) == {"name", "pet"}
        assert response["data"]["pet"] in ("cat", "dog")
    assert _formats(simulator) == ["json_schema", "json_object", "json_object"]


@pytest.mark.parametrize("profile", TAKING_JSON_SCHEMA, indirect=True)
async def test_structure_through_json_schema(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    profile: str,
) -> None:
    """llama-server holds the answer to the schema itself: one request each."""
    await setup_entry()

    for _ in range(2):
        response = await _call(
            hass, "generate_data", instructions="Invent a person.", structure=STRUCTURE
        )
        assert set(response["data"]) == {"name", "pet"}
    assert _formats(simulator) == ["json_schema", "json_schema"]


async def test_evaluate_without_decisions_route(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    profile: str,
) -> None:
    """The recorded 404 of /decisions moves to chat, and is remembered.

    A noul question: the simulator's log-probabilities have its labels (its
    stated probabilities for choices and scores are no model's).
    """
    await setup_entry()
    questions = {"left_on": NOUL}

    first = await _call(
        hass, "evaluate", state={"kitchen_light": "on"}, questions=questions
    )
    await _call(hass, "evaluate", state={"kitchen_light": "on"}, questions=questions)

    assert 0 <= first["answers"]["left_on"]["noul"] <= 1
    decisions = [r for r in simulator.requests if r.path.endswith("/decisions")]
    assert len(decisions) == 1


async def test_generate_image_without_images_route(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    profile: str,
) -> None:
    """A server without an images route gives a clear error, not its 404 body."""
    await setup_entry()

    with pytest.raises(HomeAssistantError) as err:
        await _call(hass, "generate_image", instructions="A lamp.")

    assert not RAW_DUMP.search(str(err.value))
    assert err.value.translation_key == "image_generation_unsupported"


async def test_tool_round_is_accepted_by_llama_cpp_python(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """After a tool call, the next round is one the server accepts.

    llama-cpp-python calls tools only when tool_choice asks for them; here the
    imitation calls them regardless, to reach the round that sends the result.
    """
    settings = SimulatorSettings.imitating(FUNCTION_CALLING)
    settings.ignore_tools_when = frozenset()
    simulator.settings = settings
    await setup_entry()

    result = await converse(hass, "Turn on the kitchen light")

    second = simulator.chat_requests()[-1]
    assert "tool_result_message" in chat_features(second)
    assert result.response.response_type == intent.IntentResponseType.ACTION_DONE, (
        speech(result)
    )
