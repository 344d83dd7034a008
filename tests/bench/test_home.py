"""The home-control benchmark's table and verdicts (bench/home.py), without a model."""

from __future__ import annotations

from collections import Counter
import re

import pytest

from bench.home import (
    ADDED,
    AREAS,
    BY_ID,
    COMMANDS,
    DEVICES,
    LEAST_COMMANDS,
    Command,
    Outcome,
    changes,
    command_line,
    judge,
    select,
    spread,
    start_states,
    targets,
    unspeakable,
)

ACTIONS = [c for c in COMMANDS if c.expect]


def test_a_home_close_to_a_real_one() -> None:
    """At least 8 areas and 60 exposed entities of every kind; 80 commands."""
    assert len(AREAS) >= 8
    assert len(DEVICES) >= 60
    assert len(BY_ID) == len(DEVICES)  # no two devices share an entity id
    assert {d.area for d in DEVICES} - {None} <= set(AREAS)
    assert {d.domain for d in DEVICES} >= {
        "light",
        "switch",
        "cover",
        "lock",
        "fan",
        "climate",
        "media_player",
        "vacuum",
        "valve",
        "todo",
        "sensor",
    }
    classes = {d.device_class for d in DEVICES}
    assert {"garage", "curtain"} <= classes
    assert len(COMMANDS) >= 80
    assert len({c.text for c in COMMANDS}) == len(COMMANDS)


def test_every_command_names_what_the_home_has() -> None:
    """Expected and given states name existing entities and fields they have."""
    for command in COMMANDS:
        for entity_id, fields in {**command.given, **command.expect}.items():
            device = BY_ID[entity_id]
            allowed = {"state", *device.fields} | (
                {ADDED} if "items" in device.fields else set()
            )
            assert set(fields) <= allowed, (command.text, entity_id, fields)


def test_every_action_changes_something() -> None:
    """An agent that does nothing fails every action: each must change a state."""
    for command in ACTIONS:
        start = start_states(command)
        unchanged = all(
            name != ADDED and start[entity_id].get(name) == want
            for entity_id, fields in command.expect.items()
            for name, want in fields.items()
        )
        assert not unchanged, command.text
        assert judge(command, start, start, "Done.").good is False, command.text


def test_groups_have_several_phrasings() -> None:
    """Each kind of device is spoken of several ways; questions hold a value."""
    groups = Counter(c.domain for c in COMMANDS)
    assert min(groups.values()) >= 4, groups
    assert {"question", "absent", "no action"} <= set(groups)
    for command in COMMANDS:
        if command.domain == "question":
            assert command.answer and not command.expect, command.text
        if command.domain in ("absent", "no action"):
            assert not command.expect, command.text


def _command(text: str) -> Command:
    return next(c for c in COMMANDS if c.text == text)


def _after(
    command: Command, **fields: dict[str, object]
) -> dict[str, dict[str, object]]:
    states = start_states(command)
    for key, value in fields.items():
        states[key.replace("__", ".")] = states[key.replace("__", ".")] | value
    return states


def test_the_right_device_changed_is_good() -> None:
    """Turning on the kitchen light, and nothing else, is what was asked."""
    command = _command("Turn on the kitchen light")
    start = start_states(command)
    after = _after(command, light__kitchen_light={"state": "on", "brightness": 100})

    assert judge(command, start, after, "Turned on.").good


def test_a_near_namesake_changed_is_not() -> None:
    """The counter lights are not the kitchen light; both changed is wrong too."""
    command = _command("Turn on the kitchen light")
    start = start_states(command)
    wrong = _after(command, light__kitchen_counter_lights={"state": "on"})
    both = _after(
        command,
        light__kitchen_light={"state": "on"},
        light__kitchen_counter_lights={"state": "on"},
    )

    verdict = judge(command, start, wrong, "Done.")
    assert not verdict.good
    assert "light.kitchen_light state 'off', not 'on'" in verdict.why
    assert "light.kitchen_counter_lights state 'off' → 'on'" in verdict.why
    assert not judge(command, start, both, "Done.").good


def test_numbers_within_rounding() -> None:
    """A brightness one percent off (255 steps) is right; five off is not."""
    command = _command("Set the living room lamp to 20%")
    start = start_states(command)
    near = _after(command, light__living_room_lamp={"brightness": 21})
    far = _after(command, light__living_room_lamp={"brightness": 25})

    assert judge(command, start, near, "").good
    assert not judge(command, start, far, "").good


def test_an_item_added_once_to_the_right_list() -> None:
    """One new item naming milk, the old ones kept: no doubles, no losses."""
    command = _command("Add milk to my shopping list")
    start = start_states(command)

    def items(*names: str) -> dict[str, dict[str, object]]:
        return _after(command, todo__shopping_list={"items": names, "state": "3"})

    assert judge(command, start, items("Bread", "Eggs", "Milk"), "").good
    assert not judge(command, start, items("Bread", "Eggs", "Milk", "Milk"), "").good
    assert not judge(command, start, items("Bread", "Milk"), "").good
    assert not judge(command, start, items("Bread", "Eggs", "Apples"), "").good
    chores = _after(command, todo__chores={"items": ("Take out the trash", "Milk")})
    assert not judge(command, start, chores, "").good


@pytest.mark.parametrize(
    ("text", "right", "wrong"),
    [
        (
            "What is the temperature in the living room?",
            "It is 21.5 degrees in the living room.",
            "It is 21 degrees.",
        ),
        ("What is the bedroom thermostat set to?", "It is set to 18.0 °C.", "18.5"),
        (
            "Is the front door locked?",
            "Yes, the front door is locked.",
            "It is unlocked.",
        ),
        ("Is the back door locked?", "No, the back door is unlocked.", "It is locked."),
        ("Is the kitchen light on?", "The kitchen light is off.", "The light is on."),
        ("What's on my shopping list?", "Bread and eggs.", "Bread."),
    ],
)
def test_a_question_is_judged_by_its_answer(text: str, right: str, wrong: str) -> None:
    """The answer must hold the value, and nothing may change."""
    command = _command(text)
    start = start_states(command)

    assert judge(command, start, start, right).good
    assert not judge(command, start, start, wrong).good
    acted = _after(command, light__porch_light={"state": "on"})
    assert not judge(command, start, acted, right).good


def test_a_command_that_must_not_act() -> None:
    """A device the home lacks: any change is wrong, words are free."""
    command = _command("Turn on the sauna")
    start = start_states(command)

    assert judge(command, start, start, "There is no sauna.").good
    acted = _after(command, switch__towel_warmer={"state": "on"})
    assert not judge(command, start, acted, "Done.").good


def test_given_states_come_before_the_command() -> None:
    """Close the garage door starts from an open garage door."""
    command = _command("Close the garage door")
    start = start_states(command)

    assert start["cover.garage_door"]["state"] == "open"
    assert start_states(_command("Open the garage door"))["cover.garage_door"] == {
        "state": "closed"
    }
    assert changes(start, start) == {}


@pytest.mark.parametrize(
    "speech",
    [
        '{"speech":{},"response_type":"action_done","data":{"targets":[]}}',
        '{"name": "intent__HassTurnOff", "arguments": {"name": "garage door"}}',
        '```json\n{"name": "HassTurnOn"}\n```',
        '<tool_call>\n{"name": "HassTurnOn"}\n</tool_call>',
        'HassTurnOn(name="kitchen light")',
        "I called light__HassLightSet for you.",
        "**Done!** The light is on.",
        "<|im_start|>assistant",
    ],
)
def test_what_is_not_for_speaking(speech: str) -> None:
    """JSON results, calls written as text, and markup are caught."""
    assert unspeakable(speech)


@pytest.mark.parametrize(
    "speech",
    [
        "Turned on the kitchen light.",
        "It is 21.5 °C in the living room, and 64% humidity in the bathroom.",
        "Sorry, I couldn't find a sauna. Is it called something else?",
        "",
    ],
)
def test_plain_answers_are_for_speaking(speech: str) -> None:
    """Ordinary sentences, numbers and units pass."""
    assert unspeakable(speech) is None


def test_a_spread_reaches_every_group() -> None:
    """The 1.5B's 30 commands take every group in turn, in table order."""
    chosen = spread(COMMANDS, LEAST_COMMANDS["1.5b"])

    assert len(chosen) == 30
    assert {c.domain for c in chosen} == {c.domain for c in COMMANDS}
    order = [COMMANDS.index(c) for c in chosen]
    assert order == sorted(order)
    assert spread(COMMANDS, None) == list(COMMANDS)
    assert [c.text for c in select(COMMANDS, "garage", 2)] == [
        "I'm in the garage, turn the light on",
        "Close the garage door",
    ]


def _outcomes(
    good: int, total: int, rounds: int = 2, speech: str = "Done."
) -> list[Outcome]:
    return [
        Outcome(
            "x",
            "light",
            index < good,
            "",
            speech,
            1.0,
            rounds,
            10,
            1000,
            unspeakable(speech),
        )
        for index in range(total)
    ]


def test_targets_met_and_not() -> None:
    """0.5B: ours ≥ 50 % and core + 15 points over all commands; clean; ≤ 3 rounds."""
    every = len(COMMANDS)
    met = targets(
        "0.5b", {"ours": _outcomes(every, every), "core": _outcomes(0, every)}
    )
    assert all(t.met for t in met), met

    close = targets(
        "0.5b",
        {
            "ours": _outcomes(every // 2 + 1, every),
            "core": _outcomes(every // 2 - 5, every),
        },
    )
    assert [t.met for t in close] == [True, True, False, True, True]
    assert "ours ≥ core + 15 points: +6.7" in close[2].text

    sloppy = targets(
        "1.5b", {"ours": _outcomes(10, 10, rounds=4, speech='{"speech": {}}')}
    )
    assert [t.met for t in sloppy] == [False, True, False, False]
    assert sloppy[0].line() == "  at least 30 commands over the groups: 10 run: NOT met"


def test_a_command_line_shows_both_agents() -> None:
    """Command, ✓/✗, rounds, seconds, what was said and why it was wrong."""
    ours, core = _outcomes(1, 1)[0], _outcomes(0, 1, speech='{"a": 1}')[0]
    core.why = "light.kitchen_light state 'off', not 'on'"

    line = command_line(7, ours, core)

    assert re.match(r"\s+7 x\s+\| ours ✓ 2r   1.0s 'Done.' \| core ✗ 2r", line)
    assert line.endswith("[light.kitchen_light state 'off', not 'on']")


# The device and field each question for a number asks about.
ASKED = {
    "What is the temperature in the living room?": (
        "sensor.living_room_temperature",
        "state",
    ),
    "How warm is it outside?": ("sensor.outdoor_temperature", "state"),
    "What's the humidity in the bathroom?": ("sensor.bathroom_humidity", "state"),
    "How cold is the fridge?": ("sensor.fridge_temperature", "state"),
    "How much power is the house using right now?": ("sensor.power_usage", "state"),
    "What's the CO2 level in the office?": ("sensor.office_co2", "state"),
    "What is the bedroom thermostat set to?": (
        "climate.bedroom_thermostat",
        "temperature",
    ),
}


@pytest.mark.parametrize(("text", "asked"), ASKED.items())
def test_a_question_wants_the_value_the_home_holds(
    text: str, asked: tuple[str, str]
) -> None:
    """The number a question must hear is the one its device shows."""
    command = _command(text)
    start = start_states(command)
    entity_id, field = asked

    assert judge(command, start, start, f"It is {start[entity_id][field]}.").good
