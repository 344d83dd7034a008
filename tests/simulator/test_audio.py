"""Audio routes: transcriptions, generated speech and voice lists."""

from __future__ import annotations

import io
import math
import struct
import time
from typing import Any
import wave

import aiohttp
from mutagen.mp3 import MP3
import openai
import pytest

from simulator import AUDIO_MODELS, OPENAI_VOICES, OpenAISimulator
from simulator.audio import synthesize, wav_header, wav_seconds


@pytest.fixture(autouse=True)
def audio_models(sim: OpenAISimulator) -> None:
    """Let the simulator list its audio models."""
    sim.models += AUDIO_MODELS


def recording(seconds: float = 1.0, rate: int = 16_000) -> bytes:
    """Return a WAV file of 16-bit mono samples."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(rate)
        file.writeframes(b"\x01\x00" * round(seconds * rate))
    return buffer.getvalue()


async def post_form(
    sim: OpenAISimulator, fields: dict[str, str], file: tuple[str, bytes] | None
) -> tuple[int, Any]:
    """Post a multipart form to the transcription route; return status and JSON."""
    form = aiohttp.FormData(default_to_multipart=True)
    for name, value in fields.items():
        form.add_field(name, value)
    if file is not None:
        form.add_field("file", file[1], filename=file[0])
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.base_url}/audio/transcriptions", data=form) as response,
    ):
        return response.status, await response.json()


# --- transcription ------------------------------------------------------------


async def test_transcription_parses_the_upload(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Without a set transcript the answer tells the recording's length."""
    result = await client.audio.transcriptions.create(
        model="whisper-1",
        file=("speech.wav", recording(1.5)),
        language="en",
        prompt="Kitchen, Living room",
    )

    assert result.text == "I heard 1.5 seconds of audio."
    request = sim.requests[-1]
    assert request.headers["content-type"].startswith("multipart/form-data")
    assert b'name="prompt"\r\n\r\nKitchen, Living room' in request.body


async def test_transcription_text_set_by_the_test(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """The set transcript comes back in every response format."""
    sim.settings.transcript = "turn on the kitchen light"
    upload = ("a.wav", recording(2.0))

    plain = await client.audio.transcriptions.create(
        model="whisper-1", file=upload, response_format="text"
    )
    verbose = await client.audio.transcriptions.create(
        model="whisper-1", file=upload, response_format="verbose_json"
    )
    subtitles = await client.audio.transcriptions.create(
        model="whisper-1", file=upload, response_format="srt"
    )
    web_vtt = await client.audio.transcriptions.create(
        model="whisper-1", file=upload, response_format="vtt"
    )

    assert plain == "turn on the kitchen light"
    assert verbose.text == "turn on the kitchen light"
    assert verbose.duration == 2.0
    assert subtitles == (
        "1\n00:00:00,000 --> 00:00:02,000\nturn on the kitchen light\n\n"
    )
    assert web_vtt.startswith("WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("speech.ogg", b"OggS\x00\x02" + bytes(60)),
        ("speech.mp3", b"ID3\x04" + bytes(60)),
        ("speech.flac", b"fLaC" + bytes(60)),
        ("speech.webm", b"\x1a\x45\xdf\xa3" + bytes(60)),
    ],
)
async def test_transcription_of_other_formats(
    client: openai.AsyncOpenAI, name: str, data: bytes
) -> None:
    """Compressed recordings are checked by their signature only."""
    result = await client.audio.transcriptions.create(
        model="whisper-1", file=(name, data)
    )

    assert result.text == "I heard some audio."


async def test_streamed_transcription(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """gpt-4o transcribe models stream deltas and a done event."""
    sim.settings.transcript = "turn on the light"

    stream = await client.audio.transcriptions.create(
        model="gpt-4o-mini-transcribe", file=("a.wav", recording()), stream=True
    )
    events = [event async for event in stream]

    deltas = [event.delta for event in events if event.type == "transcript.text.delta"]
    assert deltas == ["turn ", "on ", "the ", "light"]
    assert events[-1].type == "transcript.text.done"
    assert events[-1].text == "turn on the light"


async def test_whisper_ignores_stream(sim: OpenAISimulator) -> None:
    """whisper-1 answers JSON even when asked to stream, as OpenAI's does."""
    sim.settings.transcript = "hello"

    status, body = await post_form(
        sim, {"model": "whisper-1", "stream": "true"}, ("a.wav", recording())
    )

    assert (status, body) == (200, {"text": "hello"})


@pytest.mark.parametrize(
    ("fields", "file", "status", "message"),
    [
        ({"model": "whisper-1"}, None, 400, "Missing required parameter: 'file'."),
        ({}, ("a.wav", recording()), 400, "Missing required parameter: 'model'."),
        (
            {"model": "whisper-9"},
            ("a.wav", recording()),
            404,
            "The model 'whisper-9' does not exist",
        ),
        (
            {"model": "whisper-1"},
            ("a.txt", recording()),
            400,
            (
                "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', "
                "'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']"
            ),
        ),
        (
            {"model": "whisper-1"},
            ("a.wav", b"RIFF not a wave"),
            400,
            "Audio file might be corrupted or unsupported",
        ),
        (
            {"model": "whisper-1"},
            ("a.mp3", b"plain text"),
            400,
            "Audio file might be corrupted or unsupported",
        ),
        (
            {"model": "whisper-1"},
            ("a.wav", recording(0.05)),
            400,
            "Audio file is too short. Minimum audio length is 0.1 seconds.",
        ),
        (
            {"model": "whisper-1", "language": "en-US"},
            ("a.wav", recording()),
            400,
            (
                "Invalid language 'en-US'. Language parameter must be specified "
                "in ISO-639-1 format."
            ),
        ),
        (
            {"model": "whisper-1", "response_format": "xml"},
            ("a.wav", recording()),
            400,
            (
                "Invalid value: 'xml'. Supported values are: 'json', 'text', "
                "'verbose_json', 'srt', and 'vtt'."
            ),
        ),
    ],
)
async def test_transcription_errors(
    sim: OpenAISimulator,
    fields: dict[str, str],
    file: tuple[str, bytes] | None,
    status: int,
    message: str,
) -> None:
    """Bad uploads and parameters get OpenAI's errors."""
    answer = await post_form(sim, fields, file)

    assert answer[0] == status
    assert answer[1]["error"]["message"] == message


async def test_transcription_refuses_json_and_large_files(
    sim: OpenAISimulator,
) -> None:
    """A JSON body is refused; so is a file over 25 MB (413)."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{sim.base_url}/audio/transcriptions", json={"model": "whisper-1"}
        ) as response,
    ):
        assert response.status == 400
        assert "expected multipart/form-data" in (await response.text())
    big = wav_header(26 * 1024 * 1024) + bytes(26 * 1024 * 1024)

    status, body = await post_form(sim, {"model": "whisper-1"}, ("a.wav", big))

    assert status == 413
    assert body["error"]["message"].startswith("Maximum content size limit")


async def test_strict_server_refuses_stream(sim: OpenAISimulator) -> None:
    """A server switched to strict refuses the unknown `stream` field."""
    sim.settings.transcription_stream_refused = True

    status, body = await post_form(
        sim, {"model": "whisper-1", "stream": "false"}, ("a.wav", recording())
    )

    assert status == 400
    assert body["error"]["message"] == "Unknown parameter: 'stream'."


def test_wav_seconds_reads_only_pcm_wav() -> None:
    """WAV lengths come from fmt and data; other files have none."""
    assert wav_seconds(recording(0.5)) == 0.5
    assert wav_seconds(b"RIFF\x00\x00\x00\x00WAVEdata\x04\x00\x00\x00abcd") is None
    float_format = struct.pack("<4sIHHIIHH", b"fmt ", 16, 3, 1, 8000, 32000, 4, 32)
    assert wav_seconds(b"RIFF\x00\x00\x00\x00WAVE" + float_format) is None
    assert wav_seconds(b"RIFF\x00\x00\x00\x00WAVE") is None


# --- speech -------------------------------------------------------------------


async def speak(client: openai.AsyncOpenAI, **params: Any) -> bytes:
    """Return the audio of a speech request."""
    response = await client.audio.speech.create(
        **{"model": "tts-1", "voice": "alloy", **params}
    )
    return response.content


async def test_speech_mp3_is_valid_and_follows_the_text(
    client: openai.AsyncOpenAI,
) -> None:
    """MP3 speech decodes; a longer text gives longer audio."""
    short = MP3(io.BytesIO(await speak(client, input="Hello.")))
    long = MP3(io.BytesIO(await speak(client, input="Hello there, how are you?")))

    assert short.info.sample_rate == 24_000
    assert short.info.channels == 1
    assert short.info.length == pytest.approx(6 * 0.06, abs=0.03)
    assert long.info.length == pytest.approx(25 * 0.06, abs=0.03)


async def test_speech_wav_and_pcm(client: openai.AsyncOpenAI) -> None:
    """WAV speech is 24 kHz mono 16-bit; PCM is its samples; speed shortens it."""
    text = "The kitchen light is on."
    data = await speak(client, input=text, response_format="wav")
    pcm = await speak(client, input=text, response_format="pcm", speed=2.0)

    with wave.open(io.BytesIO(data)) as file:
        assert (file.getnchannels(), file.getsampwidth(), file.getframerate()) == (
            1,
            2,
            24_000,
        )
        frames = file.readframes(file.getnframes())
    assert file.getnframes() == round(len(text) * 0.06 * 24_000)
    assert max(struct.unpack(f"<{len(frames) // 2}h", frames)) > 1000
    assert len(pcm) == 2 * round(len(text) * 0.06 / 2 * 24_000)


async def test_speech_instructions_and_voices(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """gpt-4o-mini-tts takes instructions; the voices can be changed."""
    sim.settings.voices = ("af_heart",)

    audio = await speak(
        client, model="gpt-4o-mini-tts", voice="af_heart", input="Hi.", instructions="x"
    )

    assert audio.startswith(b"\xff\xf3")
    assert sim.requests[-1].json["instructions"] == "x"


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"voice": "nobody"}, 400, "Invalid value: 'nobody'. Supported values are: "),
        ({"voice": None}, 400, "Missing required parameter: 'voice'."),
        ({"input": None}, 400, "Missing required parameter: 'input'."),
        ({"input": 7}, 400, "Invalid type for 'input': expected a string"),
        ({"input": "a" * 4097}, 400, "Invalid 'input': string too long."),
        ({"model": "tts-9"}, 404, "The model 'tts-9' does not exist"),
        ({"response_format": "flac"}, 400, "Invalid value: 'flac'."),
        ({"speed": 5}, 400, "Invalid 'speed'"),
        ({"instructions": "calm"}, 400, "Instructions are not supported"),
        ({"stream_format": "sse"}, 400, "Invalid value: 'sse'."),
    ],
)
async def test_speech_errors(
    sim: OpenAISimulator, params: dict[str, Any], status: int, message: str
) -> None:
    """Bad speech requests get OpenAI-style errors."""
    body = {"model": "tts-1", "voice": "alloy", "input": "Hello.", **params}
    body = {key: value for key, value in body.items() if value is not None}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.base_url}/audio/speech", json=body) as response,
    ):
        answer = await response.json()

    assert response.status == status
    assert answer["error"]["message"].startswith(message)


async def test_speech_refuses_a_non_json_body(sim: OpenAISimulator) -> None:
    """A body that is no JSON object is refused."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.base_url}/audio/speech", data=b"hello") as response,
    ):
        assert response.status == 400


async def test_speech_arrives_in_chunks_after_the_synthesis_time(
    sim: OpenAISimulator,
) -> None:
    """Audio is sent in pieces, after a delay that grows with the text."""
    sim.settings.speech_seconds_per_character = 0.01
    body = {
        "model": "tts-1",
        "voice": "alloy",
        "input": "x" * 20,
        "response_format": "wav",
    }
    began = time.monotonic()
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{sim.base_url}/audio/speech", json=body) as response,
    ):
        pieces = [piece async for piece in response.content.iter_chunked(4096)]

    assert time.monotonic() - began >= 0.2
    assert response.headers["Content-Type"] == "audio/wav"
    assert len(pieces) > 1
    assert b"".join(pieces) == synthesize("x" * 20, "wav")


def test_synthesize_lengths() -> None:
    """The frame count of MP3 and the samples of PCM follow the text."""
    assert len(synthesize("", "mp3")) == 96 * math.ceil(0.1 / (576 / 24_000))
    assert len(synthesize("a" * 100, "pcm")) == 2 * 6 * 24_000


# --- voices -------------------------------------------------------------------


async def test_voices_route(sim: OpenAISimulator) -> None:
    """No voice list by default; Kokoro-style when switched on."""
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{sim.base_url}/audio/voices") as response:
            assert response.status == 404
        sim.settings.voices_endpoint = True
        async with session.get(f"{sim.base_url}/audio/voices") as response:
            listed = await response.json()

    assert [voice["id"] for voice in listed["voices"]] == list(OPENAI_VOICES)


# --- streamed chat pacing -----------------------------------------------------


async def test_stream_chunk_delay_paces_chat(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A streamed answer waits between its chunks when set to."""
    sim.settings.stream_chunk_delay = 0.02
    began = time.monotonic()
    stream = await client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "hello there"}],
        stream=True,
    )
    chunks = [chunk async for chunk in stream]

    assert time.monotonic() - began >= 0.02 * (len(chunks) - 1)
