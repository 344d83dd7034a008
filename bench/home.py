"""The home of bench/home_control.py: its devices, what people say, and the verdicts.

Pure data and functions, without Home Assistant, so that tests/bench keeps
them honest without a model: every command names devices of this home, and
each verdict is the one a person standing in the room would give. A device's
state is a flat dict: `state` as Home Assistant shows it, and the fields a
person sees change (a light's brightness and a player's volume in percent, a
cover's position, a fan's speed, a thermostat's target, a list's open items).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
import re
import statistics
from typing import Any

type Fields = Mapping[str, Any]

AREAS = (
    "Kitchen",
    "Living room",
    "Dining room",
    "Bedroom",
    "Kids room",
    "Bathroom",
    "Office",
    "Hallway",
    "Garage",
    "Garden",
)
# Fields whose values are percentages or degrees that a server may round.
_TOLERANCE = {"brightness": 1, "volume": 1, "position": 1, "percentage": 1}
# A list's item added: a pseudo-field of an expectation, judged on `items`.
ADDED = "added"


@dataclass(frozen=True)
class Device:
    """One exposed entity: its name, area, and state at the start of each command."""

    domain: str
    name: str
    area: str | None
    state: str
    fields: Fields = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    # For sensors: Home Assistant's device class and unit.
    device_class: str | None = None
    unit: str | None = None

    @property
    def entity_id(self) -> str:
        """Return the entity id Home Assistant gives a device of this name."""
        return (
            f"{self.domain}.{re.sub(r'[^a-z0-9]+', '_', self.name.lower()).strip('_')}"
        )

    def initial(self) -> dict[str, Any]:
        """Return the device's state before a command."""
        return {"state": self.state, **self.fields}


def _light(name: str, area: str, brightness: int | None = None) -> Device:
    state = "off" if brightness is None else "on"
    return Device("light", name, area, state, {"brightness": brightness})


def _cover(name: str, area: str, device_class: str, position: int | None) -> Device:
    """Return a cover; one without a position only opens and closes."""
    state = "closed" if not position else "open"
    fields = {} if position is None else {"position": position}
    return Device("cover", name, area, state, fields, device_class=device_class)


def _sensor(
    name: str, area: str | None, value: str, device_class: str | None, unit: str | None
) -> Device:
    return Device("sensor", name, area, value, device_class=device_class, unit=unit)


DEVICES = (
    # Lights, with near-namesakes in the same rooms.
    _light("Kitchen light", "Kitchen"),
    _light("Kitchen counter lights", "Kitchen"),
    _light("Living room lamp", "Living room", 40),
    _light("Living room ceiling light", "Living room"),
    _light("Reading lamp", "Living room"),
    _light("Dining table light", "Dining room"),
    _light("Bedroom light", "Bedroom", 100),
    _light("Bedside lamp", "Bedroom"),
    _light("Night light", "Kids room", 10),
    _light("Kids room light", "Kids room"),
    _light("Bathroom light", "Bathroom"),
    _light("Mirror light", "Bathroom"),
    _light("Office light", "Office", 60),
    _light("Desk lamp", "Office"),
    _light("Hallway light", "Hallway"),
    _light("Stairs light", "Hallway"),
    _light("Garage light", "Garage"),
    _light("Porch light", "Garden"),
    _light("Garden lights", "Garden"),
    # Switches.
    Device("switch", "Coffee maker", "Kitchen", "off"),
    Device("switch", "Kettle", "Kitchen", "off"),
    Device("switch", "Christmas tree", "Living room", "off"),
    Device("switch", "Electric blanket", "Bedroom", "off"),
    Device("switch", "Towel warmer", "Bathroom", "off"),
    Device("switch", "Printer", "Office", "on"),
    Device("switch", "Fountain", "Garden", "off"),
    # Covers: a garage door and a gate that only open and close, the rest
    # with a position.
    _cover("Garage door", "Garage", "garage", None),
    _cover("Driveway gate", "Garden", "gate", None),
    _cover("Living room curtains", "Living room", "curtain", 100),
    _cover("Bedroom curtains", "Bedroom", "curtain", 0),
    _cover("Kitchen blinds", "Kitchen", "blind", 100),
    _cover("Office blinds", "Office", "blind", 50),
    _cover("Kids room shutter", "Kids room", "shutter", 100),
    # Locks: the garage's own door lock beside the garage door.
    Device("lock", "Front door", "Hallway", "locked"),
    Device("lock", "Back door", "Kitchen", "unlocked"),
    Device("lock", "Garage door lock", "Garage", "locked"),
    # Fans.
    Device("fan", "Ceiling fan", "Living room", "off", {"percentage": 0}),
    Device("fan", "Bedroom fan", "Bedroom", "off", {"percentage": 0}),
    Device("fan", "Bathroom fan", "Bathroom", "off", {"percentage": 0}),
    Device("fan", "Desk fan", "Office", "on", {"percentage": 50}),
    # Thermostats.
    Device(
        "climate",
        "Living room thermostat",
        "Living room",
        "heat",
        {"temperature": 20.0, "current_temperature": 19.5},
    ),
    Device(
        "climate",
        "Bedroom thermostat",
        "Bedroom",
        "heat",
        {"temperature": 18.0, "current_temperature": 18.5},
    ),
    Device(
        "climate",
        "Office thermostat",
        "Office",
        "heat",
        {"temperature": 19.0, "current_temperature": 19.0},
    ),
    # Media players.
    Device("media_player", "Living room TV", "Living room", "playing", {"volume": 30}),
    Device("media_player", "Kitchen speaker", "Kitchen", "paused", {"volume": 50}),
    Device("media_player", "Bedroom speaker", "Bedroom", "playing", {"volume": 40}),
    # A vacuum that people call by its brand.
    Device("vacuum", "Robot vacuum", "Living room", "docked", aliases=("Roomba",)),
    # Valves.
    Device("valve", "Garden sprinkler", "Garden", "closed"),
    Device("valve", "Main water valve", "Garage", "open"),
    # To-do lists.
    Device("todo", "Shopping list", None, "2", {"items": ("Bread", "Eggs")}),
    Device("todo", "Chores", None, "1", {"items": ("Take out the trash",)}),
    # Sensors, one near-namesake of a room's temperature in the kitchen.
    _sensor("Living room temperature", "Living room", "21.5", "temperature", "°C"),
    _sensor("Bedroom temperature", "Bedroom", "19.0", "temperature", "°C"),
    _sensor("Kitchen temperature", "Kitchen", "22.0", "temperature", "°C"),
    _sensor("Fridge temperature", "Kitchen", "4.0", "temperature", "°C"),
    _sensor("Outdoor temperature", "Garden", "7.5", "temperature", "°C"),
    _sensor("Bathroom humidity", "Bathroom", "64", "humidity", "%"),
    _sensor("Office CO2", "Office", "820", "carbon_dioxide", "ppm"),
    _sensor("Power usage", None, "1350", "power", "W"),
    Device("binary_sensor", "Garage window", "Garage", "on", device_class="window"),
    Device("binary_sensor", "Hallway motion", "Hallway", "off", device_class="motion"),
)
BY_ID = {device.entity_id: device for device in DEVICES}


@dataclass(frozen=True)
class Command:
    """What a person says, and what must be true afterwards."""

    text: str
    # The kind of device it is about, a question, a device the home lacks,
    # or a request that must not act: the report's groups.
    domain: str
    # The fields each entity must have afterwards; any other entity, unchanged.
    expect: Mapping[str, Fields] = field(default_factory=dict)
    # Fields set before the command, over the devices' usual state.
    given: Mapping[str, Fields] = field(default_factory=dict)
    # Patterns the spoken answer must hold (each), and must not hold (any).
    answer: tuple[str, ...] = ()
    wrong: tuple[str, ...] = ()


def _state(
    text: str, domain: str, entities: tuple[str, ...], state: str, before: str | None
) -> Command:
    given = {entity: {"state": before} for entity in entities} if before else {}
    return Command(
        text, domain, {entity: {"state": state} for entity in entities}, given
    )


def _on(text: str, domain: str, *entities: str, before: str | None = None) -> Command:
    """Return a command that must turn the entities on (open, lock them)."""
    state = {"cover": "open", "lock": "locked", "valve": "open"}.get(domain, "on")
    return _state(text, domain, entities, state, before)


def _off(text: str, domain: str, *entities: str, before: str | None = None) -> Command:
    """Return a command that must turn the entities off (close, unlock them)."""
    state = {"cover": "closed", "lock": "unlocked", "valve": "closed"}
    return _state(text, domain, entities, state.get(domain, "off"), before)


def _set(text: str, domain: str, entity: str, **fields: Any) -> Command:
    return Command(text, domain, {entity: fields})


def _ask(
    text: str,
    answer: tuple[str, ...],
    wrong: tuple[str, ...] = (),
    given: Mapping[str, Fields] | None = None,
) -> Command:
    """Return a question: nothing may change; the answer must hold the value."""
    return Command(text, "question", given=given or {}, answer=answer, wrong=wrong)


def _nothing(text: str, domain: str, answer: tuple[str, ...] = ()) -> Command:
    """Return a command after which nothing may have changed."""
    return Command(text, domain, answer=answer)


def _number(value: str, *words: str) -> str:
    """Return a pattern for a spoken number: "21.5", "21,5", "18.0" or words."""
    digits = re.escape(value).replace(r"\.", "[.,]")
    zeros = "0*" if "." in value else "(?:[.,]0+)?"
    return rf"(?<![\d.,]){digits}{zeros}(?![.,]?\d)" + "".join(f"|{w}" for w in words)


COMMANDS = (
    # --- lights
    _on("Turn on the kitchen light", "light", "light.kitchen_light"),
    _on("Kitchen light on, please", "light", "light.kitchen_light"),
    _off("Switch off the bedroom light", "light", "light.bedroom_light"),
    _off(
        "Turn off the lights in the living room",
        "light",
        "light.living_room_lamp",
        "light.living_room_ceiling_light",
        "light.reading_lamp",
    ),
    _on(
        "Turn on all the lights in the bathroom",
        "light",
        "light.bathroom_light",
        "light.mirror_light",
    ),
    _set(
        "Set the living room lamp to 20%",
        "light",
        "light.living_room_lamp",
        state="on",
        brightness=20,
    ),
    _set(
        "Dim the bedroom light to 30 percent",
        "light",
        "light.bedroom_light",
        state="on",
        brightness=30,
    ),
    _set(
        "Make the office light full brightness",
        "light",
        "light.office_light",
        state="on",
        brightness=100,
    ),
    _set(
        "Set the dining table light to half brightness",
        "light",
        "light.dining_table_light",
        state="on",
        brightness=50,
    ),
    _on("Can you turn on the reading lamp?", "light", "light.reading_lamp"),
    _on("Turn on the desk lamp", "light", "light.desk_lamp"),
    _off("Turn off the night light", "light", "light.night_light"),
    _off("Lights off in the office", "light", "light.office_light"),
    _on("Switch on the garden lights", "light", "light.garden_lights"),
    _on("Turn the porch light on", "light", "light.porch_light"),
    _on("Hallway light on", "light", "light.hallway_light"),
    _on("I'm in the garage, turn the light on", "light", "light.garage_light"),
    # --- switches
    _on("Turn on the coffee maker", "switch", "switch.coffee_maker"),
    _on("Switch the kettle on", "switch", "switch.kettle"),
    _off("Turn off the printer", "switch", "switch.printer"),
    _on("Turn on the Christmas tree", "switch", "switch.christmas_tree"),
    _on("Switch on the electric blanket", "switch", "switch.electric_blanket"),
    _on("Turn on the towel warmer in the bathroom", "switch", "switch.towel_warmer"),
    _on("Start the fountain", "switch", "switch.fountain"),
    # --- covers
    _off("Close the garage door", "cover", "cover.garage_door", before="open"),
    _on("Open the garage door", "cover", "cover.garage_door"),
    _off("Shut the garage", "cover", "cover.garage_door", before="open"),
    _on("Open the driveway gate", "cover", "cover.driveway_gate"),
    _off(
        "Close the curtains in the living room", "cover", "cover.living_room_curtains"
    ),
    _on("Open the bedroom curtains", "cover", "cover.bedroom_curtains"),
    _set("Set the office blinds to 25%", "cover", "cover.office_blinds", position=25),
    _set(
        "Lower the kitchen blinds halfway", "cover", "cover.kitchen_blinds", position=50
    ),
    _off("Close the shutter in the kids room", "cover", "cover.kids_room_shutter"),
    # --- locks
    _on("Lock the front door", "lock", "lock.front_door", before="unlocked"),
    _off("Unlock the back door", "lock", "lock.back_door", before="locked"),
    _on("Please lock the back door", "lock", "lock.back_door"),
    _off("Unlock the front door", "lock", "lock.front_door"),
    _on(
        "Lock the garage door lock",
        "lock",
        "lock.garage_door_lock",
        before="unlocked",
    ),
    # --- fans
    _on("Turn on the ceiling fan", "fan", "fan.ceiling_fan"),
    _set(
        "Set the bedroom fan to 50%",
        "fan",
        "fan.bedroom_fan",
        state="on",
        percentage=50,
    ),
    _off("Turn off the desk fan", "fan", "fan.desk_fan"),
    _on("Put the bathroom fan on", "fan", "fan.bathroom_fan"),
    _set(
        "Ceiling fan speed 75 percent",
        "fan",
        "fan.ceiling_fan",
        state="on",
        percentage=75,
    ),
    # --- thermostats
    _set(
        "Set the living room thermostat to 22 degrees",
        "climate",
        "climate.living_room_thermostat",
        temperature=22,
    ),
    _set(
        "Set the temperature in the bedroom to 19",
        "climate",
        "climate.bedroom_thermostat",
        temperature=19,
    ),
    _set(
        "Make it 21 degrees in the office",
        "climate",
        "climate.office_thermostat",
        temperature=21,
    ),
    _set(
        "Turn the living room heating down to 18",
        "climate",
        "climate.living_room_thermostat",
        temperature=18,
    ),
    # --- media players
    _set("Pause the TV", "media_player", "media_player.living_room_tv", state="paused"),
    _set(
        "Pause the living room TV",
        "media_player",
        "media_player.living_room_tv",
        state="paused",
    ),
    _set(
        "Resume the kitchen speaker",
        "media_player",
        "media_player.kitchen_speaker",
        state="playing",
    ),
    _set(
        "Unpause the music in the kitchen",
        "media_player",
        "media_player.kitchen_speaker",
        state="playing",
    ),
    _set(
        "Pause the music in the bedroom",
        "media_player",
        "media_player.bedroom_speaker",
        state="paused",
    ),
    _set(
        "Set the bedroom speaker volume to 20%",
        "media_player",
        "media_player.bedroom_speaker",
        volume=20,
    ),
    _set(
        "Turn the TV volume to 50 percent",
        "media_player",
        "media_player.living_room_tv",
        volume=50,
    ),
    # --- the vacuum
    _set("Start the vacuum", "vacuum", "vacuum.robot_vacuum", state="cleaning"),
    _set("Start the Roomba", "vacuum", "vacuum.robot_vacuum", state="cleaning"),
    _set("Vacuum the house", "vacuum", "vacuum.robot_vacuum", state="cleaning"),
    Command(
        "Send the robot vacuum back to its dock",
        "vacuum",
        {"vacuum.robot_vacuum": {"state": "returning"}},
        {"vacuum.robot_vacuum": {"state": "cleaning"}},
    ),
    # --- valves
    _on("Turn on the garden sprinkler", "valve", "valve.garden_sprinkler"),
    _on("Open the sprinkler valve in the garden", "valve", "valve.garden_sprinkler"),
    _off("Close the main water valve", "valve", "valve.main_water_valve"),
    _off("Turn off the sprinkler", "valve", "valve.garden_sprinkler", before="open"),
    # --- to-do lists
    _set("Add milk to my shopping list", "todo", "todo.shopping_list", added="milk"),
    _set(
        "Put apples on the shopping list", "todo", "todo.shopping_list", added="apple"
    ),
    _set(
        "I need batteries, add them to the shopping list",
        "todo",
        "todo.shopping_list",
        added="batteries",
    ),
    _set("Add call the plumber to my chores", "todo", "todo.chores", added="plumber"),
    # --- questions: nothing changes, the answer holds the value
    _ask("What is the temperature in the living room?", (_number("21.5"),)),
    _ask("How warm is it outside?", (_number("7.5", "seven and a half"),)),
    _ask("What's the humidity in the bathroom?", (_number("64", "sixty-four"),)),
    _ask("How cold is the fridge?", (_number("4", "four"),)),
    _ask("How much power is the house using right now?", (_number("1350", "1,350"),)),
    _ask("What's the CO2 level in the office?", (_number("820"),)),
    _ask(
        "What is the bedroom thermostat set to?",
        (_number("18", "eighteen"),),
    ),
    _ask(
        "Is the front door locked?",
        (r"\b(yes|locked)\b",),
        (r"\bunlocked\b|\bnot locked\b|\bisn't locked\b",),
    ),
    _ask(
        "Is the back door locked?",
        (r"\b(no|unlocked|not locked|isn't locked)\b",),
        (r"\bis locked\b",),
    ),
    _ask(
        "Is the garage door open?",
        (r"\b(yes|open)\b",),
        (r"\bclosed\b|\bnot open\b|\bisn't open\b",),
        given={"cover.garage_door": {"state": "open"}},
    ),
    _ask(
        "Is the kitchen light on?",
        (r"\b(no|off|not on|isn't on)\b",),
        (r"\bis on\b",),
    ),
    _ask("What is the robot vacuum doing?", (r"\bdock",)),
    _ask("What's on my shopping list?", (r"\bbread\b", r"\beggs?\b")),
    _ask("Is the garage window open?", (r"\b(yes|open)\b",), (r"\bclosed\b",)),
    # --- devices this home does not have
    _nothing("Turn on the sauna", "absent"),
    _nothing("Open the attic window", "absent"),
    _nothing("Turn on the lights in the basement", "absent"),
    _nothing("Start the dishwasher", "absent"),
    # --- requests that must not act
    _nothing(
        "Don't change anything, just tell me: is the bedroom light on?",
        "no action",
        (r"\b(yes|on)\b",),
    ),
    _nothing("What would happen if I unlocked the front door?", "no action"),
    _nothing("Thanks, that's all for now", "no action"),
    _nothing("Tell me a short joke", "no action"),
    _nothing(
        "Is it a good idea to leave the back door unlocked at night?", "no action"
    ),
)


# --- judging ---------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """Whether a command did what the person wanted, and if not, what went wrong."""

    good: bool
    why: str = ""


def start_states(command: Command) -> dict[str, dict[str, Any]]:
    """Return every device's state before a command: as usual, then as given."""
    states = {device.entity_id: device.initial() for device in DEVICES}
    for entity_id, fields in command.given.items():
        states[entity_id] |= fields
    return states


def _same(name: str, got: Any, want: Any) -> bool:
    if isinstance(want, int | float) and isinstance(got, int | float):
        return abs(got - want) <= _TOLERANCE.get(name, 0.01)
    return bool(got == want)


def _added(before: Sequence[str], after: Sequence[str], want: str) -> str | None:
    """Judge a list to which one item naming `want` was to be added."""
    new = list(after)
    for item in before:
        if item not in new:
            return f"{item!r} is gone from the list"
        new.remove(item)
    if len(new) != 1 or want not in new[0].casefold():
        return f"added {new}, not one item with {want!r}"
    return None


def changes(
    before: Mapping[str, Fields], after: Mapping[str, Fields]
) -> dict[str, dict[str, tuple[Any, Any]]]:
    """Return the fields that changed, per entity: (before, after)."""
    changed: dict[str, dict[str, tuple[Any, Any]]] = {}
    for entity_id, old in before.items():
        new = after.get(entity_id, {})
        fields = {
            key: (old.get(key), new.get(key))
            for key in old.keys() | new.keys()
            if not _same(key, new.get(key), old.get(key))
        }
        if fields:
            changed[entity_id] = fields
    return changed


def judge(
    command: Command,
    before: Mapping[str, Fields],
    after: Mapping[str, Fields],
    speech: str,
) -> Verdict:
    """Judge a command as the person would: by the states, and what was said."""
    wrong: list[str] = []
    for entity_id, fields in command.expect.items():
        for name, want in fields.items():
            if name == ADDED:
                problem = _added(
                    before[entity_id]["items"], after[entity_id]["items"], want
                )
                if problem:
                    wrong.append(f"{entity_id}: {problem}")
            elif not _same(name, got := after[entity_id].get(name), want):
                wrong.append(f"{entity_id} {name} {got!r}, not {want!r}")
    for entity_id, fields in changes(before, after).items():
        if entity_id not in command.expect:
            wrong.extend(
                f"{entity_id} {name} {old!r} → {new!r}"
                for name, (old, new) in fields.items()
            )
    wrong += [
        f"the answer lacks /{pattern}/"
        for pattern in command.answer
        if not re.search(pattern, speech, re.IGNORECASE)
    ]
    wrong += [
        f"the answer says /{pattern}/"
        for pattern in command.wrong
        if re.search(pattern, speech, re.IGNORECASE)
    ]
    return Verdict(not wrong, "; ".join(wrong))


# What a voice must never say: a tool's JSON result or a call written as text
# (braces, "key": pairs, tool names), or markup (tags, fences, Markdown).
_UNSPEAKABLE = re.compile(
    r"[{}\[\]]"
    r'|"\w+"\s*:'
    r"|```|`"
    r"|\*\*|^#+ "
    r"|</?[A-Za-z_|][^>]*>"
    r"|\b\w+__\w+"
    r"|\bHass[A-Z][A-Za-z]+",
    re.MULTILINE,
)


def unspeakable(speech: str) -> str | None:
    """Return what in a spoken answer is not for speaking, or None."""
    found = _UNSPEAKABLE.search(speech)
    if found is None:
        return None
    start = max(found.start() - 20, 0)
    return speech[start : found.end() + 20]


# --- choosing commands ------------------------------------------------------------


def spread(commands: Sequence[Command], count: int | None) -> list[Command]:
    """Return `count` commands taken in turn from each group, in table order."""
    if count is None or count >= len(commands):
        return list(commands)
    groups: dict[str, list[Command]] = {}
    for command in commands:
        groups.setdefault(command.domain, []).append(command)
    chosen: list[Command] = []
    for rank in range(max(map(len, groups.values()))):
        chosen += [group[rank] for group in groups.values() if rank < len(group)]
    keep = set(map(id, chosen[:count]))
    return [command for command in commands if id(command) in keep]


def select(
    commands: Sequence[Command], pattern: str | None, count: int | None
) -> list[Command]:
    """Return the commands whose text matches `pattern`, spread to `count`."""
    matching = [
        command
        for command in commands
        if pattern is None or re.search(pattern, command.text, re.IGNORECASE)
    ]
    return spread(matching, count)


# --- figures ------------------------------------------------------------------------


@dataclass
class Outcome:
    """One agent on one command: the verdict and what it cost."""

    command: str
    domain: str
    good: bool
    why: str
    speech: str
    seconds: float
    # Chat requests of the turn; prompt tokens evaluated and taken from the
    # server's cache (llama-server's timings), summed over them.
    rounds: int
    evaluated: int
    cached: int
    unspeakable: str | None = None
    timed_out: bool = False
    # What the model was sent after the system prompt, on the turn's last
    # request: the command, calls and results, to read why it failed.
    turn: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    """A goal of the benchmark, and whether this run met it."""

    text: str
    met: bool

    def line(self) -> str:
        """Return the target as the report prints it."""
        return f"  {self.text}: {'met' if self.met else 'NOT met'}"


# Per model: ours' least share of good commands, and its least lead over core.
GOALS = {"0.5b": (50.0, 15.0), "1.5b": (70.0, 15.0)}
# The 1.5B is slower: this many commands, spread over the groups.
LEAST_COMMANDS = {"0.5b": len(COMMANDS), "1.5b": 30}
MOST_ROUNDS = 3
# The same for both agents on an instruct model: a cap on each answer (a small
# model may ramble; a call written out as text fits in it) and greedy sampling
# (a rerun measures the code, not the dice).
ANSWER_TOKENS = 128
TEMPERATURE = 0.0


def share(outcomes: Sequence[Outcome]) -> float:
    """Return the percentage of good outcomes."""
    return 100.0 * sum(o.good for o in outcomes) / len(outcomes) if outcomes else 0.0


def targets(model: str, runs: Mapping[str, Sequence[Outcome]]) -> list[Target]:
    """Return the benchmark's targets for a model's run, met or not."""
    ours = runs.get("ours", ())
    least, lead = GOALS[model]
    enough = LEAST_COMMANDS[model]
    found: list[Target] = [
        Target(
            f"at least {enough} commands over the groups: {len(ours)} run",
            len(ours) >= enough,
        ),
        Target(f"ours ≥ {least:.0f} %: {share(ours):.1f} %", share(ours) >= least),
    ]
    if "core" in runs:
        gap = share(ours) - share(runs["core"])
        found.append(
            Target(f"ours ≥ core + {lead:.0f} points: {gap:+.1f}", gap >= lead)
        )
    spoken = [o for o in ours if o.unspeakable]
    found.append(
        Target(
            "ours never speaks JSON, a call as text or markup: "
            f"{len(spoken)} answers did",
            not spoken,
        )
    )
    most = max((o.rounds for o in ours), default=0)
    found.append(
        Target(
            f"no command of ours takes more than {MOST_ROUNDS} model rounds: "
            f"most {most}",
            most <= MOST_ROUNDS,
        )
    )
    return found


def _median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else 0.0


def summary(name: str, outcomes: Sequence[Outcome]) -> list[str]:
    """Return an agent's figures: good share, per group, time, tokens, rounds."""
    good = sum(o.good for o in outcomes)
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.domain, []).append(outcome)
    return [
        f"  {name}: {good} / {len(outcomes)} good ({share(outcomes):.1f} %)",
        "    per group: "
        + ", ".join(
            f"{group} {sum(o.good for o in items)}/{len(items)}"
            for group, items in groups.items()
        ),
        (
            f"    median {_median(o.seconds for o in outcomes):.1f} s per command "
            f"(longest {max((o.seconds for o in outcomes), default=0):.1f} s, "
            f"{sum(o.timed_out for o in outcomes)} timed out); model rounds "
            f"median {_median(o.rounds for o in outcomes):g}, most "
            f"{max((o.rounds for o in outcomes), default=0)}"
        ),
        (
            f"    prompt tokens evaluated {sum(o.evaluated for o in outcomes):,}, "
            f"from the cache {sum(o.cached for o in outcomes):,} "
            f"(median per command {_median(o.evaluated for o in outcomes):g} "
            f"evaluated, {_median(o.cached for o in outcomes):g} cached)"
        ),
        f"    answers not fit to speak: {sum(bool(o.unspeakable) for o in outcomes)}",
    ]


def _mark(outcome: Outcome | None) -> str:
    return "-" if outcome is None else "✓" if outcome.good else "✗"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def command_line(
    number: int, ours: Outcome | None, core: Outcome | None, width: int = 70
) -> str:
    """Return one command's line: both verdicts, rounds, seconds, what was said."""
    first = ours or core
    assert first is not None
    parts = [f"{number:>3} {_short(first.command, 46):<46}"]
    for name, outcome in (("ours", ours), ("core", core)):
        if outcome is None:
            continue
        parts.append(
            f"{name} {_mark(outcome)} {outcome.rounds}r {outcome.seconds:5.1f}s "
            f"{_short(outcome.speech, width)!r}"
            + (f" [{_short(outcome.why, width)}]" if outcome.why else "")
        )
    return " | ".join(parts)
