"""Questions of an evaluation: their options, labels, answers and checks."""

from __future__ import annotations

from homeassistant.components import ai_task
import pytest

from custom_components.openai_compatible.errors import ModelError
from custom_components.openai_compatible.evaluate.chat import (
    _alternatives,
    stated_weights,
)
from custom_components.openai_compatible.evaluate.questions import (
    Question,
    normalised,
    probability,
)

DOOR = Question.from_task(
    "door", ai_task.NoulQuestion(type="noul", instructions="Is the door open?")
)
VEHICLE = Question.from_task(
    "vehicle",
    ai_task.ChoiceQuestion(
        type="choice",
        instructions="What is parked?",
        criteria={"car": "A car", "bike": "A bike"},
    ),
)
FILL = Question.from_task(
    "fill",
    ai_task.ScoreQuestion(
        type="score", instructions="How full?", criteria=["empty", "half", "full"]
    ),
)


def test_labels_are_one_token_each() -> None:
    """Yes/No, a letter per alternative, a digit per level."""
    assert DOOR.labels() == ["Yes", "No"]
    assert VEHICLE.labels() == ["A", "B"]
    assert FILL.labels() == ["0", "1", "2"]


def test_too_many_options_have_no_labels() -> None:
    """Past 26 alternatives or 10 levels no one-token label is left."""
    many = Question("many", "choice", "?", tuple((f"o{i}", "") for i in range(27)))
    levels = Question("levels", "score", "?", tuple((str(i), "") for i in range(11)))
    assert many.labels() is None
    assert levels.labels() is None


def test_answers_in_home_assistants_form() -> None:
    """A noul's probability of yes, the likeliest choice, a score's mean level."""
    assert DOOR.answer([0.75, 0.25]) == ai_task.NoulAnswer(noul=0.75)
    choice = VEHICLE.answer([0.2, 0.8])
    assert choice == ai_task.ChoiceAnswer(
        choice="bike", probabilities={"car": 0.2, "bike": 0.8}
    )
    score = FILL.answer([0.0, 0.5, 0.5])
    assert score == ai_task.ScoreAnswer(score=1.5, probabilities=[0.0, 0.5, 0.5])


@pytest.mark.parametrize("value", [True, "0.5", -0.1, 1.5, None])
def test_probability_refuses_what_is_no_probability(value: object) -> None:
    """Only a number from 0 to 1 is a probability."""
    with pytest.raises(ModelError) as caught:
        probability(value, DOOR)
    assert caught.value.translation_key == "evaluate_probability_out_of_range"


def test_normalised_within_tolerance_only() -> None:
    """A distribution near 1 is scaled to 1; one far from it is refused."""
    assert normalised(DOOR, [0.5, 0.52], 0.05) == pytest.approx(
        [0.5 / 1.02, 0.52 / 1.02]
    )
    with pytest.raises(ModelError) as caught:
        normalised(DOOR, [0.5, 0.7], 0.05)
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
    assert stated_weights(stated, DOOR) is None
    with pytest.raises(ModelError):
        probability(huge, DOOR)
