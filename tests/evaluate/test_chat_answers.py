"""The chat wire of an evaluation: label requests and reading their answers."""

from __future__ import annotations

import math
from typing import Any

import pytest

from custom_components.openai_compatible.errors import ModelError
from custom_components.openai_compatible.evaluate.chat_answers import (
    first_choice,
    held_label_masses,
    held_to_labels,
    label_masses,
    logprobs_body,
    stated_answer,
    stated_schema,
    stated_weights,
    top_logprobs,
)
from custom_components.openai_compatible.evaluate.questions import Question
from custom_components.openai_compatible.models.reports import ServerKind

DOOR = Question("door", "noul", "Open?", (("yes", ""), ("no", "")))


def _stated(content: Any, **message: Any) -> dict[str, Any]:
    """Return a choice whose message says the content."""
    return {"message": {"content": content, **message}}


def _token(token: str, logprob: float, *alternatives: tuple[str, float]) -> Any:
    """Return one token's log-probabilities with its alternatives."""
    return {
        "token": token,
        "logprob": logprob,
        "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alternatives],
    }


def test_logprobs_body_asks_for_one_token_and_its_alternatives() -> None:
    """One token at temperature 1, with its top alternatives and the cache key."""
    body = logprobs_body("m", [], "key")
    assert body["max_tokens"] == 1
    assert body["temperature"] == 1.0
    assert body["logprobs"] is True
    assert body["prompt_cache_key"] == "key"
    assert "prompt_cache_key" not in logprobs_body("m", [], None)


def test_labels_fold_case_space_and_punctuation() -> None:
    """' Yes', 'YES' and 'yes.' all add up to the label Yes."""
    top = {" Yes": math.log(0.5), "YES": math.log(0.2), "no.": math.log(0.1)}
    masses = label_masses(top, ["Yes", "No"])
    assert masses == pytest.approx({"Yes": 0.7, "No": 0.1})


def test_top_logprobs_in_openai_and_llama_cpp_form() -> None:
    """OpenAI's logprobs, or llama.cpp's probabilities after sampling."""
    openai = {"logprobs": {"content": [_token("Yes", -0.1, ("No", -2.5))]}}
    assert top_logprobs(openai) == {"No": -2.5, "Yes": -0.1}
    llama = {
        "logprobs": {
            "content": [{"token": "No", "prob": 1.0, "top_probs": [{"token": "No"}]}]
        }
    }
    assert top_logprobs(llama) == {"No": 0.0}
    assert top_logprobs({"logprobs": None}) is None
    assert top_logprobs({"logprobs": {"content": [{"token": "Yes"}]}}) is None


def test_numbers_no_float_holds_are_no_numbers() -> None:
    """A log-probability or a stated weight of 400 digits is none, not a crash."""
    huge = 10**400
    content = [_token("Yes", huge, ("No", -huge), ("Maybe", -0.5))]
    assert top_logprobs({"logprobs": {"content": content}}) == {"Maybe": -0.5}
    assert stated_weights(_stated(f'{{"yes": {huge}, "no": 1}}'), DOOR) is None


def test_held_answer_reads_the_first_token_with_a_label() -> None:
    """After the JSON string's opening quote, the label's token is read."""
    content = [_token('"', 0.0, ('"', 0.0)), _token("No", -0.2, ("Yes", -1.7))]
    masses = held_label_masses({"logprobs": {"content": content}}, ["Yes", "No"])
    assert masses == pytest.approx({"Yes": math.exp(-1.7), "No": math.exp(-0.2)})
    assert held_label_masses({}, ["Yes", "No"]) is None


def test_held_to_labels_holds_the_answer_by_a_schema() -> None:
    """The labels become an enum; llama.cpp is asked for odds after its grammar."""
    held = held_to_labels({"model": "m", "max_tokens": 1}, ["Yes", "No"])
    assert held["response_format"]["json_schema"]["schema"]["enum"] == ["Yes", "No"]
    assert held["max_tokens"] > 1
    assert "post_sampling_probs" not in held
    llama = held_to_labels({}, ["Yes"], ServerKind.LLAMA_CPP)
    assert llama["post_sampling_probs"] is True


def test_stated_answer_is_checked() -> None:
    """A JSON object with exactly the options, each a probability."""
    assert stated_answer(_stated('{"yes": 0.8, "no": 0.2}'), DOOR) == {
        "yes": 0.8,
        "no": 0.2,
    }
    cases = [
        (_stated('{"yes": 0.8}'), "evaluate_wrong_options"),
        (_stated("[0.8, 0.2]"), "evaluate_failed"),
        (_stated('{"yes": 2, "no": 0}'), "evaluate_probability_out_of_range"),
        (_stated(None, refusal="No."), "evaluate_refused"),
        (_stated(" "), "no_answer"),
    ]
    for choice, key in cases:
        with pytest.raises(ModelError) as caught:
            stated_answer(choice, DOOR)
        assert caught.value.translation_key == key


def test_stated_weights_scale_what_stays_out_of_range() -> None:
    """Numbers are weights, a negative one none; no numbers, no weights."""
    assert stated_weights(_stated('{"yes": 3, "no": -1}'), DOOR) == [1.0, 0.0]
    assert stated_weights(_stated('{"yes": "a", "no": 1}'), DOOR) is None
    assert stated_weights(_stated('{"yes": 0, "no": 0}'), DOOR) is None
    assert stated_weights(_stated("nothing"), DOOR) is None


def test_stated_schema_requires_every_option() -> None:
    """Each option a number from 0 to 1, no others."""
    schema = stated_schema(DOOR)
    assert schema["required"] == ["yes", "no"]
    assert schema["properties"]["yes"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert schema["additionalProperties"] is False


def test_first_choice_of_a_completion() -> None:
    """A completion without a choice has no answer."""
    assert first_choice({"choices": [{"index": 0}]}) == {"index": 0}
    with pytest.raises(ModelError):
        first_choice({"choices": []})
