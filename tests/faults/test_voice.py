"""Speech answers a broken or hostile server gives, while the other agent answers.

Huge, endless, invalid and mislabelled audio for text-to-speech; huge,
endless and mislabelled transcripts for speech-to-text: each ends in a
translated error at the real caps, with the event loop free.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
import logging
from typing import Any, overload

from homeassistant.components import stt, tts
from homeassistant.exceptions import HomeAssistantError
import pytest

from custom_components.openai_compatible.const import (
    CONF_STREAMING,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from custom_components.openai_compatible.voice.audio import (
    MAX_SPEECH_BYTES,
    MAX_TEXT_BYTES,
)
from custom_components.openai_compatible.voice.speech_text import MAX_SPEECH_CHARACTERS
from simulator import AUDIO_MODELS, OpenAISimulator
from simulator.audio import synthesize
from tests.conftest import STT_ENTITY, TTS_ENTITY, voice_subentry

from .conftest import FaultHarness, FaultHarnessFactory

SPEECH = "/audio/speech"
TRANSCRIPTION = "/audio/transcriptions"
PIECE = 64 * 1024
PCM = b"\x10\x00" * 16_000
EN_US_WAV = stt.SpeechMetadata(
    language="en-US",
    format=stt.AudioFormats.WAV,
    codec=stt.AudioCodecs.PCM,
    bit_rate=stt.AudioBitRates.BITRATE_16,
    sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
    channel=stt.AudioChannels.CHANNEL_MONO,
)


class Endless(Sequence[bytes]):
    """A head, then the same piece over and over: a stream that never ends."""

    def __init__(self, piece: bytes, head: bytes = b"") -> None:
        """Send `head` first (if any), then repeat `piece`."""
        self._piece = piece
        self._head = head

    def __len__(self) -> int:
        """Return a length no reader gets to."""
        return 2**40

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | Sequence[bytes]:
        """Return the piece at a position."""
        if isinstance(index, slice):
            raise TypeError("an endless stream has no slices")
        return self._head if index == 0 and self._head else self._piece


@pytest.fixture
async def harness(
    fault_harness: FaultHarnessFactory, simulator: OpenAISimulator
) -> FaultHarness:
    """Return a harness whose faulty entry speaks and listens (MP3, streamed)."""
    simulator.models += AUDIO_MODELS
    return await fault_harness(
        voice=[voice_subentry(SUBENTRY_STT, {}), voice_subentry(SUBENTRY_TTS, {})]
    )


async def _pieces(*texts: str) -> AsyncGenerator[str]:
    """Stream a text in pieces."""
    for text in texts:
        yield text


async def speak(harness: FaultHarness, options: dict[str, Any] | None = None) -> bytes:
    """Have the faulty entry speak one sentence, as a pipeline does."""
    stream = tts.async_create_stream(harness.hass, TTS_ENTITY, options=options)
    stream.async_set_message_stream(_pieces("Something to say."))
    return b"".join([piece async for piece in stream.async_stream_result()])


async def _recording() -> AsyncGenerator[bytes]:
    """Yield a second of recording, as a pipeline does."""
    yield PCM


async def transcribe(harness: FaultHarness) -> list[Any]:
    """Run the faulty entry's speech-to-text; return every result it yields."""
    entity = stt.async_get_speech_to_text_entity(harness.hass, STT_ENTITY)
    assert entity is not None
    return [
        result
        async for result in entity.internal_async_process_audio_stream_with_progress(
            EN_US_WAV, _recording()
        )
    ]


def audio(body: bytes | str, media_type: str) -> dict[str, Any]:
    """Return a whole speech answer labelled with a media type."""
    return {"raw": body, "headers": {"Content-Type": media_type}}


def endless(piece: bytes, media_type: str, head: bytes = b"") -> dict[str, Any]:
    """Return a speech answer that never ends, labelled with a media type."""
    stream = Endless(piece, head)
    return {"sse": stream, "done": False, "headers": {"Content-Type": media_type}}


WAV = {"preferred_format": "wav"}
TOO_LARGE = "The server's answer is larger than 32 MiB"
UNUSABLE = "The server's speech cannot be used"
SPEECH_FAULTS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "endless": (endless(b"\xff\xfb" + bytes(PIECE - 2), "audio/mpeg"), {}, TOO_LARGE),
    "huge": (audio(bytes(MAX_SPEECH_BYTES + 1), "audio/mpeg"), {}, TOO_LARGE),
    "json_labelled_mp3": (
        audio('{"error": {"message": "no such voice"}}', "audio/mpeg"),
        {},
        UNUSABLE,
    ),
    "html_labelled_wav": (
        audio("<html><body>Bad gateway</body></html>", "audio/wav"),
        WAV,
        UNUSABLE,
    ),
    "mp3_labelled_wav": (audio(synthesize("x", "mp3"), "audio/wav"), WAV, UNUSABLE),
    "endless_wav_header": (
        endless(b"LIST" + bytes(PIECE - 4), "audio/wav", b"RIFF\0\0\0\0WAVE"),
        WAV,
        UNUSABLE,
    ),
}


@pytest.mark.parametrize(
    ("answer", "options", "message"), SPEECH_FAULTS.values(), ids=SPEECH_FAULTS
)
async def test_speech_fault(
    harness: FaultHarness, answer: dict[str, Any], options: dict[str, Any], message: str
) -> None:
    """Each hostile speech answer ends in a translated error, the loop free.

    Home Assistant's text-to-speech logs the error it passes on: one line of
    our message, no traceback.
    """
    harness.faulty.enqueue(SPEECH, **answer)

    with pytest.raises(HomeAssistantError) as err:
        await harness.run(speak(harness, options), errors_logged=True)

    assert str(err.value).startswith(message), str(err.value)
    errors = [r for r in harness.caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage().endswith(str(err.value)) for r in errors] == [True]
    assert not any(record.exc_info for record in errors)


def _delta(text: str) -> bytes:
    """Return one transcript delta event."""
    return f'data: {{"type": "transcript.text.delta", "delta": "{text}"}}\n\n'.encode()


TRANSCRIPT_FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "endless_events": (
        {"sse": Endless(_delta("la " * 1000)), "done": False},
        "The server's answer is larger than 1 MiB",
    ),
    "huge": (
        {"json": {"text": "la " * MAX_TEXT_BYTES}},
        "The server's answer is larger than 1 MiB",
    ),
    "endless_json": (
        {
            "sse": Endless(b"la " * PIECE, b'{"text": "'),
            "done": False,
            "headers": {"Content-Type": "application/json"},
        },
        "The server's answer is larger than 1 MiB",
    ),
    "error_event": (
        {
            "sse": [
                {
                    "type": "error",
                    "error": {
                        "message": "<script>alert(1)</script><b>Overloaded</b> "
                        + "y" * 500_000
                    },
                }
            ]
        },
        "The model server answered with an error: Overloaded yyy",
    ),
    "audio_labelled_json": (
        audio(bytes(range(256)) * 64, "application/json"),
        "The server's transcription cannot be read: the answer is not JSON",
    ),
    "audio_labelled_text": (
        audio(bytes(range(256)) * 64, "text/plain"),
        "The server's transcription cannot be read",
    ),
}


@pytest.mark.parametrize(
    ("answer", "message"), TRANSCRIPT_FAULTS.values(), ids=TRANSCRIPT_FAULTS
)
async def test_transcript_fault(
    harness: FaultHarness,
    caplog: pytest.LogCaptureFixture,
    answer: dict[str, Any],
    message: str,
) -> None:
    """Each hostile transcript ends in an error result, told in the log."""
    harness.faulty.enqueue(TRANSCRIPTION, **answer)

    with caplog.at_level(logging.WARNING):
        results = await harness.run(transcribe(harness))

    final = results[-1]
    assert final.result is stt.SpeechResultState.ERROR
    assert f"Speech-to-text failed: {message}" in caplog.text
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("custom_")]
    assert all(len(line) < 500 and "<" not in line for line in ours), ours


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(
    "marks",
    ["[" * 32_000, "![" * 16_000, "](" * 16_000, "." * 32_000],
    ids=["brackets", "image_links", "link_tails", "full_stops"],
)
async def test_a_text_of_marks_is_said_in_linear_time(
    fault_harness: FaultHarnessFactory,
    simulator: OpenAISimulator,
    marks: str,
    streaming: bool,
) -> None:
    """32k characters of link or sentence marks are said, in pieces that fit."""
    simulator.models += AUDIO_MODELS
    harness = await fault_harness(
        voice=[voice_subentry(SUBENTRY_TTS, {CONF_STREAMING: streaming})]
    )

    async def said() -> bytes:
        # Set within the fault: Home Assistant starts speaking at once.
        stream = tts.async_create_stream(harness.hass, TTS_ENTITY)
        if streaming:
            stream.async_set_message_stream(_pieces("Say this ", marks, " and this."))
        else:
            stream.async_set_message(f"Say this {marks} and this.")
        return b"".join([piece async for piece in stream.async_stream_result()])

    assert await harness.run(said())
    inputs = [
        request.json["input"]
        for request in harness.faulty.requests
        if request.path.endswith(SPEECH)
    ]
    assert inputs
    assert max(len(text) for text in inputs) <= MAX_SPEECH_CHARACTERS
