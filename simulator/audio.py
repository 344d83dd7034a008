"""Audio: transcriptions of uploaded recordings, generated speech, voice lists.

Transcription answers the text a test sets (`SimulatorSettings.transcript`),
after checking the upload the way OpenAI does: a multipart form with a file
of a known type that decodes (WAV is parsed), at most 25 MB and at least 0.1
seconds long, and an ISO-639-1 language. Speech is generated, not spoken: a
quiet tone (WAV, PCM) or silent frames (MP3) whose length follows the text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
import json
import math
import re
import struct
from typing import TYPE_CHECKING, Any

from aiohttp import web

from .tokens import count_tokens
from .wire import (
    APIError,
    UploadedFile,
    invalid_type,
    invalid_value,
    missing,
    parse_multipart,
    require_multipart,
    unknown_parameter,
)

if TYPE_CHECKING:
    from .settings import SimulatorSettings

AUDIO_MODELS = ("whisper-1", "gpt-4o-mini-transcribe", "tts-1", "gpt-4o-mini-tts")
# What OpenAI accepts, and the part of it the simulator can generate.
ALL_SPEECH_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
SPEECH_FORMATS = ("mp3", "wav", "pcm")
TRANSCRIPT_FORMATS = ("json", "text", "verbose_json", "srt", "vtt")
UPLOAD_EXTENSIONS = (
    "flac",
    "m4a",
    "mp3",
    "mp4",
    "mpeg",
    "mpga",
    "oga",
    "ogg",
    "wav",
    "webm",
)
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
MAX_INPUT_CHARACTERS = 4096
MIN_AUDIO_SECONDS = 0.1
SPEECH_SAMPLE_RATE = 24_000
SECONDS_PER_CHARACTER = 0.06
CONTENT_TYPES = {"mp3": "audio/mpeg", "wav": "audio/wav", "pcm": "audio/pcm"}

_CHUNK = 4096
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")
# One period of a quiet 400 Hz tone at 24 kHz, 16-bit signed samples.
_TONE = struct.pack(
    "<60h", *(round(3000 * math.sin(2 * math.pi * i / 60)) for i in range(60))
)
# An MPEG-2 Layer III frame: 24 kHz, 32 kbit/s, mono, no CRC; all-zero side
# information and main data decode as 576 samples of silence.
_MP3_HEADER = bytes((0xFF, 0xF3, 0x44, 0xC0))
_MP3_FRAME = _MP3_HEADER + bytes(96 - len(_MP3_HEADER))
_MP3_FRAME_SECONDS = 576 / SPEECH_SAMPLE_RATE
_SIGNATURES = {
    "flac": (b"fLaC",),
    "mp3": (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2", b"\xff\xe3"),
    "ogg": (b"OggS",),
}
_SIGNATURES["mpeg"] = _SIGNATURES["mpga"] = _SIGNATURES["mp3"]
_SIGNATURES["oga"] = _SIGNATURES["ogg"]


# --- transcription ------------------------------------------------------------


async def transcribe(
    request: web.Request, settings: SimulatorSettings, models: list[str]
) -> web.StreamResponse:
    """Answer POST /v1/audio/transcriptions."""
    require_multipart(request.content_type)
    fields, files = parse_multipart(
        request.headers["Content-Type"], await request.read()
    )
    upload = next((file for file in files if file.field == "file"), None)
    if upload is None:
        raise missing("file")
    model = _known_model(fields.get("model"), models)
    if "stream" in fields and settings.transcription_stream_refused:
        raise unknown_parameter("stream")
    seconds = audio_seconds(upload)
    language = fields.get("language")
    if language is not None and not _LANGUAGE.match(language):
        raise APIError(
            f"Invalid language '{language}'. Language parameter must be specified "
            "in ISO-639-1 format.",
            param="language",
            code="invalid_language_format",
        )
    response_format = fields.get("response_format", "json")
    if response_format not in TRANSCRIPT_FORMATS:
        raise invalid_value("response_format", response_format, TRANSCRIPT_FORMATS)
    text = settings.transcript
    if text is None:
        text = (
            f"I heard {seconds:.1f} seconds of audio."
            if seconds is not None
            else "I heard some audio."
        )
    # Like OpenAI: whisper-1 ignores `stream`, the newer models stream events.
    if fields.get("stream") == "true" and not model.startswith("whisper"):
        return await _stream_transcript(request, text)
    return _transcript_response(text, response_format, seconds or 0.0)


def _known_model(model: str | None, models: list[str]) -> str:
    """Return the requested model; raise APIError unless the server has it."""
    if not model:
        raise missing("model")
    if model not in models:
        raise APIError(
            f"The model '{model}' does not exist",
            status=404,
            param="model",
            code="model_not_found",
        )
    return model


def audio_seconds(upload: UploadedFile) -> float | None:
    """Check an uploaded recording; return its length in seconds when known."""
    if len(upload.data) > MAX_UPLOAD_BYTES:
        raise APIError(
            f"Maximum content size limit ({MAX_UPLOAD_BYTES}) exceeded "
            f"({len(upload.data)} bytes read)",
            status=413,
        )
    extension = upload.filename.rsplit(".", 1)[-1].lower()
    if extension not in UPLOAD_EXTENSIONS:
        raise APIError(
            f"Invalid file format. Supported formats: {list(UPLOAD_EXTENSIONS)}"
        )
    if extension == "wav":
        seconds = wav_seconds(upload.data)
    elif upload.data and upload.data.startswith(_SIGNATURES.get(extension, (b"",))):
        return None
    else:
        seconds = None
    if seconds is None:
        raise APIError(
            "Audio file might be corrupted or unsupported",
            param="file",
            code="invalid_value",
        )
    if seconds < MIN_AUDIO_SECONDS:
        raise APIError(
            f"Audio file is too short. Minimum audio length is {MIN_AUDIO_SECONDS} "
            "seconds.",
            param="file",
            code="audio_too_short",
        )
    return seconds


def wav_seconds(data: bytes) -> float | None:
    """Return the length of a PCM WAV file, or None when it is not one."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    position, byte_rate = 12, 0
    while position + 8 <= len(data):
        kind = data[position : position + 4]
        (size,) = struct.unpack_from("<I", data, position + 4)
        start = position + 8
        if kind == b"fmt " and size >= 16:
            tag, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", data, start)
            if tag not in (1, 0xFFFE) or not channels or not rate or not bits:
                return None
            byte_rate = channels * rate * bits // 8
        elif kind == b"data":
            if not byte_rate:
                return None
            return min(size, len(data) - start) / byte_rate
        position = start + size + size % 2
    return None


def _transcript_response(
    text: str, response_format: str, seconds: float
) -> web.Response:
    """Return the transcription in the asked format."""
    if response_format == "json":
        return web.json_response({"text": text})
    if response_format == "verbose_json":
        segment = {"id": 0, "start": 0.0, "end": round(seconds, 2), "text": text}
        return web.json_response(
            {
                "task": "transcribe",
                "language": "english",
                "duration": round(seconds, 2),
                "text": text,
                "segments": [segment],
            }
        )
    if response_format == "srt":
        body = f"1\n00:00:00,000 --> {_timestamp(seconds, ',')}\n{text}\n\n"
    elif response_format == "vtt":
        body = f"WEBVTT\n\n00:00:00.000 --> {_timestamp(seconds, '.')}\n{text}\n\n"
    else:
        body = text
    return web.Response(text=body, content_type="text/plain")


def _timestamp(seconds: float, separator: str) -> str:
    """Return hh:mm:ss plus milliseconds, as subtitles write times."""
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02}:{minutes:02}:{rest // 1000:02}{separator}{rest % 1000:03}"


async def _stream_transcript(request: web.Request, text: str) -> web.StreamResponse:
    """Stream the text word by word as transcript events, then the whole."""
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream; charset=utf-8"}
    )
    await response.prepare(request)
    for word in re.findall(r"\S+\s*", text):
        event = {"type": "transcript.text.delta", "delta": word}
        await response.write(f"data: {json.dumps(event)}\n\n".encode())
    tokens = count_tokens(text)
    done = {
        "type": "transcript.text.done",
        "text": text,
        "usage": {
            "type": "tokens",
            "input_tokens": tokens,
            "output_tokens": tokens,
            "total_tokens": 2 * tokens,
        },
    }
    await response.write(f"data: {json.dumps(done)}\n\n".encode())
    await response.write_eof()
    return response


# --- speech -------------------------------------------------------------------


async def speak(
    request: web.Request, settings: SimulatorSettings, models: list[str]
) -> web.StreamResponse:
    """Answer POST /v1/audio/speech with generated audio, sent in chunks."""
    body = request["json"]
    if not isinstance(body, dict):
        raise APIError("We could not parse the JSON body of your request.")
    model = _known_model(body.get("model"), models)
    text, voice = body.get("input"), body.get("voice")
    if text is None:
        raise missing("input")
    if not isinstance(text, str):
        raise invalid_type("input", "a string", text)
    if len(text) > MAX_INPUT_CHARACTERS:
        raise APIError(
            f"Invalid 'input': string too long. Expected a string with maximum "
            f"length {MAX_INPUT_CHARACTERS}, but got a string with length "
            f"{len(text)} instead.",
            param="input",
            code="string_above_max_length",
        )
    if voice is None:
        raise missing("voice")
    if voice not in settings.voices:
        raise invalid_value("voice", voice, settings.voices)
    audio_format = body.get("response_format", "mp3")
    if audio_format not in SPEECH_FORMATS:
        raise invalid_value("response_format", audio_format, SPEECH_FORMATS)
    for field in settings.speech_fields_refused:
        if field in body:
            raise unknown_parameter(field)
    speed = body.get("speed", 1.0)
    if not isinstance(speed, int | float) or not 0.25 <= speed <= 4.0:
        raise APIError(
            f"Invalid 'speed': expected a number from 0.25 to 4.0, but got {speed}.",
            param="speed",
            code="invalid_value",
        )
    if body.get("instructions") and model.startswith("tts-1"):
        raise APIError(
            f"Instructions are not supported for the model {model}.",
            param="instructions",
        )
    if body.get("stream_format", "audio") != "audio":
        raise invalid_value("stream_format", body["stream_format"], ("audio",))
    audio = synthesize(text, audio_format, float(speed))
    if settings.speech_seconds_per_character:
        await asyncio.sleep(settings.speech_seconds_per_character * len(text))
    response = web.StreamResponse(headers={"Content-Type": CONTENT_TYPES[audio_format]})
    await response.prepare(request)
    for start in range(0, len(audio), _CHUNK):
        await response.write(audio[start : start + _CHUNK])
    await response.write_eof()
    return response


def speech_seconds(text: str, speed: float = 1.0) -> float:
    """Return how long the generated speech for a text lasts."""
    return max(MIN_AUDIO_SECONDS, len(text) * SECONDS_PER_CHARACTER / speed)


def synthesize(text: str, audio_format: str, speed: float = 1.0) -> bytes:
    """Return generated audio for a text: WAV, raw PCM or MP3."""
    seconds = speech_seconds(text, speed)
    if audio_format == "mp3":
        return _MP3_FRAME * math.ceil(seconds / _MP3_FRAME_SECONDS)
    samples = round(seconds * SPEECH_SAMPLE_RATE)
    pcm = b"".join(_tone(samples * 2))
    if audio_format == "pcm":
        return pcm
    return wav_header(len(pcm)) + pcm


def _tone(length: int) -> Iterator[bytes]:
    """Yield `length` bytes of the tone."""
    whole, rest = divmod(length, len(_TONE))
    yield _TONE * whole
    yield _TONE[:rest]


def wav_header(data_size: int, sample_rate: int = SPEECH_SAMPLE_RATE) -> bytes:
    """Return the header of a 16-bit mono PCM WAV file."""
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + data_size,
        b"WAVE",
        b"fmt ",
        16,
        1,
        1,
        sample_rate,
        sample_rate * 2,
        2,
        16,
        b"data",
        data_size,
    )


# --- voices -------------------------------------------------------------------


def voices(settings: SimulatorSettings) -> dict[str, Any] | None:
    """Return the voice list as Kokoro-FastAPI sends it; None: no such route."""
    if not settings.voices_endpoint:
        return None
    return {"voices": [{"id": voice, "name": voice} for voice in settings.voices]}
