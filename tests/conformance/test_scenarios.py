"""How the lane judges what Home Assistant answered."""

from __future__ import annotations

from conformance.recorder import Exchange
from conformance.scenarios import (
    Outcome,
    check_evaluation,
    check_image,
    check_speech,
    check_structure,
    check_text,
    fallbacks,
    judge,
    judge_error,
    tool_rounds,
    translated_key,
)


def _exchange(status: int, *features: str) -> Exchange:
    return Exchange(
        "scenario:x",
        "POST",
        "/v1/chat/completions",
        ["chat", *features],
        None,
        status,
        {},
        0.1,
    )


def test_translated_key_finds_the_template() -> None:
    """A message is traced back to its key and placeholders."""
    assert translated_key(
        "The model cannot call tools: no. Choose a model that "
        "supports tool calling, or set the agent's Control Home "
        "Assistant option to none."
    ) == ("tools_unsupported", {"message": "no"})
    # As a conversation's error speech, without its closing period.
    assert translated_key(
        "The model cannot call tools: no. Choose a model that "
        "supports tool calling, or set the agent's Control Home "
        "Assistant option to none"
    ) == ("tools_unsupported", {"message": "no"})
    assert translated_key("Something else entirely") is None


def test_judge_error_tells_clear_from_raw() -> None:
    """Our specific errors are clear; passed-on server words and dumps are not."""
    clear = judge_error(
        {
            "message": "Cannot connect to the model server.",
            "translation_domain": "openai_compatible",
            "translation_key": "cannot_connect",
        }
    )
    assert clear.verdict == "clear"
    assert clear.shown == "clear error (Cannot connect to the model server.)"
    generic = judge_error({"message": "The model server answered with an error: boom"})
    assert generic.verdict == "fail"
    assert "api_error" in generic.text
    dump = judge_error(
        {
            "message": "x",
            "translation_domain": "openai_compatible",
            "translation_key": "structured_output_invalid",
            "translation_placeholders": {
                "problem": "1 validation error: {'type': 'literal_error'}"
            },
        }
    )
    assert dump.verdict == "fail"
    assert "raw server dump" in dump.text
    foreign = judge_error({"message": "Service not found"})
    assert foreign.verdict == "fail"
    assert foreign.shown.startswith("✗ untranslated error")


def test_fallbacks_describe_refusals_then_the_answer() -> None:
    """Refused ways of asking are listed with their status, then what answered."""
    assert fallbacks([_exchange(200, "json_schema")]) is None
    assert (
        fallbacks(
            [
                _exchange(500, "json_schema", "json_schema_strict"),
                _exchange(500, "json_schema"),
                _exchange(200, "json_object"),
            ]
        )
        == "json_object after json_schema_strict → 500, json_schema → 500"
    )
    assert fallbacks([_exchange(404)]) == "nothing after plain chat → 404"


def test_judge_results() -> None:
    """A correct result is ✓, or a fallback when something was refused."""
    text = Outcome(result={"data": "hello"})
    assert judge(text, check_text, []).shown == "✓"
    via = judge(text, check_text, [_exchange(400, "logprobs"), _exchange(200)])
    assert via.shown == "✓ via fallback (plain chat after logprobs → 400)"
    wrong = judge(Outcome(result={"data": ""}), check_text, [])
    assert wrong.verdict == "fail"
    error = judge(
        Outcome(error={"message": "Cannot connect to the model server."}),
        check_text,
        [],
    )
    assert error.verdict == "clear"


def test_checks() -> None:
    """Each check accepts a correct result and names what is wrong otherwise."""
    assert (
        check_speech(
            {
                "response": {
                    "response_type": "action_done",
                    "speech": {"plain": {"speech": "Done"}},
                }
            }
        )
        is None
    )
    assert check_speech({"response": {"response_type": "action_done", "speech": {}}})
    spoken_call = '{"name": "intent__HassTurnOn", "arguments": {"name": "Kitchen"}'
    assert (
        check_speech(
            {
                "response": {
                    "response_type": "action_done",
                    "speech": {"plain": {"speech": spoken_call}},
                }
            }
        )
        == f"spoke JSON or markup: {spoken_call}"
    )
    assert check_speech({"response": {"response_type": "error", "speech": {}}}) is None
    assert check_structure({"data": {"name": "Ann", "pet": "cat", "age": 3}}) is None
    assert check_structure({"data": "Ann"}) == "not an object: 'Ann'"
    assert check_structure({"data": {"name": 1, "pet": "cat"}})
    assert check_structure({"data": {"name": "A", "pet": "cow"}})
    assert check_structure({"data": {"name": "A", "pet": "cat", "x": 1}})
    assert check_structure({"data": {"name": "A", "pet": "cat", "age": True}})
    assert check_image({"mime_type": "image/png", "url": "/api/x"}) is None
    assert check_image({"mime_type": "text/plain"})
    good = {
        "answers": {
            "left_on": {"type": "noul", "noul": 0.7},
            "action": {
                "type": "choice",
                "choice": "off",
                "probabilities": {"keep": 0.4, "off": 0.6},
            },
            "urgency": {
                "type": "score",
                "score": 1.2,
                "probabilities": [0.2, 0.4, 0.4],
            },
        }
    }
    assert check_evaluation(good) is None
    assert check_evaluation({"answers": {}})
    bad_sum = {
        **good,
        "answers": {
            **good["answers"],
            "urgency": {"type": "score", "score": 1, "probabilities": [0.5, 0.5, 0.5]},
        },
    }
    assert check_evaluation(bad_sum) == "score: probabilities add up to 1.5"
    bad_choice = {
        **good,
        "answers": {
            **good["answers"],
            "action": {
                "type": "choice",
                "choice": "off",
                "probabilities": {"keep": "a", "off": 0.6},
            },
        },
    }
    assert "choice" in check_evaluation(bad_choice)


def test_tool_rounds_count_the_requests_that_carry_results() -> None:
    """An Assist cell says whether the model called a tool."""
    nothing = {"response": {"data": {"success": []}}}
    light = {"name": "Kitchen light", "type": "entity", "id": "light.kitchen_light"}
    done = {"response": {"data": {"success": [light]}}}
    assert tool_rounds([_exchange(200)], nothing) == "no tool called"
    assert tool_rounds([_exchange(200)], done) == "one round: Kitchen light"
    assert tool_rounds(
        [_exchange(200), _exchange(200, "tool_result_message")], done
    ) == ("1 tool rounds")
