"""The voice benchmark, run by bench/voice.py through pytest.

Not a test: its function is named `bench_*` and bench/voice.py collects it
with `-o python_functions=bench_*`; `scripts/test` only collects tests/.

A whole Assist pipeline runs in Home Assistant (speech-to-text, our agent,
text-to-speech) against the simulator in a process of its own, paced like a
local server: the agent writes its answer at a steady speed, and speech takes
time to synthesize in proportion to its text. Measured: the time from the end
of the user's audio to the first and to the last byte of the answer's audio,
read from the pipeline's TTS stream as a voice satellite reads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
import logging
import os
from pathlib import Path
import platform
import statistics
import time
from unittest.mock import patch

import aiohttp
from homeassistant.components import assist_pipeline, stt, tts
from homeassistant.components.assist_pipeline.pipeline import (
    async_create_default_pipeline,
    async_update_pipeline,
)
from homeassistant.components.openai_conversation import const as core_const
from homeassistant.config_entries import ConfigEntry, ConfigSubentryData
from homeassistant.const import (
    CONF_API_KEY,
    CONF_LLM_HASS_API,
    CONF_PROMPT,
    __version__ as HA_VERSION,
)
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er, llm
from homeassistant.setup import async_setup_component
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry  # type: ignore[import-untyped]

from bench._conversation_pytest import sim_url  # noqa: F401  (a fixture)
from custom_components.openai_compatible import const as ours_const
from custom_components.openai_compatible.models.providers import PROVIDER_CUSTOM
from simulator import sse_text

REPEAT = int(os.environ.get("BENCH_REPEAT", "5"))

# The answer the agent writes, four sentences long, at the pace below; the
# last one names the turn, so that no answer comes from Home Assistant's cache.
ANSWER = (
    "The kitchen light is on, and the living room is at twenty-one degrees. "
    "The front door is closed and the garage door is locked. "
    "Tomorrow will be sunny, with a high of eighteen degrees in the afternoon. "
    "This was answer number {turn:03}."
)
# 4 characters (about one token) per chunk: 40 tokens per second.
CHUNK_CHARACTERS = 4
CHUNK_SECONDS = 0.025
# Synthesis at 100 characters per second: 6 s of speech take 1 s to make.
SYNTHESIS_SECONDS_PER_CHARACTER = 0.01
# The recording: 2 s of 16 kHz, 16-bit mono samples, in 100 ms chunks.
RECORDING = b"\x10\x00" * 32_000
RECORDING_CHUNK = 3200

NAMES = ("streaming", "whole", "core")
LABELS = {
    "streaming": "openai_compatible STT + TTS, streaming TTS",
    "whole": "openai_compatible STT + TTS, whole-file TTS",
    "core": "openai_conversation (core) STT + TTS",
}
# The streaming path must start speaking in at most this share of the time
# the whole-file path takes.
TARGET_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Timing:
    """Seconds from the end of the user's audio to the answer's audio."""

    first_byte: float
    last_byte: float
    audio_bytes: int


# --- the server's pace ---------------------------------------------------------


class Pace:
    """The benchmark routes of bench/sim_server.py."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str) -> None:
        """Talk to the server behind `base_url`."""
        self._session = session
        self._root = base_url.removesuffix("/v1")

    async def async_set(self) -> None:
        """Pace the server like a local one; it hears a question."""
        settings = {
            "stream_chunk_delay": CHUNK_SECONDS,
            "speech_seconds_per_character": SYNTHESIS_SECONDS_PER_CHARACTER,
            "transcript": "How is the house?",
        }
        async with self._session.post(
            f"{self._root}/bench/settings", json=settings
        ) as response:
            response.raise_for_status()

    async def async_queue_answer(self, turn: int) -> None:
        """Make the agent's next answer the long one, streamed in chunks."""
        text = ANSWER.format(turn=turn)
        async with self._session.post(
            f"{self._root}/bench/enqueue",
            json={
                "path": "/chat/completions",
                "sse": sse_text(text, split=CHUNK_CHARACTERS),
            },
        ) as response:
            response.raise_for_status()


# --- the integrations and pipelines ----------------------------------------------


def _entity(hass: HomeAssistant, entry: ConfigEntry, domain: str, title: str) -> str:
    """Return the entity id of an entry's subentry of a platform, by title."""
    subentry_id = next(
        sub.subentry_id for sub in entry.subentries.values() if sub.title == title
    )
    return next(
        entity.entity_id
        for entity in er.async_entries_for_config_entry(
            er.async_get(hass), entry.entry_id
        )
        if entity.domain == domain and entity.config_subentry_id == subentry_id
    )


async def async_setup_integrations(
    hass: HomeAssistant, base_url: str
) -> dict[str, tuple[str, str, str]]:
    """Set up both integrations on the simulator; return each pipeline's engines."""
    for domain in ("homeassistant", "conversation", "assist_pipeline"):
        assert await async_setup_component(hass, domain, {})
    voice = {
        "stt": {ours_const.CONF_AUDIO_MODEL: "whisper-1"},
        "tts": {
            ours_const.CONF_AUDIO_MODEL: "gpt-4o-mini-tts",
            ours_const.CONF_VOICE: "alloy",
            ours_const.CONF_AUDIO_FORMAT: "mp3",
        },
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
                data={
                    ours_const.CONF_RECOMMENDED: True,
                    ours_const.CONF_CHAT_MODEL: "gpt-4o-mini",
                    CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
                    CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
                },
                subentry_type=ours_const.SUBENTRY_CONVERSATION,
                title="agent",
                unique_id=None,
            ),
            ConfigSubentryData(
                data=voice["stt"],
                subentry_type=ours_const.SUBENTRY_STT,
                title="stt",
                unique_id=None,
            ),
            ConfigSubentryData(
                data={**voice["tts"], ours_const.CONF_STREAMING: True},
                subentry_type=ours_const.SUBENTRY_TTS,
                title="streaming",
                unique_id=None,
            ),
            ConfigSubentryData(
                data={**voice["tts"], ours_const.CONF_STREAMING: False},
                subentry_type=ours_const.SUBENTRY_TTS,
                title="whole",
                unique_id=None,
            ),
        ],
    )
    # Core's client reads the server's address from OPENAI_BASE_URL.
    core = MockConfigEntry(
        domain=core_const.DOMAIN,
        title="Benchmark core",
        data={CONF_API_KEY: "sk-bench"},
        version=2,
        minor_version=8,
        subentries_data=[
            ConfigSubentryData(
                data={core_const.CONF_CHAT_MODEL: "whisper-1"},
                subentry_type="stt",
                title="core stt",
                unique_id=None,
            ),
            ConfigSubentryData(
                data={CONF_PROMPT: "", core_const.CONF_CHAT_MODEL: "gpt-4o-mini-tts"},
                subentry_type="tts",
                title="core tts",
                unique_id=None,
            ),
        ],
    )
    for entry in (ours, core):
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    agent = _entity(hass, ours, "conversation", "agent")
    return {
        "streaming": (
            agent,
            _entity(hass, ours, "stt", "stt"),
            _entity(hass, ours, "tts", "streaming"),
        ),
        "whole": (
            agent,
            _entity(hass, ours, "stt", "stt"),
            _entity(hass, ours, "tts", "whole"),
        ),
        "core": (
            agent,
            _entity(hass, core, "stt", "core stt"),
            _entity(hass, core, "tts", "core tts"),
        ),
    }


async def async_create_pipeline(
    hass: HomeAssistant, name: str, engines: tuple[str, str, str]
) -> str:
    """Create a pipeline of our agent with the given speech engines."""
    agent, speech_to_text, text_to_speech = engines
    pipeline = await async_create_default_pipeline(
        hass, speech_to_text, text_to_speech, name
    )
    assert pipeline is not None
    await async_update_pipeline(
        hass,
        pipeline,
        conversation_engine=agent,
        conversation_language="*",
        prefer_local_intents=False,
    )
    return str(pipeline.id)


# --- one voice turn --------------------------------------------------------------


async def async_speak_to(hass: HomeAssistant, pipeline_id: str) -> Timing:
    """Speak to a pipeline; time its audio from the end of the user's audio."""
    spoken: float | None = None
    first: float | None = None
    audio = bytearray()
    readers: list[asyncio.Task[None]] = []

    async def recording() -> AsyncIterator[bytes]:
        nonlocal spoken
        for start in range(0, len(RECORDING), RECORDING_CHUNK):
            yield RECORDING[start : start + RECORDING_CHUNK]
        spoken = time.perf_counter()

    async def read(token: str) -> None:
        """Read the answer's audio as a satellite does, from the run's start."""
        nonlocal first
        stream = tts.async_get_stream(hass, token)
        assert stream is not None
        async for chunk in stream.async_stream_result():
            if first is None and chunk:
                first = time.perf_counter()
            audio.extend(chunk)

    pipeline = assist_pipeline.async_get_pipeline(hass, pipeline_id)

    def on_event(event: assist_pipeline.PipelineEvent) -> None:
        if event.type is assist_pipeline.PipelineEventType.RUN_START:
            token = event.data["tts_output"]["token"]
            readers.append(hass.async_create_task(read(token)))
        elif event.type is assist_pipeline.PipelineEventType.ERROR:
            raise AssertionError(f"The pipeline failed: {event.data}")

    await assist_pipeline.async_pipeline_from_audio_stream(
        hass,
        context=Context(),
        event_callback=on_event,
        stt_metadata=stt.SpeechMetadata(
            language=pipeline.stt_language or pipeline.language,
            format=stt.AudioFormats.WAV,
            codec=stt.AudioCodecs.PCM,
            bit_rate=stt.AudioBitRates.BITRATE_16,
            sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
            channel=stt.AudioChannels.CHANNEL_MONO,
        ),
        stt_stream=recording(),
        pipeline_id=pipeline_id,
        audio_settings=assist_pipeline.AudioSettings(is_vad_enabled=False),
    )
    await asyncio.gather(*readers)
    last = time.perf_counter()
    assert spoken is not None
    assert first is not None
    assert len(audio) > 1000
    return Timing(first - spoken, last - spoken, len(audio))


# --- figures -----------------------------------------------------------------------


def report(timings: dict[str, list[Timing]]) -> str:
    """Return the figures and the target, as printed."""
    first = {
        name: statistics.median(t.first_byte for t in timings[name]) for name in NAMES
    }
    last = {
        name: statistics.median(t.last_byte for t in timings[name]) for name in NAMES
    }
    characters = len(ANSWER.format(turn=0))
    seconds = characters * SYNTHESIS_SECONDS_PER_CHARACTER
    writing = characters / CHUNK_CHARACTERS * CHUNK_SECONDS
    lines = [
        "",
        (
            "Voice pipeline: speech-to-text, our agent, text-to-speech "
            f"(median of {REPEAT} runs)"
        ),
        (
            f"Home Assistant {HA_VERSION}, Python {platform.python_version()}, "
            f"{platform.machine()}"
        ),
        (
            f"The agent writes {characters} characters in 4 sentences in "
            f"{writing:.1f} s; the server takes {seconds:.1f} s to synthesize "
            "all of them."
        ),
        "",
        f"{'':46} {'first byte':>11} {'last byte':>10}",
    ]
    lines += [
        f"{LABELS[name]:46} {first[name]:>9.2f} s {last[name]:>8.2f} s"
        for name in NAMES
    ]
    share = first["streaming"] / first["whole"]
    verdict = "PASS" if share <= TARGET_SHARE else "FAIL"
    lines += [
        "",
        (
            f"Target: streaming TTS speaks first in at most {TARGET_SHARE:.0%} "
            f"of the time whole-file TTS takes: {share:.0%}, {verdict}"
        ),
        "",
    ]
    return "\n".join(lines)


# --- the benchmark ---------------------------------------------------------------


async def bench_voice(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    sim_url: str,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run voice turns through the three pipelines and print the figures."""
    asyncio.get_running_loop().set_debug(False)
    logging.getLogger().setLevel(logging.WARNING)
    with (
        patch.dict(os.environ, {"OPENAI_BASE_URL": sim_url}),
        patch("homeassistant.components.tts.DEFAULT_CACHE_DIR", str(tmp_path)),
    ):
        engines = await async_setup_integrations(hass, sim_url)
        pipelines = {
            name: await async_create_pipeline(hass, name, engines[name])
            for name in NAMES
        }
        timings: dict[str, list[Timing]] = {name: [] for name in NAMES}
        async with aiohttp.ClientSession() as session:
            pace = Pace(session, sim_url)
            await pace.async_set()
            turn = 0
            for repetition in range(REPEAT + 1):
                order = NAMES if repetition % 2 == 0 else NAMES[::-1]
                for name in order:
                    turn += 1
                    await pace.async_queue_answer(turn)
                    timing = await async_speak_to(hass, pipelines[name])
                    if repetition:  # the first round warms up
                        timings[name].append(timing)
    with capsys.disabled():
        print(report(timings), flush=True)
