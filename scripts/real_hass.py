"""A real Home Assistant and other child processes, for the conformance lane.

Built on scripts/dev_hass.py (its process helpers and HTTP API, which the e2e
test and scripts/develop use too): starts programs of other virtual
environments so that they die with their parent, brings a fresh Home
Assistant up to a signed-in owner, sends WebSocket commands whose failures it
returns rather than raises, and finds errors of the integration in the log.

    with real_hass.running_home_assistant(config_dir, CONFIGURATION, log) as hass:
        hass.api.add_integration(base_url=...)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
import contextlib
from dataclasses import dataclass
import importlib.util
import os
from pathlib import Path
import re
import subprocess
import sys
import time
from types import ModuleType
from typing import Any

import aiohttp

REPO_ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 240.0  # seconds; Home Assistant with the frontend on 2 slow cores
STOP_TIMEOUT = 90.0


def load_dev_hass() -> ModuleType:
    """Import scripts/dev_hass.py, which scripts/develop uses as well."""
    if (loaded := sys.modules.get("dev_hass")) is not None:
        return loaded
    spec = importlib.util.spec_from_file_location(
        "dev_hass", REPO_ROOT / "scripts" / "dev_hass.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["dev_hass"] = module
    spec.loader.exec_module(module)
    return module


dev_hass = load_dev_hass()


free_port = dev_hass.free_port
start_module = dev_hass.start_module
stop_process = dev_hass.stop_process
StartError = dev_hass.StartError

# Runs any program (dev_hass.start_module runs only this Python's modules) in
# a child that gets SIGTERM when its parent dies (Linux), then becomes that
# program: the servers of the conformance lane live in their own venvs.
_LAUNCHER = """\
import ctypes, os, signal, sys
if sys.platform == "linux":
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit("the parent process is gone")
os.execvpe(sys.argv[2], sys.argv[2:], os.environ)
"""


def start_process(
    argv: Sequence[str],
    output: Path,
    *,
    env: dict[str, str] | None = None,
    cwd: Path = REPO_ROOT,
) -> subprocess.Popen[bytes]:
    """Run `argv` in its own session, output to a file, dying with this process."""
    with output.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(os.getpid()), *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@dataclass
class HomeAssistantProcess:
    """A running Home Assistant, signed in as the owner."""

    config_dir: Path
    url: str
    process: subprocess.Popen[bytes]
    output: Path
    api: Any  # dev_hass.HomeAssistantAPI
    startup_seconds: float
    # "created" (the owner, through onboarding) or "logged_in".
    signed_in: str
    # Whether the country was set (it was not yet).
    country_set: bool

    @property
    def log_file(self) -> Path:
        """Return Home Assistant's own log file."""
        return self.config_dir / "home-assistant.log"

    def log_text(self) -> str:
        """Return the log so far (the console output until the log file exists)."""
        try:
            return self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return self.output.read_text(encoding="utf-8", errors="replace")

    def log_tail(self, lines: int = 80) -> str:
        """Return the end of the log, for failure messages."""
        return "\n".join(self.log_text().splitlines()[-lines:])

    def stop(self) -> int | None:
        """SIGTERM Home Assistant and wait; return its exit code."""
        return stop_process(self.process, STOP_TIMEOUT)


@contextlib.contextmanager
def running_home_assistant(
    config_dir: Path, configuration: str, output: Path
) -> Iterator[HomeAssistantProcess]:
    """Start Home Assistant on a free port and sign in; stop it on the way out.

    Writes the config folder (dev_hass.prepare_config), creates the owner
    through onboarding and sets the country, as scripts/develop does. Raises
    StartError with the end of its output when it does not come up.
    """
    port = free_port()
    assert dev_hass.prepare_config(
        config_dir, configuration, port=port, host="127.0.0.1"
    ) == ("127.0.0.1", port)
    process = start_module(
        "homeassistant", ["--config", str(config_dir), "--log-no-color"], output
    )
    url = f"http://127.0.0.1:{port}"
    api = dev_hass.HomeAssistantAPI(url)
    try:
        began = time.monotonic()
        try:
            api.wait_until_up(START_TIMEOUT, lambda: process.poll() is None)
            signed_in = api.sign_in()
            api.wait_until_running(START_TIMEOUT)
            # Without a country Home Assistant shows a repair (scripts/develop
            # sets one too).
            country_set = api.set_country(dev_hass.DEV_COUNTRY)
        except dev_hass.HomeAssistantError as err:
            tail = output.read_text(encoding="utf-8", errors="replace")[-6000:]
            raise StartError(f"{err}\n--- Home Assistant output ---\n{tail}") from err
        yield HomeAssistantProcess(
            config_dir,
            url,
            process,
            output,
            api,
            time.monotonic() - began,
            signed_in,
            country_set,
        )
    finally:
        api.close()
        stop_process(process, STOP_TIMEOUT)


def websocket_answers(api: Any, *commands: dict[str, Any]) -> list[dict[str, Any]]:
    """Send WebSocket commands; return each result message, failed or not.

    Unlike `HomeAssistantAPI.websocket`, a failed command does not raise: its
    message carries `success: false` and the `error` (with the translation key
    of a translated error).
    """
    return asyncio.run(_websocket_answers(api.url, api.token, commands))


async def _websocket_answers(
    url: str, token: str, commands: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = []
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(
            f"{url}/api/websocket",
            timeout=aiohttp.ClientWSTimeout(ws_receive=900),
            max_msg_size=0,
        ) as ws,
    ):
        await ws.receive_json()  # auth_required
        await ws.send_json({"type": "auth", "access_token": token})
        if (answer := await ws.receive_json())["type"] != "auth_ok":
            raise dev_hass.HomeAssistantError(
                f"WebSocket authentication failed: {answer}"
            )
        for number, command in enumerate(commands, start=1):
            await ws.send_json({"id": number, **command})
            answer = await ws.receive_json()
            while answer.get("id") != number or answer.get("type") != "result":
                answer = await ws.receive_json()
            answers.append(answer)
    return answers


# A log record starts with a timestamp: "2026-11-29 18:30:40.266+00:00 ERROR ...".
_RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d", re.MULTILINE)
_LEVEL = re.compile(r"^\S+ \S+ (?P<level>[A-Z]+) ")


def log_records(text: str) -> list[str]:
    """Split a log into records (a record keeps its traceback lines)."""
    starts = [match.start() for match in _RECORD_START.finditer(text)]
    bounds = [0, *starts, len(text)]
    return [
        chunk
        for begin, end in zip(bounds, bounds[1:], strict=False)
        if (chunk := text[begin:end].strip())
    ]


def integration_problems(text: str) -> list[str]:
    """Return errors and tracebacks that involve this integration."""
    found = []
    for record in log_records(text):
        if "openai_compatible" not in record:
            continue
        level = match["level"] if (match := _LEVEL.match(record)) else ""
        if (
            level in ("ERROR", "CRITICAL")
            or "Traceback (most recent call last)" in record
            or "Detected blocking call" in record
        ):
            found.append(_summary(record))
    return found


def _summary(record: str) -> str:
    """Keep a record's first lines, its frames in this integration and its end."""
    lines = record.splitlines()
    keep = {0, 1, 2, len(lines) - 2, len(lines) - 1}
    for index, line in enumerate(lines):
        if "custom_components/openai_compatible" in line:
            keep |= {index, index + 1}
    return "\n".join(lines[i] for i in sorted(keep) if 0 <= i < len(lines))[:4000]
