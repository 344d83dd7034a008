"""The home-control benchmark, run by bench/home_control.py through pytest.

Not a test: its function is named `bench_*` and bench/home_control.py collects
it with `-o python_functions=bench_*`; `scripts/test` only collects tests/.
The home, the commands and the verdicts are bench/home.py; here they become
entities of Home Assistant's own platforms (their services act at once, so
that a state is final when the turn ends), and the two agents meet the model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator, Mapping
import contextlib
from dataclasses import asdict
import json
import logging
import os
from pathlib import Path
import platform
import subprocess
import tempfile
import time
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.components.binary_sensor import (
    BinarySensorDeviceClass,
    BinarySensorEntity,
)
from homeassistant.components.climate import (
    ClimateEntity,
    ClimateEntityFeature,
    HVACMode,
)
from homeassistant.components.cover import (
    CoverDeviceClass,
    CoverEntity,
    CoverEntityFeature,
)
from homeassistant.components.fan import FanEntity, FanEntityFeature
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.light import ATTR_BRIGHTNESS, ColorMode, LightEntity
from homeassistant.components.llama_cpp import const as core_const
from homeassistant.components.lock import LockEntity
from homeassistant.components.media_player import (
    MediaPlayerEntity,
    MediaPlayerEntityFeature,
    MediaPlayerState,
)
from homeassistant.components.sensor import SensorDeviceClass, SensorEntity
from homeassistant.components.switch import SwitchEntity
from homeassistant.components.todo import (
    TodoItem,
    TodoItemStatus,
    TodoListEntity,
    TodoListEntityFeature,
)
from homeassistant.components.vacuum import (
    StateVacuumEntity,
    VacuumActivity,
    VacuumEntityFeature,
)
from homeassistant.components.valve import ValveEntity, ValveEntityFeature
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import (
    CONF_LLM_HASS_API,
    CONF_PROMPT,
    UnitOfTemperature,
    __version__ as HA_VERSION,
)
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import area_registry as ar, entity_registry as er, llm
from homeassistant.helpers.entity import Entity
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import (  # type: ignore[import-untyped]
    MockConfigEntry,
    setup_test_component_platform,
)

from bench._conversation_pytest import _agent_id
from bench.home import (
    ANSWER_TOKENS,
    AREAS,
    COMMANDS,
    DEVICES,
    LEAST_COMMANDS,
    TEMPERATURE,
    Command,
    Device,
    Outcome,
    command_line,
    judge,
    select,
    start_states,
    summary,
    targets,
    unspeakable,
)
from conformance import servers
from conformance.recorder import RecordingProxy
from custom_components.openai_compatible import const as ours_const

MODELS = os.environ.get("BENCH_MODELS", "0.5b,1.5b").split(",")
AGENTS = tuple(os.environ.get("BENCH_AGENTS", "ours,core").split(","))
LIMIT = int(os.environ["BENCH_LIMIT"]) if os.environ.get("BENCH_LIMIT") else None
PATTERN = os.environ.get("BENCH_COMMANDS") or None
REPORT = Path(
    os.environ.get("BENCH_REPORT") or Path(tempfile.gettempdir()) / "home_control.json"
)
WHEEL_MODELS = {"0.5b": "qwen-0.5b", "1.5b": "qwen-1.5b"}
# A cap on a command's time, the same for both agents: a model that loops
# costs at most this.
COMMAND_SECONDS = 150.0
SERVER_SECONDS = 600.0
# One slot per agent, each its own window, so that neither evicts the
# other's prompt: llama-server gives a request the slot whose cached prompt
# shares most with it.
SLOTS = 2
WINDOW = servers.INSTRUCT_CONTEXT
# The proxy records an exchange just after the client has read its end.
RECORDED_AFTER = 0.3


# --- the home's entities ----------------------------------------------------------


class _Device(Entity):
    """An entity of the home: set to a state of bench/home.py at once."""

    _attr_should_poll = False

    def __init__(self, device: Device) -> None:
        """Name the entity after the device."""
        self._attr_name = device.name
        self._attr_unique_id = f"home_{device.entity_id}"

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Take a state as bench/home.py writes it (not yet written to Home Assistant)."""
        raise NotImplementedError


class HomeLight(_Device, LightEntity):
    """A dimmable light."""

    _attr_color_mode = ColorMode.BRIGHTNESS
    _attr_supported_color_modes = {ColorMode.BRIGHTNESS}

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set on or off, and the brightness in percent."""
        self._attr_is_on = fields["state"] == "on"
        percent = fields.get("brightness")
        self._attr_brightness = None if percent is None else round(percent * 2.55)

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Turn on, at the brightness asked for or the last one."""
        self._attr_is_on = True
        self._attr_brightness = kwargs.get(
            ATTR_BRIGHTNESS, self._attr_brightness or 255
        )
        self.async_write_ha_state()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Turn off."""
        self._attr_is_on = False
        self.async_write_ha_state()


class HomeSwitch(_Device, SwitchEntity):
    """A switch."""

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set on or off."""
        self._attr_is_on = fields["state"] == "on"

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Turn on."""
        self._attr_is_on = True
        self.async_write_ha_state()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Turn off."""
        self._attr_is_on = False
        self.async_write_ha_state()


class HomeCover(_Device, CoverEntity):
    """A cover that moves at once: with a position, or only open and closed."""

    def __init__(self, device: Device) -> None:
        """Take the device class; a position where the device has one."""
        super().__init__(device)
        self._attr_device_class = CoverDeviceClass(device.device_class)
        self._attr_supported_features = (
            CoverEntityFeature.OPEN | CoverEntityFeature.CLOSE
        )
        self._positioned = "position" in device.fields
        if self._positioned:
            self._attr_supported_features |= (
                CoverEntityFeature.SET_POSITION | CoverEntityFeature.STOP
            )

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set open or closed, and the position."""
        self._attr_is_closed = fields["state"] == "closed"
        position = fields.get("position")
        if self._positioned:
            position = 0 if self._attr_is_closed and position is None else position
        self._attr_current_cover_position = position

    def _move(self, position: int) -> None:
        self._attr_is_closed = position == 0
        if self._positioned:
            self._attr_current_cover_position = position
        self.async_write_ha_state()

    async def async_open_cover(self, **kwargs: Any) -> None:
        """Open all the way."""
        self._move(100)

    async def async_close_cover(self, **kwargs: Any) -> None:
        """Close."""
        self._move(0)

    async def async_set_cover_position(self, **kwargs: Any) -> None:
        """Move to a position."""
        self._move(int(kwargs["position"]))

    async def async_stop_cover(self, **kwargs: Any) -> None:
        """Stop (it is never moving)."""


class HomeLock(_Device, LockEntity):
    """A door lock."""

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set locked or unlocked."""
        self._attr_is_locked = fields["state"] == "locked"

    async def async_lock(self, **kwargs: Any) -> None:
        """Lock."""
        self._attr_is_locked = True
        self.async_write_ha_state()

    async def async_unlock(self, **kwargs: Any) -> None:
        """Unlock."""
        self._attr_is_locked = False
        self.async_write_ha_state()


class HomeFan(_Device, FanEntity):
    """A fan with a speed in percent; on when its speed is above 0."""

    _attr_supported_features = (
        FanEntityFeature.SET_SPEED
        | FanEntityFeature.TURN_ON
        | FanEntityFeature.TURN_OFF
    )

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set the speed."""
        self._attr_percentage = fields["percentage"]

    async def async_turn_on(
        self,
        percentage: int | None = None,
        preset_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Turn on at the speed asked for, else full."""
        await self.async_set_percentage(percentage or 100)

    async def async_set_percentage(self, percentage: int) -> None:
        """Set the speed."""
        self._attr_percentage = percentage
        self.async_write_ha_state()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Stop."""
        await self.async_set_percentage(0)


class HomeThermostat(_Device, ClimateEntity):
    """A heating thermostat."""

    _attr_hvac_modes = [HVACMode.HEAT, HVACMode.OFF]
    _attr_native_temperature_unit = UnitOfTemperature.CELSIUS
    _attr_target_temperature_step = 0.5
    _attr_supported_features = (
        ClimateEntityFeature.TARGET_TEMPERATURE
        | ClimateEntityFeature.TURN_ON
        | ClimateEntityFeature.TURN_OFF
    )

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set the mode, the target and the room's temperature."""
        self._attr_hvac_mode = HVACMode(fields["state"])
        self._attr_native_target_temperature = fields["temperature"]
        self._attr_native_current_temperature = fields["current_temperature"]

    async def async_set_temperature(self, **kwargs: Any) -> None:
        """Set the target."""
        self._attr_native_target_temperature = kwargs["temperature"]
        self.async_write_ha_state()

    async def async_set_hvac_mode(self, hvac_mode: HVACMode) -> None:
        """Heat, or off."""
        self._attr_hvac_mode = hvac_mode
        self.async_write_ha_state()


class HomePlayer(_Device, MediaPlayerEntity):
    """A speaker or TV that plays, pauses and sets its volume."""

    _attr_supported_features = (
        MediaPlayerEntityFeature.PAUSE
        | MediaPlayerEntityFeature.PLAY
        | MediaPlayerEntityFeature.STOP
        | MediaPlayerEntityFeature.VOLUME_SET
    )

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set playing or paused, and the volume in percent."""
        self._attr_state = MediaPlayerState(fields["state"])
        self._attr_volume_level = fields["volume"] / 100

    def _set(self, state: MediaPlayerState) -> None:
        self._attr_state = state
        self.async_write_ha_state()

    async def async_media_play(self) -> None:
        """Play."""
        self._set(MediaPlayerState.PLAYING)

    async def async_media_pause(self) -> None:
        """Pause."""
        self._set(MediaPlayerState.PAUSED)

    async def async_media_stop(self) -> None:
        """Stop."""
        self._set(MediaPlayerState.IDLE)

    async def async_set_volume_level(self, volume: float) -> None:
        """Set the volume, 0 to 1."""
        self._attr_volume_level = volume
        self.async_write_ha_state()


class HomeVacuum(_Device, StateVacuumEntity):
    """A robot vacuum with a dock."""

    _attr_supported_features = (
        VacuumEntityFeature.START
        | VacuumEntityFeature.STOP
        | VacuumEntityFeature.PAUSE
        | VacuumEntityFeature.RETURN_HOME
        | VacuumEntityFeature.STATE
    )

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set what it is doing."""
        self._attr_activity = VacuumActivity(fields["state"])

    def _set(self, activity: VacuumActivity) -> None:
        self._attr_activity = activity
        self.async_write_ha_state()

    async def async_start(self) -> None:
        """Start cleaning."""
        self._set(VacuumActivity.CLEANING)

    async def async_pause(self) -> None:
        """Pause."""
        self._set(VacuumActivity.PAUSED)

    async def async_stop(self, **kwargs: Any) -> None:
        """Stop where it is."""
        self._set(VacuumActivity.IDLE)

    async def async_return_to_base(self, **kwargs: Any) -> None:
        """Go back to the dock."""
        self._set(VacuumActivity.RETURNING)


class HomeValve(_Device, ValveEntity):
    """A water valve that opens and closes."""

    _attr_reports_position = False
    _attr_supported_features = ValveEntityFeature.OPEN | ValveEntityFeature.CLOSE

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set open or closed."""
        self._attr_is_closed = fields["state"] == "closed"

    async def async_open_valve(self) -> None:
        """Open."""
        self._attr_is_closed = False
        self.async_write_ha_state()

    async def async_close_valve(self) -> None:
        """Close."""
        self._attr_is_closed = True
        self.async_write_ha_state()


class HomeList(_Device, TodoListEntity):
    """A to-do list."""

    _attr_supported_features = (
        TodoListEntityFeature.CREATE_TODO_ITEM
        | TodoListEntityFeature.UPDATE_TODO_ITEM
        | TodoListEntityFeature.DELETE_TODO_ITEM
    )

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set the open items."""
        self._attr_todo_items = [
            TodoItem(summary, str(index), TodoItemStatus.NEEDS_ACTION)
            for index, summary in enumerate(fields["items"])
        ]

    def open_items(self) -> tuple[str, ...]:
        """Return the summaries of the items not done yet."""
        return tuple(
            item.summary or ""
            for item in self._attr_todo_items or []
            if item.status == TodoItemStatus.NEEDS_ACTION
        )

    async def async_create_todo_item(self, item: TodoItem) -> None:
        """Add an item."""
        items = self._attr_todo_items or []
        item.uid = item.uid or str(len(items) + 100)
        self._attr_todo_items = [*items, item]
        self.async_write_ha_state()

    async def async_update_todo_item(self, item: TodoItem) -> None:
        """Replace an item."""
        self._attr_todo_items = [
            item if old.uid == item.uid else old for old in self._attr_todo_items or []
        ]
        self.async_write_ha_state()

    async def async_delete_todo_items(self, uids: list[str]) -> None:
        """Remove items."""
        self._attr_todo_items = [
            old for old in self._attr_todo_items or [] if old.uid not in uids
        ]
        self.async_write_ha_state()


class HomeSensor(_Device, SensorEntity):
    """A sensor with a fixed reading."""

    def __init__(self, device: Device) -> None:
        """Take the reading, device class and unit."""
        super().__init__(device)
        self._attr_device_class = SensorDeviceClass(device.device_class)
        self._attr_native_unit_of_measurement = device.unit

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set the reading."""
        value = fields["state"]
        self._attr_native_value = float(value) if "." in value else int(value)


class HomeBinarySensor(_Device, BinarySensorEntity):
    """A window or motion sensor."""

    def __init__(self, device: Device) -> None:
        """Take the device class."""
        super().__init__(device)
        self._attr_device_class = BinarySensorDeviceClass(device.device_class)

    def apply(self, fields: Mapping[str, Any]) -> None:
        """Set on or off."""
        self._attr_is_on = fields["state"] == "on"


KINDS: dict[str, type[_Device]] = {
    "light": HomeLight,
    "switch": HomeSwitch,
    "cover": HomeCover,
    "lock": HomeLock,
    "fan": HomeFan,
    "climate": HomeThermostat,
    "media_player": HomePlayer,
    "vacuum": HomeVacuum,
    "valve": HomeValve,
    "todo": HomeList,
    "sensor": HomeSensor,
    "binary_sensor": HomeBinarySensor,
}


async def async_setup_home(hass: HomeAssistant) -> dict[str, _Device]:
    """Set up Assist and the home: areas, entities, aliases, all exposed."""
    for domain in ("homeassistant", "intent", "llm", "conversation"):
        assert await async_setup_component(hass, domain, {})
    home = {device.entity_id: KINDS[device.domain](device) for device in DEVICES}
    for entity, device in zip(home.values(), DEVICES, strict=True):
        entity.apply(device.initial())
    for domain in KINDS:
        entities = [home[d.entity_id] for d in DEVICES if d.domain == domain]
        setup_test_component_platform(hass, domain, entities)
        assert await async_setup_component(hass, domain, {domain: {"platform": "test"}})
    await hass.async_block_till_done()
    areas = ar.async_get(hass)
    area_ids = {name: areas.async_create(name).id for name in AREAS}
    registry = er.async_get(hass)
    for device in DEVICES:
        assert home[device.entity_id].entity_id == device.entity_id
        registry.async_update_entity(
            device.entity_id,
            area_id=area_ids[device.area] if device.area else None,
            aliases=[er.COMPUTED_NAME, *device.aliases],
        )
        async_expose_entity(hass, conversation.DOMAIN, device.entity_id, True)
    await hass.async_block_till_done()
    return home


def snapshot(hass: HomeAssistant, home: Mapping[str, _Device]) -> dict[str, Any]:
    """Return every device's state as bench/home.py writes it, from Home Assistant."""
    states: dict[str, Any] = {}
    for device in DEVICES:
        state = hass.states.get(device.entity_id)
        assert state is not None
        attributes = state.attributes
        fields: dict[str, Any] = {"state": state.state}
        for name in device.fields:
            if name == "brightness":
                value = attributes.get(ATTR_BRIGHTNESS)
                fields[name] = None if value is None else round(value / 2.55)
            elif name == "position":
                fields[name] = attributes.get("current_position")
            elif name == "volume":
                level = attributes.get("volume_level")
                fields[name] = None if level is None else round(level * 100)
            elif name == "items":
                entity = home[device.entity_id]
                assert isinstance(entity, HomeList)
                fields[name] = entity.open_items()
            else:
                fields[name] = attributes.get(name)
        states[device.entity_id] = fields
    return states


async def async_reset(
    hass: HomeAssistant, home: Mapping[str, _Device], command: Command
) -> dict[str, Any]:
    """Put every device in its state before the command; return that state."""
    wanted = start_states(command)
    for entity_id, entity in home.items():
        entity.apply(wanted[entity_id])
        entity.async_write_ha_state()
    await hass.async_block_till_done()
    before = snapshot(hass, home)
    # The entities must show what bench/home.py says they start from.
    assert before == wanted, {
        k: (before[k], v) for k, v in wanted.items() if before[k] != v
    }
    return before


# --- the server and the agents --------------------------------------------------------


@contextlib.contextmanager
def _serving(model: str, work: Path) -> Iterator[RecordingProxy]:
    """Run llama-server with the model, one slot per agent, behind a proxy."""
    configuration = servers.Configuration(
        f"home_control_{model}",
        "llama-server",
        f"b{servers.LLAMA_SERVER_BUILD}",
        f"--jinja, {SLOTS} slots of {WINDOW}",
        model=WHEEL_MODELS[model],  # type: ignore[arg-type]
        server_args=("--parallel", str(SLOTS)),
        context=SLOTS * WINDOW,
    )
    port = _free_port()
    output = work / f"{configuration.name}.out"
    command = servers.llama_server_command(
        configuration, servers.model_file(configuration, Path()), port
    )
    with output.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    proxy = RecordingProxy(configuration.name, f"http://127.0.0.1:{port}")
    proxy.compact_requests = False
    try:
        servers.wait_until_serving(proxy.upstream, [process], output)
        proxy.start()
        yield proxy
    finally:
        proxy.stop()
        process.terminate()
        process.wait(30)


def _free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def proxy(
    request: pytest.FixtureRequest, socket_enabled: None
) -> Generator[RecordingProxy]:
    """Start llama-server with the model of the parameter, outside the event loop."""
    if not servers.LLAMA_SERVER.installed():
        log = servers.CACHE / f"{servers.LLAMA_SERVER.folder.name}.log"
        print(f"building llama-server (log: {log})", flush=True)
        servers.LLAMA_SERVER.install(log)
    work = Path(tempfile.mkdtemp(prefix="bench-home-control-"))
    print(f"server log in {work}", flush=True)
    with _serving(request.param, work) as running:
        yield running


async def async_add_agents(
    hass: HomeAssistant, proxy: RecordingProxy, alias: str
) -> dict[str, str]:
    """Add ours and core's agent on the same server, model and options."""
    base_url = f"{proxy.url}/v1"
    agent = {
        ours_const.CONF_CHAT_MODEL: alias,
        CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
        ours_const.CONF_MAX_TOKENS: ANSWER_TOKENS,
        ours_const.CONF_TEMPERATURE: TEMPERATURE,
        ours_const.CONF_TOP_P: 1.0,
    }
    entries = {
        "ours": MockConfigEntry(
            domain=ours_const.DOMAIN,
            title="ours",
            data={
                ours_const.CONF_PROVIDER: "llama_cpp",
                ours_const.CONF_BASE_URL: base_url,
            },
            # As long as core's client waits: a cold prompt takes minutes.
            options={ours_const.CONF_TIMEOUT: SERVER_SECONDS},
            subentries_data=[
                ConfigSubentryData(
                    data={ours_const.CONF_RECOMMENDED: False, **agent},
                    subentry_type=ours_const.SUBENTRY_CONVERSATION,
                    title="ours",
                    unique_id=None,
                )
            ],
        ),
        "core": MockConfigEntry(
            domain=core_const.DOMAIN,
            title=base_url,
            data={core_const.CONF_BASE_URL: base_url, core_const.CONF_STREAMING: True},
            subentries_data=[
                ConfigSubentryData(
                    data={core_const.CONF_RECOMMENDED: False, **agent},
                    subentry_type="conversation",
                    title="core",
                    unique_id=None,
                )
            ],
        ),
    }
    agents: dict[str, str] = {}
    for name in AGENTS:
        entry = entries[name]
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        agents[name] = _agent_id(hass, entry)
    return agents


async def async_idle(proxy: RecordingProxy) -> None:
    """Wait until no slot is busy: a request cut at the time limit runs on a while.

    A request that found its agent's slot busy would take the other agent's
    slot, and throw away that agent's cached prompt.
    """
    deadline = time.monotonic() + COMMAND_SECONDS
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            async with session.get(f"{proxy.upstream}/slots") as response:
                slots = await response.json()
            if not any(slot.get("is_processing") for slot in slots):
                return
            await asyncio.sleep(0.5)


# --- one command --------------------------------------------------------------------


async def async_say(
    hass: HomeAssistant,
    home: Mapping[str, _Device],
    proxy: RecordingProxy,
    agent_id: str,
    command: Command,
) -> Outcome:
    """Say a command in a fresh conversation, every state reset; judge it."""
    await async_idle(proxy)
    before = await async_reset(hass, home, command)
    seen = len(proxy.exchanges)
    speech, timed_out = "", False
    started = time.monotonic()
    try:
        async with asyncio.timeout(COMMAND_SECONDS):
            result = await conversation.async_converse(
                hass, command.text, None, Context(), language="en", agent_id=agent_id
            )
        speech = str(result.response.speech.get("plain", {}).get("speech") or "")
    except TimeoutError:
        timed_out = True
    seconds = time.monotonic() - started
    await hass.async_block_till_done()
    # A request cut at the time limit is recorded once the server lets go.
    await async_idle(proxy)
    await asyncio.sleep(RECORDED_AFTER)
    after = snapshot(hass, home)
    chats = [
        e
        for e in proxy.since(seen)
        if e.method == "POST" and e.path.endswith("/chat/completions")
    ]
    verdict = judge(command, before, after, speech)
    why = "; ".join(
        filter(
            None,
            [
                f"timed out after {COMMAND_SECONDS:.0f} s" if timed_out else "",
                verdict.why,
            ],
        )
    )
    return Outcome(
        command=command.text,
        domain=command.domain,
        good=verdict.good,
        why=why,
        speech=speech,
        seconds=round(seconds, 2),
        rounds=len(chats),
        evaluated=sum(int((e.timings or {}).get("prompt_n", 0)) for e in chats),
        cached=sum(int((e.timings or {}).get("cache_n", 0)) for e in chats),
        unspeakable=unspeakable(speech),
        timed_out=timed_out,
        turn=(chats[-1].request or {}).get("messages", [])[1:] if chats else [],
    )


# --- the report ------------------------------------------------------------------------


def _alias(model: str) -> str:
    """Return the name the server lists the model under."""
    return servers.WHEEL_MODELS[WHEEL_MODELS[model]].name


def _header(model: str, count: int) -> list[str]:
    return [
        "",
        f"=== Home control: {_alias(model)} (Q4_K_M), {count} commands",
        (
            f"llama-server b{servers.LLAMA_SERVER_BUILD} --jinja --parallel {SLOTS} "
            f"-c {SLOTS * WINDOW}, Home Assistant {HA_VERSION}, Python "
            f"{platform.python_version()}, {os.cpu_count()} CPUs "
            f"({platform.machine()}); {len(DEVICES)} exposed entities; both agents: "
            f"Assist API, answers capped at {ANSWER_TOKENS} tokens, temperature "
            f"{TEMPERATURE}, {COMMAND_SECONDS:.0f} s per command at most; each "
            "command in a fresh conversation, every state reset before it"
        ),
    ]


def report(model: str, commands: list[Command], runs: dict[str, list[Outcome]]) -> str:
    """Return the figures of one model: per agent, ours minus core, the targets."""
    lines = _header(model, len(commands))
    for name, outcomes in runs.items():
        lines += summary(name, outcomes)
    if "ours" in runs and "core" in runs:
        lines.append("  ours minus core per group: " + _difference(runs))
    lines += ["", "Targets"]
    lines += [target.line() for target in targets(model, runs)]
    return "\n".join(lines)


def _difference(runs: dict[str, list[Outcome]]) -> str:
    groups: dict[str, int] = {}
    for name, sign in (("ours", 1), ("core", -1)):
        for outcome in runs[name]:
            groups[outcome.domain] = groups.get(outcome.domain, 0) + sign * outcome.good
    return ", ".join(f"{group} {gap:+d}" for group, gap in groups.items())


def _quiet() -> None:
    # The harness runs the loop in debug mode; Home Assistant does not.
    asyncio.get_running_loop().set_debug(False)
    logging.getLogger().setLevel(logging.WARNING)


# --- the benchmark ------------------------------------------------------------------


@pytest.mark.parametrize("proxy", MODELS, indirect=True)
async def bench_home_control(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    proxy: RecordingProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Both agents, command by command, on one model; print and save the figures."""
    _quiet()
    model = proxy.name.removeprefix("home_control_")
    commands = select(COMMANDS, PATTERN, LIMIT or LEAST_COMMANDS[model])
    home = await async_setup_home(hass)
    agents = await async_add_agents(hass, proxy, _alias(model))
    # Unmeasured: each agent's first prompt fills its slot's cache.
    for agent_id in agents.values():
        await conversation.async_converse(
            hass, "Hello", None, Context(), language="en", agent_id=agent_id
        )
    runs: dict[str, list[Outcome]] = {name: [] for name in agents}
    for number, command in enumerate(commands, start=1):
        # Who goes first alternates from one command to the next.
        order = list(agents) if number % 2 else list(agents)[::-1]
        for name in order:
            runs[name].append(await async_say(hass, home, proxy, agents[name], command))
        with capsys.disabled():
            print(
                command_line(
                    number,
                    runs["ours"][-1] if "ours" in runs else None,
                    runs["core"][-1] if "core" in runs else None,
                ),
                flush=True,
            )
    text = report(model, commands, runs)
    path = REPORT.with_name(f"{REPORT.stem}-{model}{REPORT.suffix}")
    path.write_text(
        json.dumps(
            {
                "model": model,
                "header": _header(model, len(commands)),
                "commands": [asdict(command) for command in commands],
                "runs": {
                    name: [asdict(o) for o in outcomes]
                    for name, outcomes in runs.items()
                },
                "targets": [asdict(t) for t in targets(model, runs)],
            },
            indent=1,
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    with capsys.disabled():
        print(f"{text}\n  report: {path}", flush=True)
