"""The Decisions API's wire: what it is sent and how its answers are checked."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.openai_compatible.errors import ModelError
from custom_components.openai_compatible.evaluate.decisions_api import (
    decisions_body,
    files_fit,
    is_decision,
    question_fits,
    read_decision,
)
from custom_components.openai_compatible.evaluate.questions import Question
from custom_components.openai_compatible.media.attachments import LoadedFile

DOOR = Question("door", "noul", "Open?", (("yes", ""), ("no", "")))
VEHICLE = Question("vehicle", "choice", "Which?", (("car", "A car"), ("bike", "")))
FILL = Question("fill", "score", "How full?", (("0", "empty"), ("1", "full")))


def _file(mime_type: str) -> LoadedFile:
    """Return an attachment of the media type."""
    return LoadedFile("f", mime_type, b"x", f"data:{mime_type};base64,eA==")


def test_what_the_decisions_api_takes() -> None:
    """Images only, at most 128; scores of at most 10 levels."""
    assert files_fit([_file("image/png")] * 128)
    assert not files_fit([_file("image/png")] * 129)
    assert not files_fit([_file("application/pdf")])
    assert question_fits(FILL)
    levels = Question("many", "score", "?", tuple((str(i), "") for i in range(11)))
    assert not question_fits(levels)


def test_body_puts_evidence_and_images_first() -> None:
    """One request: the evidence, each image, then every question in its form."""
    body = decisions_body("m", "Task: x", [_file("image/png")], [DOOR, VEHICLE, FILL])
    content = body["input"][0]["content"]
    assert content[0] == {"type": "input_text", "text": "Task: x"}
    assert content[1]["type"] == "input_image"
    assert content[1]["image_url"].startswith("data:image/png;base64,")
    assert [q["type"] for q in body["questions"]] == ["predicate", "choice", "score"]
    assert body["questions"][1]["choices"][0] == {
        "value": "car",
        "description": "A car",
    }
    assert body["questions"][2]["levels"] == [{"label": "empty"}, {"label": "full"}]


def test_reads_a_decision() -> None:
    """Each answer, named or in order, becomes its question's outcome."""
    answers: list[Any] = [
        {"type": "predicate", "probability": 0.9},
        {
            "name": "vehicle",
            "type": "choice",
            "probabilities": [
                {"value": "bike", "probability": 0.3},
                {"value": "car", "probability": 0.7},
            ],
        },
        {
            "name": "fill",
            "type": "score",
            "probabilities": [
                {"value": 0, "label": "empty", "probability": 0.4},
                {"value": 1, "label": "full", "probability": 0.6},
            ],
        },
    ]
    outcomes = read_decision(answers, [DOOR, VEHICLE, FILL])
    assert outcomes["door"].probabilities == pytest.approx([0.9, 0.1])
    assert outcomes["vehicle"].probabilities == pytest.approx([0.7, 0.3])
    assert outcomes["fill"].probabilities == pytest.approx([0.4, 0.6])
    assert {o.path for o in outcomes.values()} == {"decisions"}


@pytest.mark.parametrize(
    ("answers", "key"),
    [
        (["no object"], "evaluate_failed"),
        ([{"name": "other", "type": "predicate"}], "evaluate_unknown_answer"),
        (
            [{"name": "door", "type": "predicate", "probability": 1}] * 2,
            "evaluate_duplicate_answer",
        ),
        ([], "evaluate_missing_answer"),
        ([{"type": "refusal"}], "evaluate_refused"),
        ([{"type": "choice"}], "evaluate_wrong_answer_type"),
    ],
)
def test_refuses_a_bad_decision(answers: list[Any], key: str) -> None:
    """Anything but one fitting answer per question is the model's error."""
    with pytest.raises(ModelError) as caught:
        read_decision(answers, [DOOR])
    assert caught.value.translation_key == key


@pytest.mark.parametrize(
    "entries",
    [
        None,
        [{"value": "car", "probability": 1.0}],
        [{"value": "car", "probability": 0.5}, {"value": "boat", "probability": 0.5}],
    ],
)
def test_refuses_other_options(entries: Any) -> None:
    """A choice's probabilities must name exactly its options."""
    answer = {"type": "choice", "probabilities": entries}
    with pytest.raises(ModelError) as caught:
        read_decision([answer], [VEHICLE])
    assert caught.value.translation_key == "evaluate_wrong_options"


def test_refuses_levels_not_ours() -> None:
    """A score level is ours only with its number and our label."""
    answer = {
        "type": "score",
        "probabilities": [
            {"value": 0, "label": "empty", "probability": 0.5},
            {"value": 1, "label": "brimming", "probability": 0.5},
        ],
    }
    with pytest.raises(ModelError):
        read_decision([answer], [FILL])


def test_tells_a_decision_from_another_answer() -> None:
    """A catch-all page's JSON is no Decision."""
    assert is_decision({"answers": []})
    assert not is_decision({"ok": True})
    assert not is_decision([])
