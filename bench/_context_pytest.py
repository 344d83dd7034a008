"""The context benchmark, run by bench/context.py through pytest.

Not a test: its function is named `bench_*` and bench/context.py collects it
with `-o python_functions=bench_*`; `scripts/test` only collects tests/.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass, field
import json
import logging
import os
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.components.llama_cpp import const as core_const
from homeassistant.config_entries import ConfigEntry, ConfigSubentryData
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, intent, llm
from pytest_homeassistant_custom_component.common import MockConfigEntry  # type: ignore[import-untyped]

from bench._conversation_pytest import (
    KITCHEN_LIGHT,
    async_setup_home,
    prefix,
    sim_url,  # noqa: F401  (the fixture)
)
from custom_components.openai_compatible import const as ours_const
from simulator import sse_tool_calls
from simulator.window import counted_tokens, prompt_tokens

ENTITIES = int(os.environ.get("BENCH_CONTEXT_ENTITIES", "500"))
WINDOWS = [
    int(window)
    for window in os.environ.get("BENCH_CONTEXT_WINDOWS", "16384,32768").split(",")
]
MODEL = "llama3.2:3b"
LIVE_CONTEXT = "homeassistant__GetLiveContext"


@dataclass(frozen=True, slots=True)
class TurnSpec:
    """One user sentence, and what should happen."""

    text: str
    # Arguments of a GetLiveContext call the model makes first, if it does.
    live_context: dict[str, Any] | None = None
    # The kitchen light's state after the turn.
    light_after: str | None = None


TURNS = (
    TurnSpec("turn on the kitchen light", light_after="on"),
    TurnSpec(
        "what is the temperature in the living room?",
        live_context={"domain": "sensor"},
    ),
    TurnSpec("thanks"),
    TurnSpec("is any light on in the bedroom?", live_context={"domain": "light"}),
    TurnSpec("turn off the kitchen light", light_after="off"),
    TurnSpec("how warm is it in the office?", live_context={"area": "Office"}),
    TurnSpec("and in the garage?", live_context={"area": "Garage"}),
    TurnSpec("good"),
    TurnSpec("what is on right now?", live_context={}),
    TurnSpec("thank you"),
    TurnSpec("and the kitchen temperature?", live_context={"domain": "sensor"}),
    TurnSpec("turn on the kitchen light", light_after="on"),
)


@dataclass(slots=True)
class Request:
    """One chat request as the simulator received it."""

    turn: int
    round: int
    body: dict[str, Any]
    # The simulator's count of its prompt, and what it holds against the
    # window (the prompt and the room asked for the answer).
    tokens: int
    counted: int
    # Our estimate, and the earlier turns we kept (None for core).
    estimated: int | None = None
    kept: int | None = None
    dropped: int | None = None


@dataclass(slots=True)
class Run:
    """One conversation of one agent in one window."""

    name: str
    window: int
    requests: list[Request] = field(default_factory=list)
    # Per turn: whether it answered, and the light's state where checked.
    answered: list[bool] = field(default_factory=list)
    light: dict[int, tuple[str, str]] = field(default_factory=dict)


class SimControl:
    """The benchmark routes of bench/sim_server.py."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str) -> None:
        """Talk to the server behind `base_url`."""
        self._session = session
        self._root = base_url.removesuffix("/v1")
        self._seen = 0

    async def async_post(self, route: str, payload: Any) -> None:
        """Post to one of the benchmark routes."""
        async with self._session.post(
            f"{self._root}/bench/{route}", json=payload
        ) as response:
            response.raise_for_status()

    async def async_enqueue_live_context(self, arguments: dict[str, Any]) -> None:
        """Make the model's next answer a call of GetLiveContext."""
        sse = sse_tool_calls([("call_live_context", LIVE_CONTEXT, arguments)])
        await self.async_post("enqueue", {"path": "/chat/completions", "sse": sse})

    async def async_new_chat_bodies(self) -> list[dict[str, Any]]:
        """Return the chat request bodies received since the last call."""
        async with self._session.get(
            f"{self._root}/bench/requests", params={"since": str(self._seen)}
        ) as response:
            response.raise_for_status()
            data: dict[str, Any] = await response.json()
        self._seen = int(data["next"])
        return [
            json.loads(base64.b64decode(item["body"]))
            for item in data["requests"]
            if item["method"] == "POST" and item["path"].endswith("/chat/completions")
        ]


# --- the agents ------------------------------------------------------------------


def _agent_ids(hass: HomeAssistant, entry: ConfigEntry) -> dict[str, str]:
    """Return the conversation agents of an entry, by subentry title."""
    return {
        entry.subentries[str(item.config_subentry_id)].title: item.entity_id
        for item in er.async_entries_for_config_entry(
            er.async_get(hass), entry.entry_id
        )
        if item.domain == conversation.DOMAIN
    }


async def async_setup_agents(hass: HomeAssistant, base_url: str) -> dict[str, str]:
    """Set up ours (one agent per window) and core's; return the agent ids."""
    agent = {
        ours_const.CONF_CHAT_MODEL: MODEL,
        CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
    }
    ours = MockConfigEntry(
        domain=ours_const.DOMAIN,
        title="Benchmark",
        data={
            ours_const.CONF_PROVIDER: "ollama",
            ours_const.CONF_BASE_URL: base_url,
        },
        subentries_data=[
            ConfigSubentryData(
                data={
                    ours_const.CONF_RECOMMENDED: True,
                    ours_const.CONF_CONTEXT_WINDOW: window,
                    **agent,
                },
                subentry_type=ours_const.SUBENTRY_CONVERSATION,
                title=f"ours {window}",
                unique_id=None,
            )
            for window in WINDOWS
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
                title="core",
                unique_id=None,
            )
        ],
    )
    agents: dict[str, str] = {}
    for entry in (ours, core):
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        agents |= _agent_ids(hass, entry)
    return agents


# --- one conversation ------------------------------------------------------------


def _context_details() -> list[dict[str, Any]]:
    """Return what our agent traced about fitting, in the last turn."""
    return [
        event["data"]["context"]
        for event in trace.async_get_traces()[-1].as_dict()["events"]
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        and "context" in event["data"]
    ]


async def async_converse(
    hass: HomeAssistant, control: SimControl, run: Run, agent_id: str
) -> None:
    """Hold the 12-turn conversation with one agent, recording every request."""
    conversation_id: str | None = None
    for turn, spec in enumerate(TURNS, start=1):
        if spec.live_context is not None:
            await control.async_enqueue_live_context(spec.live_context)
        result = await conversation.async_converse(
            hass, spec.text, conversation_id, Context(), agent_id=agent_id
        )
        conversation_id = result.conversation_id
        run.answered.append(
            result.response.response_type is not intent.IntentResponseType.ERROR
        )
        if spec.light_after is not None:
            state = hass.states.get(KITCHEN_LIGHT)
            run.light[turn] = (spec.light_after, state.state if state else "missing")
        details = _context_details() if run.name == "ours" else []
        for index, body in enumerate(await control.async_new_chat_bodies()):
            request = Request(
                turn,
                index + 1,
                body,
                prompt_tokens(body),
                counted_tokens(body, "openai"),
            )
            if index < len(details):
                request.estimated = details[index]["estimated_tokens"]
                request.kept = details[index]["kept_turns"]
                request.dropped = details[index]["dropped_turns"]
            else:
                request.kept = sum(m["role"] == "user" for m in body["messages"]) - 1
            run.requests.append(request)
        await control.async_post("clear", {})


# --- figures -----------------------------------------------------------------------


def _share(previous: Request | None, current: Request) -> float | None:
    """Return the share of the previous request's prompt this one repeats."""
    return None if previous is None else prefix(previous.body, current.body).share


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def report(runs: list[Run]) -> str:
    """Format the figures of the runs in one window."""
    window = runs[0].window
    lines = [
        "",
        f"=== context window {window:,} tokens, {ENTITIES} exposed entities ===",
    ]
    targets: list[str] = []
    for run in runs:
        lines += [
            "",
            f"{run.name}: per request",
            " #  turn.round  estimated  simulator  over window  turns kept  prefix share",
        ]
        previous: Request | None = None
        unexplained = 0
        for number, request in enumerate(run.requests, start=1):
            share = _share(previous, request)
            dropped = (
                previous is not None
                and request.dropped is not None
                and previous.dropped is not None
                and request.dropped > previous.dropped
            )
            note = "  (turns dropped)" if dropped else ""
            if share is not None and share < 1.0 and not dropped:
                unexplained += 1
                note = "  (prefix changed)"
            lines.append(
                f"{number:>2}  {request.turn:>2}.{request.round:<8}"
                f"{request.estimated if request.estimated is not None else '-':>9}"
                f"{request.tokens:>11}"
                f"{'yes' if request.counted > window else 'no':>13}"
                f"{request.kept:>12}{_pct(share):>14}{note}"
            )
            previous = request
        over = sum(request.counted > window for request in run.requests)
        expected = ", ".join(want for want, _ in run.light.values())
        seen = ", ".join(state for _, state in run.light.values())
        light_ok = expected == seen
        drops = sum(
            1
            for before, after in zip(run.requests, run.requests[1:], strict=False)
            if (after.dropped or 0) > (before.dropped or 0)
        )
        lines.append(
            f"   answered turns {sum(run.answered)}/{len(TURNS)}, requests over the "
            f"window {over}/{len(run.requests)}, kitchen light after turns "
            f"{', '.join(map(str, run.light))}: {seen} (expected {expected})"
        )
        if run.name == "ours":
            targets += [
                (
                    f"  no request over the window: {over} over "
                    f"({'met' if over == 0 else 'NOT met'})"
                ),
                (
                    f"  the light switched as asked, on again at turn {len(TURNS)}: "
                    f"{seen} ({'met' if light_ok else 'NOT met'})"
                ),
                (
                    f"  prefix share 100% except where whole turns were dropped: "
                    f"{unexplained} other change(s), {drops} drop(s) "
                    f"({'met' if unexplained == 0 else 'NOT met'})"
                ),
            ]
    return "\n".join([*lines, "", "Targets (ours)", *targets])


# --- the benchmark ------------------------------------------------------------------


async def bench_context(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    sim_url: str,  # noqa: F811
) -> None:
    """Run the conversation in each window with both agents; print the figures."""
    asyncio.get_running_loop().set_debug(False)
    logging.getLogger().setLevel(logging.WARNING)
    # Core logs each refused request; the tables count them.
    logging.getLogger("homeassistant.components.llama_cpp").setLevel(logging.CRITICAL)
    await async_setup_home(hass, ENTITIES)
    agents = await async_setup_agents(hass, sim_url)
    reports: list[str] = []
    async with aiohttp.ClientSession() as session:
        control = SimControl(session, sim_url)
        await control.async_new_chat_bodies()  # skip the setup requests
        for window in WINDOWS:
            await control.async_post("settings", {"context_window": window})
            runs = [Run("ours", window), Run("core", window)]
            await async_converse(hass, control, runs[0], agents[f"ours {window}"])
            await async_converse(hass, control, runs[1], agents["core"])
            reports.append(report(runs))
    print(
        "\n".join(
            [
                (
                    "Context benchmark: a 12-turn Assist conversation with tool rounds "
                    "(GetLiveContext included), the simulator's window enforced"
                ),
                (
                    "ours = openai_compatible (this integration, the agent's context "
                    "window set); core = llama_cpp (Home Assistant core, sends "
                    "everything)"
                ),
                *reports,
            ]
        ),
        flush=True,
    )
