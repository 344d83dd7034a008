"""The wire API benchmark, run by bench/responses.py through pytest.

Not a test: its function is named `bench_*` and bench/responses.py collects
it with `-o python_functions=bench_*`; `scripts/test` only collects tests/.

The same five-turn Assist conversation as bench/conversation.py, held by
three agents on one simulator: this integration over Chat Completions, this
integration over the Responses API, and Home Assistant core's
openai_conversation (Responses API), pointed at the simulator through the
OpenAI client's OPENAI_BASE_URL.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterable
from dataclasses import dataclass
import gc
import json
import logging
import os
import platform
import statistics
import time
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.components.openai_conversation import const as openai_const
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import (
    CONF_API_KEY,
    CONF_LLM_HASS_API,
    __version__ as HA_VERSION,
)
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import intent, llm
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry  # type: ignore[import-untyped]

from bench._conversation_pytest import (
    KITCHEN_LIGHT,
    LIVE_CONTEXT_ARGS,
    LIVE_CONTEXT_CALL,
    MODEL,
    PROMPT,
    TURNS,
    _agent_id,
    async_setup_home,
    common_prefix,
    sim_url,  # noqa: F401 - the fixture
)
from custom_components.openai_compatible import const as ours_const
from simulator import function_call_item, response_stream, sse_tool_calls

ENTITY_COUNTS = [
    int(count) for count in os.environ.get("BENCH_ENTITIES", "50,500").split(",")
]
REPEAT = int(os.environ.get("BENCH_REPEAT", "10"))

NAMES = ("chat", "responses", "core")
LABELS = {
    "chat": "openai_compatible over Chat Completions",
    "responses": "openai_compatible over the Responses API",
    "core": "openai_conversation (Home Assistant core, Responses API)",
}
PATHS = {"chat": "/chat/completions", "responses": "/responses", "core": "/responses"}


@dataclass(frozen=True, slots=True)
class Turn:
    """A measured turn: CPU and wall seconds, and its request bodies."""

    cpu: float
    wall: float
    bodies: list[bytes]


type Run = list[Turn]


async def async_setup_agents(hass: HomeAssistant, base_url: str) -> dict[str, str]:
    """Set up the three agents on the same server and model; return agent ids."""
    agent = {
        ours_const.CONF_CHAT_MODEL: MODEL,
        "prompt": PROMPT,
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
    }
    entries = {
        name: MockConfigEntry(
            domain=ours_const.DOMAIN,
            title=f"Benchmark {name}",
            data={
                ours_const.CONF_PROVIDER: "openai",
                ours_const.CONF_BASE_URL: base_url,
                CONF_API_KEY: "sk-bench",
            },
            options={ours_const.CONF_API: api},
            subentries_data=[
                ConfigSubentryData(
                    data={ours_const.CONF_RECOMMENDED: True, **agent},
                    subentry_type=ours_const.SUBENTRY_CONVERSATION,
                    title=f"Benchmark {name}",
                    unique_id=None,
                )
            ],
        )
        for name, api in (("chat", "chat_completions"), ("responses", "responses"))
    }
    # Core's client takes its address from the environment.
    os.environ["OPENAI_BASE_URL"] = base_url
    entries["core"] = MockConfigEntry(
        domain=openai_const.DOMAIN,
        title="Benchmark core",
        data={CONF_API_KEY: "sk-bench"},
        version=2,
        minor_version=8,
        subentries_data=[
            ConfigSubentryData(
                data={openai_const.CONF_RECOMMENDED: True, **agent},
                subentry_type="conversation",
                title="Benchmark core",
                unique_id=None,
            )
        ],
    )
    agents: dict[str, str] = {}
    for name in NAMES:
        entry = entries[name]
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        agents[name] = _agent_id(hass, entry)
    return agents


class SimControl:
    """The benchmark routes of bench/sim_server.py, for both wire APIs."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str) -> None:
        """Talk to the server behind `base_url`."""
        self._session = session
        self._root = base_url.removesuffix("/v1")
        self._seen = 0

    async def async_enqueue_live_context(self, path: str) -> None:
        """Make the model's next answer on `path` a call of GetLiveContext."""
        if path == "/responses":
            arguments = json.dumps(LIVE_CONTEXT_ARGS)
            sse = response_stream([function_call_item(*LIVE_CONTEXT_CALL, arguments)])
        else:
            sse = sse_tool_calls([(*LIVE_CONTEXT_CALL, LIVE_CONTEXT_ARGS)])
        async with self._session.post(
            f"{self._root}/bench/enqueue", json={"path": path, "sse": sse}
        ) as response:
            response.raise_for_status()

    async def async_new_requests(self) -> list[bytes]:
        """Return the model request bodies received since the last call."""
        async with self._session.get(
            f"{self._root}/bench/requests", params={"since": str(self._seen)}
        ) as response:
            response.raise_for_status()
            payload: dict[str, Any] = await response.json()
        self._seen = int(payload["next"])
        return [
            base64.b64decode(item["body"])
            for item in payload["requests"]
            if item["method"] == "POST" and item["path"].endswith(tuple(PATHS.values()))
        ]


async def async_converse(
    hass: HomeAssistant, control: SimControl, name: str, agent_id: str
) -> Run:
    """Hold the 5-turn conversation with one agent; measure each turn."""
    conversation_id: str | None = None
    run: Run = []
    for spec in TURNS:
        if spec.live_context:
            await control.async_enqueue_live_context(PATHS[name])
        wall = time.perf_counter()
        cpu = time.process_time()
        result = await conversation.async_converse(
            hass, spec.text, conversation_id, Context(), agent_id=agent_id
        )
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
        speech = result.response.speech.get("plain", {}).get("speech")
        if result.response.response_type is intent.IntentResponseType.ERROR:
            raise AssertionError(f"{agent_id} failed on {spec.text!r}: {speech}")
        if spec.light_after is not None:
            state = hass.states.get(KITCHEN_LIGHT)
            assert state is not None
            assert state.state == spec.light_after, (agent_id, spec.text, speech)
        conversation_id = result.conversation_id
        run.append(Turn(cpu, wall, await control.async_new_requests()))
    return run


# --- figures -----------------------------------------------------------------------


def rendered_items(body: dict[str, Any]) -> list[bytes]:
    """Return what the model reads, in order: instructions, tools, then each item.

    Items are compared with sorted keys: a server renders them into its
    prompt, so the order of keys within one is not part of the prompt.
    """
    parts: list[Any] = [body[key] for key in ("instructions", "tools") if key in body]
    parts += body.get("messages") or body.get("input") or []
    return [
        json.dumps(
            part, separators=(",", ":"), ensure_ascii=False, sort_keys=True
        ).encode()
        for part in parts
    ]


def share(previous: dict[str, Any], current: dict[str, Any]) -> float:
    """Return the share of the previous prompt that the next one repeats."""
    old = b"".join(rendered_items(previous))
    new = b"".join(rendered_items(current))
    return common_prefix(old, new) / len(old) if old else 1.0


def shares(run: Run) -> list[tuple[int, float]]:
    """Return (turn, share of the previous request) for each request after the first."""
    bodies = [
        (number, json.loads(body))
        for number, turn in enumerate(run, 1)
        for body in turn.bodies
    ]
    return [
        (number, share(previous, current))
        for (_, previous), (number, current) in zip(bodies, bodies[1:], strict=False)
    ]


def _median_ms(values: Iterable[float]) -> float:
    return statistics.median(values) * 1000


def report(count: int, runs: dict[str, list[Run]]) -> str:
    """Format the figures of one entity count."""
    last = {name: runs[name][-1] for name in NAMES}
    cpu_turn = {
        name: [
            _median_ms(run[index].cpu for run in runs[name])
            for index in range(len(TURNS))
        ]
        for name in NAMES
    }
    cpu_all = {
        name: _median_ms(sum(turn.cpu for turn in run) / len(run) for run in runs[name])
        for name in NAMES
    }
    later = {
        name: [value for turn, value in shares(last[name]) if turn >= 2]
        for name in NAMES
    }
    lines = [
        "",
        f"=== {count} exposed entities",
        (
            f"Home Assistant {HA_VERSION}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs ({platform.machine()}); {REPEAT} measured "
            "conversations per agent after 1 warm-up, in turn; simulator in its own "
            "process; model "
            f"{MODEL}"
        ),
        *(f"{name:<9} = {LABELS[name]}" for name in NAMES),
        "",
        "CPU ms per turn (median)   " + "".join(f"{name:>11}" for name in NAMES),
    ]
    for index, spec in enumerate(TURNS):
        lines.append(
            f" {index + 1} {spec.label:<22} "
            + "".join(f"{cpu_turn[name][index]:>11.1f}" for name in NAMES)
        )
    lines += [
        "   all turns (mean/turn)   "
        + "".join(f"{cpu_all[name]:>11.1f}" for name in NAMES),
        "   requests                "
        + "".join(
            f"{sum(len(turn.bodies) for turn in last[name]):>11}" for name in NAMES
        ),
        "   request bytes (sum)     "
        + "".join(
            f"{sum(len(body) for turn in last[name] for body in turn.bodies):>11}"
            for name in NAMES
        ),
        "   prefix share, min turn 2+"
        + "".join(f"{min(later[name], default=1.0) * 100:>10.1f}%" for name in NAMES),
        "",
        "Targets",
        (
            "  CPU per turn over Responses vs Chat Completions: "
            f"{cpu_all['responses'] / cpu_all['chat']:.2f} (target <= 1.10); "
            f"vs core: {cpu_all['responses'] / cpu_all['core']:.2f} (target <= 1.00)"
        ),
        (
            "  prefix share from turn 2 on over Responses: min "
            f"{min(later['responses'], default=1.0) * 100:.1f}% (target 100%)"
        ),
    ]
    return "\n".join(lines)


@pytest.mark.parametrize("entity_count", ENTITY_COUNTS)
async def bench_wire_apis(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    sim_url: str,  # noqa: F811 - the fixture imported above
    entity_count: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run the conversation with the three agents and print the figures."""
    asyncio.get_running_loop().set_debug(False)
    logging.getLogger().setLevel(logging.WARNING)
    await async_setup_home(hass, entity_count)
    agents = await async_setup_agents(hass, sim_url)
    runs: dict[str, list[Run]] = {name: [] for name in NAMES}
    async with aiohttp.ClientSession() as session:
        control = SimControl(session, sim_url)
        await control.async_new_requests()  # skip the setup requests
        for name in NAMES:  # warm-up
            await async_converse(hass, control, name, agents[name])
        for repetition in range(REPEAT):
            order = NAMES if repetition % 2 == 0 else NAMES[::-1]
            for name in order:
                gc.collect()
                runs[name].append(
                    await async_converse(hass, control, name, agents[name])
                )
    with capsys.disabled():
        print(report(entity_count, runs), flush=True)
