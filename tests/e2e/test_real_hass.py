"""End to end: a real Home Assistant process, used only through its HTTP API.

A module-scoped fixture starts the simulator (``python -m simulator``) and
``python -m homeassistant`` on free ports with a temporary config folder: the
demo devices of scripts/dev_hass.py, ``conversation`` and this integration as
a symlink in ``custom_components``. It creates the owner through the
onboarding API and sets the country, as scripts/develop does. The tests then
do what a user does: add the integration through the config-flow API and make
it the preferred Assist agent and AI task entity (as scripts/develop does),
talk to it in Assist, call the AI task actions, and finally stop Home
Assistant with SIGTERM and read its log.

Both processes run in their own process group and are killed on the way out,
whatever happened. They need sockets, so every test takes ``socket_enabled``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import contextlib
from dataclasses import dataclass, field
import importlib.util
import math
from pathlib import Path
import re
import socket
import struct
import subprocess
import sys
import time
from types import ModuleType
from typing import Any
import wave

import aiohttp
import pytest
import pytest_socket

from simulator import AUDIO_MODELS, DEFAULT_MODELS

REPO_ROOT = Path(__file__).resolve().parents[2]
# The start of each MP3 frame the simulator sends (MPEG-2 Layer III, mono).
MP3_FRAME_HEADER = bytes((0xFF, 0xF3, 0x44, 0xC0))
START_TIMEOUT = 240.0  # seconds; Home Assistant with the frontend on 2 slow cores
STOP_TIMEOUT = 90.0


def _load_dev_hass() -> ModuleType:
    """Import scripts/dev_hass.py, which scripts/develop uses as well."""
    spec = importlib.util.spec_from_file_location(
        "dev_hass", REPO_ROOT / "scripts" / "dev_hass.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("dev_hass", module)
    spec.loader.exec_module(module)
    return module


dev_hass = _load_dev_hass()

# The HTTP settings come in a package (see dev_hass.prepare_config), as with
# scripts/develop.
CONFIGURATION = """\
homeassistant:
  name: OpenAI Compatible e2e
  packages: !include_dir_named packages

logger:
  default: warning
  logs:
    custom_components.openai_compatible: debug
    homeassistant.util.package: info

api:
assist_pipeline:
conversation:
repairs:
"""


@dataclass
class Stack:
    """The running processes and what the tests learned about them."""

    config_dir: Path
    url: str
    simulator_url: str
    hass: subprocess.Popen[bytes]
    simulator: subprocess.Popen[bytes]
    hass_output: Path
    api: Any  # dev_hass.HomeAssistantAPI
    exit_code: int | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def log_file(self) -> Path:
        """Return Home Assistant's own log file."""
        return self.config_dir / "home-assistant.log"

    def log_tail(self, lines: int = 80) -> str:
        """Return the end of the log, for failure messages."""
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = self.hass_output.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def _sockets_allowed() -> Iterator[None]:
    """Allow sockets in a module-scoped fixture (socket_enabled is per test)."""
    guarded = socket.socket
    pytest_socket.enable_socket()
    try:
        yield
    finally:
        socket.socket = guarded  # type: ignore[misc]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Run the simulator and Home Assistant; sign in as the owner."""
    base = tmp_path_factory.mktemp("e2e")
    config_dir = base / "config"
    started: list[subprocess.Popen[bytes]] = []
    api = None
    try:
        with _sockets_allowed():
            port = dev_hass.free_port()
            assert dev_hass.prepare_config(
                config_dir, CONFIGURATION, port=port, host="127.0.0.1"
            ) == ("127.0.0.1", port)
            sim_output = base / "simulator.out"
            simulator = dev_hass.start_module(
                "simulator",
                [
                    *("--host", "127.0.0.1", "--port", "0"),
                    *("--transcript", SPOKEN_COMMAND),
                    *(f"--model={model}" for model in (*DEFAULT_MODELS, *AUDIO_MODELS)),
                ],
                sim_output,
            )
            started.append(simulator)
            try:
                simulator_url = dev_hass.simulator_url(simulator, sim_output)
            except dev_hass.StartError as err:
                pytest.fail(str(err))

            hass_output = base / "hass.out"
            hass = dev_hass.start_module(
                "homeassistant",
                ["--config", str(config_dir), "--log-no-color"],
                hass_output,
            )
            started.append(hass)
            url = f"http://127.0.0.1:{port}"
            api = dev_hass.HomeAssistantAPI(url)
            began = time.monotonic()
            try:
                api.wait_until_up(START_TIMEOUT, lambda: hass.poll() is None)
                assert api.sign_in() == "created"
                api.wait_until_running(START_TIMEOUT)
                assert api.set_country(dev_hass.DEV_COUNTRY)
            except dev_hass.HomeAssistantError as err:
                tail = hass_output.read_text(encoding="utf-8", errors="replace")
                pytest.fail(f"{err}\n--- Home Assistant output ---\n{tail[-6000:]}")
            stack = Stack(
                config_dir=config_dir,
                url=url,
                simulator_url=simulator_url,
                hass=hass,
                simulator=simulator,
                hass_output=hass_output,
                api=api,
            )
            stack.notes["startup_seconds"] = round(time.monotonic() - began, 1)
        yield stack
    finally:
        if api is not None:
            api.close()
        for process in reversed(started):
            dev_hass.stop_process(process, STOP_TIMEOUT)


@pytest.fixture(scope="module")
def entry(stack: Stack) -> dict[str, Any]:
    """Add the integration for the simulator, and prefer it, as scripts/develop does."""
    with _sockets_allowed():
        outcome = stack.api.add_integration(base_url=stack.simulator_url)
        assert outcome.created, f"{outcome.message}: {outcome.result}"
        entry_id = outcome.result["result"]["entry_id"]
        entities = stack.api.integration_entities(entry_id)
        preferred = stack.api.prefer_entry(entry_id)
    return {"result": outcome.result, "entities": entities, "preferred": preferred}


def _wait_for_state(stack: Stack, entity_id: str, wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    state: dict[str, Any] = stack.api.state(entity_id)
    while state["state"] != wanted and time.monotonic() < deadline:
        time.sleep(0.2)
        state = stack.api.state(entity_id)
    return state


def _action(stack: Stack, service: str, data: dict[str, Any]) -> dict[str, Any]:
    """Call an AI task action with ?return_response; return its response."""
    answer = stack.api.post(f"/api/services/ai_task/{service}?return_response", data)
    response: dict[str, Any] = answer["service_response"]
    return response


def test_config_flow_creates_the_entry(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """The config flow (user → connect) creates a loaded entry and its entities."""
    result = entry["result"]
    assert result["type"] == "create_entry"
    assert result["title"] == "OpenAI-compatible server"
    entries = stack.api.get("/api/config/config_entries/entry?domain=openai_compatible")
    assert [e["state"] for e in entries] == ["loaded"]
    assert set(entry["entities"]) == {"conversation", "ai_task"}


def test_develop_prefers_our_agent_and_ai_task(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """Assist's preferred pipeline and the AI task preferences are ours."""
    agent_id = entry["entities"]["conversation"]
    ai_task_id = entry["entities"]["ai_task"]
    pipelines, preferences = stack.api.websocket(
        {"type": "assist_pipeline/pipeline/list"}, {"type": "ai_task/preferences/get"}
    )
    preferred = next(
        pipeline
        for pipeline in pipelines["pipelines"]
        if pipeline["id"] == pipelines["preferred_pipeline"]
    )
    assert preferred["name"] == dev_hass.PIPELINE_NAME
    assert preferred["conversation_engine"] == agent_id
    assert preferred["prefer_local_intents"] is False
    assert preferences["gen_data_entity_id"] == ai_task_id
    assert preferences["gen_image_entity_id"] == ai_task_id
    assert preferences["evaluate_entity_id"] == ai_task_id
    assert len(entry["preferred"]) == 2, entry["preferred"]


def test_starts_without_repairs(socket_enabled: None, stack: Stack) -> None:
    """Stored HTTP settings and a country leave no repair behind."""
    (repairs,) = stack.api.websocket({"type": "repairs/list_issues"})
    assert [
        (issue["domain"], issue["issue_id"])
        for issue in repairs["issues"]
        if not issue["dismissed_version"]
    ] == []


def _intent_output(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Return what the intent stage of an Assist run answered."""
    output: dict[str, Any] = next(
        event["data"]["intent_output"]
        for event in events
        if event["type"] == "intent-end"
    )
    return output


def test_assist_turns_on_the_kitchen_light_through_our_agent(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """'Turn on the kitchen light' in Assist reaches our agent, which calls a tool."""
    assert stack.api.state(dev_hass.KITCHEN_LIGHT)["state"] == "off"

    events = stack.api.assist("turn on the kitchen light")

    (start,) = [event for event in events if event["type"] == "intent-start"]
    assert start["data"]["engine"] == entry["entities"]["conversation"]
    tool_calls = [
        call["tool_name"]
        for event in events
        if event["type"] == "intent-progress"
        for call in (event["data"].get("chat_log_delta") or {}).get("tool_calls", [])
    ]
    assert tool_calls == ["intent__HassTurnOn"], events
    output = _intent_output(events)
    assert output["response"]["response_type"] == "action_done", output
    assert output["response"]["speech"]["plain"]["speech"]
    assert output["continue_conversation"] is False
    assert _wait_for_state(stack, dev_hass.KITCHEN_LIGHT, "on")["state"] == "on"
    # The other demo devices are there for Assist as well.
    assert stack.api.state(dev_hass.THERMOSTAT)["state"] == "heat"
    assert stack.api.state(dev_hass.FRONT_DOOR)["state"] == "off"


def _tools_called(events: list[dict[str, Any]]) -> list[str]:
    """Return the tools the agent called in an Assist run."""
    return [
        call["tool_name"]
        for event in events
        if event["type"] == "intent-progress"
        for call in (event["data"].get("chat_log_delta") or {}).get("tool_calls", [])
    ]


def _speech(events: list[dict[str, Any]]) -> str:
    """Return what the agent answered in an Assist run."""
    speech: str = _intent_output(events)["response"]["speech"]["plain"]["speech"]
    return speech


def test_assist_answers_about_every_demo_device_and_the_weather(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """The simulator acts on each device develop exposes, through Home Assistant's tools.

    Questions go through GetLiveContext, the thermostat through its intent; a
    weather question is answered too, though develop exposes no weather.
    """
    events = stack.api.assist("is the front door open?")
    assert _tools_called(events) == ["homeassistant__GetLiveContext"], events
    assert _speech(events) == "Front door is closed."

    events = stack.api.assist("set the thermostat to 22")
    assert _tools_called(events) == ["climate__HassClimateSetTemperature"], events
    # The simulator says the name it called with, as the home writes it.
    assert _speech(events) == "Set Thermostat to 22 degrees."
    deadline = time.monotonic() + 10
    while stack.api.state(dev_hass.THERMOSTAT)["attributes"].get("temperature") != 22:
        assert time.monotonic() < deadline, stack.api.state(dev_hass.THERMOSTAT)
        time.sleep(0.2)

    events = stack.api.assist("what is the thermostat set to?")
    assert "set to 22" in _speech(events), events

    events = stack.api.assist("what's the weather like?")
    assert _tools_called(events) == ["homeassistant__GetLiveContext"], events
    assert "weather" in _speech(events)
    assert "simulator has no answer" not in _speech(events)


# What the simulator hears in every recording.
SPOKEN_COMMAND = "turn on the kitchen light"


def _recording(path: Path, seconds: float = 1.5) -> Path:
    """Write a WAV file as a microphone gives it: 16 kHz, 16-bit mono."""
    rate = 16_000
    tone = [round(3000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(rate)]
    samples = (tone * 2)[: round(seconds * rate)]
    with wave.open(str(path), "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(struct.pack(f"<{len(samples)}h", *samples))
    return path


def _voice_entities(stack: Stack, entry: dict[str, Any]) -> dict[str, str]:
    """Return {domain: entity_id} of the entry's speech-to-text and text-to-speech."""
    entry_id = entry["result"]["result"]["entry_id"]
    (entities,) = stack.api.websocket({"type": "config/entity_registry/list"})
    return {
        entity["entity_id"].split(".")[0]: entity["entity_id"]
        for entity in entities
        if entity["config_entry_id"] == entry_id
        and entity["entity_id"].split(".")[0] in ("stt", "tts")
    }


async def _speak_to_pipeline(
    stack: Stack, pipeline_id: str, recording: Path
) -> list[dict[str, Any]]:
    """Run a pipeline from speech to speech over the WebSocket API.

    The recording's samples go as binary messages, as a voice satellite sends
    them, and an empty one ends the speech. Return the events up to run-end.
    """
    with wave.open(str(recording), "rb") as file:
        rate = file.getframerate()
        pcm = file.readframes(file.getnframes())
    command = {
        "id": 1,
        "type": "assist_pipeline/run",
        "pipeline": pipeline_id,
        "start_stage": "stt",
        "end_stage": "tts",
        "input": {"sample_rate": rate, "no_vad": True},
    }
    events: list[dict[str, Any]] = []
    ws: aiohttp.ClientWebSocketResponse
    async with stack.api._connected() as ws:
        await ws.send_json(command)
        while not events or events[-1]["type"] != "run-end":
            message = await ws.receive_json()
            if message.get("type") == "result":
                assert message["success"], message
            elif message.get("type") == "event":
                events.append(message["event"])
                if message["event"]["type"] == "run-start":
                    handler = message["event"]["data"]["runner_data"][
                        "stt_binary_handler_id"
                    ]
                    prefix = bytes([handler])
                    for start in range(0, len(pcm), 3200):
                        await ws.send_bytes(prefix + pcm[start : start + 3200])
                    await ws.send_bytes(prefix)
    return events


def _event(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """Return the data of the run's one event of a kind."""
    (data,) = [event["data"] for event in events if event["type"] == kind]
    found: dict[str, Any] = data
    return found


def test_voice_pipeline_from_speech_to_speech(
    socket_enabled: None, stack: Stack, entry: dict[str, Any], tmp_path: Path
) -> None:
    """A spoken command turns on the light through our STT, agent and TTS.

    The pipeline's speech-to-text and text-to-speech are the entry's own,
    made because the simulator lists audio models; the answer comes back as
    MP3 from Home Assistant's TTS proxy, as long as its text says.
    """
    stack.api.post(
        "/api/services/light/turn_off", {"entity_id": dev_hass.KITCHEN_LIGHT}
    )
    assert _wait_for_state(stack, dev_hass.KITCHEN_LIGHT, "off")["state"] == "off"
    voice = _voice_entities(stack, entry)
    assert set(voice) == {"stt", "tts"}
    (pipeline,) = stack.api.websocket(
        {
            "type": "assist_pipeline/pipeline/create",
            "name": "OpenAI Compatible voice",
            "conversation_engine": entry["entities"]["conversation"],
            "conversation_language": "*",
            "language": "en",
            "prefer_local_intents": False,
            "stt_engine": voice["stt"],
            "stt_language": "en",
            "tts_engine": voice["tts"],
            "tts_language": "en",
            "tts_voice": "alloy",
            "wake_word_entity": None,
            "wake_word_id": None,
        }
    )

    events = asyncio.run(
        _speak_to_pipeline(stack, pipeline["id"], _recording(tmp_path / "command.wav"))
    )

    assert not [event for event in events if event["type"] == "error"], events
    assert _event(events, "stt-start")["engine"] == voice["stt"]
    assert _event(events, "stt-end")["stt_output"]["text"] == SPOKEN_COMMAND
    answer = _intent_output(events)["response"]["speech"]["plain"]["speech"]
    assert answer
    assert _wait_for_state(stack, dev_hass.KITCHEN_LIGHT, "on")["state"] == "on"
    assert _event(events, "tts-start")["engine"] == voice["tts"]
    output = _event(events, "tts-end")["tts_output"]
    assert output["mime_type"] == "audio/mpeg"
    audio = stack.api.get_bytes(output["url"])
    assert audio.status_code == 200
    frames = audio.content.count(MP3_FRAME_HEADER)
    # The simulator speaks 0.06 s per character, in frames of 24 ms.
    assert frames == math.ceil(max(0.1, len(answer) * 0.06) / 0.024), answer


def test_assist_answer_to_a_question_does_not_keep_listening(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """A question to the simulator is answered without asking back."""
    output = _intent_output(stack.api.assist("Is the front door open?"))

    assert output["response"]["speech"]["plain"]["speech"].endswith(".")
    assert output["continue_conversation"] is False


def test_ai_task_generate_data(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """generate_data answers text, and data matching a structure."""
    ai_task = entry["entities"]["ai_task"]
    plain = _action(
        stack,
        "generate_data",
        {
            "task_name": "greeting",
            "entity_id": ai_task,
            "instructions": "Say hello to the household.",
        },
    )
    assert isinstance(plain["data"], str)
    assert plain["data"]
    assert plain["conversation_id"]

    structured = _action(
        stack,
        "generate_data",
        {
            "task_name": "person",
            "entity_id": ai_task,
            "instructions": "Invent a person.",
            "structure": {
                "name": {
                    "description": "The person's name",
                    "required": True,
                    "selector": {"text": {}},
                },
                "age": {"description": "Age in years", "selector": {"number": {}}},
                "pet": {
                    "required": True,
                    "selector": {"select": {"options": ["cat", "dog"]}},
                },
            },
        },
    )
    data = structured["data"]
    assert isinstance(data, dict), structured
    assert isinstance(data["name"], str)
    assert data["pet"] in ("cat", "dog")
    assert set(data) <= {"name", "age", "pet"}
    if "age" in data:
        assert isinstance(data["age"], int | float)


def test_ai_task_generate_image(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """generate_image stores a PNG that Home Assistant serves at a signed URL.

    Without an entity_id it goes to the preferred image entity: ours.
    """
    response = _action(
        stack,
        "generate_image",
        {"task_name": "kitchen", "instructions": "A small drawing of a kitchen light."},
    )
    assert response["mime_type"] == "image/png", response
    assert response["url"]
    image = stack.api.get_bytes(response["url"])
    assert image.status_code == 200
    assert image.content.startswith(b"\x89PNG\r\n\x1a\n")


def test_ai_task_evaluate(
    socket_enabled: None, stack: Stack, entry: dict[str, Any]
) -> None:
    """Evaluate answers noul, choice and score questions about a state."""
    response = _action(
        stack,
        "evaluate",
        {
            "task_name": "kitchen check",
            "entity_id": entry["entities"]["ai_task"],
            "state": {"kitchen_light": "on", "time": "23:30"},
            "questions": {
                "left_on": {
                    "type": "noul",
                    "instructions": "Was the kitchen light left on?",
                },
                "action": {
                    "type": "choice",
                    "instructions": "What should happen to the light?",
                    "criteria": {
                        "keep": "Leave it on.",
                        "off": "Turn it off.",
                    },
                },
                "urgency": {
                    "type": "score",
                    "instructions": "How urgent is it to act?",
                    "criteria": ["not urgent", "somewhat urgent", "urgent"],
                },
            },
        },
    )
    answers = response["answers"]
    assert set(answers) == {"left_on", "action", "urgency"}, response
    assert answers["left_on"]["type"] == "noul"
    assert 0.0 <= answers["left_on"]["noul"] <= 1.0
    assert answers["action"]["type"] == "choice"
    assert answers["action"]["choice"] in ("keep", "off")
    assert set(answers["action"]["probabilities"]) <= {"keep", "off"}
    assert sum(answers["action"]["probabilities"].values()) == pytest.approx(
        1.0, abs=0.01
    )
    assert answers["urgency"]["type"] == "score"
    assert 0.0 <= answers["urgency"]["score"] <= 2.0
    assert len(answers["urgency"]["probabilities"]) == 3


# A log record starts with a timestamp: "2026-11-29 18:30:40.266+00:00 ERROR ...".
_RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d", re.MULTILINE)
_LEVEL = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+) ")


def _records(text: str) -> list[str]:
    """Split a log into records (a record keeps its traceback lines)."""
    starts = [match.start() for match in _RECORD_START.finditer(text)]
    bounds = [0, *starts, len(text)]
    return [
        chunk
        for begin, end in zip(bounds, bounds[1:], strict=False)
        if (chunk := text[begin:end].strip())
    ]


def _problems(text: str) -> list[str]:
    """Return errors and tracebacks that involve this integration."""
    found = []
    for record in _records(text):
        if "openai_compatible" not in record:
            continue
        level = match["level"] if (match := _LEVEL.match(record)) else ""
        if (
            level in ("ERROR", "CRITICAL")
            or "Traceback (most recent call last)" in record
            or "Detected blocking call" in record
        ):
            found.append(_summary(record))
    return found


def _summary(record: str) -> str:
    """Keep a record's first lines, its frames in this integration and its end."""
    lines = record.splitlines()
    keep = {0, 1, 2, len(lines) - 2, len(lines) - 1}
    for index, line in enumerate(lines):
        if "custom_components/openai_compatible" in line:
            keep |= {index, index + 1}
    return "\n".join(lines[i] for i in sorted(keep) if 0 <= i < len(lines))[:4000]


def test_stops_cleanly_without_errors_from_the_integration(
    socket_enabled: None, stack: Stack
) -> None:
    """SIGTERM stops Home Assistant; its log holds no error from the integration.

    Runs last: it stops the shared Home Assistant.
    """
    began = time.monotonic()
    exit_code = dev_hass.stop_process(stack.hass, STOP_TIMEOUT)
    stopped_in = time.monotonic() - began
    assert exit_code == 0, (
        f"hass exited with {exit_code} after {stopped_in:.1f} s\n{stack.log_tail()}"
    )
    log = stack.log_file.read_text(encoding="utf-8", errors="replace")
    output = stack.hass_output.read_text(encoding="utf-8", errors="replace")
    problems = _problems(log) or _problems(output)
    assert not problems, "\n\n".join(problems)
    # Everything Home Assistant needs is installed: it must not try pip.
    assert "Attempting install of" not in log, log
