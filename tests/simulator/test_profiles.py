"""Server profiles: the simulator replaying what real servers answered."""

from __future__ import annotations

from collections.abc import AsyncGenerator
import json
from pathlib import Path

import httpx2
import openai
import pytest

from conformance.servers import CONFIGURATIONS
from simulator import OpenAISimulator, SimulatorSettings, profiles
from simulator.profiles import load_profile, profile_names
from tests.conftest import served

FUNCTION_CALLING = "llama_cpp_python_chatml_function_calling"
GATEWAY = "litellm_over_llama_cpp_python_chatml_function_calling"
NO_TOOLS = "llama_cpp_python_chatml"
SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "person",
        "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}
TOOL = {
    "type": "function",
    "function": {
        "name": "HassTurnOn",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}


def test_every_configuration_of_the_lane_has_a_profile() -> None:
    """The recordings of the lane are the profiles: one per configuration."""
    assert {c.name for c in CONFIGURATIONS} <= set(profile_names())


def test_a_refusal_no_feature_tells_apart_is_not_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat probe refused for having no messages draws no other request."""
    probe = {
        "label": "probe:no_messages",
        "path": "/v1/chat/completions",
        "features": ["chat", "max_tokens"],
        "status": 400,
        "headers": {"content-type": "application/json"},
        "body": '{"error": "messages must not be empty"}',
    }
    recording = {
        "name": "refuses_empty",
        "software": "x",
        "version": "1",
        "configuration": "x",
        "probes": [
            probe,
            {**probe, "label": "probe:logprobs", "features": ["chat", "logprobs"]},
        ],
    }
    (tmp_path / "refuses_empty.json").write_text(json.dumps(recording))
    monkeypatch.setattr(profiles, "RECORDINGS", tmp_path)

    profile = load_profile("refuses_empty")

    assert [replay.probe for replay in profile.replays] == ["logprobs"]
    assert profile.replay_for("/v1/chat/completions", {"messages": []}) is None


def test_unknown_profile() -> None:
    """An unknown name says which ones exist."""
    with pytest.raises(KeyError, match=FUNCTION_CALLING):
        load_profile("no_such_server")


def test_profile_settings_come_from_the_recording() -> None:
    """llama-cpp-python: log-probabilities, no usage chunk, tools need tool_choice."""
    settings = SimulatorSettings.imitating(FUNCTION_CALLING)
    assert settings.profile is load_profile(FUNCTION_CALLING)
    assert settings.logprobs
    assert not settings.stream_usage
    assert settings.ignore_tools_when == {"absent"}
    assert SimulatorSettings.imitating(NO_TOOLS).ignore_tools_when >= {
        "absent",
        "auto",
    }


@pytest.fixture
async def imitation(socket_enabled: None) -> AsyncGenerator[OpenAISimulator]:
    """Serve the simulator as llama-cpp-python with chatml-function-calling."""
    async with served(OpenAISimulator(profile=FUNCTION_CALLING)) as sim:
        yield sim


async def test_json_schema_gets_the_recorded_500(imitation: OpenAISimulator) -> None:
    """The FastAPI validation dump comes back byte for byte, at status 500."""
    async with openai.AsyncOpenAI(
        base_url=imitation.base_url, api_key="x", max_retries=0
    ) as client:
        with pytest.raises(openai.InternalServerError) as refused:
            await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "hi"}],
                response_format=SCHEMA,
            )
        answer = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Answer in JSON"}],
            response_format={"type": "json_object"},
        )
    recorded = next(
        replay
        for replay in load_profile(FUNCTION_CALLING).replays
        if replay.probe == "json_schema"
    )
    assert refused.value.status_code == 500
    assert refused.value.response.text == recorded.body
    assert "literal_error" in recorded.body
    assert json.loads(answer.choices[0].message.content or "")


async def test_routes_it_lacks_answer_as_recorded(imitation: OpenAISimulator) -> None:
    """/decisions and /images/generations answer the server's 404."""
    async with openai.AsyncOpenAI(
        base_url=imitation.base_url, api_key="x", max_retries=0
    ) as client:
        with pytest.raises(openai.NotFoundError) as missing:
            await client.images.generate(model="gpt-image-1", prompt="a lamp")
    assert missing.value.response.json() == {"detail": "Not Found"}


async def test_tools_are_ignored_without_tool_choice(
    imitation: OpenAISimulator,
) -> None:
    """Without tool_choice the server answers text; a forced choice is followed."""
    async with openai.AsyncOpenAI(
        base_url=imitation.base_url, api_key="x", max_retries=0
    ) as client:
        plain = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Turn on the kitchen light"}],
            tools=[TOOL],
        )
        forced = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "Turn on the kitchen light"}],
            tools=[TOOL],
            tool_choice={"type": "function", "function": {"name": "HassTurnOn"}},
        )
    assert not plain.choices[0].message.tool_calls
    assert forced.choices[0].message.tool_calls


async def test_gateway_wraps_the_backend_refusal(socket_enabled: None) -> None:
    """Through LiteLLM the same refusal comes in the gateway's own words."""
    async with (
        served(OpenAISimulator(profile=GATEWAY)) as sim,
        openai.AsyncOpenAI(base_url=sim.base_url, api_key="x", max_retries=0) as client,
    ):
        with pytest.raises(openai.APIStatusError) as refused:
            await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "hi"}],
                response_format=SCHEMA,
            )
    message = refused.value.response.json()["error"]["message"]
    assert message.startswith("litellm.")
    assert "literal_error" in message


async def test_native_and_responses_routes_answer_as_recorded(
    imitation: OpenAISimulator,
) -> None:
    """Routes the real server lacks (llama.cpp's /props, /v1/responses) say so."""
    recorded = {
        replay.probe: replay for replay in load_profile(FUNCTION_CALLING).replays
    }
    async with httpx2.AsyncClient(
        base_url=imitation.base_url.removesuffix("/v1"), timeout=30
    ) as http:
        props = await http.get("/props")
        responses = await http.post("/v1/responses", json={"model": "m", "input": "hi"})
    assert (props.status_code, props.text) == (
        recorded["llama_cpp_props"].status,
        recorded["llama_cpp_props"].body,
    )
    assert (responses.status_code, responses.text) == (
        recorded["responses"].status,
        recorded["responses"].body,
    )
