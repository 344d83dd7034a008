"""Tool calls written as text: found in every shape, held, and named."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible.errors import ModelError
from custom_components.openai_compatible.wire.tool_calls import offered_name
from custom_components.openai_compatible.wire.written_calls import (
    WrittenCallWatch,
    call_start,
    calls_in_text,
)

from .conftest import real_answer

KITCHEN_CALL = '{"name": "HassTurnOn", "arguments": {"name": "Kitchen"}}'
NAMES = {
    "intent__HassTurnOn": "HassTurnOn",
    "intent__HassTurnOff": "HassTurnOff",
    "light__HassLightSet": "HassLightSet",
    "todo__HassListAddItem": "HassListAddItem",
    "media_player__HassMediaPause": "HassMediaPause",
    "media_player__HassMediaUnpause": "HassMediaUnpause",
    "homeassistant__GetLiveContext": "GetLiveContext",
    "vacuum__HassVacuumStart": "HassVacuumStart",
}


def written(text: str) -> list[tuple[str | None, object]] | None:
    """Return (name, arguments) of the calls written in the text, or None."""
    calls = calls_in_text(text, NAMES)
    return None if calls is None else [(call.name, call.arguments()) for call in calls]


@pytest.mark.parametrize(
    ("start", "verdict"),
    [
        ("", None),
        ("{", None),
        ('{"na', True),
        ("{4", False),
        ("[" * 5000, True),
        ("[" * 5000 + '{"', True),
        ("[[1,2]]", False),
        ("<tool_", None),
        ("<tool_call>{", True),
        ("``", None),
        ("```json", True),
        ("`light", False),
        ("Hello", None),
        ("Hello there", False),
        ("HassTurnOn(", True),
        ("  intent__HassTurnOn (", False),
        ("HassSetLightSet(", True),
        ("print(", False),
        ("functions.intent__HassTurnOn:", True),
        ("Note:", False),
        ("42 degrees", False),
        ("A" * 200, False),
    ],
)
def test_call_start(start: str, verdict: bool | None) -> None:
    """Only starts that can still become a written call are held."""
    assert call_start(start, NAMES) is verdict


@pytest.mark.parametrize(
    "text",
    [
        KITCHEN_CALL,
        f"\n\n[{KITCHEN_CALL}]",
        '{"name": "intent__HassTurnOn", "parameters": "{\\"name\\": \\"Kitchen\\"}"}',
        '{"function": {"name": "HassTurnOn", "arguments": {"name": "Kitchen"}}}',
        f"```json\n{KITCHEN_CALL}\n```",
        f"```json {KITCHEN_CALL}```",
        f"```\n{KITCHEN_CALL}",
        f"<tool_call>\n{KITCHEN_CALL}\n</tool_call>\n",
        f"<tool_call>\n{KITCHEN_CALL}",
        f"Sure! ```json\n{KITCHEN_CALL}\n``` I will turn it on.",
        f"Sure! {KITCHEN_CALL}",
        'HassTurnOn(name="Kitchen")',
        "```python\nintent__HassTurnOn(name='Kitchen')\n```",
        'HassTurnOn({"name": "Kitchen"})',
        'functions.intent__HassTurnOn:\n{"name": "Kitchen"}',
        f'{KITCHEN_CALL} {{"answer": 42}}',
        f'{KITCHEN_CALL}\n{{"speech": {{}}, "response_type": "action_done"}}\n{{"na',
    ],
)
def test_one_call_in_every_shape(text: str) -> None:
    """Objects, lists, fences, tags, code; prefixes, wrappers, string arguments."""
    assert [arguments for _, arguments in written(text) or []] == [{"name": "Kitchen"}]


@pytest.mark.parametrize(
    "text",
    [
        f"{KITCHEN_CALL}\n{KITCHEN_CALL}",
        f"[{KITCHEN_CALL}, {KITCHEN_CALL}]",
        f"<tool_call>{KITCHEN_CALL}</tool_call>\n<tool_call>{KITCHEN_CALL}</tool_call>",
        f"```json\n{KITCHEN_CALL}\n```\nand\n```json\n{KITCHEN_CALL}\n```",
        'HassTurnOn(name="Kitchen")\nHassTurnOn(name="Kitchen")',
    ],
)
def test_several_calls(text: str) -> None:
    """Several calls in a row, however written, are all taken."""
    assert [arguments for _, arguments in written(text) or []] == [
        {"name": "Kitchen"}
    ] * 2


def test_names_are_kept_as_written() -> None:
    """The name is resolved where the call becomes an input, not here."""
    assert written('{"name": "intent__HassListAddItem", "arguments": {}}') == [
        ("intent__HassListAddItem", {})
    ]
    assert written('{"name": "NoSuchTool", "arguments": {"a": 1}}') == [
        ("NoSuchTool", {"a": 1})
    ]
    assert written('{"name": "GetLiveContext"}') == [("GetLiveContext", {})]
    # llama-cpp-python's chatml-function-calling, Qwen2.5-Coder 0.5B
    assert written("functions.homeassistant__GetLiveContext:") == [
        ("homeassistant__GetLiveContext", {})
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "HassTurnOn", "arguments": "the kitchen"}',
        '{"name": "HassTurnOn", "arguments": [1]}',
        '{"name": 5, "arguments": {}}',
        '{"name": "Kitchen light"}',
        '{"answer": 42}',
        '{"speech": {}, "response_type": "action_done"}',
        "[1, 2, 3]",
        "```",
        "```python\nprint(1)\n```",
        "```python\nprint()\n```",
        "```" + " " * 10_000 + "x",
        "<tool_call>" * 10_000,
        "[" * 100_000,
        "{not json at all",
        "I like {braces} and ```code```",
        'HassTurnOn("Kitchen")',
        "HassTurnOn(name=open('x'))",
        "x = HassTurnOn(name='Kitchen')",
        "HassTurnOn(" + "(" * 5000,
        "",
        "The kitchen light is on.",
        "Note: the light is on.",
        "HassTurnOn: done",
    ],
)
def test_text_that_is_no_call(text: str) -> None:
    """Data, code, odd arguments, words alone: no calls."""
    assert written(text) is None


def test_too_many_written_calls() -> None:
    """Written calls obey the same limit."""
    call = '{"name": "HassTurnOn", "arguments": {}}'
    assert len(calls_in_text(f"[{','.join([call] * 32)}]", NAMES) or []) == 32
    with pytest.raises(ModelError) as err:
        calls_in_text(f"[{','.join([call] * 33)}]", NAMES)
    assert err.value.translation_key == "too_many_tool_calls"


@pytest.mark.parametrize(
    ("name", "offered"),
    [
        ("intent__HassTurnOn", "intent__HassTurnOn"),
        ("HassTurnOn", "intent__HassTurnOn"),
        ("hassturnon", "intent__HassTurnOn"),
        ("TurnOn", "intent__HassTurnOn"),
        ("intent__HassListAddItem", "todo__HassListAddItem"),
        ("intent__HassSetLightSet", "light__HassLightSet"),
        # Qwen2.5-Coder 0.5B on llama-server, adding milk to the shopping list
        ("intent__HassAddItem", "todo__HassListAddItem"),
        ("HassTurnOnLight", "intent__HassTurnOn"),
        # Qwen2.5-Coder 1.5B on llama-server, closing the garage door
        ("intent__HassCloseEntity", "intent__HassTurnOff"),
        ("HassUnlockDoor", "intent__HassTurnOff"),
        ("HassOpenCover", "intent__HassTurnOn"),
        ("HassMedia", None),
        ("HassVacumStart", "vacuum__HassVacuumStart"),
        ("HassTurnOnn", "intent__HassTurnOn"),
        ("HassMediaPaus", "media_player__HassMediaPause"),
        ("HassTurnO", None),
        ("HassDance", None),
        ("light", None),
        (5, None),
        ("x" * 500, None),
    ],
)
def test_offered_name(name: object, offered: str | None) -> None:
    """Prefix, case and `Hass` do not matter; a near spelling only alone."""
    assert offered_name(name, NAMES) == offered


def test_a_name_ending_two_offered_tools_is_ambiguous() -> None:
    """A short name that ends two offered names names neither."""
    assert offered_name("light", {"a__light": "light", "b__light": "light"}) is None


def watch(*chunks: str) -> tuple[str, list[tuple[str | None, object]]]:
    """Feed the chunks; return all that was said and the calls found."""
    calls_watch = WrittenCallWatch(NAMES)
    said = "".join(calls_watch.feed(chunk) for chunk in chunks)
    rest, calls = calls_watch.finish()
    return said + rest, [(call.name, call.arguments()) for call in calls]


def test_the_watch_holds_a_call_from_its_start() -> None:
    """A call split over chunks is never said, from the start or later."""
    assert watch("<tool", "_call>", KITCHEN_CALL[:9], KITCHEN_CALL[9:]) == (
        "",
        [("HassTurnOn", {"name": "Kitchen"})],
    )
    said, calls = watch("Sure! ``", "`json\n", KITCHEN_CALL, "\n```", " Done.")
    assert said == "Sure! "
    assert calls == [("HassTurnOn", {"name": "Kitchen"})]


def test_the_watch_lets_words_through() -> None:
    """Words go as they come; a brace is held only until it is no call."""
    calls_watch = WrittenCallWatch(NAMES)
    assert calls_watch.feed("It") == ""  # one word: it may name a tool
    assert calls_watch.feed(" is on {") == "It is on "
    assert calls_watch.feed("as you asked}.") == "{as you asked}."
    assert calls_watch.finish() == ("", [])
    assert watch("The state is ", '{"on": true}') == ('The state is {"on": true}', [])


def test_a_cut_answer_keeps_the_calls_written_whole() -> None:
    """An answer cut while a call is written says only its words, and whole calls."""
    calls_watch = WrittenCallWatch(NAMES)
    assert calls_watch.feed("Sure! <tool_call>{") == "Sure! "
    assert calls_watch.holding
    assert calls_watch.cut() == ("", [])
    calls_watch = WrittenCallWatch(NAMES)
    assert calls_watch.feed("Hello") == ""
    assert not calls_watch.holding
    assert calls_watch.cut() == ("Hello", [])
    calls_watch = WrittenCallWatch(NAMES)
    assert calls_watch.feed(KITCHEN_CALL + "\n{") == ""
    said, (call,) = calls_watch.cut()
    assert (said, call.name) == ("", "HassTurnOn")


# Qwen2.5-Coder on llama-server, as it answered.
SERVER = "llama_server/qwen2.5-coder-"


@pytest.mark.parametrize(
    ("key", "offered"),
    [
        (SERVER + "0.5b/close the garage door", "intent__HassTurnOff"),
        (SERVER + "0.5b/turn on the kitchen lights", "intent__HassTurnOn"),
        (SERVER + "0.5b/add milk to the shopping list", "todo__HassListAddItem"),
        (SERVER + "0.5b/start the vacuum", "vacuum__HassVacuumStart"),
        (
            "llama_cpp_python/qwen2.5-coder-0.5b/start the vacuum",
            "vacuum__HassVacuumStart",
        ),
        # Words, then the call fenced; after it a result it made up.
        (SERVER + "1.5b/close the garage door", "intent__HassTurnOff"),
        (SERVER + "1.5b/turn on the kitchen lights", "intent__HassTurnOn"),
        (SERVER + "1.5b/add milk to the shopping list", "todo__HassListAddItem"),
        (SERVER + "1.5b/turn off the ceiling fan", "homeassistant__GetLiveContext"),
    ],
)
def test_calls_real_models_wrote(key: str, offered: str) -> None:
    """Each call Qwen2.5-Coder 0.5B wrote as text is one call of the tool it meant."""
    text = real_answer(key)["choices"][0]["message"]["content"]

    calls = calls_in_text(text, NAMES) or []

    assert [offered_name(call.name, NAMES) for call in calls] == [offered]


def test_calls_among_an_echoed_result() -> None:
    """The result the model wrote back, and calls between, cut short: the calls."""
    key = SERVER + "0.5b/close the garage door/after HassTurnOff was done"
    text = real_answer(key)["choices"][0]["message"]["content"]

    calls = calls_in_text(text, NAMES) or []

    assert {(call.name, str(call.arguments())) for call in calls} == {
        ("intent__HassTurnOff", "{'name': 'Garage Door'}")
    }


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        # Qwen2.5 Coder 0.5B through LiteLLM, asked to turn on the kitchen light.
        (
            (
                '{"name": "intent__HassTurnOn", "arguments": {"name": "Kitchen light", '
                '"area": "Kitchen"}'
            ),
            [("intent__HassTurnOn", {"name": "Kitchen light", "area": "Kitchen"})],
        ),
        # An escaped quote does not end a string.
        (
            '<tool_call>[{"name": "HassTurnOn", "arguments": {"name": "a\\"}"',
            [("HassTurnOn", {"name": 'a"}'})],
        ),
        ('[{"name": "HassTurnOn", "arguments": {}}', [("HassTurnOn", {})]),
        # A second call begun and not written: the first one runs.
        (
            '<tool_call>{"name": "HassTurnOn", "arguments": {}}</tool_call><tool_call>{',
            [("HassTurnOn", {})],
        ),
        ('{"name": "HassTurnOn", "arguments": {"name": "Kitchen"]}', []),
        ('{"name": "HassTurnOn", "arguments": {"name": "Kitch', []),
    ],
)
def test_a_call_the_model_stopped_before_its_last_brace_is_a_call(
    text: str, calls: list[tuple[str, object]]
) -> None:
    """Brackets left open at the end are closed; a string left open is no call."""
    said, found = watch(text[:20], text[20:])
    assert found == calls
    assert said == ("" if calls else text)
