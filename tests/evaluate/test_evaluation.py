"""ai_task.evaluate over HTTP against the simulator: the three paths and their checks."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from pathlib import Path
from typing import Any

from homeassistant.components import ai_task
from homeassistant.components.conversation.trace import (
    ConversationTraceEventType,
    async_conversation_trace,
)
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion

from custom_components.openai_compatible.const import CONF_API, CONF_CHAT_MODEL, Feature
from custom_components.openai_compatible.errors import ModelError, shown
from custom_components.openai_compatible.evaluate.chat import (
    TOP_LOGPROBS,
    _alternatives,
    fold,
    stated_weights,
)
from custom_components.openai_compatible.evaluate.evaluation import (
    MAX_QUESTIONS,
    Ask,
    Question,
    normalised,
    probability,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.structured.rungs import (
    RUNG_INSTRUCTIONS,
    RUNG_JSON_OBJECT,
    RUNG_SCHEMA,
    RUNG_STRICT,
)
from simulator import OpenAISimulator
from tests.conftest import Learned, SetupEntry, learned

ENTITY = "ai_task.openai_compatible_ai_task"
CHAT = "/chat/completions"
REASONING_MODEL = "gpt-5-mini"
DECISIONS = "/decisions"

PNG = b"\x89PNG\r\n\x1a\n" + b"garage camera"
PDF = b"%PDF-1.4 delivery note"
STATE = {"garage_door": "open", "driveway": "bike"}
# Free text with no quotes: the simulator's built-in label answers read the prompt.
TEXT_STATE = "The garage door stands open and a bike waits in the driveway."

DOOR = {"type": "noul", "instructions": "Is the garage door open?"}
VEHICLE = {
    "type": "choice",
    "instructions": "What is in the driveway?",
    "criteria": {"car": "A car is parked", "bike": "A bike stands there"},
}
FILL = {
    "type": "score",
    "instructions": "How full is the garage?",
    "criteria": ["empty", "half full", "full"],
}
QUESTIONS = {"door": DOOR, "vehicle": VEHICLE, "fill": FILL}


# ---------------------------------------------------------------------------
# Fixtures and helpers
# ---------------------------------------------------------------------------


def quirks(entry: MockConfigEntry) -> Learned:
    """Return what the entry learned about its server with the AI task's model."""
    (subentry,) = (
        subentry
        for subentry in entry.subentries.values()
        if subentry.subentry_type == "ai_task_data"
    )
    return learned(entry, subentry.data[CONF_CHAT_MODEL])


def media(name: str, mime_type: str) -> dict[str, str]:
    """Return an attachment of the local media folder, as the media selector gives it."""
    return {
        "media_content_id": f"media-source://media_source/local/{name}",
        "media_content_type": mime_type,
    }


async def evaluate(
    hass: HomeAssistant, questions: dict[str, Any], **data: Any
) -> dict[str, Any]:
    """Call the ai_task.evaluate action on our entity; return the answers."""
    data.setdefault("state", STATE)
    response = await hass.services.async_call(
        "ai_task",
        "evaluate",
        {
            "task_name": "Check the garage",
            "entity_id": ENTITY,
            "questions": questions,
            **data,
        },
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    answers: dict[str, Any] = response["answers"]
    return answers


async def evaluate_error(
    hass: HomeAssistant, questions: dict[str, Any], **data: Any
) -> HomeAssistantError:
    """Call the action expecting a translated error; return it."""
    with pytest.raises(HomeAssistantError) as err:
        await evaluate(hass, questions, **data)
    return err.value


def paths(simulator: OpenAISimulator) -> list[str]:
    """Return the API paths requested after setup, in order."""
    return [
        request.path.removeprefix("/v1")
        for request in simulator.requests
        if request.method == "POST"
    ]


def prompt(body: dict[str, Any]) -> str:
    """Return the last text of a chat request: the question."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return str(content[-1]["text"])


def completion(content: str | None, **message: Any) -> dict[str, Any]:
    """Return a non-streamed chat completion body."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "logprobs": message.pop("logprobs", None),
                "finish_reason": "stop",
            }
        ],
    }


def label_answer(*top: tuple[str, float]) -> dict[str, Any]:
    """Return a one-token answer: the first token, with these top probabilities."""
    entries = [
        {"token": token, "logprob": math.log(p), "bytes": list(token.encode())}
        for token, p in top
    ]
    body = completion(top[0][0])
    body["choices"][0]["logprobs"] = {
        "content": [{**entries[0], "top_logprobs": entries}],
        "refusal": None,
    }
    return body


def stated(**probabilities: Any) -> dict[str, Any]:
    """Return a completion stating probabilities as JSON."""
    return completion(json.dumps(probabilities))


def decision(*answers: dict[str, Any]) -> dict[str, Any]:
    """Return a Decisions API answer."""
    return {
        "model": "gpt-4o-mini",
        "answers": list(answers),
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 12,
        },
    }


def builtin_label_probability(rank: int) -> float:
    """Return the probability the simulator gives the token at a rank."""
    return math.exp(-0.05 if rank == 0 else round(-2.0 - 0.75 * rank, 4))


# ---------------------------------------------------------------------------
# Path 1: the Decisions API
# ---------------------------------------------------------------------------


async def test_decisions_all_types(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """All questions go in one Decisions request; answers map back by name."""
    entry = await setup()
    simulator.requests.clear()

    answers = await evaluate(hass, QUESTIONS)

    assert paths(simulator) == [DECISIONS]
    assert answers == {
        "door": {"type": "noul", "noul": pytest.approx(0.8)},
        "vehicle": {
            "type": "choice",
            "choice": "bike",
            "probabilities": {"car": pytest.approx(0.3), "bike": pytest.approx(0.7)},
        },
        "fill": {
            "type": "score",
            "score": pytest.approx(0.15 + 2 * 0.7),
            "probabilities": pytest.approx([0.15, 0.15, 0.7]),
        },
    }
    assert quirks(entry).decisions is True
    assert simulator.requests[-1].json == snapshot


async def test_decisions_image(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
    snapshot: SnapshotAssertion,
) -> None:
    """Images go to the Decisions API as data URLs, after the state."""
    await setup()
    (media_dir / "garage.png").write_bytes(PNG)
    simulator.requests.clear()

    answers = await evaluate(
        hass, {"door": DOOR}, attachments=[media("garage.png", "image/png")]
    )

    assert answers == {"door": {"type": "noul", "noul": pytest.approx(0.8)}}
    body = simulator.requests[-1].json
    assert body["input"][0]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,iVBORw0KGgpnYXJhZ2UgY2FtZXJh",
    }
    assert body == snapshot


async def test_decisions_image_only(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """Without state the evidence is the task's name and the images."""
    await setup()
    (media_dir / "garage.png").write_bytes(PNG)
    simulator.requests.clear()

    await evaluate(
        hass,
        {"door": DOOR},
        state=None,
        attachments=[media("garage.png", "image/png")],
    )

    text = simulator.requests[-1].json["input"][0]["content"][0]
    assert text == {"type": "input_text", "text": "Task: Check the garage"}


async def test_decisions_unnamed_answers_in_order(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Unnamed answers follow question order; sums near 1 are renormalised."""
    await setup()
    simulator.enqueue(
        DECISIONS,
        json=decision(
            {"type": "predicate", "name": None, "probability": 0.25},
            {
                "type": "choice",
                "name": None,
                "choice": "car",
                "confidence": 0.6,
                "probabilities": [
                    {"value": "bike", "probability": 0.402},
                    {"value": "car", "probability": 0.603},
                ],
            },
        ),
    )

    answers = await evaluate(hass, {"door": DOOR, "vehicle": VEHICLE})

    assert answers["door"] == {"type": "noul", "noul": 0.25}
    assert answers["vehicle"]["choice"] == "car"
    assert answers["vehicle"]["probabilities"] == {
        "car": pytest.approx(0.603 / 1.005),
        "bike": pytest.approx(0.402 / 1.005),
    }
    assert sum(answers["vehicle"]["probabilities"].values()) == pytest.approx(1)


def _score(*entries: tuple[str, int, float]) -> dict[str, Any]:
    """Return a score answer for FILL."""
    return {
        "type": "score",
        "name": "fill",
        "score": 1.0,
        "confidence": 0.5,
        "probabilities": [
            {"label": label, "value": value, "probability": p}
            for label, value, p in entries
        ],
    }


def _choice(*entries: tuple[Any, float]) -> dict[str, Any]:
    """Return a choice answer for VEHICLE."""
    return {
        "type": "choice",
        "name": "vehicle",
        "choice": "car",
        "confidence": 0.5,
        "probabilities": [{"value": value, "probability": p} for value, p in entries],
    }


def _predicate(name: Any = "door", probability: Any = 0.5) -> dict[str, Any]:
    """Return a predicate answer."""
    return {"type": "predicate", "name": name, "probability": probability}


LEVELS_OK = (("empty", 0, 0.2), ("half full", 1, 0.3), ("full", 2, 0.5))


@pytest.mark.parametrize(
    ("answers", "key", "placeholders"),
    [
        pytest.param(
            [_predicate("window")],
            "evaluate_unknown_answer",
            {"name": "window"},
            id="unknown name",
        ),
        pytest.param(
            [_predicate(), _predicate()],
            "evaluate_duplicate_answer",
            {"question": "door"},
            id="duplicate name",
        ),
        pytest.param(
            [_predicate(None), _predicate()],
            "evaluate_duplicate_answer",
            {"question": "door"},
            id="unnamed answer in the place of a named one",
        ),
        pytest.param(
            [_predicate(), _predicate(None), _predicate(None), _predicate(None)],
            "evaluate_unknown_answer",
            {"name": "None"},
            id="more unnamed answers than questions",
        ),
        pytest.param([], "evaluate_missing_answer", {"question": "door"}, id="missing"),
        pytest.param(
            [{"type": "refusal", "name": "door"}],
            "evaluate_refused",
            {"question": "door"},
            id="refusal",
        ),
        pytest.param(
            [_predicate(probability=1.2)],
            "evaluate_probability_out_of_range",
            {"question": "door", "value": "1.2"},
            id="probability above 1",
        ),
        pytest.param(
            [_predicate(probability=-0.1)],
            "evaluate_probability_out_of_range",
            {"question": "door", "value": "-0.1"},
            id="probability below 0",
        ),
        pytest.param(
            [_predicate(probability="high")],
            "evaluate_probability_out_of_range",
            {"question": "door", "value": "high"},
            id="probability not a number",
        ),
        pytest.param(
            [_predicate(probability=True)],
            "evaluate_probability_out_of_range",
            {"question": "door", "value": "True"},
            id="probability a boolean",
        ),
        pytest.param(
            [_predicate(probability=10**400)],
            "evaluate_probability_out_of_range",
            {"question": "door", "value": shown(str(10**400))},
            id="probability of 400 digits",
        ),
        pytest.param(
            [{**_score(*LEVELS_OK), "name": "door"}],
            "evaluate_wrong_answer_type",
            {"question": "door", "type": "score"},
            id="wrong type",
        ),
    ],
)
async def test_decisions_malformed_noul(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    answers: list[dict[str, Any]],
    key: str,
    placeholders: dict[str, str],
) -> None:
    """A Decision that does not answer exactly what was asked is refused."""
    await setup()
    simulator.enqueue(DECISIONS, json=decision(*answers))

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == key
    assert err.translation_placeholders == placeholders


@pytest.mark.parametrize(
    ("answer", "key"),
    [
        pytest.param(
            _choice(("car", 0.5), ("van", 0.5)),
            "evaluate_wrong_options",
            id="unknown value",
        ),
        pytest.param(
            _choice(("car", 0.5), ("car", 0.5)),
            "evaluate_wrong_options",
            id="duplicate value",
        ),
        pytest.param(
            _choice(("car", 0.5), ("bike", 0.3), ("van", 0.2)),
            "evaluate_wrong_options",
            id="extra value",
        ),
        pytest.param(
            _choice(("car", 0.5), (True, 0.5)),
            "evaluate_wrong_options",
            id="boolean value",
        ),
        pytest.param(
            _choice(("car", 1.0)), "evaluate_wrong_options", id="missing value"
        ),
        pytest.param(
            {**_choice(), "probabilities": None}, "evaluate_wrong_options", id="no list"
        ),
        pytest.param(
            _choice(("car", 0.5), ("bike", 0.3)),
            "evaluate_not_normalized",
            id="sum 0.8",
        ),
        pytest.param(
            _score(*LEVELS_OK), "evaluate_wrong_options", id="score for a choice"
        ),
    ],
)
async def test_decisions_malformed_choice(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    answer: dict[str, Any],
    key: str,
) -> None:
    """Choice answers must give each alternative exactly one probability."""
    await setup()
    if answer["type"] == "score":
        answer = {**answer, "name": "vehicle"}
        key = "evaluate_wrong_answer_type"
    simulator.enqueue(DECISIONS, json=decision(answer))

    err = await evaluate_error(hass, {"vehicle": VEHICLE})

    assert err.translation_key == key
    assert err.translation_placeholders["question"] == "vehicle"


@pytest.mark.parametrize(
    "levels",
    [
        pytest.param((("empty", 0, 0.5), ("full", 2, 0.5)), id="missing level"),
        pytest.param(
            (("empty", 0, 0.2), ("half full", 1, 0.3), ("full", 3, 0.5)),
            id="level out of range",
        ),
        pytest.param(
            (("empty", 0, 0.2), ("half", 1, 0.3), ("full", 2, 0.5)),
            id="label not ours",
        ),
        pytest.param(
            (("empty", 0, 0.2), ("empty", 0, 0.3), ("full", 2, 0.5)),
            id="duplicate level",
        ),
        pytest.param(
            (("empty", 0, 0.2), ("half full", True, 0.3), ("full", 2, 0.5)),
            id="boolean level",
        ),
    ],
)
async def test_decisions_wrong_levels(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    levels: tuple[tuple[str, int, float], ...],
) -> None:
    """Score answers must give exactly the levels asked about."""
    await setup()
    simulator.enqueue(DECISIONS, json=decision(_score(*levels)))

    err = await evaluate_error(hass, {"fill": FILL})

    assert err.translation_key == "evaluate_wrong_options"


async def test_decisions_score_answer(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A score is the expected level index of our own distribution."""
    await setup()
    simulator.enqueue(
        DECISIONS,
        json=decision(
            _score(("full", 2, 0.5), ("empty", 0, 0.2), ("half full", 1, 0.3))
        ),
    )

    answers = await evaluate(hass, {"fill": FILL})

    assert answers["fill"] == {
        "type": "score",
        "score": pytest.approx(0.3 + 2 * 0.5),
        "probabilities": pytest.approx([0.2, 0.3, 0.5]),
    }


@pytest.mark.parametrize(
    "response",
    [
        pytest.param({"raw": "<html>Welcome</html>"}, id="not JSON"),
        pytest.param({"json": [1, 2]}, id="not an object"),
        pytest.param({"json": {"status": "ok"}}, id="no answers"),
        pytest.param({"raw": "[" * 1_000_000}, id="nested too deep"),
    ],
)
async def test_decisions_catch_all_page(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    response: dict[str, Any],
) -> None:
    """A 200 that is no Decision at all means the route is not there."""
    entry = await setup()
    simulator.enqueue(DECISIONS, **response)
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [DECISIONS, CHAT]
    assert answers["door"]["noul"] > 0.9
    assert quirks(entry).decisions is False


async def test_decisions_answer_not_an_object(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A Decision whose answers are not objects fails the evaluation."""
    entry = await setup()
    simulator.enqueue(DECISIONS, json=decision("yes"))  # type: ignore[arg-type]

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == "evaluate_failed"
    assert err.translation_placeholders == {
        "problem": "an answer of the decision is not an object"
    }
    assert quirks(entry).decisions is True


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_decisions_route_missing_falls_back(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry, status: int
) -> None:
    """A missing route: chat completions, and never again."""
    entry = await setup()
    simulator.enqueue(DECISIONS, status=status)
    simulator.requests.clear()

    first = await evaluate(hass, {"door": DOOR})
    second = await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [DECISIONS, CHAT, CHAT]
    assert quirks(entry).decisions is False
    assert quirks(entry).logprobs is True
    assert first == second
    assert first["door"]["noul"] > 0.95


async def test_decisions_route_missing_is_learned_with_the_server(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Once the server lacks the route, no model of the entry asks it again."""
    entry = await setup()
    simulator.settings.decisions = False
    await evaluate(hass, {"door": DOOR})
    (task,) = (
        s for s in entry.subentries.values() if s.subentry_type == "ai_task_data"
    )
    other = next(m for m in simulator.models if m != task.data[CONF_CHAT_MODEL])
    hass.config_entries.async_update_subentry(
        entry, task, data={**task.data, CONF_CHAT_MODEL: other}
    )
    await hass.async_block_till_done()
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR})

    assert DECISIONS not in paths(simulator)
    assert CHAT in paths(simulator)
    assert entry.runtime_data.capabilities.model(other).refuses(Feature.DECISIONS)


@pytest.mark.parametrize("status", [400, 422])
async def test_decisions_request_refused_falls_back_this_time(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry, status: int
) -> None:
    """One refused request says nothing about the route: asked again next time."""
    entry = await setup()
    simulator.enqueue(DECISIONS, status=status)
    simulator.requests.clear()

    first = await evaluate(hass, {"door": DOOR})
    second = await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [DECISIONS, CHAT, DECISIONS]
    assert quirks(entry).decisions is True
    assert first["door"]["noul"] > 0.95
    # The simulator's Decisions API answers 0.8 for this question.
    assert second["door"]["noul"] == pytest.approx(0.8)


async def test_decisions_out_of_the_keys_scope_falls_back(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A restricted key without the Decisions scope still evaluates, over chat."""
    entry = await setup()
    simulator.enqueue(
        DECISIONS,
        status=401,
        json={
            "error": {
                "message": "You have insufficient permissions for this operation. "
                "Missing scopes: api.decisions.write.",
                "code": None,
            }
        },
    )
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [DECISIONS, CHAT]
    assert quirks(entry).decisions is False
    assert answers["door"]["noul"] > 0.95
    assert not hass.config_entries.flow.async_progress_by_handler("openai_compatible")


async def test_decisions_switched_off(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server without the route (404) is remembered for the entry."""
    entry = await setup()
    simulator.settings.decisions = False
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [DECISIONS, CHAT]
    assert quirks(entry).decisions is False


@pytest.mark.parametrize(
    ("status", "key"),
    [(500, "api_error"), (429, "rate_limited"), (401, "reauth_started")],
)
async def test_decisions_server_errors_raise(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    status: int,
    key: str,
) -> None:
    """Failures that say nothing about the route are raised, not remembered."""
    entry = await setup()
    simulator.enqueue(DECISIONS, status=status)

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == key
    assert quirks(entry).decisions is None


async def test_server_down(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server that cannot be reached fails with a connection error."""
    entry = await setup()
    await simulator.stop()

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == "cannot_connect"
    assert quirks(entry).decisions is None


@pytest.mark.parametrize("provider", ["ollama", "groq", "openrouter"])
async def test_decisions_only_where_openai_may_answer(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry, provider: str
) -> None:
    """Servers of other presets are not asked for OpenAI's Decisions API."""
    entry = await setup(provider=provider)
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [CHAT]
    assert quirks(entry).decisions is None


async def test_decisions_openai_preset(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """The OpenAI preset asks the Decisions API."""
    await setup(provider="openai")
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [DECISIONS]


@pytest.mark.parametrize(
    ("model", "answer", "asked"),
    [
        ("gpt-4o-mini", None, "logprobs"),
        (REASONING_MODEL, stated(yes=0.8, no=0.2), "response_format"),
    ],
)
async def test_questions_go_over_chat_completions_on_a_responses_entry(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    model: str,
    answer: dict[str, Any] | None,
    asked: str,
) -> None:
    """The OpenAI preset speaks the Responses API; evaluate's questions do not."""
    simulator.settings.decisions = False
    entry = await setup(provider="openai", ai_task={CONF_CHAT_MODEL: model})
    if answer:
        simulator.enqueue(CHAT, json=answer)
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] > 0.5
    assert paths(simulator) == [DECISIONS, CHAT]
    assert asked in simulator.chat_requests()[0]
    assert quirks(entry).decisions is False


async def test_decisions_skip_what_they_cannot_take(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A score of more than ten levels goes to chat; the rest to Decisions."""
    await setup()
    levels = [f"level {index}" for index in range(11)]
    simulator.enqueue(CHAT, json=stated(**{str(i): 1 / 11 for i in range(11)}))
    simulator.requests.clear()

    answers = await evaluate(
        hass,
        {
            "door": DOOR,
            "wide": {"type": "score", "instructions": "How?", "criteria": levels},
        },
    )

    assert paths(simulator) == [DECISIONS, CHAT]
    decided = simulator.requests[0].json
    assert [q["name"] for q in decided["questions"]] == ["door"]
    # Eleven levels have no one-digit labels: the chat request asks for JSON.
    assert "response_format" in simulator.chat_requests()[0]
    assert answers["wide"]["score"] == pytest.approx(5)


async def test_decisions_not_asked_when_none_fits(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A lone score of more than ten levels goes to chat, no decision asked."""
    await setup()
    levels = [f"level {index}" for index in range(11)]
    simulator.enqueue(CHAT, json=stated(**{str(i): 1 / 11 for i in range(11)}))
    simulator.requests.clear()

    answers = await evaluate(
        hass, {"wide": {"type": "score", "instructions": "How?", "criteria": levels}}
    )

    assert paths(simulator) == [CHAT]
    assert answers["wide"]["score"] == pytest.approx(5)


async def test_decisions_not_for_pdf(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """The Decisions API takes images only: a PDF goes to chat as a file part."""
    await setup()
    (media_dir / "note.pdf").write_bytes(PDF)
    simulator.requests.clear()

    await evaluate(
        hass, {"door": DOOR}, attachments=[media("note.pdf", "application/pdf")]
    )

    assert paths(simulator) == [CHAT]
    parts = simulator.chat_requests()[0]["messages"][1]["content"]
    assert parts[1] == {
        "type": "file",
        "file": {
            "filename": "note.pdf",
            "file_data": "data:application/pdf;base64,JVBERi0xLjQgZGVsaXZlcnkgbm90ZQ==",
        },
    }


# ---------------------------------------------------------------------------
# Path 2: token log-probabilities
# ---------------------------------------------------------------------------


async def test_logprobs_all_types(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """One one-token request per question; case and space variants fold."""
    entry = await setup(provider="ollama")
    simulator.requests.clear()

    answers = await evaluate(hass, QUESTIONS, state=TEXT_STATE)

    bodies = sorted(simulator.chat_requests(), key=prompt)
    assert len(bodies) == 3
    for body in bodies:
        assert body["max_tokens"] == 1
        assert body["logprobs"] is True
        assert body["top_logprobs"] == TOP_LOGPROBS
        assert "response_format" not in body
    assert bodies == snapshot
    assert quirks(entry).logprobs is True

    # The simulator answers the first label; its top tokens are that label,
    # " label", "LABEL", "label" (variants of it), then the other labels.
    p = builtin_label_probability
    yes = p(0) + p(1) + p(2) + p(3)
    no = p(4) + p(5)
    assert answers["door"] == {"type": "noul", "noul": round(yes / (yes + no), 4)}
    first = p(0) + p(1)  # "A" and " A" (upper and lower case fold too)
    first += p(2)  # "a"
    second = p(3) + p(4)  # "B", " B"
    assert answers["vehicle"] == {
        "type": "choice",
        "choice": "car",
        "probabilities": {
            "car": round(first / (first + second), 4),
            "bike": round(second / (first + second), 4),
        },
    }
    zero = p(0) + p(1)  # "0", " 0"
    one, two = p(2) + p(4), p(3) + p(5)  # "1", "2", " 1", " 2"
    total = zero + one + two
    assert answers["fill"] == {
        "type": "score",
        "score": round((one + 2 * two) / total, 4),
        "probabilities": [round(p / total, 4) for p in (zero, one, two)],
    }


async def test_logprobs_label_variants(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Tokens " Yes", "YES" and "yes." are all Yes; other tokens do not count."""
    await setup(provider="ollama")
    simulator.enqueue(
        CHAT,
        json=label_answer(
            (" Yes", 0.5), ("YES", 0.2), ("yes.", 0.05), ("No", 0.15), ("The", 0.1)
        ),
    )

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == round(0.75 / 0.9, 4)


async def test_answers_rounded(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Probabilities read 0.3, not 0.30000000000000004, and add up to 1."""
    await setup(provider="ollama")
    simulator.enqueue(CHAT, json=label_answer(("A", 0.7), ("B", 0.1), (" B", 0.2)))

    answers = await evaluate(hass, {"vehicle": VEHICLE})

    probabilities = answers["vehicle"]["probabilities"]
    assert probabilities == {"car": 0.7, "bike": 0.3}
    assert sum(probabilities.values()) == pytest.approx(1, abs=1e-4)


def test_fold() -> None:
    """Folding drops spaces, case and punctuation around a label."""
    assert {fold(token) for token in (" Yes", "YES", "yes.", "\nyes", "**Yes**")} == {
        "yes"
    }
    assert fold(" A)") == "a"
    assert fold(" 2") == "2"


async def test_logprobs_label_missing(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """An alternative missing from the top tokens gets probability 0."""
    await setup(provider="ollama")
    three = {**VEHICLE, "criteria": {**VEHICLE["criteria"], "van": "A van"}}
    simulator.enqueue(CHAT, json=label_answer(("B", 0.6), (" A", 0.2), ("I", 0.2)))

    answers = await evaluate(hass, {"vehicle": three})

    assert answers["vehicle"] == {
        "type": "choice",
        "choice": "bike",
        "probabilities": {
            "car": pytest.approx(0.25),
            "bike": pytest.approx(0.75),
            "van": 0.0,
        },
    }
    body = simulator.chat_requests()[-1]
    assert "A) car: A car is parked\nB) bike: A bike stands there\nC) van: A van" in (
        prompt(body)
    )


async def test_logprobs_no_label_falls_back_to_stated(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """When no label is among the top tokens, even held to them, it is stated."""
    entry = await setup(provider="ollama")
    simulator.enqueue(CHAT, json=label_answer(("The", 0.9), ("I", 0.1)))
    simulator.enqueue(CHAT, json=label_answer(('"', 0.9), ("I", 0.1)))
    simulator.enqueue(CHAT, json=stated(yes=0.3, no=0.7))
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.3)
    first, held, second = simulator.chat_requests()
    assert first["logprobs"] is True
    assert held["response_format"]["json_schema"]["schema"]["enum"] == ["Yes", "No"]
    assert second["response_format"]["type"] == "json_schema"
    assert "properties" in second["response_format"]["json_schema"]["schema"]
    # The server does give log-probabilities; only this answer had no label.
    assert quirks(entry).logprobs is True


@pytest.mark.parametrize(
    "question", [DOOR, VEHICLE, FILL], ids=["noul", "choice", "score"]
)
async def test_logprobs_held_to_the_labels(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    question: dict[str, Any],
) -> None:
    """Labels missing from the model's favourites are read with the answer held to them."""
    entry = await setup(provider="llama_cpp")
    simulator.settings.labels_in_top = False
    simulator.requests.clear()

    answers = await evaluate(hass, {"q": question})

    first, held = simulator.chat_requests()
    assert "response_format" not in first
    schema = held["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "string"
    assert held["max_tokens"] == 4
    assert held["logprobs"] is True
    if question is DOOR:
        # Held to the labels, "Yes" leads and "No" is the fifth alternative.
        yes, no = builtin_label_probability(0), builtin_label_probability(4)
        assert schema["enum"] == ["Yes", "No"]
        assert answers["q"]["noul"] == round(yes / (yes + no), 4)
    else:
        assert answers["q"]["type"] == question["type"]
    assert quirks(entry).logprobs is True


async def test_a_refused_held_request_is_not_sent_again(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """llama-server refused the schema of one label (its grammar failed): once.

    As it answered the tiny model's ChatML template: 400, "Failed to
    initialize samplers". The next evaluation does without the held request.
    """
    await setup(provider="llama_cpp")
    simulator.settings.labels_in_top = False
    simulator.enqueue(CHAT, json=label_answer(("The", 0.5), ("You", 0.1)))
    simulator.enqueue(
        CHAT,
        status=400,
        json={
            "error": {
                "code": 400,
                "message": "Failed to initialize samplers: std::exception",
                "type": "invalid_request_error",
            }
        },
    )
    await evaluate(hass, {"door": DOOR})
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR})

    assert not any(
        "response_format" in body and "logprobs" in body
        for body in simulator.chat_requests()
    )


async def test_one_label_far_down_the_top_tokens_is_read_again_held(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A label barely among the model's favourites is no answer of certainty.

    As Gemma 3 270M answered: "Yes" 20th at 1 %, "No" not among the top. Read
    alone, yes would be certain; held to the labels, both have their odds.
    """
    await setup(provider="ollama")
    simulator.enqueue(
        CHAT, json=label_answer(("You", 0.5), ("The", 0.1), ("Yes", 0.013))
    )
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    _first, held = simulator.chat_requests()
    assert held["response_format"]["json_schema"]["schema"]["enum"] == ["Yes", "No"]
    yes, no = builtin_label_probability(0), builtin_label_probability(4)
    assert answers["door"]["noul"] == round(yes / (yes + no), 4) < 1


async def test_llama_cpp_held_labels_read_after_its_grammar(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """llama.cpp's odds under a grammar are asked for after it, not before.

    Before its grammar, llama.cpp reports the model's own alternatives, which
    hold only the label it was made to choose: read alone, that label would
    be certain. After the grammar (nothing cut but what it rules out), the
    labels come in their relative odds.
    """
    await setup(provider="llama_cpp")
    simulator.settings.labels_in_top = False
    simulator.settings.logprobs_before_grammar = True
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    _first, held = simulator.chat_requests()
    assert held["post_sampling_probs"] is True
    assert (held["top_k"], held["top_p"], held["min_p"]) == (0, 1.0, 0.0)
    yes, no = builtin_label_probability(0), builtin_label_probability(4)
    assert 0 < answers["door"]["noul"] == round(yes / (yes + no), 4) < 1


async def test_held_labels_elsewhere_ask_for_no_llama_cpp_fields(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Servers that are not llama.cpp get the held request without its fields."""
    await setup(provider="ollama")
    simulator.settings.labels_in_top = False
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR})

    _first, held = simulator.chat_requests()
    assert "post_sampling_probs" not in held
    assert "top_k" not in held


async def test_logprobs_odd_entries(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Malformed top entries are skipped; the chosen token counts once."""
    await setup(provider="ollama")
    body = label_answer(("Yes", 0.6), ("No", 0.2))
    logprobs = body["choices"][0]["logprobs"]["content"][0]
    logprobs["top_logprobs"] += [
        "junk",
        {"token": "no", "logprob": None},
        {"token": "no", "logprob": True},
        {"token": "NO", "logprob": float("-inf")},
    ]
    simulator.enqueue(CHAT, raw=json.dumps(body))

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.75)


@pytest.mark.parametrize(
    "logprobs",
    [
        pytest.param(None, id="null"),
        pytest.param({"content": []}, id="no tokens"),
        pytest.param(
            {"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": []}]},
            id="no top tokens",
        ),
    ],
)
async def test_logprobs_none_marks_entry(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    logprobs: dict[str, Any] | None,
) -> None:
    """No top log-probabilities: stated ones now and from then on."""
    entry = await setup(provider="ollama")
    simulator.enqueue(CHAT, json=completion("Yes", logprobs=logprobs))
    simulator.enqueue(CHAT, json=stated(yes=0.9, no=0.1))
    simulator.enqueue(CHAT, json=stated(yes=0.2, no=0.8))
    simulator.requests.clear()

    first = await evaluate(hass, {"door": DOOR})
    second = await evaluate(hass, {"door": DOOR})

    assert first["door"]["noul"] == pytest.approx(0.9)
    assert second["door"]["noul"] == pytest.approx(0.2)
    assert quirks(entry).logprobs is False
    assert ["logprobs" in body for body in simulator.chat_requests()] == [
        True,
        False,
        False,
    ]


async def test_logprobs_rejected(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server that rejects logprobs gets asked for stated probabilities."""
    entry = await setup(provider="ollama")
    simulator.enqueue(CHAT, status=400, json={"error": "logprobs not supported"})
    simulator.enqueue(CHAT, json=stated(yes=0.6, no=0.4))

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.6)
    assert quirks(entry).logprobs is False


async def test_logprobs_rejected_for_the_request(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A rejection that names no logprobs sends this question on, unremembered."""
    entry = await setup(provider="ollama")
    simulator.enqueue(
        CHAT,
        status=400,
        json={"error": {"message": "The request could not be processed"}},
    )
    simulator.enqueue(CHAT, json=stated(yes=0.6, no=0.4))
    simulator.enqueue(CHAT, json=label_answer(("Yes", 0.8), ("No", 0.2)))
    simulator.requests.clear()

    first = await evaluate(hass, {"door": DOOR})
    assert quirks(entry).logprobs is None
    second = await evaluate(hass, {"door": DOOR})

    assert first["door"]["noul"] == pytest.approx(0.6)
    assert second["door"]["noul"] == pytest.approx(0.8)
    assert ["logprobs" in body for body in simulator.chat_requests()] == [
        True,
        False,
        True,
    ]
    assert quirks(entry).logprobs is True


async def test_logprobs_no_flip_flop(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Once a question learns there are no logprobs, another's answer keeps it so."""
    entry = await setup(provider="ollama")
    light = {"type": "noul", "instructions": "Is the light on?"}
    # One question's request is rejected. The next two answers serve either
    # path, whichever request comes first: label log-probabilities and a
    # stated JSON object.
    simulator.enqueue(CHAT, status=400, json={"error": "logprobs not supported"})
    either = label_answer(("Yes", 0.8), ("No", 0.2))
    either["choices"][0]["message"]["content"] = json.dumps({"yes": 0.8, "no": 0.2})
    simulator.enqueue(CHAT, json=either)
    simulator.enqueue(CHAT, json=either)
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR, "light": light})

    assert [answer["noul"] for answer in answers.values()] == pytest.approx([0.8, 0.8])
    assert len(simulator.chat_requests()) == 3
    assert quirks(entry).logprobs is False


async def test_quirks_per_model(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """What one model of the server lacks is not held against another."""
    entry = await setup(provider="ollama")
    entry.runtime_data.capabilities.model("llama3.2:3b").learn_refused(
        Feature.LOGPROBS, "HTTP 400: refused"
    )
    simulator.enqueue(CHAT, json=label_answer(("Yes", 0.7), ("No", 0.3)))
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.7)
    (body,) = simulator.chat_requests()
    assert body["logprobs"] is True
    assert quirks(entry).logprobs is True


async def test_without_decisions_and_logprobs(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
) -> None:
    """Path 1 and 2 fail once; later evaluations go straight to stated ones."""
    entry = await setup()
    simulator.settings.decisions = False
    simulator.settings.logprobs = False
    simulator.enqueue(CHAT, json=completion("Yes"))
    simulator.enqueue(CHAT, json=stated(yes=0.7, no=0.3))
    simulator.enqueue(CHAT, json=stated(yes=0.1, no=0.9))
    simulator.requests.clear()

    first = await evaluate(hass, {"door": DOOR})
    assert paths(simulator) == [DECISIONS, CHAT, CHAT]
    simulator.requests.clear()
    second = await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [CHAT]
    assert first["door"]["noul"] == pytest.approx(0.7)
    assert second["door"]["noul"] == pytest.approx(0.1)
    assert (quirks(entry).logprobs, quirks(entry).decisions) == (False, False)
    assert simulator.chat_requests()[0] == snapshot


async def test_reasoning_model_states(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Reasoning models cannot answer in one token: stated probabilities."""
    entry = await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    simulator.enqueue(CHAT, json=stated(yes=0.55, no=0.45))
    simulator.requests.clear()

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.55)
    (body,) = simulator.chat_requests()
    assert "logprobs" not in body
    assert "max_tokens" not in body
    assert quirks(entry).logprobs is None


async def test_logprobs_too_many_alternatives(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """More alternatives than letters: stated probabilities."""
    await setup(provider="ollama")
    names = [f"option{index}" for index in range(27)]
    many = {
        "type": "choice",
        "instructions": "Which?",
        "criteria": {name: f"It is {name}" for name in names},
    }
    simulator.enqueue(CHAT, json=stated(**dict.fromkeys(names, 1 / 27)))

    answers = await evaluate(hass, {"many": many})

    assert answers["many"]["choice"] == "option0"
    assert len(simulator.chat_requests()) == 1


# ---------------------------------------------------------------------------
# Path 3: stated probabilities
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        pytest.param(
            DOOR,
            {"yes": 0.82, "no": 0.2},
            {"type": "noul", "noul": 0.8039},
            id="noul",
        ),
        pytest.param(
            VEHICLE,
            {"car": 0.1, "bike": 0.9},
            {
                "type": "choice",
                "choice": "bike",
                "probabilities": {"car": 0.1, "bike": 0.9},
            },
            id="choice",
        ),
        pytest.param(
            FILL,
            {"0": 0.2, "1": 0.5, "2": 0.3},
            {"type": "score", "score": 1.1, "probabilities": [0.2, 0.5, 0.3]},
            id="score",
        ),
    ],
)
async def test_stated_each_type(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    snapshot: SnapshotAssertion,
    question: dict[str, Any],
    answer: dict[str, float],
    expected: dict[str, Any],
) -> None:
    """Each option gets a key in a strict JSON schema; sums near 1 are scaled."""
    await setup(provider="ollama")
    simulator.settings.logprobs = False
    simulator.enqueue(CHAT, json=completion("No"))
    simulator.enqueue(CHAT, json=stated(**answer))

    answers = await evaluate(hass, {"q": question})

    assert answers["q"] == expected
    assert simulator.chat_requests()[-1] == snapshot


FORMAT_REJECTIONS = (
    (
        "Invalid 'response_format.json_schema.strict': strict structured outputs "
        "are not supported by this server."
    ),
    "This response_format type is unavailable now",
    "Unrecognized request argument supplied: response_format",
)


@pytest.mark.parametrize(
    ("rung", "response_format"),
    [
        pytest.param(RUNG_SCHEMA, "json_schema", id="no strict mode"),
        pytest.param(RUNG_JSON_OBJECT, "json_object", id="json_object"),
        pytest.param(RUNG_INSTRUCTIONS, None, id="no response_format"),
    ],
)
async def test_stated_ladder(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    rung: int,
    response_format: str | None,
) -> None:
    """Rejected formats step down the ladder; the entry remembers the rung."""
    entry = await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    for message in FORMAT_REJECTIONS[:rung]:
        simulator.enqueue(CHAT, status=400, json={"error": {"message": message}})
    simulator.enqueue(CHAT, json=stated(yes=0.4, no=0.6))
    simulator.enqueue(CHAT, json=stated(yes=0.5, no=0.5))
    simulator.requests.clear()

    first = await evaluate(hass, {"door": DOOR})

    bodies = simulator.chat_requests()
    assert len(bodies) == rung + 1
    assert [b.get("response_format", {}).get("type") for b in bodies] == [
        "json_schema",
        "json_schema",
        "json_object",
        None,
    ][: rung + 1]
    assert first["door"]["noul"] == pytest.approx(0.4)
    assert quirks(entry).structured_output_rung == rung
    accepted = bodies[-1]
    assert (accepted.get("response_format") or {}).get("type") == response_format
    if rung >= RUNG_JSON_OBJECT:
        assert "Answer with only a JSON object that matches this JSON schema" in (
            prompt(accepted)
        )

    simulator.requests.clear()
    second = await evaluate(hass, {"door": DOOR})
    assert second["door"]["noul"] == pytest.approx(0.5)
    assert simulator.chat_requests() == [accepted]


async def test_failed_question_cancels_the_others(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One bad answer fails the task at once; slow requests of others are cancelled."""
    await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    simulator.enqueue(CHAT, json=completion(None, refusal="No."))
    simulator.requests.clear()
    send = Ask.async_choice
    cancelled = asyncio.Event()

    async def slow_for_vehicle(ask: Ask, body: dict[str, Any]) -> dict[str, Any]:
        if VEHICLE["instructions"] in prompt(body):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        return await send(ask, body)

    monkeypatch.setattr(Ask, "async_choice", slow_for_vehicle)

    async with asyncio.timeout(5):
        err = await evaluate_error(hass, {"door": DOOR, "vehicle": VEHICLE})

    assert err.translation_key == "evaluate_refused"
    assert err.translation_placeholders == {"question": "door"}
    assert cancelled.is_set()
    assert len(simulator.chat_requests()) == 1


async def test_a_translated_failure_is_told_beside_another_at_once(
    hass: HomeAssistant,
    setup: SetupEntry,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two questions failing together: the user is told the translated one alone."""
    await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})

    async def fail(ask: Ask, body: dict[str, Any]) -> dict[str, Any]:
        if VEHICLE["instructions"] in prompt(body):
            raise ValueError("not ours")
        raise ModelError("evaluate_refused", question="door")

    monkeypatch.setattr(Ask, "async_choice", fail)

    err = await evaluate_error(hass, {"door": DOOR, "vehicle": VEHICLE})

    assert err.translation_key == "evaluate_refused"
    assert err.translation_placeholders == {"question": "door"}


async def test_stated_rejected_on_every_rung(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """When even a plain request is rejected, the error is the server's."""
    entry = await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    for _ in range(4):
        simulator.enqueue(CHAT, status=400, json={"error": {"message": "Bad image"}})

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == "api_error"
    assert err.translation_placeholders == {"message": "Bad image"}
    assert quirks(entry).structured_output_rung == RUNG_STRICT


@pytest.mark.parametrize(
    ("response", "key", "placeholders"),
    [
        pytest.param(
            completion("I think it is open."),
            "evaluate_failed",
            {
                "problem": "the answer is not valid JSON: Expecting value: line 1 column 1 (char 0)"
            },
            id="not JSON",
        ),
        pytest.param(
            completion("[0.5, 0.5]"),
            "evaluate_failed",
            {"problem": "the stated probabilities are not a JSON object"},
            id="not an object",
        ),
        pytest.param(
            stated(yes=0.5),
            "evaluate_wrong_options",
            {"question": "door"},
            id="missing key",
        ),
        pytest.param(
            stated(yes=0.5, no=0.5, maybe=0.0),
            "evaluate_wrong_options",
            {"question": "door"},
            id="extra key",
        ),
        pytest.param(
            stated(yes="0.5", no=0.5),
            "evaluate_probability_out_of_range",
            {"question": "door", "value": "0.5"},
            id="string",
        ),
        pytest.param(
            completion('{"yes": Infinity, "no": 0.5}'),
            "evaluate_probability_out_of_range",
            {"question": "door", "value": "inf"},
            id="infinity",
        ),
        pytest.param(
            stated(yes=0, no=0),
            "evaluate_not_normalized",
            {"question": "door", "total": "0"},
            id="sum 0",
        ),
    ],
)
async def test_stated_invalid_twice(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    response: dict[str, Any],
    key: str,
    placeholders: dict[str, str] | None,
) -> None:
    """An answer that does not fit is asked for again; twice, it is told."""
    await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    simulator.enqueue(CHAT, json=response)
    simulator.enqueue(CHAT, json=response)
    simulator.requests.clear()

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == key
    assert err.translation_placeholders == placeholders
    first, second = simulator.chat_requests()
    assert second["messages"][:-2] == first["messages"]
    assert second["response_format"] == first["response_format"]
    assistant, repair = second["messages"][-2:]
    assert assistant == response["choices"][0]["message"] | {"role": "assistant"}
    assert "a number from 0 to 1, the numbers adding up to 1" in repair["content"]


@pytest.mark.parametrize(
    ("answer", "noul"),
    [
        pytest.param('{"yes": 80, "no": 20}', 0.8, id="percent"),
        pytest.param('{"yes": 0.9, "no": 0.2}', 0.9 / 1.1, id="sum 1.1"),
        pytest.param('{"yes": 595378, "no": 0}', 1.0, id="huge"),
        pytest.param('{"yes": -7.9E3667, "no": 9}', 0.0, id="huge negative exponent"),
    ],
)
async def test_stated_out_of_range_twice_is_scaled(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    answer: str,
    noul: float,
) -> None:
    """Numbers still out of range when asked again are weights, never the end."""
    await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    simulator.enqueue(CHAT, json=completion(answer))
    simulator.enqueue(CHAT, json=completion(answer))

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == round(noul, 4)


async def test_stated_out_of_range_repaired(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """An answer out of range asked for again is read as the model then states it."""
    await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    simulator.enqueue(CHAT, json=stated(yes=80, no=20))
    simulator.enqueue(CHAT, json=stated(yes=0.3, no=0.7))

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.3)


async def test_stated_unbounded_server(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A server that writes every number as a huge exponent still gets an answer."""
    await setup(provider="llama_cpp")
    simulator.settings.logprobs = False
    simulator.settings.decisions = False
    simulator.settings.unbounded_number = "7.9E3667"

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == "evaluate_probability_out_of_range"
    assert err.translation_placeholders == {"question": "door", "value": "inf"}
    assert len(simulator.chat_requests()) == 3


@pytest.mark.parametrize(
    ("response", "key", "placeholders"),
    [
        pytest.param(
            completion(None, refusal="I cannot help with that."),
            "evaluate_refused",
            {"question": "door"},
            id="refusal",
        ),
        pytest.param(completion(""), "no_answer", None, id="empty"),
        pytest.param({"choices": []}, "no_answer", None, id="no choices"),
    ],
)
async def test_stated_invalid(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    response: dict[str, Any],
    key: str,
    placeholders: dict[str, str] | None,
) -> None:
    """A refusal or no answer at all is told at once."""
    await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    simulator.enqueue(CHAT, json=response)

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == key
    assert err.translation_placeholders == placeholders


@pytest.mark.parametrize(
    ("response", "key"),
    [
        pytest.param(
            {"raw": "<html>Welcome</html>"},
            "answer_not_json",
            id="not JSON",
        ),
        pytest.param({"raw": ""}, "answer_not_json", id="empty"),
        pytest.param(
            {"raw": 'data: {"choices": []}\n\ndata: [DONE]\n\n'},
            "answer_not_json",
            id="event stream",
        ),
        pytest.param({"json": [1, 2]}, "answer_malformed", id="list"),
        pytest.param({"raw": "42"}, "answer_malformed", id="number"),
        pytest.param({"raw": "[" * 1_000_000}, "answer_not_json", id="nested too deep"),
    ],
)
async def test_chat_unreadable(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    response: dict[str, Any],
    key: str,
) -> None:
    """A chat answer that is no completion fails the evaluation."""
    await setup(provider="ollama")
    simulator.enqueue(CHAT, **response)

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == key


async def test_stated_with_reasoning_text(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Think blocks and fences around the JSON do not matter."""
    await setup(provider="ollama", ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    simulator.enqueue(
        CHAT,
        json=completion(
            '<think>The door looks open.</think>\n```json\n{"yes": 0.9, "no": 0.1}\n```'
        ),
    )

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.9)


# ---------------------------------------------------------------------------
# Mixed sets, attachments, settings
# ---------------------------------------------------------------------------


async def test_mixed_paths(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Questions take different paths in one evaluation, answered as asked."""
    await setup()
    levels = [f"level {index}" for index in range(12)]
    wide = {"type": "score", "instructions": "How wide?", "criteria": levels}
    simulator.enqueue(CHAT, json=stated(**{str(i): 1 / 12 for i in range(12)}))
    simulator.requests.clear()

    answers = await evaluate(
        hass, {"wide": wide, "door": DOOR, "vehicle": VEHICLE, "fill": FILL}
    )

    # Twelve levels: too many for the Decisions API and for one-digit labels.
    assert paths(simulator) == [DECISIONS, CHAT]
    decided = simulator.requests[0].json
    assert [q["name"] for q in decided["questions"]] == ["door", "vehicle", "fill"]
    assert simulator.chat_requests()[0]["response_format"]["type"] == "json_schema"
    assert list(answers) == ["wide", "door", "vehicle", "fill"]
    assert answers["wide"]["score"] == pytest.approx(5.5)
    assert answers["wide"]["probabilities"] == [0.0833] * 12
    assert answers["door"]["noul"] == pytest.approx(0.8)
    assert answers["vehicle"]["choice"] == "bike"
    assert answers["fill"]["score"] == pytest.approx(1.55)


async def test_chat_image_attachment(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """In chat requests, images follow the evidence text, before the question."""
    await setup(provider="ollama")
    (media_dir / "garage.png").write_bytes(PNG)
    simulator.requests.clear()

    answers = await evaluate(
        hass, {"door": DOOR}, attachments=[media("garage.png", "image/png")]
    )

    assert answers["door"]["noul"] > 0.9
    (body,) = simulator.chat_requests()
    text, image, question = body["messages"][1]["content"]
    assert text["text"].startswith("Task: Check the garage\n\nState (JSON):\n")
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgpnYXJhZ2UgY2FtZXJh"},
    }
    assert question == {
        "type": "text",
        "text": "Question: Is the garage door open?\n\nAnswer Yes or No.",
    }


async def test_settings_and_cache_key(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Stated requests carry the user's settings; logprob ones only the cache key."""
    entry = await setup(
        provider="openai",
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        ai_task={
            "recommended": False,
            "temperature": 0.3,
            "top_p": 0.9,
            "max_tokens": 50,
        },
    )
    entry.runtime_data.capabilities.model("gpt-4o-mini").learn_refused(
        Feature.DECISIONS, "HTTP 400: refused"
    )
    simulator.enqueue(CHAT, json=label_answer(("The", 1.0)))
    simulator.enqueue(CHAT, json=label_answer(("The", 1.0)))
    simulator.enqueue(CHAT, json=stated(yes=0.5, no=0.5))
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR})

    logprobs, held, stated_body = simulator.chat_requests()
    assert held["prompt_cache_key"] == logprobs["prompt_cache_key"]
    subentry_key = logprobs["prompt_cache_key"]
    assert subentry_key
    assert {key: logprobs[key] for key in ("max_tokens", "temperature")} == {
        "max_tokens": 1,
        "temperature": 1.0,
    }
    assert "top_p" not in logprobs
    assert {
        key: stated_body[key]
        for key in ("max_tokens", "temperature", "top_p", "prompt_cache_key")
    } == {
        "max_tokens": 50,
        "temperature": 0.3,
        "top_p": 0.9,
        "prompt_cache_key": subentry_key,
    }


async def test_string_state_sent_as_text(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """A state that is text is sent as it is; anything else as JSON."""
    await setup(provider="ollama")
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR}, state=TEXT_STATE)
    await evaluate(hass, {"door": DOOR}, state=[1, "two"])

    text_body, json_body = simulator.chat_requests()
    assert text_body["messages"][1]["content"].startswith(
        f"Task: Check the garage\n\nState:\n{TEXT_STATE}\n\nQuestion:"
    )
    assert '\n\nState (JSON):\n[1,"two"]\n\n' in json_body["messages"][1]["content"]


# ---------------------------------------------------------------------------
# What a user can see: trace and debug log
# ---------------------------------------------------------------------------


async def test_trace_and_debug_log(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The path and raw label distribution go to an active trace and the log."""
    await setup()
    simulator.settings.decisions = False
    simulator.enqueue(
        CHAT, json=label_answer(("Yes", 0.6), (" yes", 0.1), ("No", 0.2), ("I", 0.1))
    )
    caplog.set_level(logging.DEBUG, logger="custom_components.openai_compatible")

    with async_conversation_trace() as trace:
        await evaluate(hass, {"door": DOOR})

    (event,) = [
        event
        for event in trace.as_dict()["events"]
        if event["event_type"] == ConversationTraceEventType.AGENT_DETAIL
    ]
    detail = event["data"]["evaluation"]
    assert detail["task_name"] == "Check the garage"
    assert detail["model"] == "gpt-4o-mini"
    door = detail["questions"]["door"]
    assert door["path"] == "logprobs"
    assert door["raw"] == {"Yes": pytest.approx(0.7), "No": pytest.approx(0.2)}
    assert door["coverage"] == pytest.approx(0.9)
    assert door["probabilities"] == {
        "yes": pytest.approx(0.7 / 0.9),
        "no": pytest.approx(0.2 / 0.9),
    }
    assert door["skipped"] == [
        "decisions: refused (404): Invalid URL (POST /v1/decisions)"
    ]
    assert "Evaluation: {'task_name': 'Check the garage'" in caplog.text
    assert "'path': 'logprobs'" in caplog.text


async def test_no_trace_outside_a_conversation(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Outside a conversation there is no trace to add to; nothing fails."""
    await setup()

    answers = await evaluate(hass, {"door": DOOR})

    assert answers["door"]["noul"] == pytest.approx(0.8)


async def test_entity_supports_evaluate(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """The entity offers evaluate, with attachments."""
    await setup()
    state = hass.states.get(ENTITY)
    assert state is not None
    features = ai_task.AITaskEntityFeature(state.attributes["supported_features"])
    assert ai_task.AITaskEntityFeature.EVALUATE in features
    assert ai_task.AITaskEntityFeature.SUPPORT_ATTACHMENTS in features


async def test_context_overflow_is_told_in_our_words(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """Evaluate sends no history to trim: an overflow is a translated error."""
    await setup(provider="ollama")
    simulator.enqueue(
        CHAT,
        status=400,
        json={"error": {"message": "This model's maximum context length is 2048"}},
    )

    err = await evaluate_error(hass, {"door": DOOR})

    assert err.translation_key == "context_overflow"
    assert "2048" not in str(err)


# ---------------------------------------------------------------------------
# Bounds and evidence
# ---------------------------------------------------------------------------


async def test_a_decision_refused_for_its_image_is_not_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry, media_dir: Path
) -> None:
    """One request refused for its image says nothing about the route."""
    entry = await setup()
    (media_dir / "garage.png").write_bytes(PNG)
    simulator.enqueue(
        DECISIONS,
        status=400,
        json={"error": {"message": "The image could not be decoded: image_url"}},
    )
    simulator.requests.clear()

    await evaluate(hass, {"door": DOOR}, attachments=[media("garage.png", "image/png")])
    await evaluate(hass, {"door": DOOR})

    assert paths(simulator) == [DECISIONS, CHAT, DECISIONS]
    assert quirks(entry).decisions is True


async def test_too_many_questions_are_refused(
    hass: HomeAssistant, simulator: OpenAISimulator, setup: SetupEntry
) -> None:
    """More questions than MAX_QUESTIONS in one task: a clear error, no request."""
    assert MAX_QUESTIONS == 32
    await setup()
    simulator.requests.clear()

    err = await evaluate_error(
        hass, {f"q{index}": DOOR for index in range(MAX_QUESTIONS + 1)}
    )

    assert err.translation_key == "evaluate_too_many_questions"
    assert err.translation_placeholders == {"count": "33", "limit": "32"}
    assert simulator.requests == []


@pytest.mark.parametrize(("provider", "at_once"), [("ollama", 1), ("openai", 4)])
async def test_requests_at_once_are_bounded_per_entry(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    provider: str,
    at_once: int,
) -> None:
    """A local server gets one question at a time; a hosted one a few."""
    entry = await setup(provider=provider, options={CONF_API: WireApi.CHAT_COMPLETIONS})
    entry.runtime_data.capabilities.model("gpt-4o-mini").learn_refused(
        Feature.DECISIONS, "HTTP 400: refused"
    )
    simulator.settings.latency = 0.05
    simulator.peak_in_flight = 0
    questions = {f"q{index}": DOOR for index in range(8)}

    answers = await evaluate(hass, questions)

    assert len(answers) == 8
    assert len(simulator.chat_requests()) == 8
    assert simulator.peak_in_flight == at_once


# Questions: their options, labels, answers and checks.

DOOR_Q = Question.from_task(
    "door", ai_task.NoulQuestion(type="noul", instructions="Is the door open?")
)
VEHICLE_Q = Question.from_task(
    "vehicle",
    ai_task.ChoiceQuestion(
        type="choice",
        instructions="What is parked?",
        criteria={"car": "A car", "bike": "A bike"},
    ),
)
FILL_Q = Question.from_task(
    "fill",
    ai_task.ScoreQuestion(
        type="score", instructions="How full?", criteria=["empty", "half", "full"]
    ),
)


def test_labels_are_one_token_each() -> None:
    """Yes/No, a letter per alternative, a digit per level."""
    assert DOOR_Q.labels() == ["Yes", "No"]
    assert VEHICLE_Q.labels() == ["A", "B"]
    assert FILL_Q.labels() == ["0", "1", "2"]


def test_too_many_options_have_no_labels() -> None:
    """Past 26 alternatives or 10 levels no one-token label is left."""
    many = Question("many", "choice", "?", tuple((f"o{i}", "") for i in range(27)))
    levels = Question("levels", "score", "?", tuple((str(i), "") for i in range(11)))
    assert many.labels() is None
    assert levels.labels() is None


def test_answers_in_home_assistants_form() -> None:
    """A noul's probability of yes, the likeliest choice, a score's mean level."""
    assert DOOR_Q.answer([0.75, 0.25]) == ai_task.NoulAnswer(noul=0.75)
    choice = VEHICLE_Q.answer([0.2, 0.8])
    assert choice == ai_task.ChoiceAnswer(
        choice="bike", probabilities={"car": 0.2, "bike": 0.8}
    )
    score = FILL_Q.answer([0.0, 0.5, 0.5])
    assert score == ai_task.ScoreAnswer(score=1.5, probabilities=[0.0, 0.5, 0.5])


@pytest.mark.parametrize("value", [True, "0.5", -0.1, 1.5, None])
def test_probability_refuses_what_is_no_probability(value: object) -> None:
    """Only a number from 0 to 1 is a probability."""
    with pytest.raises(ModelError) as caught:
        probability(value, DOOR_Q)
    assert caught.value.translation_key == "evaluate_probability_out_of_range"


def test_normalised_within_tolerance_only() -> None:
    """A distribution near 1 is scaled to 1; one far from it is refused."""
    assert normalised(DOOR_Q, [0.5, 0.52], 0.05) == pytest.approx(
        [0.5 / 1.02, 0.52 / 1.02]
    )
    with pytest.raises(ModelError) as caught:
        normalised(DOOR_Q, [0.5, 0.7], 0.05)
    assert caught.value.translation_placeholders == {"question": "door", "total": "1.2"}


def test_numbers_no_float_holds_are_no_numbers() -> None:
    """A log-probability or a stated weight of 400 digits is none, not a crash."""
    huge = 10**400
    first = {
        "token": "Yes",
        "logprob": huge,
        "top_logprobs": [
            {"token": "No", "logprob": -huge},
            {"token": "Maybe", "logprob": -0.5},
        ],
    }
    assert _alternatives(first) == {"Maybe": -0.5}
    stated = {"message": {"content": f'{{"yes": {huge}, "no": 1}}'}}
    assert stated_weights(stated, DOOR_Q) is None
    with pytest.raises(ModelError):
        probability(huge, DOOR_Q)
