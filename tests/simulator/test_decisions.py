"""The Decisions API round trip through `client.decisions.create`."""

from __future__ import annotations

import base64
from typing import Any

import openai
from openai.types.decision import (
    AnswerAnswerResourceChoice,
    AnswerAnswerResourcePredicate,
    AnswerAnswerResourceRefusal,
    AnswerAnswerResourceScore,
)
import pytest

from simulator import OpenAISimulator
from simulator.decisions import LIKELY, UNLIKELY, UNSURE

MODEL = "gpt-6-luna"
PREDICATE = {
    "type": "predicate",
    "name": "charged_twice",
    "instructions": "Charged twice?",
}
CHOICE = {
    "type": "choice",
    "name": "category",
    "instructions": "Classify the ticket.",
    "choices": [{"value": "technical"}, {"value": "billing", "description": "Money"}],
}
SCORE = {
    "type": "score",
    "instructions": "How upset is the customer?",
    "levels": [{"label": "calm"}, {"label": "annoyed"}, {"label": "furious"}],
}
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


async def test_round_trip(client: openai.AsyncOpenAI) -> None:
    """Each question type gets its answer, in order, with distributions summing to 1."""
    decision = await client.decisions.create(
        model=MODEL,
        input="I was charged twice; billing is a mess and I am annoyed.",
        questions=[PREDICATE, CHOICE, SCORE],  # type: ignore[list-item]
    )

    assert decision.model == MODEL
    predicate, choice, score = decision.answers
    assert isinstance(predicate, AnswerAnswerResourcePredicate)
    assert predicate.name == "charged_twice"
    # The input says nothing of a state the question asks about.
    assert predicate.probability == pytest.approx(UNSURE)
    assert isinstance(choice, AnswerAnswerResourceChoice)
    assert choice.choice == "billing"
    assert choice.confidence == max(p.probability for p in choice.probabilities)
    assert [p.value for p in choice.probabilities] == ["technical", "billing"]
    assert sum(p.probability for p in choice.probabilities) == pytest.approx(1)
    assert isinstance(score, AnswerAnswerResourceScore)
    assert score.name is None
    assert [(p.label, p.value) for p in score.probabilities] == [
        ("calm", 0),
        ("annoyed", 1),
        ("furious", 2),
    ]
    assert sum(p.probability for p in score.probabilities) == pytest.approx(1)
    assert score.score == pytest.approx(
        sum(p.value * p.probability for p in score.probabilities)
    )
    assert score.confidence == pytest.approx(0.7)
    assert decision.usage.total_tokens == (
        decision.usage.input_tokens + decision.usage.output_tokens
    )


@pytest.mark.parametrize(
    ("state", "probability"),
    [
        ('{"front_door": "open", "open_for": "40 minutes"}', LIKELY),
        ('{"front_door": "closed"}', UNLIKELY),
        ("The front door is closed; the garage door is open.", UNSURE),
        ('{"kitchen_light": "on"}', UNSURE),
    ],
)
async def test_predicate_follows_the_state(
    client: openai.AsyncOpenAI, state: str, probability: float
) -> None:
    """A predicate is likely where the state says what it asks, unlikely where the opposite.

    A state that says both, or neither, leaves it unsure.
    """
    decision = await client.decisions.create(
        model=MODEL,
        input=f"State (JSON):\n{state}",
        questions=[
            {
                "type": "predicate",
                "instructions": "Has the front door been left open?",
            }
        ],
    )

    (answer,) = decision.answers
    assert isinstance(answer, AnswerAnswerResourcePredicate)
    assert answer.probability == pytest.approx(probability)


async def test_messages_with_images_and_boolean_choices(
    client: openai.AsyncOpenAI,
) -> None:
    """Message input with inline images works; boolean values stay booleans."""
    decision = await client.decisions.create(
        model=MODEL,
        input=[
            {
                "role": "user",
                "type": "message",
                "content": [
                    {"type": "input_text", "text": "Is the door open?"},
                    {
                        "type": "input_image",
                        "image_url": f"data:image/png;base64,{PIXEL}",
                    },
                ],
            }
        ],
        questions=[
            {
                "type": "choice",
                "instructions": "Door open?",
                "choices": [{"value": True}, {"value": "true"}],
            }
        ],
    )

    (answer,) = decision.answers
    assert isinstance(answer, AnswerAnswerResourceChoice)
    assert answer.choice is True
    assert [p.value for p in answer.probabilities] == [True, "true"]


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("no questions", {"questions": []}, "Invalid 'questions': empty array."),
    (
        "unknown question type",
        {"questions": [{"type": "essay", "instructions": "x"}]},
        "Invalid value: 'essay'. Supported values are: 'predicate', 'choice', and 'score'.",
    ),
    (
        "unknown question field",
        {"questions": [{**PREDICATE, "weight": 2}]},
        "Unknown parameter: 'questions[0].weight'.",
    ),
    (
        "no instructions",
        {"questions": [{"type": "predicate"}]},
        "Missing required parameter: 'questions[0].instructions'.",
    ),
    (
        "one choice",
        {"questions": [{**CHOICE, "choices": [{"value": "a"}]}]},
        "expected at least 2 items, but got 1",
    ),
    (
        "eleven levels",
        {"questions": [{**SCORE, "levels": [{"label": str(i)} for i in range(11)]}]},
        "expected between 2 and 10 items, but got 11",
    ),
    (
        "duplicate names",
        {"questions": [PREDICATE, PREDICATE]},
        "duplicate question name 'charged_twice'",
    ),
    (
        "assistant input",
        {"input": [{"role": "assistant", "content": "hi"}]},
        "Invalid value: 'assistant'. Supported values are: 'user'.",
    ),
    (
        "external image",
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_image", "image_url": "https://x/y.png"}
                    ],
                }
            ]
        },
        "Expected a base64-encoded data URL with an image MIME type",
    ),
    (
        "too many images",
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "input_image",
                            "image_url": f"data:image/png;base64,{PIXEL}",
                        }
                    ]
                    * 129,
                }
            ]
        },
        "at most 128 image parts are allowed, but got 129",
    ),
    ("unknown field", {"temperature": 0}, "Unknown parameter: 'temperature'."),
]


@pytest.mark.parametrize(
    ("fields", "message"), [case[1:] for case in BAD], ids=[case[0] for case in BAD]
)
async def test_rejected(
    client: openai.AsyncOpenAI, fields: dict[str, Any], message: str
) -> None:
    """Malformed requests are 400s with a precise message."""
    request: dict[str, Any] = {
        "model": MODEL,
        "input": "text",
        "questions": [PREDICATE],
    }
    extra = {key: fields.pop(key) for key in list(fields) if key not in request}
    with pytest.raises(openai.BadRequestError) as err:
        await client.decisions.create(**{**request, **fields}, extra_body=extra)
    assert message in err.value.body["message"]


async def test_switched_off(sim: OpenAISimulator, client: openai.AsyncOpenAI) -> None:
    """Servers without the endpoint answer 404."""
    sim.settings.decisions = False
    with pytest.raises(openai.NotFoundError):
        await client.decisions.create(model=MODEL, input="x", questions=[PREDICATE])  # type: ignore[list-item]


async def test_enqueued_answers(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Scripted answers, refusals or malformed ones, reach the client as sent."""
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    }
    sim.enqueue(
        "/decisions",
        json={
            "model": MODEL,
            "answers": [{"type": "refusal", "name": None}],
            "usage": usage,
        },
    )
    sim.enqueue("/decisions", json={"answers": [{"type": "predicate"}]})

    refused = await client.decisions.create(
        model=MODEL, input="x", questions=[PREDICATE]
    )  # type: ignore[list-item]
    malformed = await client.decisions.create(
        model=MODEL, input="x", questions=[PREDICATE]
    )  # type: ignore[list-item]

    assert isinstance(refused.answers[0], AnswerAnswerResourceRefusal)
    # The client does not validate: the missing fields read as None.
    assert isinstance(malformed.answers[0], AnswerAnswerResourcePredicate)
    assert malformed.answers[0].probability is None
    assert malformed.usage is None
