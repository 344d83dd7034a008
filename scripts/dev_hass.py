"""A real Home Assistant for development: its config folder and its HTTP API.

Used by ``scripts/develop`` (through the command line below), and imported by
the end-to-end test in ``tests/e2e/`` and by ``scripts/screenshots.py``, which
also start the simulator and Home Assistant with its process helpers. Everything after the config
folder is written goes through Home Assistant's own HTTP API, as a user's
browser would: the onboarding API creates the owner, the login flow signs in
again on later starts, the config-flow API adds the integration, and the
WebSocket API sets the country, an Assist pipeline whose agent is ours (the
preferred one, "prefer local" off) and our AI task entity as the preferred one.

    python scripts/dev_hass.py prepare --config .dev/config
    python scripts/dev_hass.py bootstrap --config .dev/config \
        --url http://127.0.0.1:8123 --base-url http://127.0.0.1:8099/v1

The config folder gets:

- ``configuration.yaml`` (only when missing: edit it freely);
- ``openai_compatible_demo.yaml``, a package with demo devices that Assist can
  control: ``light.kitchen_light``, ``climate.thermostat`` and
  ``binary_sensor.front_door``, template entities backed by helpers (only
  when missing);
- ``custom_components/openai_compatible``, a symlink to this repository's
  integration, so Home Assistant runs the working tree;
- on a fresh folder, ``.storage/onboarding`` with every onboarding step but
  the first (creating the owner) marked done. The location step would start
  the met, Google Translate and Radio Browser flows, whose requirements are
  not installed, and a development instance has no use for them; the owner is
  then created through the onboarding API, which completes onboarding;
- on a fresh folder, ``.storage/http`` with the port and host to listen on.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime
import json
import os
from pathlib import Path
import re
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Self

import aiohttp
from homeassistant.components.ai_task.const import AITaskEntityFeature
from homeassistant.components.http import config as http_config
import httpx2

REPO_ROOT = Path(__file__).resolve().parent.parent
DOMAIN = "openai_compatible"
INTEGRATION_DIR = REPO_ROOT / "custom_components" / DOMAIN
PACKAGES_DIR = "packages"
DEMO_PACKAGE_FILE = "openai_compatible_demo.yaml"
STATE_FILE = "openai_compatible_develop.json"

DEV_USERNAME = "dev"
DEV_PASSWORD = "dev"  # a local development login, printed on start
DEV_NAME = "Developer"

# A country for Home Assistant's own defaults (metric units, euros, English):
# without one it shows a repair. Change it under Settings -> System -> General.
DEV_COUNTRY = "IE"
PIPELINE_NAME = "OpenAI Compatible"
# The ai_task actions, their preference and the feature each needs.
AI_TASK_PREFERENCES = (
    ("generate_data", "gen_data_entity_id", AITaskEntityFeature.GENERATE_DATA),
    ("generate_image", "gen_image_entity_id", AITaskEntityFeature.GENERATE_IMAGE),
    ("evaluate", "evaluate_entity_id", AITaskEntityFeature.EVALUATE),
)

KITCHEN_LIGHT = "light.kitchen_light"
THERMOSTAT = "climate.thermostat"
FRONT_DOOR = "binary_sensor.front_door"

# Demo devices, exposed to Assist by default (light, climate and door sensors
# are). The helpers behind them are not exposed.
DEMO_PACKAGE = """\
# Demo devices for trying the OpenAI Compatible integration: template entities
# backed by helpers, so they work without any hardware. Written by
# scripts/dev_hass.py when missing; edit freely.
input_boolean:
  kitchen_light_power:
    name: Kitchen light power
    icon: mdi:lightbulb
  front_door_open:
    name: Front door open
    icon: mdi:door

input_number:
  thermostat_target:
    name: Thermostat target
    min: 7
    max: 30
    step: 0.5
    initial: 21
    unit_of_measurement: "°C"

input_select:
  thermostat_mode:
    name: Thermostat mode
    options:
      - "off"
      - "heat"
    initial: "heat"

template:
  - light:
      - name: Kitchen light
        unique_id: openai_compatible_demo_kitchen_light
        state: "{{ is_state('input_boolean.kitchen_light_power', 'on') }}"
        turn_on:
          - action: input_boolean.turn_on
            target:
              entity_id: input_boolean.kitchen_light_power
        turn_off:
          - action: input_boolean.turn_off
            target:
              entity_id: input_boolean.kitchen_light_power
    climate:
      - name: Thermostat
        unique_id: openai_compatible_demo_thermostat
        hvac_modes: "{{ ['off', 'heat'] }}"
        hvac_mode: "{{ states('input_select.thermostat_mode') }}"
        current_temperature: "{{ 20.5 }}"
        target_temperature: "{{ states('input_number.thermostat_target') | float(21) }}"
        min_temperature: 7
        max_temperature: 30
        target_temperature_step: 0.5
        temperature_unit: "°C"
        set_hvac_mode:
          - action: input_select.select_option
            target:
              entity_id: input_select.thermostat_mode
            data:
              option: "{{ hvac_mode }}"
        set_temperature:
          - action: input_number.set_value
            target:
              entity_id: input_number.thermostat_target
            data:
              value: "{{ temperature }}"
    binary_sensor:
      - name: Front door
        unique_id: openai_compatible_demo_front_door
        device_class: door
        state: "{{ is_state('input_boolean.front_door_open', 'on') }}"
"""

# default_config (homeassistant/components/default_config/manifest.json)
# minus go2rtc, which needs its own binary (and when it fails to set up, the
# whole of default_config fails with it), dhcp, which needs libpcap, and
# homeassistant_alerts, which logs an error at every start without internet.
DEFAULT_CONFIG_PARTS = (
    "assist_pipeline",
    "bluetooth",
    "cloud",
    "conversation",
    "energy",
    "file",
    "history",
    "logbook",
    "media_source",
    "mobile_app",
    "my",
    "ssdp",
    "stream",
    "sun",
    "usage_prediction",
    "usb",
    "webhook",
    "zeroconf",
)

DEVELOP_CONFIGURATION = f"""\
# Home Assistant configuration of scripts/develop, written when missing; edit
# freely (scripts/develop --reset starts over with a fresh folder).
homeassistant:
  name: OpenAI Compatible (develop)
  # {PACKAGES_DIR}/{DEMO_PACKAGE_FILE}: the demo devices.
  packages: !include_dir_named {PACKAGES_DIR}

# No http: section. Home Assistant 2026.11 keeps its HTTP settings in
# .storage/http (an http: section is moved there once, with a "deprecated
# YAML" repair): scripts/develop writes $PORT and $DEVELOP_HOST there on the
# first start; then change them under Settings -> System -> Network.

logger:
  default: warning
  logs:
    custom_components.openai_compatible: info
    # Shows any attempt to pip-install a requirement.
    homeassistant.util.package: info
    # Without the ffmpeg binary and libturbojpeg (not needed to try this
    # integration) these log an error with a traceback at every start.
    haffmpeg: critical
    homeassistant.components.camera.img_util: critical
    # Warns at every start that zlib-ng (a speed-up for compressed HTTP) is
    # not installed.
    aiohttp_fast_zlib: error

# default_config, listed without go2rtc (needs the go2rtc binary; when it
# fails, all of default_config fails), dhcp (needs libpcap) and
# homeassistant_alerts (fetches alerts from the internet).
{"".join(f"{part}:\n" for part in DEFAULT_CONFIG_PARTS)}"""

ONBOARDING_STORE = {
    "version": 4,
    "minor_version": 1,
    "key": "onboarding",
    "data": {"done": ["core_config", "analytics", "integration"]},
}


# --- the config folder ----------------------------------------------------------


def prepare_config(
    config_dir: Path,
    configuration: str | None = None,
    *,
    port: int = 8123,
    host: str | None = "127.0.0.1",
) -> tuple[str | None, int]:
    """Write what the config folder needs; keep what is there.

    `configuration`: the text of configuration.yaml (default: the develop
    configuration), written only when the file is missing. On a fresh folder,
    `port` and `host` (None: all interfaces) become the stored HTTP settings.
    Return the host and port Home Assistant will listen on.
    """
    config_dir.mkdir(parents=True, exist_ok=True)
    fresh = not (config_dir / ".storage").exists()
    _write_if_missing(
        config_dir / "configuration.yaml", configuration or DEVELOP_CONFIGURATION
    )
    packages = config_dir / PACKAGES_DIR
    packages.mkdir(exist_ok=True)
    _write_if_missing(packages / DEMO_PACKAGE_FILE, DEMO_PACKAGE)
    link_integration(config_dir)
    if fresh:
        storage = config_dir / ".storage"
        storage.mkdir()
        (storage / "onboarding").write_text(
            json.dumps(ONBOARDING_STORE, indent=2), encoding="utf-8"
        )
        write_http_settings(config_dir, host, port)
    return http_settings(config_dir)


def write_http_settings(config_dir: Path, host: str | None, port: int) -> None:
    """Store HTTP settings as Settings -> System -> Network does.

    Home Assistant 2026.11 keeps them in .storage/http. An http: section in
    YAML would be moved there on the first start, leaving a "deprecated YAML"
    repair and a trial that must be confirmed within five minutes; stored
    settings are neither. Home Assistant's own schema fills in the defaults.
    """
    settings: dict[str, Any] = {"server_port": int(port)}
    if host:
        settings["server_host"] = [host]
    stable = {
        **http_config.HTTP_STORAGE_SCHEMA(settings),
        "created_at": datetime.now(UTC).isoformat(),
        "error": None,
        "error_message": None,
    }
    store = {
        "version": http_config.STORAGE_VERSION,
        "minor_version": http_config.STORAGE_MINOR_VERSION,
        "key": http_config.STORAGE_KEY,
        "data": {"stable": stable, "pending": None, "yaml_migration_done": True},
    }
    (config_dir / ".storage" / http_config.STORAGE_KEY).write_text(
        json.dumps(store, indent=2), encoding="utf-8"
    )


def http_settings(config_dir: Path) -> tuple[str | None, int]:
    """Return the host (None: all) and port a config folder's Home Assistant uses.

    From .storage/http: the pending settings (on trial) unless they failed,
    else the stable ones.
    """
    try:
        data = json.loads(
            (config_dir / ".storage" / http_config.STORAGE_KEY).read_text(
                encoding="utf-8"
            )
        )["data"]
    except OSError, ValueError, KeyError:
        return None, 8123
    pending = data.get("pending")
    settings = pending if pending and not pending.get("error") else data["stable"]
    hosts = settings.get("server_host")
    host = hosts[0] if isinstance(hosts, list) and hosts else hosts
    return (str(host) if host else None), int(settings.get("server_port", 8123))


def _write_if_missing(path: Path, text: str) -> None:
    if not path.exists():
        path.write_text(text, encoding="utf-8")


def link_integration(config_dir: Path) -> None:
    """Point <config>/custom_components/openai_compatible at the working tree."""
    folder = config_dir / "custom_components"
    folder.mkdir(exist_ok=True)
    link = folder / DOMAIN
    if link.is_symlink():
        if link.resolve() == INTEGRATION_DIR.resolve():
            return
        link.unlink()
    elif link.exists():
        raise SystemExit(
            f"{link} is a real folder, not a link to {INTEGRATION_DIR}; "
            "move it away so the working tree is used"
        )
    link.symlink_to(INTEGRATION_DIR, target_is_directory=True)


# --- processes --------------------------------------------------------------


class StartError(Exception):
    """A process of the development stack did not start."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# Runs a Python module in a child that gets SIGTERM when its parent dies
# (Linux), then becomes that module (exec keeps the setting). It covers what
# cleanup code cannot: a parent killed with SIGKILL, such as by a CI timeout.
_LAUNCHER = """\
import ctypes, os, signal, sys
if sys.platform == "linux":
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit("the parent process is gone")
os.execv(sys.executable, [sys.executable, "-m", *sys.argv[2:]])
"""


def start_module(
    module: str, args: Sequence[str], output: Path
) -> subprocess.Popen[bytes]:
    """Run `python -m module args` in its own session, output to a file.

    It runs from the repository root, so `simulator` is importable.
    """
    with output.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(os.getpid()), module, *args],
            cwd=REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """SIGTERM the process group, wait, then SIGKILL; return the exit code."""
    if process.poll() is not None:
        return process.returncode  # reaped: its pid may belong to another now
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(10)
    return process.returncode


def simulator_url(
    process: subprocess.Popen[bytes], output: Path, timeout: float = 60.0
) -> str:
    """Wait for a simulator started with start_module to say where it listens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = output.read_text(encoding="utf-8", errors="replace")
        if match := re.search(r"listening at (\S+)", text):
            return match[1]
        if process.poll() is not None:
            raise StartError(f"The simulator exited: {text}")
        time.sleep(0.1)
    raise StartError(f"The simulator did not start within {timeout:.0f} s")


# --- the HTTP API ---------------------------------------------------------------


class HomeAssistantError(Exception):
    """Home Assistant answered something else than expected."""


@dataclass(slots=True)
class EntryOutcome:
    """What adding the integration through the config flow came to."""

    created: bool
    message: str
    result: dict[str, Any]


class HomeAssistantAPI:
    """Home Assistant's HTTP API, used as the frontend uses it."""

    def __init__(self, url: str, *, timeout: float = 150.0) -> None:
        """Talk to the Home Assistant at `url` (such as http://127.0.0.1:8123)."""
        self.url = url.rstrip("/")
        self.client_id = f"{self.url}/"
        self.token: str | None = None
        self._http = httpx2.Client(base_url=self.url, timeout=timeout)

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Self:
        """Use as a context manager."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the connections."""
        self.close()

    # -- plumbing

    def request(
        self,
        method: str,
        path: str,
        json_body: Any = None,
        *,
        expect: Iterable[int] = (200, 201),
    ) -> Any:
        """Send an authenticated request; return the JSON answer."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        response = self._http.request(method, path, json=json_body, headers=headers)
        if response.status_code not in set(expect):
            raise HomeAssistantError(
                f"{method} {path} answered {response.status_code}: {response.text[:2000]}"
            )
        if not response.content:
            return None
        return response.json()

    def get(self, path: str) -> Any:
        """GET a path of the API."""
        return self.request("GET", path)

    def post(self, path: str, json_body: Any = None) -> Any:
        """POST JSON to a path of the API."""
        return self.request("POST", path, json_body if json_body is not None else {})

    def get_bytes(self, path: str) -> httpx2.Response:
        """GET anything (such as a signed image URL) without the token."""
        return self._http.get(path)

    # -- start up and sign in

    def wait_until_up(
        self, timeout: float, alive: Callable[[], bool] | None = None
    ) -> None:
        """Wait until the HTTP server answers the onboarding status."""
        deadline = time.monotonic() + timeout
        while True:
            if alive is not None and not alive():
                raise HomeAssistantError("Home Assistant exited while starting")
            try:
                # The server starts once the frontend (which needs onboarding)
                # is set up; onboarding's views exist until it is complete.
                status = self._http.get("/api/onboarding", timeout=5).status_code
                if status in (200, 404):
                    return
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise HomeAssistantError(
                    f"Home Assistant did not answer at {self.url} within {timeout:.0f} s"
                )
            time.sleep(0.5)

    def sign_in(
        self,
        username: str = DEV_USERNAME,
        password: str = DEV_PASSWORD,
        name: str = DEV_NAME,
    ) -> str:
        """Create the owner through onboarding, or log in; return which."""
        status = self._http.get("/api/onboarding")
        steps = status.json() if status.status_code == 200 else []
        user_step = next((step for step in steps if step["step"] == "user"), None)
        if user_step is not None and not user_step["done"]:
            answer = self._checked(
                self._http.post(
                    "/api/onboarding/users",
                    json={
                        "client_id": self.client_id,
                        "name": name,
                        "username": username,
                        "password": password,
                        "language": "en",
                    },
                )
            )
            self._token_from_code(answer["auth_code"])
            return "created"
        self.login(username, password)
        return "logged_in"

    def login(self, username: str, password: str) -> None:
        """Log in through the login flow of the Home Assistant auth provider."""
        flow = self._checked(
            self._http.post(
                "/auth/login_flow",
                json={
                    "client_id": self.client_id,
                    "handler": ["homeassistant", None],
                    "redirect_uri": f"{self.client_id}?auth_callback=1",
                },
            )
        )
        result = self._checked(
            self._http.post(
                f"/auth/login_flow/{flow['flow_id']}",
                json={
                    "client_id": self.client_id,
                    "username": username,
                    "password": password,
                },
            )
        )
        if result.get("type") != "create_entry":
            raise HomeAssistantError(
                f"Logging in as {username!r} failed: {result.get('errors') or result}"
            )
        self._token_from_code(result["result"])

    def _token_from_code(self, code: str) -> None:
        tokens = self._checked(
            self._http.post(
                "/auth/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "client_id": self.client_id,
                },
            )
        )
        self.token = tokens["access_token"]

    @staticmethod
    def _checked(response: httpx2.Response) -> Any:
        if response.status_code != 200:
            raise HomeAssistantError(
                f"{response.request.method} {response.request.url.path} answered "
                f"{response.status_code}: {response.text[:2000]}"
            )
        return response.json()

    def wait_until_running(self, timeout: float) -> None:
        """Wait until Home Assistant has finished starting."""
        deadline = time.monotonic() + timeout
        while (state := self.get("/api/config")["state"]) != "RUNNING":
            if time.monotonic() > deadline:
                raise HomeAssistantError(
                    f"Home Assistant is still {state} after {timeout:.0f} s"
                )
            time.sleep(0.5)

    # -- the WebSocket API

    def websocket(self, *commands: dict[str, Any]) -> list[Any]:
        """Send commands over the WebSocket API; return their results."""
        return asyncio.run(self._websocket(commands))

    async def _websocket(self, commands: Sequence[dict[str, Any]]) -> list[Any]:
        results: list[Any] = []
        async with self._connected() as ws:
            for number, command in enumerate(commands, start=1):
                await ws.send_json({"id": number, **command})
                results.append(await _result(ws, number, command))
        return results

    @contextlib.asynccontextmanager
    async def _connected(self) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
        """Open an authenticated WebSocket connection."""
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(
                f"{self.url}/api/websocket",
                timeout=aiohttp.ClientWSTimeout(ws_receive=60),
            ) as ws,
        ):
            await ws.receive_json()  # auth_required
            await ws.send_json({"type": "auth", "access_token": self.token})
            if (answer := await ws.receive_json())["type"] != "auth_ok":
                raise HomeAssistantError(f"WebSocket authentication failed: {answer}")
            yield ws

    def assist(self, text: str) -> list[dict[str, Any]]:
        """Say `text` to the preferred Assist pipeline, as the Assist dialog does.

        Return the events of the run, up to its "run-end".
        """
        return asyncio.run(self._assist(text))

    async def _assist(self, text: str) -> list[dict[str, Any]]:
        command = {
            "type": "assist_pipeline/run",
            "start_stage": "intent",
            "end_stage": "intent",
            "input": {"text": text},
        }
        events: list[dict[str, Any]] = []
        async with self._connected() as ws:
            await ws.send_json({"id": 1, **command})
            await _result(ws, 1, command)
            while not events or events[-1]["type"] != "run-end":
                message = await ws.receive_json()
                if message.get("id") == 1 and message.get("type") == "event":
                    events.append(message["event"])
        return events

    # -- the integration

    def add_integration(
        self,
        *,
        base_url: str | None,
        api_key: str | None = None,
        provider: str = "custom",
        model: str | None = None,
    ) -> EntryOutcome:
        """Add the integration through the config flow, as the UI does.

        `base_url` None takes the provider's preset URL.
        """
        path = "/api/config/config_entries/flow"
        step = self.post(path, {"handler": DOMAIN, "show_advanced_options": False})
        flow = f"{path}/{step['flow_id']}"
        try:
            step = self._run_flow(flow, step, base_url, api_key, provider, model)
        except HomeAssistantError as err:
            step = {"type": "error", "message": str(err)}
        if step.get("type") == "create_entry":
            return EntryOutcome(True, f"added {step.get('title')!r}", step)
        # Leave no half-done flow behind (it is gone after an abort already).
        self.request("DELETE", flow, expect=(200, 404))
        if step.get("type") == "abort":
            return EntryOutcome(False, f"aborted: {step.get('reason')}", step)
        if step.get("type") == "error":
            return EntryOutcome(False, str(step["message"]), step)
        if _is_form(step, "connect"):
            if step.get("errors"):
                return EntryOutcome(False, _form_errors(step), step)
            return EntryOutcome(
                False, "this server needs an API key: set OPENAI_API_KEY", step
            )
        if _is_form(step, "model"):
            return EntryOutcome(
                False,
                "the server lists no chat model; set OPENAI_MODEL to the model "
                "to use, or add the integration in the UI",
                step,
            )
        return EntryOutcome(False, f"unexpected step: {step}", step)

    def _run_flow(
        self,
        flow: str,
        step: dict[str, Any],
        base_url: str | None,
        api_key: str | None,
        provider: str,
        model: str | None,
    ) -> dict[str, Any]:
        """Answer the steps of the config flow; return the last one."""
        if _is_form(step, "user"):
            step = self.post(flow, {"provider": provider})
        if _is_form(step, "connect"):
            url = base_url or _suggested(step, "base_url")
            if not url:
                raise HomeAssistantError(
                    f"provider {provider!r} has no preset URL: set OPENAI_BASE_URL"
                )
            if not api_key and _required(step, "api_key"):
                return step
            data = {"base_url": url}
            if api_key:
                data["api_key"] = api_key
            step = self.post(flow, data)
        if _is_form(step, "model") and model:
            step = self.post(flow, {"chat_model": model})
        result: dict[str, Any] = step
        return result

    def state(self, entity_id: str) -> dict[str, Any]:
        """Return one entity's state."""
        state: dict[str, Any] = self.get(f"/api/states/{entity_id}")
        return state

    def integration_entities(self, entry_id: str | None = None) -> dict[str, str]:
        """Return {domain: entity_id} of our conversation and AI task entities.

        The first of each domain, of the entry `entry_id` if given.
        """
        (entities,) = self.websocket({"type": "config/entity_registry/list"})
        found: dict[str, str] = {}
        for entity in entities:
            domain = entity["entity_id"].split(".")[0]
            if (
                entity["platform"] == DOMAIN
                and domain in ("conversation", "ai_task")
                and entry_id in (None, entity["config_entry_id"])
            ):
                found.setdefault(domain, entity["entity_id"])
        return found

    # -- what scripts/develop sets up

    def set_country(self, country: str) -> bool:
        """Set the country when none is; return whether none was.

        Without a country, Home Assistant shows a "country not configured"
        repair.
        """
        if self.get("/api/config").get("country"):
            return False
        self.websocket({"type": "config/core/update", "country": country})
        return True

    def prefer_agent(self, agent_id: str, name: str = PIPELINE_NAME) -> str:
        """Make an Assist pipeline whose agent is `agent_id` the preferred one.

        "Prefer handling commands locally" is off, so every sentence goes to
        the agent, not first to Home Assistant's own sentences. A pipeline of
        that name and agent is reused. Return the pipeline's id.
        """
        (listing,) = self.websocket({"type": "assist_pipeline/pipeline/list"})
        pipeline = next(
            (
                found
                for found in listing["pipelines"]
                if found["name"] == name and found["conversation_engine"] == agent_id
            ),
            None,
        )
        if pipeline is None:
            (pipeline,) = self.websocket(
                {
                    "type": "assist_pipeline/pipeline/create",
                    "name": name,
                    "conversation_engine": agent_id,
                    # "*": the agent takes any language, as LLM agents do.
                    "conversation_language": "*",
                    "language": "en",
                    "prefer_local_intents": False,
                    "stt_engine": None,
                    "stt_language": None,
                    "tts_engine": None,
                    "tts_language": None,
                    "tts_voice": None,
                    "wake_word_entity": None,
                    "wake_word_id": None,
                }
            )
        pipeline_id = str(pipeline["id"])
        self.websocket(
            {
                "type": "assist_pipeline/pipeline/set_preferred",
                "pipeline_id": pipeline_id,
            }
        )
        return pipeline_id

    def prefer_ai_task(self, entity_id: str) -> list[str]:
        """Make `entity_id` the preferred AI task entity for what it supports.

        Return the ai_task actions it is now preferred for.
        """
        features = int(self.state(entity_id)["attributes"].get("supported_features", 0))
        supported = [
            (action, preference)
            for action, preference, feature in AI_TASK_PREFERENCES
            if features & feature
        ]
        self.websocket(
            {
                "type": "ai_task/preferences/set",
                **{preference: entity_id for _, preference in supported},
            }
        )
        return [action for action, _ in supported]

    def prefer_entry(self, entry_id: str) -> list[str]:
        """Make the entry's agent and AI task entity the ones Home Assistant uses.

        Its agent gets an Assist pipeline of its own, the preferred one (see
        prefer_agent); its AI task entity becomes the preferred one for what
        it supports. Return what was made preferred, in words.
        """
        entities = self.integration_entities(entry_id)
        preferred = []
        if agent_id := entities.get("conversation"):
            self.prefer_agent(agent_id)
            preferred.append(f"the Assist pipeline {PIPELINE_NAME!r}, with {agent_id}")
        if ai_task_id := entities.get("ai_task"):
            tasks = self.prefer_ai_task(ai_task_id)
            actions = ", ".join(f"ai_task.{action}" for action in tasks)
            preferred.append(f"{ai_task_id}, for {actions}")
        return preferred


async def _result(
    ws: aiohttp.ClientWebSocketResponse, number: int, command: dict[str, Any]
) -> Any:
    """Wait for the result of command `number`; raise if it failed."""
    answer = await ws.receive_json()
    while answer.get("id") != number or answer.get("type") != "result":
        answer = await ws.receive_json()
    if not answer["success"]:
        raise HomeAssistantError(f"{command}: {answer['error']}")
    return answer["result"]


def _is_form(step: dict[str, Any], step_id: str) -> bool:
    """Tell a form of the step, or of one of its variants ("connect_local")."""
    shown = str(step.get("step_id", ""))
    return step.get("type") == "form" and (
        shown == step_id or shown.startswith(f"{step_id}_")
    )


def _required(step: dict[str, Any], field: str) -> bool:
    return any(
        item.get("name") == field and item.get("required")
        for item in step.get("data_schema") or ()
    )


def _suggested(step: dict[str, Any], field: str) -> str | None:
    for item in step.get("data_schema") or ():
        if item.get("name") == field:
            value = (item.get("description") or {}).get("suggested_value")
            return str(value) if value else None
    return None


def _form_errors(step: dict[str, Any]) -> str:
    """Say in words what the connect form complained about."""
    try:
        texts = json.loads(
            (INTEGRATION_DIR / "translations" / "en.json").read_text(encoding="utf-8")
        )["config"]["error"]
    except OSError, ValueError, KeyError:
        texts = {}
    placeholders = step.get("description_placeholders") or {}
    parts = []
    for key in (step.get("errors") or {}).values():
        text = str(texts.get(key, key))
        for name, value in placeholders.items():
            text = text.replace(f"{{{name}}}", str(value))
        parts.append(text)
    return " ".join(parts) or "the server was refused"


# --- the command line -----------------------------------------------------------


def _load_state(config_dir: Path) -> dict[str, Any]:
    try:
        state: dict[str, Any] = json.loads(
            (config_dir / STATE_FILE).read_text(encoding="utf-8")
        )
    except OSError, ValueError:
        return {}
    return state


def _bootstrap(args: argparse.Namespace) -> int:
    config_dir = Path(args.config)
    pid = args.pid

    def alive() -> bool:
        if pid is None:
            return True
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True

    with HomeAssistantAPI(args.url) as api:
        api.wait_until_up(args.timeout, alive)
        if api.sign_in() == "created":
            print(
                f"develop: created the owner {DEV_USERNAME!r} (password {DEV_PASSWORD!r})"
            )
        api.wait_until_running(args.timeout)
        if api.set_country(DEV_COUNTRY):
            print(
                f"develop: set the country to {DEV_COUNTRY}"
                " (Settings → System → General)"
            )
        _add_entry_once(api, config_dir, args)
        entities = api.integration_entities()
        if entities:
            print(
                "develop: entities: " + ", ".join(entities[d] for d in sorted(entities))
            )
    return 0


def _add_entry_once(
    api: HomeAssistantAPI, config_dir: Path, args: argparse.Namespace
) -> None:
    """Add the integration unless an earlier start did; make it the preferred one."""
    state = _load_state(config_dir)
    done: list[str] = state.setdefault("entries_for", [])
    key = args.base_url or f"provider:{args.provider}"
    if key in done:
        print(f"develop: the integration was added for {key} on an earlier start")
        return
    outcome = api.add_integration(
        base_url=args.base_url,
        api_key=args.api_key,
        provider=args.provider,
        model=args.model,
    )
    if outcome.created or outcome.result.get("reason") == "already_configured":
        done.append(key)
        (config_dir / STATE_FILE).write_text(
            json.dumps(state, indent=2), encoding="utf-8"
        )
    print(f"develop: OpenAI Compatible for {key}: {outcome.message}")
    if not outcome.created:
        print(
            "develop: add it yourself under Settings → Devices & services"
            " → Add integration → OpenAI Compatible"
        )
        return
    for preferred in api.prefer_entry(outcome.result["result"]["entry_id"]):
        print(f"develop: preferred: {preferred}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a sub-command of scripts/develop."""
    parser = argparse.ArgumentParser(prog="scripts/dev_hass.py")
    sub = parser.add_subparsers(dest="command", required=True)
    prepare = sub.add_parser(
        "prepare", help="write the config folder; print the host and port to use"
    )
    prepare.add_argument("--config", required=True)
    prepare.add_argument("--port", type=int, default=8123)
    prepare.add_argument("--host", default="127.0.0.1", help="empty: all interfaces")
    boot = sub.add_parser(
        "bootstrap", help="sign in and add the integration once Home Assistant is up"
    )
    boot.add_argument("--config", required=True)
    boot.add_argument("--url", required=True)
    boot.add_argument("--pid", type=int, help="give up when this process exits")
    boot.add_argument("--base-url")
    boot.add_argument("--api-key")
    boot.add_argument("--provider", default="custom")
    boot.add_argument("--model")
    boot.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        host, port = prepare_config(
            Path(args.config), port=args.port, host=args.host or None
        )
        print(port, host or "")
        return 0
    try:
        return _bootstrap(args)
    except (HomeAssistantError, httpx2.HTTPError) as err:
        print(f"develop: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
