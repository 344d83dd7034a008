"""The conversation benchmark, run by bench/conversation.py through pytest.

Not a test: its function is named `bench_*` and bench/conversation.py collects
it with `-o python_functions=bench_*`; `scripts/test` only collects tests/.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Generator, Iterable
import cProfile
from dataclasses import dataclass
import gc
import json
import logging
import os
from pathlib import Path
import platform
import statistics
import subprocess
import sys
import time
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.light import ColorMode, LightEntity
from homeassistant.components.llama_cpp import const as core_const
from homeassistant.components.sensor import SensorDeviceClass, SensorEntity
from homeassistant.config_entries import ConfigEntry, ConfigSubentryData
from homeassistant.const import (
    CONF_LLM_HASS_API,
    CONF_PROMPT,
    UnitOfTemperature,
    __version__ as HA_VERSION,
)
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    entity_registry as er,
    intent,
    llm,
)
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (  # type: ignore[import-untyped]
    MockConfigEntry,
    setup_test_component_platform,
)

from custom_components.openai_compatible import const as ours_const
from custom_components.openai_compatible.models.providers import PROVIDER_CUSTOM
from simulator import sse_text, sse_tool_calls

ROOT = Path(__file__).resolve().parent.parent
ENTITY_COUNTS = [
    int(count) for count in os.environ.get("BENCH_ENTITIES", "50,500").split(",")
]
REPEAT = int(os.environ.get("BENCH_REPEAT", "10"))
PROFILE_DIR = os.environ.get("BENCH_PROFILE")
DUMP_DIR = os.environ.get("BENCH_DUMP")

MODEL = "gpt-4o-mini"
PROMPT = llm.DEFAULT_INSTRUCTIONS_PROMPT
NAMES = ("ours", "core")
LABELS = {
    "ours": "openai_compatible (this integration)",
    "core": "llama_cpp (Home Assistant core, streaming on)",
}
AREAS = (
    "Kitchen",
    "Living room",
    "Bedroom",
    "Bathroom",
    "Office",
    "Hallway",
    "Garage",
    "Garden",
    "Dining room",
    "Basement",
)
KITCHEN_LIGHT = "light.kitchen_light"
LIVE_CONTEXT_CALL = ("call_bench_live_context", "homeassistant__GetLiveContext")
LIVE_CONTEXT_ARGS = {"domain": "sensor"}
# The answer after GetLiveContext, the same for both agents: the simulator's
# own would put each integration's form of the tool result in words.
LIVE_CONTEXT_ANSWER = "It is 21.5 degrees in the living room."


@dataclass(frozen=True, slots=True)
class TurnSpec:
    """One user sentence, and what should happen."""

    text: str
    label: str
    # Queue a call of GetLiveContext as the model's first answer.
    live_context: bool = False
    # The kitchen light's state after the turn.
    light_after: str | None = None


TURNS = (
    TurnSpec("turn on the kitchen light", "turn on (tool)", light_after="on"),
    TurnSpec(
        "what is the temperature in the living room?",
        "temperature (tool)",
        live_context=True,
    ),
    TurnSpec("thanks", "thanks"),
    TurnSpec("turn off the kitchen light", "turn off (tool)", light_after="off"),
    TurnSpec("good night", "good night"),
)


@dataclass(frozen=True, slots=True)
class Turn:
    """A measured turn: CPU and wall seconds, and its request bodies."""

    cpu: float
    wall: float
    bodies: list[bytes]
    # The client port of each request: one per TCP connection.
    peers: list[int]


type Run = list[Turn]


# --- the home ----------------------------------------------------------------


class BenchLight(LightEntity):
    """An on/off light."""

    _attr_color_mode = ColorMode.ONOFF
    _attr_supported_color_modes = {ColorMode.ONOFF}
    _attr_should_poll = False

    def __init__(self, name: str, unique_id: str) -> None:
        """Name the light; it starts off."""
        self._attr_name = name
        self._attr_unique_id = unique_id
        self._attr_is_on = False

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Turn the light on."""
        self._attr_is_on = True
        self.async_write_ha_state()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Turn the light off."""
        self._attr_is_on = False
        self.async_write_ha_state()


class BenchSensor(SensorEntity):
    """A temperature sensor."""

    _attr_device_class = SensorDeviceClass.TEMPERATURE
    _attr_native_unit_of_measurement = UnitOfTemperature.CELSIUS
    _attr_should_poll = False

    def __init__(self, name: str, unique_id: str, value: float) -> None:
        """Name the sensor and give it a reading."""
        self._attr_name = name
        self._attr_unique_id = unique_id
        self._attr_native_value = value


async def async_setup_home(hass: HomeAssistant, count: int) -> None:
    """Set up Assist and `count` exposed entities, half lights, half sensors."""
    for domain in ("homeassistant", "intent", "llm", "conversation"):
        assert await async_setup_component(hass, domain, {})
    lights: list[BenchLight] = []
    sensors: list[BenchSensor] = []
    placed: list[tuple[LightEntity | SensorEntity, str]] = []
    for index in range(count):
        area = AREAS[(index // 2) % len(AREAS)]
        if index % 2 == 0:
            name = "Kitchen light" if index == 0 else f"{area} light {index}"
            light = BenchLight(name, f"bench_light_{index}")
            lights.append(light)
            placed.append((light, area))
        else:
            area = "Living room" if index == 1 else area
            name = (
                "Living room temperature"
                if index == 1
                else f"{area} temperature {index}"
            )
            sensor = BenchSensor(name, f"bench_sensor_{index}", 18 + index % 70 / 10)
            sensors.append(sensor)
            placed.append((sensor, area))
    setup_test_component_platform(hass, "light", lights)
    setup_test_component_platform(hass, "sensor", sensors)
    assert await async_setup_component(hass, "light", {"light": {"platform": "test"}})
    assert await async_setup_component(hass, "sensor", {"sensor": {"platform": "test"}})
    await hass.async_block_till_done()
    areas = ar.async_get(hass)
    area_ids = {name: areas.async_create(name).id for name in AREAS}
    entities = er.async_get(hass)
    for entity, area in placed:
        entities.async_update_entity(entity.entity_id, area_id=area_ids[area])
        async_expose_entity(hass, conversation.DOMAIN, entity.entity_id, True)
    await hass.async_block_till_done()
    assert hass.states.get(KITCHEN_LIGHT) is not None


# --- the two agents ------------------------------------------------------------


def _agent_id(hass: HomeAssistant, entry: ConfigEntry) -> str:
    """Return the entity id of the entry's conversation agent."""
    [agent] = [
        entity.entity_id
        for entity in er.async_entries_for_config_entry(
            er.async_get(hass), entry.entry_id
        )
        if entity.domain == conversation.DOMAIN
    ]
    return agent


async def async_setup_agents(hass: HomeAssistant, base_url: str) -> dict[str, str]:
    """Set up both integrations on the same server and model; return agent ids."""
    # Both integrations name these options the same.
    agent = {
        ours_const.CONF_CHAT_MODEL: MODEL,
        CONF_PROMPT: PROMPT,
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
    }
    ours = MockConfigEntry(
        domain=ours_const.DOMAIN,
        title="Benchmark",
        data={
            ours_const.CONF_PROVIDER: PROVIDER_CUSTOM,
            ours_const.CONF_BASE_URL: base_url,
        },
        subentries_data=[
            ConfigSubentryData(
                data={ours_const.CONF_RECOMMENDED: True, **agent},
                subentry_type=ours_const.SUBENTRY_CONVERSATION,
                title="Benchmark ours",
                unique_id=None,
            )
        ],
    )
    core = MockConfigEntry(
        domain=core_const.DOMAIN,
        title=base_url,
        data={core_const.CONF_BASE_URL: base_url, core_const.CONF_STREAMING: True},
        subentries_data=[
            ConfigSubentryData(
                data={core_const.CONF_RECOMMENDED: True, **agent},
                subentry_type="conversation",
                title="Benchmark core",
                unique_id=None,
            )
        ],
    )
    agents: dict[str, str] = {}
    for name, entry in (("ours", ours), ("core", core)):
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        agents[name] = _agent_id(hass, entry)
    return agents


# --- the simulator in its own process ------------------------------------------


@pytest.fixture
def sim_url() -> Generator[str]:
    """Start `python -m bench.sim_server`; yield its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.sim_server"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http"):
            raise RuntimeError(f"The simulator did not start: {url!r}")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


class SimControl:
    """The benchmark routes of bench/sim_server.py."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str) -> None:
        """Talk to the server behind `base_url`."""
        self._session = session
        self._root = base_url.removesuffix("/v1")
        self._seen = 0

    async def async_enqueue_live_context(self) -> None:
        """Make the model's next answers a call of GetLiveContext, then a sentence."""
        await self._async_enqueue(
            sse_tool_calls([(*LIVE_CONTEXT_CALL, LIVE_CONTEXT_ARGS)])
        )
        await self._async_enqueue(sse_text(LIVE_CONTEXT_ANSWER))

    async def _async_enqueue(self, sse: list[dict[str, Any]]) -> None:
        """Queue one streamed chat answer."""
        async with self._session.post(
            f"{self._root}/bench/enqueue",
            json={"path": "/chat/completions", "sse": sse},
        ) as response:
            response.raise_for_status()

    async def async_new_chat_requests(self) -> tuple[list[bytes], list[int]]:
        """Return the chat request bodies received since the last call, and ports."""
        async with self._session.get(
            f"{self._root}/bench/requests", params={"since": str(self._seen)}
        ) as response:
            response.raise_for_status()
            data: dict[str, Any] = await response.json()
        self._seen = int(data["next"])
        chat = [
            item
            for item in data["requests"]
            if item["method"] == "POST" and item["path"].endswith("/chat/completions")
        ]
        return [base64.b64decode(item["body"]) for item in chat], [
            int(item["peer"]) for item in chat
        ]


# --- one conversation ------------------------------------------------------------


async def async_converse(
    hass: HomeAssistant,
    control: SimControl,
    agent_id: str,
    profiler: cProfile.Profile | None = None,
) -> Run:
    """Hold the 5-turn conversation with one agent; measure each turn."""
    conversation_id: str | None = None
    run: Run = []
    for spec in TURNS:
        if spec.live_context:
            await control.async_enqueue_live_context()
        if profiler is not None:
            profiler.enable()
        wall = time.perf_counter()
        cpu = time.process_time()
        result = await conversation.async_converse(
            hass, spec.text, conversation_id, Context(), agent_id=agent_id
        )
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
        if profiler is not None:
            profiler.disable()
        speech = result.response.speech.get("plain", {}).get("speech")
        if result.response.response_type is intent.IntentResponseType.ERROR:
            raise AssertionError(f"{agent_id} failed on {spec.text!r}: {speech}")
        if spec.light_after is not None:
            state = hass.states.get(KITCHEN_LIGHT)
            assert state is not None
            assert state.state == spec.light_after, (agent_id, spec.text, speech)
        conversation_id = result.conversation_id
        run.append(Turn(cpu, wall, *await control.async_new_chat_requests()))
    return run


# --- figures -----------------------------------------------------------------------


def serialize(item: Any) -> bytes:
    """Serialize one prompt item the one way this benchmark compares them."""
    return json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode()


def rendered_items(body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Return the rendered prompt: the tools array, then each message."""
    items: list[tuple[str, bytes]] = []
    if "tools" in body:
        items.append(("tools", serialize(body["tools"])))
    items.extend(
        (f"messages[{index}] ({message.get('role')})", serialize(message))
        for index, message in enumerate(body["messages"])
    )
    return items


def common_prefix(left: bytes, right: bytes) -> int:
    """Return the length of the longest common prefix (binary search)."""
    low, high = 0, min(len(left), len(right))
    while low < high:
        middle = (low + high + 1) // 2
        if left[:middle] == right[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True, slots=True)
class Prefix:
    """How much of the previous request's prompt the next one repeats."""

    shared: int
    total: int
    where: str | None = None
    before: str = ""
    after: str = ""

    @property
    def share(self) -> float:
        """Return the repeated share, 0 to 1."""
        return self.shared / self.total if self.total else 1.0


def prefix(previous: dict[str, Any], current: dict[str, Any]) -> Prefix:
    """Compare the rendered prompts of two consecutive requests."""
    items = rendered_items(previous)
    old = b"".join(data for _, data in items)
    new = b"".join(data for _, data in rendered_items(current))
    shared = common_prefix(old, new)
    if shared == len(old):
        return Prefix(shared, len(old))
    offset = 0
    where = ""
    for label, data in items:
        if offset + len(data) > shared:
            where = f"{label}, byte {shared - offset} of {len(data)}"
            break
        offset += len(data)
    start = max(0, shared - 30)
    return Prefix(
        shared,
        len(old),
        where,
        old[start : shared + 50].decode(errors="replace"),
        new[start : shared + 50].decode(errors="replace"),
    )


def _ratio(ours: float, core: float) -> str:
    return f"{ours / core:.2f}" if core else "-"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One request of a conversation, with its prefix share."""

    turn: int
    round: int
    size: int
    prefix: Prefix | None


def request_rows(run: Run) -> list[RequestRow]:
    """Return the requests of a run, each compared with the one before."""
    rows: list[RequestRow] = []
    previous: dict[str, Any] | None = None
    for turn_number, turn in enumerate(run, start=1):
        for round_number, body in enumerate(turn.bodies, start=1):
            current: dict[str, Any] = json.loads(body)
            shared = prefix(previous, current) if previous is not None else None
            rows.append(RequestRow(turn_number, round_number, len(body), shared))
            previous = current
    return rows


def exposed_counts(run: Run) -> tuple[int, int]:
    """Count entities in the static context and in the GetLiveContext result."""
    first: dict[str, Any] = json.loads(run[0].bodies[0])
    system = str(first["messages"][0]["content"])
    static = system.count("\n- names: ") + system.startswith("- names: ")
    last: dict[str, Any] = json.loads(run[1].bodies[-1])
    live = 0
    for message in last["messages"]:
        if message.get("role") == "tool":
            live = max(live, str(message.get("content")).count("- names: "))
    return static, live


def _median_ms(values: Iterable[float]) -> float:
    return statistics.median(values) * 1000


def report(count: int, runs: dict[str, list[Run]]) -> str:
    """Format the figures of one entity count."""
    last = {name: runs[name][-1] for name in NAMES}
    rows = {name: request_rows(last[name]) for name in NAMES}
    exposed = {name: exposed_counts(last[name]) for name in NAMES}
    cpu_turn = {
        name: [
            _median_ms(run[index].cpu for run in runs[name])
            for index in range(len(TURNS))
        ]
        for name in NAMES
    }
    # Per conversation, its CPU time over its turns; the median of those.
    cpu_all = {
        name: _median_ms(sum(turn.cpu for turn in run) / len(run) for run in runs[name])
        for name in NAMES
    }
    wall_all = {
        name: _median_ms(
            sum(turn.wall for turn in run) / len(run) for run in runs[name]
        )
        for name in NAMES
    }
    lines = [
        "",
        (
            f"=== {count} exposed entities "
            f"({count - count // 2} lights, {count // 2} temperature sensors, 10 areas)"
        ),
        (
            f"Home Assistant {HA_VERSION}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs ({platform.machine()}); {REPEAT} measured "
            "conversations per integration after 1 warm-up, alternating; "
            "simulator in its own process"
        ),
        *(f"{name} = {LABELS[name]}" for name in NAMES),
        "Turns: "
        + "; ".join(f"{index} {spec.text!r}" for index, spec in enumerate(TURNS, 1)),
        (
            "  (tool rounds: 1 and 4 call intent__HassTurnOn/Off, the simulator's own "
            f"answer; 2 calls homeassistant__GetLiveContext {LIVE_CONTEXT_ARGS}, then "
            f"says {LIVE_CONTEXT_ANSWER!r}, both scripted)"
        ),
        "Entities in the request: "
        + ", ".join(
            f"{name} {exposed[name][0]} in the system prompt's static context, "
            f"{exposed[name][1]} sensors in the GetLiveContext result"
            for name in NAMES
        ),
        "",
        "Per turn               requests     request bytes (sum)       CPU ms (median)",
        " # turn               ours core     ours     core ours/core    ours    core ours/core",
    ]
    total = dict.fromkeys(NAMES, 0)
    for index, spec in enumerate(TURNS):
        count_of = {name: len(last[name][index].bodies) for name in NAMES}
        size = {name: sum(map(len, last[name][index].bodies)) for name in NAMES}
        for name in NAMES:
            total[name] += size[name]
        lines.append(
            f"{index + 1:>2} {spec.label:<18} {count_of['ours']:>4} {count_of['core']:>4} "
            f"{size['ours']:>8} {size['core']:>8} {_ratio(size['ours'], size['core']):>9} "
            f"{cpu_turn['ours'][index]:>7.1f} {cpu_turn['core'][index]:>7.1f} "
            f"{_ratio(cpu_turn['ours'][index], cpu_turn['core'][index]):>9}"
        )
    lines.append(
        f"   {'all turns':<18} {len(rows['ours']):>4} {len(rows['core']):>4} "
        f"{total['ours']:>8} {total['core']:>8} {_ratio(total['ours'], total['core']):>9} "
        f"{cpu_all['ours']:>7.1f} {cpu_all['core']:>7.1f} "
        f"{_ratio(cpu_all['ours'], cpu_all['core']):>9}   (CPU: median over conversations of the mean per turn)"
    )
    lines += [
        (
            f"   wall ms per turn (same median): ours {wall_all['ours']:.1f}, "
            f"core {wall_all['core']:.1f}"
        ),
        (
            "   TCP connections per conversation (distinct client ports over its "
            f"{len(rows['ours'])} requests): "
            + ", ".join(
                f"{name} {len({peer for turn in last[name] for peer in turn.peers})}"
                for name in NAMES
            )
        ),
        "",
        "Per request   request bytes               prefix share of the previous request",
        " # turn.round   ours     core ours/core       ours     core ours/core",
    ]
    for number, (mine, theirs) in enumerate(
        zip(rows["ours"], rows["core"], strict=False), start=1
    ):
        kind = (
            ""
            if number == 1
            else "  (tool round)"
            if mine.round > 1
            else "  (new turn)"
        )
        share_ours = mine.prefix.share if mine.prefix else None
        share_core = theirs.prefix.share if theirs.prefix else None
        lines.append(
            f"{number:>2} {mine.turn}.{mine.round:<8} {mine.size:>7} {theirs.size:>8} "
            f"{_ratio(mine.size, theirs.size):>9} {_pct(share_ours):>10} "
            f"{_pct(share_core):>8} "
            f"{_ratio(share_ours or 0, share_core or 0) if number > 1 else '-':>9}{kind}"
        )
    lines += ["", "Targets"]
    for name in NAMES:
        later = [row.prefix.share for row in rows[name] if row.prefix and row.turn >= 2]
        low = min(later) if later else 1.0
        lines.append(
            f"  prefix share from turn 2 on, {name}: min {_pct(low)} "
            f"({'met' if low >= 1.0 else 'NOT met'}; target 100%)"
        )
    lines.append(
        f"  CPU per turn: ours {cpu_all['ours']:.1f} ms, core {cpu_all['core']:.1f} ms, "
        f"ours/core {_ratio(cpu_all['ours'], cpu_all['core'])} "
        f"({'met' if cpu_all['ours'] <= cpu_all['core'] else 'NOT met'}; "
        "target <= 1.00)"
    )
    mismatches = [
        (name, row)
        for name in NAMES
        for row in rows[name]
        if row.prefix is not None and row.prefix.where is not None
    ]
    if mismatches:
        lines += ["", "Where a request stops repeating the previous one"]
        for name, row in mismatches:
            assert row.prefix is not None
            lines += [
                (
                    f"  {name} {row.turn}.{row.round}: {_pct(row.prefix.share)} at "
                    f"{row.prefix.where}"
                ),
                f"    previous: {row.prefix.before!r}",
                f"    this one: {row.prefix.after!r}",
            ]
    return "\n".join(lines)


# --- the benchmark ------------------------------------------------------------------


@pytest.mark.parametrize("entity_count", ENTITY_COUNTS)
async def bench_conversation(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    sim_url: str,
    entity_count: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run the conversation with both agents and print the figures."""
    # The harness runs the loop in debug mode; Home Assistant does not.
    asyncio.get_running_loop().set_debug(False)
    # Quiet for both: no log line per request (the harness logs INFO).
    logging.getLogger().setLevel(logging.WARNING)
    await async_setup_home(hass, entity_count)
    agents = await async_setup_agents(hass, sim_url)
    runs: dict[str, list[Run]] = {name: [] for name in NAMES}
    async with aiohttp.ClientSession() as session:
        control = SimControl(session, sim_url)
        await control.async_new_chat_requests()  # skip the setup requests
        for name in NAMES:  # warm-up: imports, caches, first connections
            await async_converse(hass, control, agents[name])
        for repetition in range(REPEAT):
            order = NAMES if repetition % 2 == 0 else NAMES[::-1]
            for name in order:
                gc.collect()
                runs[name].append(await async_converse(hass, control, agents[name]))
        if PROFILE_DIR:
            for name in NAMES:
                profiler = cProfile.Profile()
                for _ in range(REPEAT):
                    gc.collect()
                    await async_converse(hass, control, agents[name], profiler)
                path = Path(PROFILE_DIR) / f"conversation-{entity_count}-{name}.prof"
                path.parent.mkdir(parents=True, exist_ok=True)
                profiler.dump_stats(path)
    if DUMP_DIR:
        for name in NAMES:
            bodies = [
                json.loads(body) for turn in runs[name][-1] for body in turn.bodies
            ]
            path = Path(DUMP_DIR) / f"conversation-{entity_count}-{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(bodies, indent=1, ensure_ascii=False))
    with capsys.disabled():
        print(report(entity_count, runs), flush=True)
