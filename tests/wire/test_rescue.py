"""A small model's turn, over HTTP: repeats, failed words and one-round answers."""

from __future__ import annotations

import json
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import intent, llm
from homeassistant.setup import async_setup_component
import pytest

from custom_components.openai_compatible.const import CONF_ONE_ROUND
from custom_components.openai_compatible.wire.rescue import async_done_sentence
from simulator import OpenAISimulator, chunk, sse_text, sse_tool_calls

from ..conftest import AGENT, SetupEntry, converse, speech, stored_chat_log
from .conftest import real_answer, real_stream

pytestmark = pytest.mark.usefixtures("small_home")

ASSIST = {CONF_LLM_HASS_API: [llm.LLM_API_ASSIST], CONF_ONE_ROUND: False}
CLOSE_GARAGE = ("call_1", "intent__HassTurnOff", {"name": "Garage Door"})
# A call of a device the small home does not have.
TURN_ON_FAN = ("call_1", "intent__HassTurnOn", {"name": "Attic Fan"})
# What Home Assistant's intent answers when the door was closed, as the issue
# saw a model repeat it.
DONE_JSON = (
    '{"speech": {}, "response_type": "action_done", "data": {"targets": [], '
    '"success": [{"name": "Garage Door", "type": "entity", '
    '"id": "cover.garage_door"}], "failed": []}}'
)

FAILED_JSON = (
    '{"speech":{},"response_type":"action_done","data":{"success":[{"name":'
    '"Bedroom","type":"area","id":"bedroom"}],"failed":[{"name":"Bedroom light",'
    '"type":"entity","id":"light.bedroom_light"}]}}'
)


def whole_text(text: str) -> dict[str, Any]:
    """Return an unstreamed answer that says the text."""
    return whole({"role": "assistant", "content": text}, "stop")


def whole_call(call: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """Return an unstreamed answer that makes one call."""
    call_id, name, arguments = call
    function = {"name": name, "arguments": json.dumps(arguments)}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }
    return whole(message, "tool_calls")


def whole(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    """Return an unstreamed answer with the message."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "qwen",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }


def answer_with(simulator: OpenAISimulator, *answers: list[Any]) -> None:
    """Queue the streamed answers of the next rounds."""
    for answer in answers:
        simulator.enqueue("/chat/completions", sse=answer)


def turn_on_calls(*names: str) -> list[list[dict[str, Any]]]:
    """Return rounds that each turn on one of the named devices."""
    return [
        sse_tool_calls([(f"call_{number}", "intent__HassTurnOn", {"name": name})])
        for number, name in enumerate(names)
    ]


def spoken_contents(hass: HomeAssistant, conversation_id: str) -> list[str | None]:
    """Return the words of each answer of the model in the conversation."""
    return [
        content.content
        for content in stored_chat_log(hass, conversation_id).content
        if isinstance(content, conversation.AssistantContent)
    ]


async def test_a_repeated_call_is_not_run_again(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Qwen2.5-Coder 0.5B on llama-cpp-python calls the door again once it closed.

    The second call is not run; the turn ends with Home Assistant's sentence.
    """
    await setup_entry(conversation={**ASSIST, "streaming": False})
    simulator.enqueue("/chat/completions", json=whole_call(CLOSE_GARAGE))
    simulator.enqueue(
        "/chat/completions",
        json=real_answer(
            "llama_cpp_python/qwen2.5-coder-0.5b/close the garage door"
            "/after HassTurnOff was done"
        ),
    )
    calls: list[Any] = []
    hass.bus.async_listen("call_service", calls.append)

    result = await converse(hass, "Close the garage door")

    assert speech(result) == "Closing"
    assert hass.states.get("cover.garage_door").state == "closed"
    assert len(simulator.chat_requests()) == 2
    assert [call.data["service"] for call in calls] == ["close_cover"]


async def test_a_repeated_call_that_failed_ends_the_turn(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A call that failed and is made again ends the turn with a clear error."""
    await setup_entry(conversation=ASSIST)
    answer_with(simulator, *turn_on_calls("Attic Fan", "Attic Fan", "Attic Fan"))

    result = await converse(hass, "Turn on the attic fan")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert "the same thing again" in speech(result)
    assert len(simulator.chat_requests()) == 2
    simulator.clear_queue()


@pytest.mark.parametrize(
    "answer",
    [
        # Qwen2.5-Coder 0.5B, after a call that failed on the light it named.
        [chunk({"content": FAILED_JSON[:20]}), chunk({"content": FAILED_JSON[20:]})],
        sse_text("<b>Done</b>"),
    ],
)
async def test_data_after_a_failed_call_is_never_spoken(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    answer: list[dict[str, Any]],
) -> None:
    """No sentence can stand for the data: the turn says so instead."""
    await setup_entry(conversation=ASSIST)
    answer_with(simulator, sse_tool_calls([TURN_ON_FAN]), answer)

    result = await converse(hass, "Turn on the attic fan")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert speech(result).startswith("The model answered with data instead of words")


@pytest.mark.parametrize(
    "answer",
    [
        [chunk({"content": DONE_JSON[:20]}), chunk({"content": DONE_JSON[20:]})],
        sse_text("```json\n" + DONE_JSON + "\n```"),
        [chunk({}, finish_reason="stop")],
        [
            chunk({"content": "The door "}),
            chunk({"content": "is "}),
            chunk({}, finish_reason="length"),
        ],
        sse_text("<tool_call>\n{"),
        [
            chunk({"content": '<tool_call>{"name": "HassTu'}),
            chunk({}, finish_reason="length"),
        ],
    ],
    ids=["json", "fenced", "nothing", "cut", "markup", "cut call"],
)
async def test_failed_words_after_a_done_call_give_way(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    answer: list[Any],
) -> None:
    """JSON, markup, nothing or words cut at the limit: Home Assistant's sentence.

    None of it reaches the chat log, so a voice satellite never speaks it.
    """
    await setup_entry(conversation=ASSIST)
    answer_with(simulator, sse_tool_calls([CLOSE_GARAGE]), answer)

    result = await converse(hass, "Close the garage door")

    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert speech(result) == "Closing"
    said = spoken_contents(hass, result.conversation_id)
    assert said[-1] == "Closing"
    assert said.count("Closing") == 1
    assert "{" not in str(said)


async def test_good_words_after_a_done_call_stand(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A sentence of the model, or its question, is its answer."""
    await setup_entry(conversation=ASSIST)
    answer_with(
        simulator,
        sse_tool_calls([CLOSE_GARAGE]),
        sse_text("The door is closing. Lights too?"),
    )

    result = await converse(hass, "Close the garage door")

    assert speech(result) == "The door is closing. Lights too?"
    assert result.continue_conversation


async def test_the_third_round_is_the_last_once_something_was_done(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A model that keeps calling after a done call stops after three rounds."""
    await setup_entry(conversation=ASSIST)
    names = ("Kitchen Lights", "Reading Lamp", "Garage Door")
    answer_with(simulator, *turn_on_calls(*names), sse_text("never asked"))

    result = await converse(hass, "Turn everything on")

    assert len(simulator.chat_requests()) == 3
    assert speech(result) == "Opening"
    assert hass.states.get("cover.garage_door").state == "open"
    simulator.clear_queue()


# Two rounds that each turn on a light the home does not have.
TWO_FAILED_CALLS = ("Attic Light", "Cellar Light")


async def test_a_small_models_third_round_answers_in_words(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """With one-round answers, the third request asks for words, not calls."""
    await setup_entry(conversation={**ASSIST, CONF_ONE_ROUND: True})
    answer_with(
        simulator,
        *turn_on_calls(*TWO_FAILED_CALLS),
        sse_text("There is no such light."),
    )

    result = await converse(hass, "Turn on the attic light")

    requests = simulator.chat_requests()
    assert [body["tool_choice"] for body in requests] == ["auto", "auto", "none"]
    assert requests[2]["tools"] == requests[0]["tools"]
    assert speech(result) == "There is no such light."


async def test_a_call_in_the_last_round_is_not_run(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A server that still calls in the last round: the call is not run."""
    await setup_entry(conversation={**ASSIST, CONF_ONE_ROUND: True})
    answer_with(
        simulator, *turn_on_calls(*TWO_FAILED_CALLS), sse_tool_calls([CLOSE_GARAGE])
    )

    result = await converse(hass, "Turn on the attic light")

    assert len(simulator.chat_requests()) == 3
    assert hass.states.get("cover.garage_door").state == "open"
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert speech(result).startswith("The model kept calling tools for 3 rounds")


async def test_arguments_are_cleaned_before_the_call(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Placeholders and code-style names, as small models write them, still work."""
    await setup_entry(conversation=ASSIST)
    written = {"name": "garageDoor", "floor": "unknown", "domain": [""]}
    answer_with(
        simulator,
        sse_tool_calls([("call_1", "intent__HassTurnOff", written)]),
        sse_text("Closed."),
    )

    result = await converse(hass, "Close the garage door")

    assert speech(result) == "Closed."
    assert hass.states.get("cover.garage_door").state == "closed"
    call = simulator.chat_requests()[1]["messages"][-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"name": "Garage Door"}


async def test_one_round_answers_a_done_intent(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """One successful intent call is answered with Home Assistant's own sentence.

    The next turn's request carries the call, its result and that sentence.
    """
    await setup_entry(conversation={**ASSIST, CONF_ONE_ROUND: True})
    answer_with(simulator, sse_tool_calls([CLOSE_GARAGE]), sse_text("You are welcome."))

    result = await converse(hass, "Close the garage door")
    await converse(hass, "Thanks", result.conversation_id)

    assert speech(result) == "Closing"
    assert hass.states.get("cover.garage_door").state == "closed"
    second = simulator.chat_requests()[1]["messages"]
    roles = [message["role"] for message in second[-4:]]
    assert roles == ["assistant", "tool", "assistant", "user"]
    assert second[-2]["content"] == "Closing"


async def test_one_round_speaks_the_users_language(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The sentence is Home Assistant's in the language the user spoke."""
    await setup_entry(conversation={**ASSIST, CONF_ONE_ROUND: True})
    answer_with(simulator, *turn_on_calls("Kitchen Lights"))

    result = await conversation.async_converse(
        hass, "Schalte das Küchenlicht ein", None, Context(), "de", agent_id=AGENT
    )

    assert speech(result) == "Licht eingeschaltet"


@pytest.mark.parametrize(
    "calls",
    [
        # A question's answer goes back to the model.
        [("call_1", "homeassistant__GetLiveContext", {})],
        # So does a failure.
        [TURN_ON_FAN],
        # And several calls.
        [CLOSE_GARAGE, ("call_2", "intent__HassTurnOn", {"name": "Reading Lamp"})],
    ],
    ids=["question", "failure", "several"],
)
async def test_one_round_leaves_the_rest_to_the_model(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    calls: list[tuple[str, str, dict[str, Any]]],
) -> None:
    """Anything but one intent call that did what was asked: a second round."""
    await setup_entry(conversation={**ASSIST, CONF_ONE_ROUND: True})
    answer_with(simulator, sse_tool_calls(calls), sse_text("Here you are."))

    result = await converse(hass, "Do it")

    assert speech(result) == "Here you are."
    assert len(simulator.chat_requests()) == 2


@pytest.mark.parametrize(("provider", "rounds"), [("llama_cpp", 1), ("custom", 2)])
async def test_one_round_is_on_by_default_for_local_servers(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    rounds: int,
) -> None:
    """A local preset answers a done intent at once; others ask the model."""
    await setup_entry(
        provider=provider, conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]}
    )
    answer_with(simulator, sse_tool_calls([CLOSE_GARAGE]), sse_text("Closed it."))

    result = await converse(hass, "Close the garage door")

    assert len(simulator.chat_requests()) == rounds
    assert speech(result) == ("Closing" if rounds == 1 else "Closed it.")
    simulator.clear_queue()


# Qwen2.5-Coder 1.5B on llama-server, asked to lock the back door.
DESCRIBED = (
    "To close the garage door, you can use the intent__HassTurnOff function "
    'with the name "Garage Door".'
)


async def test_a_described_call_is_asked_for_again(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Words that describe a call are never spoken: the model is told to call."""
    await setup_entry(conversation={**ASSIST, CONF_ONE_ROUND: True})
    answer_with(simulator, sse_text(DESCRIBED, split=3), sse_tool_calls([CLOSE_GARAGE]))

    result = await converse(hass, "Close the garage door")

    assert speech(result) == "Closing"
    assert hass.states.get("cover.garage_door").state == "closed"
    first, second = simulator.chat_requests()
    assert first["messages"][-1] == {"role": "user", "content": "Close the garage door"}
    assert second["messages"][-1]["content"].startswith("Close the garage door\n\n(")
    assert "call the tool" in second["messages"][-1]["content"]
    assert DESCRIBED not in spoken_contents(hass, result.conversation_id)


@pytest.mark.parametrize(
    "described",
    [
        DESCRIBED,
        # Qwen2.5-Coder 1.5B on llama-server, asked the temperature.
        "To find the temperature, you can use the `GetLiveContext` function.",
    ],
)
async def test_a_call_described_twice_is_an_error(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    described: str,
) -> None:
    """The model is asked once; described again, the turn says what happened."""
    await setup_entry(conversation=ASSIST)
    answer_with(simulator, sse_text(described), sse_text(described))

    result = await converse(hass, "Close the garage door")

    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert speech(result).startswith("The model described a tool call")
    assert len(simulator.chat_requests()) == 2


async def test_words_naming_the_call_they_come_with_are_not_spoken(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A call made with words about it: the call runs, the words go."""
    await setup_entry(conversation=ASSIST)
    words = chunk({"role": "assistant", "content": "Calling intent__HassTurnOff"})
    answer_with(
        simulator,
        [words, *sse_tool_calls([CLOSE_GARAGE])],
        sse_text("The door is closed."),
    )

    result = await converse(hass, "Close the garage door")

    assert speech(result) == "The door is closed."
    assert hass.states.get("cover.garage_door").state == "closed"
    assert spoken_contents(hass, result.conversation_id) == [
        None,
        "The door is closed.",
    ]


async def test_words_after_a_call_may_name_it(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """After a call's result, naming the tool is no call described: it is said."""
    await setup_entry(conversation=ASSIST)
    said = "Sorry, intent__HassTurnOn failed: no attic fan."
    answer_with(simulator, sse_tool_calls([TURN_ON_FAN]), sse_text(said))

    result = await converse(hass, "Turn on the attic fan")

    assert speech(result) == said
    assert len(simulator.chat_requests()) == 2


@pytest.mark.parametrize(
    "answer",
    ["The kitchen lights are on. Anything else?", "Yes", "The lights are on " * 12],
)
async def test_words_that_name_no_tool_are_spoken(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    answer: str,
) -> None:
    """Held only while they may name a tool: to the first sentence's end."""
    await setup_entry(conversation=ASSIST)
    answer_with(simulator, sse_text(answer, split=2))

    result = await converse(hass, "Are the kitchen lights on?")

    assert speech(result) == answer
    assert len(simulator.chat_requests()) == 1


async def test_a_named_tool_without_arguments_runs(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """llama-cpp-python's function calling lets Qwen2.5-Coder 0.5B name a tool only.

    `functions.Name:` is that tool called, without arguments.
    """
    await setup_entry(conversation={**ASSIST, "streaming": False})
    simulator.enqueue(
        "/chat/completions",
        json=real_answer("llama_cpp_python/qwen2.5-coder-0.5b/close the garage door"),
    )
    simulator.enqueue("/chat/completions", json=whole_text("The door is open."))

    result = await converse(hass, "Close the garage door")

    assert speech(result) == "The door is open."
    call = simulator.chat_requests()[1]["messages"][-2]["tool_calls"][0]
    assert call["function"]["name"] == "homeassistant__GetLiveContext"


# Qwen2.5-Coder 0.5B on llama-server --jinja, as it answered.
LLAMA_SERVER = "llama_server/qwen2.5-coder-0.5b/"
LIGHT_TURNED_ON = ("light.kitchen_lights", "on", "Turned on the light")


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_model_echoing_the_result_and_calling_again_is_cut_short(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    streaming: bool,
) -> None:
    """After the door closed, the model wrote the result and the call, over and over.

    Cut at the answer's limit, none of it is said: Home Assistant's sentence is.
    """
    await setup_entry(conversation={**ASSIST, "streaming": streaming})
    after = LLAMA_SERVER + "close the garage door/after HassTurnOff was done"
    if streaming:
        answer_with(simulator, sse_tool_calls([CLOSE_GARAGE]), real_stream(after))
    else:
        simulator.enqueue("/chat/completions", json=whole_call(CLOSE_GARAGE))
        simulator.enqueue("/chat/completions", json=real_answer(after))

    result = await converse(hass, "Close the garage door")

    assert speech(result) == "Closing"
    assert "{" not in str(spoken_contents(hass, result.conversation_id))
    assert len(simulator.chat_requests()) == 2


@pytest.mark.parametrize(
    ("key", "entity_id", "state", "sentence"),
    [
        ("0.5b/close the garage door", "cover.garage_door", "closed", "Closing"),
        ("0.5b/turn on the kitchen lights", *LIGHT_TURNED_ON),
        # Words first, then the call fenced, with an area the home lacks.
        ("1.5b/turn on the kitchen lights", *LIGHT_TURNED_ON),
    ],
)
async def test_a_call_written_with_odd_arguments_works_in_one_round(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    key: str,
    entity_id: str,
    state: str,
    sentence: str,
) -> None:
    """Qwen2.5-Coder wrote its call as JSON, with made-up places or part names.

    Read, cleaned and run, it is answered at once with Home Assistant's sentence.
    """
    hass.states.async_set("media_player.kitchen", "off", {"friendly_name": "Kitchen"})
    async_expose_entity(hass, conversation.DOMAIN, "media_player.kitchen", True)
    await setup_entry(conversation={**ASSIST, CONF_ONE_ROUND: True})
    answer_with(simulator, real_stream(f"llama_server/qwen2.5-coder-{key}"))

    result = await converse(hass, key.partition("/")[2])

    assert hass.states.get(entity_id).state == state
    assert speech(result) == sentence
    assert len(simulator.chat_requests()) == 1


def done_result(intent_type: str, language: str = "en") -> llm.ToolResult:
    """Return the result of an intent that acted on the garage door."""
    asked = intent.Intent(
        None,  # type: ignore[arg-type]
        "test",
        intent_type,
        {"name": {"value": "Garage Door"}},
        None,
        Context(),
        language,
    )
    response = asked.create_response()
    response.async_set_results(
        [
            intent.IntentResponseTarget(
                name="Garage Door",
                type=intent.IntentResponseTargetType.ENTITY,
                id="cover.garage_door",
            )
        ]
    )
    return llm.ToolResult(llm.IntentResponseDict(response))


# A done intent's data.
DONE = {
    "response_type": "action_done",
    "data": {"success": [{"id": "cover.garage_door"}], "failed": []},
}


@pytest.mark.parametrize(
    ("result", "sentence"),
    [
        # Its own speech, where it has one.
        (
            llm.ToolResult(
                {"speech": {"plain": {"speech": "Opened it for you."}}, **DONE}
            ),
            "Opened it for you.",
        ),
        # An intent the default agent has no sentence for: its translated Done.
        (done_result("HassOpenSesame"), "Done"),
        (done_result("HassOpenSesame", "de"), "Fertig"),
        # A done intent's data without the intent itself: nothing to say.
        (llm.ToolResult(DONE), None),
        # A failure, in part or whole, or another tool's result.
        (
            llm.ToolResult(
                {
                    "response_type": "action_done",
                    "data": {"success": [{"id": "a"}], "failed": [{"id": "b"}]},
                }
            ),
            None,
        ),
        (llm.ToolResult({"error": "MatchFailedError"}, error=True), None),
        (llm.ToolResult({"success": True, "result": "3 lights"}), None),
    ],
)
async def test_what_home_assistant_says_of_a_result(
    hass: HomeAssistant, result: llm.ToolResult, sentence: str | None
) -> None:
    """Its own speech, else its sentence for the intent, else Done; or nothing."""
    assert await async_setup_component(hass, "conversation", {})

    assert await async_done_sentence(hass, result) == sentence
