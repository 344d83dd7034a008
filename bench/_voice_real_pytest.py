"""The voice benchmark on real servers, run by bench/voice_real.py through pytest.

Not a test: its function is named `bench_*` and bench/voice_real.py collects
it with `-o python_functions=bench_*`; `scripts/test` only collects tests/.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator, Iterator
import contextlib
from dataclasses import dataclass
import json
import os
from pathlib import Path
import platform
import statistics
import subprocess
import tempfile
import time
from unittest.mock import patch
import wave

from homeassistant.components import assist_pipeline, stt
from homeassistant.components.assist_pipeline.pipeline import KEY_ASSIST_PIPELINE
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import __version__ as HA_VERSION
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import area_registry as ar, device_registry as dr
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry  # type: ignore[import-untyped]
import pytest_socket  # type: ignore[import-untyped]

from bench._conversation_pytest import async_setup_home
from bench._real_model_pytest import (
    RECORDED_AFTER,
    _free_port,
    _quiet,
    _verdict,
    async_add_agents,
    async_erase,
)
from bench.home import ANSWER_TOKENS, TEMPERATURE, unspeakable
from conformance import servers, speech
from conformance.recorder import Exchange, RecordingProxy
from custom_components.openai_compatible import const as ours_const
from custom_components.openai_compatible.conversation import (
    WARM_AGAIN_AFTER,
    OpenAICompatibleConversationEntity,
)
from custom_components.openai_compatible.models.providers import PROVIDER_CUSTOM

ENTITY_COUNTS = [
    int(count) for count in os.environ.get("BENCH_ENTITIES", "50,500").split(",")
]
# Commands as a satellite's user says them, each a new conversation.
COMMANDS = (
    "turn on the kitchen light",
    "what is the temperature in the living room",
    "turn off the kitchen light",
    "good night",
)[: int(os.environ.get("BENCH_COMMANDS", "4"))]
DEVICE_COMMANDS = {"turn on the kitchen light", "turn off the kitchen light"}
# Said first to each agent and not measured: it fills the cache the measured
# commands find, as the satellite's earlier commands would have.
FIRST_COMMAND = "what time is it"
MODEL = "qwen2.5-coder-0.5b-instruct"
# Installed by the conformance lane (scripts/conformance).
MODEL_FILE = servers.CACHE / "models" / f"{MODEL}.gguf"
NAMES = ("ours", "core")
TWO_ROUNDS = "ours, two rounds"
# A device command answered in one model round (the agent's one-round
# answers, on by default for a local server) against two: at most this share.
ONE_ROUND_SHARE = 0.6
# How fast the audio goes to the pipeline: as it is spoken.
CHUNK_SECONDS = 0.1
# One slot, no host prompt cache, so that an erased slot is cold.
SERVER_ARGS = ("--parallel", "1", "--cache-ram", "0", "--slot-save-path")
CONTEXT = 32768
# `--cores separate`: each server on a CPU of its own, one thread each, as when
# the model server is another machine and speech-to-text cannot slow it.
SEPARATE_CORES = os.environ.get("BENCH_CORES") == "separate"
# Below this, two runs are not told apart: 10 ms, or 3 % of the time.
RESOLUTION_SECONDS = 0.010
RESOLUTION_SHARE = 0.03


# --- the servers ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Servers:
    """The model server behind its recording proxy, and the speech server."""

    model: RecordingProxy
    speech_url: str
    work: Path


@contextlib.contextmanager
def _process(command: list[str], output: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server in its own session, niced; stop it at the end."""
    with output.open("wb") as out:
        process = subprocess.Popen(
            ["nice", *command],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(scope="module")
def running() -> Generator[Servers]:
    """Start llama-server and the speech server once, outside the event loop."""
    if not servers.LLAMA_SERVER.installed() or not MODEL_FILE.is_file():
        pytest.fail(f"run scripts/conformance first: llama-server and {MODEL_FILE}")
    work = Path(tempfile.mkdtemp(prefix="bench-voice-real-"))
    speech.install(work / "install.log")
    whisper = speech.whisper_model()
    print(f"server logs in {work}", flush=True)
    configuration = servers.Configuration(
        "bench_voice",
        "llama-server",
        f"b{servers.LLAMA_SERVER_BUILD}",
        "one slot",
        server_args=(*SERVER_ARGS, str(work)),
        context=CONTEXT,
    )
    with contextlib.ExitStack() as stack:
        # The harness blocks sockets but in a test's own `socket_enabled`.
        pytest_socket.enable_socket()
        stack.callback(pytest_socket.enable_socket)
        model_port, speech_port = _free_port(), _free_port()
        command = servers.llama_server_command(configuration, MODEL_FILE, model_port)
        # The server lists the model by its own name.
        command[command.index("--alias") + 1] = MODEL
        listen = speech.whisper_command(
            whisper, speech_port, work, threads=1 if SEPARATE_CORES else 2
        )
        if SEPARATE_CORES:
            command[command.index("--threads") + 1] = "1"
            command = ["taskset", "-c", "0", *command]
            listen = ["taskset", "-c", "1", *listen]
        model = stack.enter_context(_process(command, work / "llama-server.out"))
        listening = stack.enter_context(_process(listen, work / "whisper.out"))
        upstream = f"http://127.0.0.1:{model_port}"
        servers.wait_until_serving(upstream, [model], work / "llama-server.out")
        speech_url = f"http://127.0.0.1:{speech_port}"
        speech.wait_until_listening(speech_url, listening)
        proxy = RecordingProxy("voice", upstream)
        proxy.compact_requests = False
        proxy.start()
        stack.callback(proxy.stop)
        pytest_socket.disable_socket(allow_unix_socket=True)
        yield Servers(proxy, speech_url, work)


# --- Home Assistant ---------------------------------------------------------------


async def async_setup_voice(
    hass: HomeAssistant, running: Servers, count: int
) -> tuple[dict[str, str], str]:
    """Set up the home, both agents, their pipelines and a satellite's device.

    Return each agent's pipeline, and the device.
    """
    await async_setup_home(hass, count)
    assert await async_setup_component(hass, "assist_pipeline", {})
    agents = await async_add_agents(
        hass,
        running.model,
        (*NAMES, TWO_ROUNDS),
        model=MODEL,
        answer_tokens=ANSWER_TOKENS,
        temperature=TEMPERATURE,
    )
    listener = MockConfigEntry(
        domain=ours_const.DOMAIN,
        title="speech",
        data={
            ours_const.CONF_PROVIDER: PROVIDER_CUSTOM,
            ours_const.CONF_BASE_URL: f"{running.speech_url}/v1",
        },
        subentries_data=[
            ConfigSubentryData(
                data={ours_const.CONF_AUDIO_MODEL: "whisper-1"},
                subentry_type=ours_const.SUBENTRY_STT,
                title="whisper",
                unique_id=None,
            )
        ],
    )
    listener.add_to_hass(hass)
    assert await hass.config_entries.async_setup(listener.entry_id)
    await hass.async_block_till_done()
    [speech_to_text] = [state.entity_id for state in hass.states.async_all("stt")]
    store = hass.data[KEY_ASSIST_PIPELINE].pipeline_store
    pipelines = {}
    for name, agent in agents.items():
        pipeline = await store.async_create_item(
            {
                "conversation_engine": agent,
                "conversation_language": "*",
                "language": "en",
                "name": name,
                "stt_engine": speech_to_text,
                "stt_language": "en",
                "tts_engine": None,
                "tts_language": None,
                "tts_voice": None,
                "wake_word_entity": None,
                "wake_word_id": None,
                "prefer_local_intents": False,
            }
        )
        pipelines[name] = str(pipeline.id)
    satellite = MockConfigEntry(domain="bench_satellite")
    satellite.add_to_hass(hass)
    devices = dr.async_get(hass)
    device = devices.async_get_or_create(
        config_entry_id=satellite.entry_id, identifiers={("bench_satellite", "1")}
    )
    kitchen = ar.async_get(hass).async_get_area_by_name("Kitchen")
    devices.async_update_device(device.id, area_id=kitchen.id if kitchen else None)
    return pipelines, device.id


# --- one command --------------------------------------------------------------------


@dataclass(slots=True)
class Command:
    """One voice command, timed from the end of its speech."""

    agent: str
    text: str
    heard: str
    # What the agent said back.
    said: str
    # Seconds: speech-to-text (from its start to the text), then from the end
    # of speech to the first request's first token, to the first words, and
    # to the end; and from the text to the first token.
    speech_to_text: float
    first_token: float | None
    first_words: float | None
    whole: float
    after_text: float | None
    # The first request: tokens evaluated and reused; the model's requests.
    evaluated: int | None
    reused: int | None
    rounds: int
    # Share of the warm-up done when the text came (None: none was sent).
    warmed: float | None

    @property
    def cached_share(self) -> float | None:
        """Return the share of the first request that came from the cache."""
        if self.evaluated is None or self.reused is None:
            return None
        return self.reused / max(1, self.evaluated + self.reused)


def spoken_commands(work: Path) -> dict[str, bytes]:
    """Speak each command once; return its 16-bit samples."""
    samples = {}
    for index, text in enumerate((FIRST_COMMAND, *COMMANDS)):
        path = work / f"command-{index}.wav"
        speech.spoken(text, path)
        with wave.open(str(path)) as audio:
            samples[text] = audio.readframes(audio.getnframes())
    return samples


def _is_warm_up(exchange: Exchange) -> bool:
    request = exchange.request or {}
    return request.get("max_tokens") == 1 and not request.get("stream")


async def async_command(
    hass: HomeAssistant,
    proxy: RecordingProxy,
    agent: str,
    pipeline_id: str,
    device_id: str,
    text: str,
    samples: bytes,
) -> Command:
    """Say one command to a pipeline, paced as it is spoken; time it."""
    seen = len(proxy.exchanges)
    times: dict[str, float] = {}
    heard: list[str] = []
    said: list[str] = []
    chunk = int(speech.SAMPLE_RATE * 2 * CHUNK_SECONDS)

    async def audio() -> AsyncIterator[bytes]:
        for start in range(0, len(samples), chunk):
            yield samples[start : start + chunk]
            await asyncio.sleep(CHUNK_SECONDS)
        times["spoken"] = time.monotonic()

    def on_event(event: assist_pipeline.PipelineEvent) -> None:
        now = time.monotonic()
        kind = assist_pipeline.PipelineEventType
        if event.type is kind.STT_START:
            times["listening"] = now
        elif event.type is kind.STT_END:
            times["text"] = now
            heard.append(event.data["stt_output"]["text"])
        elif event.type is kind.INTENT_PROGRESS and (
            (event.data or {}).get("chat_log_delta") or {}
        ).get("content"):
            times.setdefault("words", now)
        elif event.type is kind.INTENT_END:
            response = (event.data or {})["intent_output"]["response"]
            said.append(response["speech"].get("plain", {}).get("speech", ""))
        elif event.type is kind.ERROR:
            raise AssertionError(f"The pipeline failed: {event.data}")

    await assist_pipeline.async_pipeline_from_audio_stream(
        hass,
        context=Context(),
        event_callback=on_event,
        stt_metadata=stt.SpeechMetadata(
            language="en",
            format=stt.AudioFormats.WAV,
            codec=stt.AudioCodecs.PCM,
            bit_rate=stt.AudioBitRates.BITRATE_16,
            sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
            channel=stt.AudioChannels.CHANNEL_MONO,
        ),
        stt_stream=audio(),
        pipeline_id=pipeline_id,
        device_id=device_id,
        end_stage=assist_pipeline.PipelineStage.INTENT,
        audio_settings=assist_pipeline.AudioSettings(is_vad_enabled=False),
    )
    ended = time.monotonic()
    # The proxy keeps an exchange once it has passed the answer's last byte.
    await asyncio.sleep(RECORDED_AFTER)
    exchanges = [e for e in proxy.since(seen) if e.path.endswith("/chat/completions")]
    warm = [e for e in exchanges if _is_warm_up(e)]
    requests = [e for e in exchanges if not _is_warm_up(e)]
    first = requests[0] if requests else None
    spoken = times["spoken"]
    first_token = (
        None
        if first is None or first.first_token_seconds is None
        else first.started + first.first_token_seconds
    )
    timings = (first.timings if first else None) or {}
    return Command(
        agent,
        text,
        heard[0] if heard else "",
        said[0] if said else "",
        times["text"] - times["listening"],
        None if first_token is None else first_token - spoken,
        times["words"] - spoken if "words" in times else None,
        ended - spoken,
        None if first_token is None else first_token - times["text"],
        timings.get("prompt_n"),
        timings.get("cache_n"),
        len(requests),
        _warmed_share(warm[0], times["text"]) if warm else None,
    )


def _warmed_share(warm: Exchange, text_came: float) -> float:
    """Return about how much of the warm-up's prompt was evaluated when the text came."""
    return min(1.0, max(0.0, (text_came - warm.started) / max(warm.seconds, 1e-9)))


# --- figures ------------------------------------------------------------------------


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def command_lines(label: str, commands: list[Command]) -> list[str]:
    """Return one line per command."""
    lines = [
        label,
        (
            "  agent             command                                      stt s  token s"
            "  words s  whole s  evaluated  reused  rounds  warmed"
        ),
    ]
    lines.extend(
        f"  {c.agent:<17} {c.text[:44]:<44} {_s(c.speech_to_text):>6} "
        f"{_s(c.first_token):>8} {_s(c.first_words):>8} {_s(c.whole):>8} "
        f"{c.evaluated if c.evaluated is not None else '-':>10} "
        f"{c.reused if c.reused is not None else '-':>7} {c.rounds:>7} "
        f"{_pct(c.warmed):>7}"
        + (
            ""
            if c.heard.strip().lower().startswith(c.text[:10])
            else f"  heard {c.heard!r}"
        )
        for c in commands
    )
    return lines


def answer_lines(label: str, commands: list[Command]) -> list[str]:
    """Return what each agent said to each command."""
    return [
        label,
        *(f"  {c.agent:<17} {c.text[:44]:<44} {c.said[:90]!r}" for c in commands),
    ]


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _answered(command: Command) -> bool:
    """Tell whether the agent answered in words to speak (no JSON, no markup)."""
    return bool(command.said.strip()) and unspeakable(command.said) is None


def _slower(ours: Command, core: Command) -> bool:
    """Tell whether ours took longer than core, beyond the resolution."""
    return ours.whole - core.whole > max(
        RESOLUTION_SECONDS, RESOLUTION_SHARE * core.whole
    )


def targets(
    count: int,
    warm: dict[str, list[Command]],
    cold: dict[str, list[Command]],
) -> list[str]:
    """Return the targets with met / not met."""
    lines = ["", "Targets"]
    later = warm["ours"]
    shares = [c.cached_share for c in later]
    low = min((s for s in shares if s is not None), default=None)
    warm_token = _median([c.first_token for c in later])
    cold_token = _median([c.first_token for c in cold["ours, no warm-up"]])
    big = count >= max(ENTITY_COUNTS)
    lines.append(
        f"  new command on a warm server, {count} entities: at least 95% of its first "
        f"request from the cache: min {_pct(low)} "
        f"({_verdict(low is not None and low >= 0.95)})"
        + ("" if big else " (the target is at the largest count)")
    )
    if warm_token is not None and cold_token is not None:
        lines.append(
            f"  its first token at most a tenth of a cold one (medians): "
            f"{warm_token:.2f} s vs {cold_token:.2f} s / 10 = {cold_token / 10:.2f} s "
            f"({_verdict(warm_token <= cold_token / 10)})"
        )
    for warmed, unwarmed in zip(cold["ours"], cold["ours, no warm-up"], strict=True):
        if warmed.after_text is None or unwarmed.after_text is None:
            lines.append(f"  {warmed.text!r}: no first token (NOT met)")
            continue
        gained = unwarmed.after_text - warmed.after_text
        wanted = 0.8 * warmed.speech_to_text
        ready = warmed.warmed == 1.0
        lines.append(
            f"  cache erased, {warmed.text!r}: first token after the text "
            f"{warmed.after_text:.2f} s with the warm-up, {unwarmed.after_text:.2f} s "
            f"without: {gained:.2f} s sooner, wanted {wanted:.2f} s (0.8 x speech-to-text"
            f" {warmed.speech_to_text:.2f} s) or the whole prefix ready; prefix "
            f"evaluated when the text came: {_pct(warmed.warmed)} "
            f"({_verdict(gained >= wanted or ready)})"
        )
    pairs = [
        (mine, theirs)
        for part in (warm, cold)
        for mine, theirs in zip(part["ours"], part["core"], strict=True)
    ]
    # A call written out as text is no answer: nothing was done, and the user
    # hears JSON. Its time is not a pace to keep.
    compared = [(mine, theirs) for mine, theirs in pairs if _answered(theirs)]
    slower = [(mine, theirs) for mine, theirs in compared if _slower(mine, theirs)]
    lines.append(
        "  ours never slower than core on a command core answered in words fit to "
        "speak (whole time, beyond max(10 ms, 3 %)): "
        + (
            f"slower on {[mine.text for mine, _ in slower]} (NOT met)"
            if slower
            else f"met on {len(compared)} of {len(pairs)}"
            if compared
            else "core answered none of them in words: nothing to compare"
        )
    )
    lines.extend(
        f"    slower: {mine.text!r}, ours {mine.whole:.2f} s in {mine.rounds} model "
        f"rounds, core {theirs.whole:.2f} s in {theirs.rounds}: {theirs.said[:60]!r}"
        for mine, theirs in slower
    )
    lines.extend(
        f"    not compared: {theirs.text!r}, core said {theirs.said[:60]!r}"
        for mine, theirs in pairs
        if not _answered(theirs)
    )
    two_cold = {c.text: c for c in cold[TWO_ROUNDS]}
    one_cold = {c.text: c for c in cold["ours"]}
    for one, two in zip(
        (c for c in warm["ours"] if c.text in DEVICE_COMMANDS),
        warm[TWO_ROUNDS],
        strict=True,
    ):
        lines.append(
            f"  warm server, {one.text!r}: one round {one.whole:.2f} s, two rounds "
            f"{two.whole:.2f} s: at most {ONE_ROUND_SHARE:.0%} "
            f"({_verdict(one.whole <= ONE_ROUND_SHARE * two.whole)}); cache erased: "
            f"{one_cold[one.text].whole:.2f} s vs {two_cold[one.text].whole:.2f} s"
        )
    return lines


def _header(count: int) -> list[str]:
    return [
        "",
        f"=== Voice commands on real servers, {count} exposed entities",
        (
            f"llama-server b{servers.LLAMA_SERVER_BUILD} ({' '.join(SERVER_ARGS)}), "
            f"{MODEL}, faster-whisper-server {speech.WHISPER_SERVER.version} "
            f"with Whisper base (int8, CPU), Home Assistant {HA_VERSION}, Python "
            f"{platform.python_version()}, {os.cpu_count()} CPUs "
            f"({platform.machine()}); audio sent at the pace of speech"
        ),
        (
            "llama-server on CPU 0 (one thread), Whisper on CPU 1 (one thread)"
            if SEPARATE_CORES
            else "both servers share the CPUs (two threads each)"
        ),
    ]


# --- the benchmark ------------------------------------------------------------------


async def _async_wait_out_warm_up() -> None:
    """Let the agent's memory of its last warm-up lapse, as between real commands."""
    await asyncio.sleep(WARM_AGAIN_AFTER)


@pytest.mark.parametrize("entity_count", ENTITY_COUNTS)
async def bench_voice_real(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    running: Servers,
    entity_count: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Commands on a warm server, then on an erased one; ours and core."""
    _quiet()
    proxy = running.model
    recorded = len(proxy.exchanges)
    pipelines, device = await async_setup_voice(hass, running, entity_count)
    samples = spoken_commands(running.work)

    async def say(name: str, agent: str, text: str) -> Command:
        with capsys.disabled():
            print(f"{entity_count} entities: {agent}: {text!r}", flush=True)
        return await async_command(
            hass, proxy, agent, pipelines[name], device, text, samples[text]
        )

    warm: dict[str, list[Command]] = {name: [] for name in (*NAMES, TWO_ROUNDS)}
    for name, commands in warm.items():
        await say(name, f"{name} (not measured)", FIRST_COMMAND)
        for text in COMMANDS:
            if name != TWO_ROUNDS or text in DEVICE_COMMANDS:
                commands.append(await say(name, name, text))
    cold: dict[str, list[Command]] = {
        "ours": [],
        "ours, no warm-up": [],
        TWO_ROUNDS: [],
        "core": [],
    }
    for text in COMMANDS:
        for label, commands in cold.items():
            if label == TWO_ROUNDS and text not in DEVICE_COMMANDS:
                continue
            await _async_wait_out_warm_up()
            await async_erase(proxy)
            name = label if label in pipelines else label.split(",")[0]
            prepare = (
                patch.object(OpenAICompatibleConversationEntity, "async_prepare")
                if label == "ours, no warm-up"
                else contextlib.nullcontext()
            )
            with prepare:
                commands.append(await say(name, label, text))
    lines = _header(entity_count)
    lines += command_lines(
        "Warm server, each agent's commands in a row:",
        [c for commands in warm.values() for c in commands],
    )
    lines += command_lines(
        "Cache erased before each command:",
        sorted(
            (c for commands in cold.values() for c in commands),
            key=lambda c: COMMANDS.index(c.text),
        ),
    )
    lines += answer_lines(
        "What each agent said, warm server, then cache erased:",
        [c for part in (warm, cold) for commands in part.values() for c in commands],
    )
    lines += targets(entity_count, warm, cold)
    exchanges = running.work / f"exchanges-{entity_count}.json"
    exchanges.write_text(json.dumps([e.as_json() for e in proxy.since(recorded)]))
    with capsys.disabled():
        print("\n".join(lines), flush=True)
        print(f"the requests and answers: {exchanges}", flush=True)
