"""The audio routes of a server: transcription, speech and the voice list.

Every answer is read in pieces, up to a size cap and before a deadline, so
nothing a server sends can hold the event loop or grow memory without bound;
every failure becomes one of our translated errors. Every route goes through
the entry's transport; transcription uploads the recording as a form.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
import json
import struct
from typing import Any, Final

import httpx2

from .api import VALIDATION_BUDGET
from .capabilities import Feature
from .const import LOGGER
from .errors import InputError, RequestRejectedError, ServerError, TranslatedError
from .sse import EventStream, async_capped, async_read_body
from .transport import Budget, Transport

TRANSCRIPTION_ROUTE: Final = "/audio/transcriptions"
SPEECH_ROUTE: Final = "/audio/speech"
VOICES_ROUTE: Final = "/audio/voices"

# OpenAI's upload limit; local servers take as much.
MAX_RECORDING_BYTES: Final = 25 * 1024 * 1024
# The audio of one speech request: 10 minutes of 24 kHz WAV fit.
MAX_SPEECH_BYTES: Final = 32 * 1024 * 1024
# A transcript or a voice list.
MAX_TEXT_BYTES: Final = 1024 * 1024
MAX_VOICES: Final = 1000

# Formats that several answers can be joined in, piece after piece.
JOINABLE_FORMATS: Final = ("mp3", "wav", "pcm")
_WAV_HEADER_LIMIT: Final = 64 * 1024
# Data sizes that mean "until the end" in a streamed WAV header.
_WAV_OPEN_SIZES: Final = frozenset({0, 0xFFFFFFFF})
_WAV_PCM: Final = 1
_WAV_EXTENSIBLE: Final = 0xFFFE


# --- errors -------------------------------------------------------------------

# Where an audio route is missing, the server offers no such service.
_MISSING_ROUTE_KEYS: Final = {
    TRANSCRIPTION_ROUTE: "no_transcription_route",
    SPEECH_ROUTE: "no_speech_route",
}
# Refusals that name the model as unknown (Kokoro-FastAPI answers 400).
_UNKNOWN_MODEL_PHRASES: Final = (
    "not found",
    "does not exist",
    "not installed",
    "unsupported model",
    "unknown model",
    "invalid model",
)


def _audio_error(
    err: ServerError, route: str, model: str, voice: str | None
) -> TranslatedError | None:
    """Return what a refusal of an audio route means, if it is a known case."""
    placeholders = err.translation_placeholders or {}
    if isinstance(err, RequestRejectedError) and err.feature is not None:
        # A refused request feature, which the caller may drop.
        return None
    if err.translation_key == "model_not_found":
        return ServerError(
            "audio_model_not_found", model=model, message=placeholders["message"]
        )
    if not isinstance(err, RequestRejectedError):
        return None
    lowered = err.server_message.lower()
    if "model" in lowered and any(p in lowered for p in _UNKNOWN_MODEL_PHRASES):
        return ServerError(
            "audio_model_not_found", model=model, message=err.server_message
        )
    if (
        voice is not None
        and err.status in (400, 404, 422)
        and _names_voice(lowered, voice)
    ):
        return InputError("unknown_voice", voice=voice, message=err.server_message)
    if err.status in (404, 405) and route in _MISSING_ROUTE_KEYS:
        return ServerError(_MISSING_ROUTE_KEYS[route])
    return None


def _names_voice(lowered: str, voice: str) -> bool:
    """Tell whether a refusal is about the voice: it says so, or quotes the name."""
    name = voice.lower()
    return "voice" in lowered or f"'{name}'" in lowered or f'"{name}"' in lowered


@contextmanager
def audio_errors(route: str, model: str, voice: str | None = None) -> Iterator[None]:
    """Raise the error an audio route's failure means.

    A missing route, an unknown model and an unknown voice get errors of
    their own.
    """
    try:
        yield
    except ServerError as err:
        if specific := _audio_error(err, route, model, voice):
            raise specific from err
        raise


def _media_type(headers: httpx2.Headers) -> str:
    """Return the media type of an answer, lower-case, without parameters."""
    return headers.get("content-type", "").split(";")[0].strip().lower()


# --- transcription ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TranscriptionRequest:
    """A recording to transcribe and how."""

    model: str
    recording: bytes
    filename: str
    language: str | None = None
    prompt: str | None = None
    # Ask for transcript events; servers that cannot stream answer whole.
    stream: bool = True


@dataclass(frozen=True, slots=True)
class TranscriptPart:
    """The transcript so far, or, when final, all of it."""

    text: str
    final: bool


async def async_transcribe(
    transport: Transport, request: TranscriptionRequest, budget: Budget
) -> AsyncIterator[TranscriptPart]:
    """Yield the transcript as the server gives it, ending with the final one.

    A refused `stream` raises RequestRejectedError naming
    Feature.TRANSCRIPT_STREAM.
    """
    body: dict[str, Any] = {"model": request.model, "response_format": "json"}
    if request.language:
        body["language"] = request.language
    if request.prompt:
        body["prompt"] = request.prompt
    sent: frozenset[Feature] = frozenset()
    if request.stream:
        body["stream"] = True
        sent = frozenset({Feature.TRANSCRIPT_STREAM})
    with audio_errors(TRANSCRIPTION_ROUTE, request.model):
        async with transport.async_open(
            "POST",
            TRANSCRIPTION_ROUTE,
            budget=budget,
            body=body,
            files=[("file", (request.filename, request.recording))],
            sent=sent,
        ) as opened:
            media_type = _media_type(opened.response.headers)
            if media_type == "text/event-stream":
                events = EventStream(opened.aiter_bytes(), max_bytes=MAX_TEXT_BYTES)
                async for part in _transcript_events(events):
                    yield part
            else:
                raw = await async_read_body(opened.aiter_bytes(), MAX_TEXT_BYTES)
                yield TranscriptPart(_transcript_text(raw, media_type), True)


def _transcript_text(raw: bytes, media_type: str) -> str:
    """Return the text of a whole transcription answer (JSON or plain text)."""
    if media_type.startswith("text/plain"):
        return raw.decode(errors="replace").strip()
    try:
        answer = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise ServerError(
            "transcript_unreadable", problem="the answer is not JSON"
        ) from err
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        raise ServerError("transcript_unreadable", problem="the answer has no text")
    return str(answer["text"]).strip()


def _event_text(event: dict[str, Any]) -> str:
    """Return the new text of one transcript event.

    OpenAI sends `transcript.text.delta` events, vLLM chat-like chunks,
    Speaches one `{"text": ...}` per segment.
    """
    if event.get("type") == "transcript.text.delta":
        return str(event.get("delta") or "")
    if event.get("object") == "transcription.chunk":
        choices = event.get("choices") or [{}]
        delta = choices[0].get("delta") if isinstance(choices[0], dict) else None
        return str((delta or {}).get("content") or "")
    if "type" not in event and isinstance(event.get("text"), str):
        return str(event["text"])
    return ""


async def _transcript_events(events: EventStream) -> AsyncIterator[TranscriptPart]:
    """Yield the growing transcript of an event stream, then the final one."""
    heard = ""
    final: str | None = None
    async for batch in events:
        for event in batch:
            if error := event.get("error"):
                message = error.get("message") if isinstance(error, dict) else error
                raise ServerError("api_error", message=str(message))
            if event.get("type") == "transcript.text.done":
                final = str(event.get("text") or heard)
            elif piece := _event_text(event):
                heard += piece
                yield TranscriptPart(heard.strip(), False)
    yield TranscriptPart((heard if final is None else final).strip(), True)


# --- speech -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """A text to speak and how."""

    model: str
    voice: str
    text: str
    audio_format: str
    speed: float = 1.0
    instructions: str | None = None


async def async_speak(
    transport: Transport, request: SpeechRequest, budget: Budget
) -> AsyncIterator[bytes]:
    """Yield the audio of a text as the server sends it.

    A refused `speed` or `instructions` raises RequestRejectedError naming
    Feature.SPEECH_SPEED or Feature.SPEECH_INSTRUCTIONS.
    """
    body: dict[str, Any] = {
        "model": request.model,
        "voice": request.voice,
        "input": request.text,
        "response_format": request.audio_format,
    }
    sent: set[Feature] = set()
    if request.speed != 1.0:
        body["speed"] = request.speed
        sent.add(Feature.SPEECH_SPEED)
    if request.instructions:
        body["instructions"] = request.instructions
        sent.add(Feature.SPEECH_INSTRUCTIONS)
    with audio_errors(SPEECH_ROUTE, request.model, request.voice):
        async with transport.async_open(
            "POST", SPEECH_ROUTE, budget=budget, body=body, sent=frozenset(sent)
        ) as opened:
            media_type = _media_type(opened.response.headers)
            if media_type.startswith(("application/json", "text/")):
                raise ServerError(
                    "speech_unreadable",
                    problem=f"the server sent {media_type} instead of audio",
                )
            async for piece in async_capped(opened.aiter_bytes(), MAX_SPEECH_BYTES):
                yield piece


# --- the voice list -----------------------------------------------------------


async def async_fetch_voices(transport: Transport) -> list[str] | None:
    """Return the voices the server lists at /audio/voices, None if it lists none.

    Kokoro-FastAPI and others have this route; OpenAI has not. The list only
    helps choosing, so a failure is logged and counts as no list.
    """
    try:
        answer = await transport.async_json(
            "GET", VOICES_ROUTE, budget=VALIDATION_BUDGET, limit=MAX_TEXT_BYTES
        )
    except ServerError as err:
        if not (isinstance(err, RequestRejectedError) and err.status in (404, 405)):
            LOGGER.debug("The voice list could not be read: %s", err)
        return None
    return parse_voices(answer)


def parse_voices(answer: Any) -> list[str] | None:
    """Return the voice names of a voice list, whatever its usual shape.

    Seen: `{"voices": ["a", ...]}`, `{"voices": [{"id": "a", "name": ...}]}`,
    `{"data": [...]}` and a bare list; items name the voice in `id`,
    `voice_id` or `name`.
    """
    if isinstance(answer, dict):
        answer = answer.get("voices", answer.get("data"))
    if not isinstance(answer, list):
        return None
    names: list[str] = []
    for item in answer[:MAX_VOICES]:
        name = item
        if isinstance(item, dict):
            name = next(
                (item[key] for key in ("id", "voice_id", "name") if item.get(key)), None
            )
        if isinstance(name, str) and name.strip() and name not in names:
            names.append(name.strip())
    return names or None


# --- joining the answers of several requests --------------------------------


async def async_join(
    audio_format: str, answers: AsyncIterator[AsyncIterator[bytes]]
) -> AsyncIterator[bytes]:
    """Yield one stream of audio from the answers of several speech requests.

    MP3 frames and raw PCM follow each other as they are (the ID3 tags of
    later answers dropped); WAV gets one header, then every answer's samples.
    """
    wav_format: bytes | None = None
    first = True
    async for answer in answers:
        if audio_format == "wav":
            header, rest = await _read_wav_header(answer)
            if wav_format is None:
                wav_format = header.format
                yield streaming_wav_header(header.format)
            elif header.format != wav_format:
                raise ServerError(
                    "speech_unreadable", problem="the audio format changed"
                )
            pieces = _wav_samples(header, rest, answer)
        elif audio_format == "mp3" and not first:
            pieces = _without_id3(answer)
        else:
            pieces = answer
        first = False
        async for piece in pieces:
            yield piece


@dataclass(frozen=True, slots=True)
class _WavHeader:
    """The part of a WAV header that matters for joining."""

    # The fmt chunk's first 16 bytes, as a PCM header writes them.
    format: bytes
    # Bytes of samples, None when the header leaves it open.
    data_size: int | None


async def _read_wav_header(answer: AsyncIterator[bytes]) -> tuple[_WavHeader, bytes]:
    """Read an answer up to its samples; return the header and what follows."""
    buffer = b""
    async for piece in answer:
        buffer += piece
        parsed = parse_wav_header(buffer)
        if parsed is not None:
            return parsed
        if len(buffer) > _WAV_HEADER_LIMIT:
            break
    raise ServerError("speech_unreadable", problem="the answer is no WAV audio")


def parse_wav_header(data: bytes) -> tuple[_WavHeader, bytes] | None:
    """Return the header of a WAV file and the bytes after it, once complete.

    Raise speech_unreadable when the data is no PCM WAV at all.
    """
    if len(data) < 12:
        return None
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ServerError("speech_unreadable", problem="the answer is no WAV audio")
    position, wav_format = 12, None
    while position + 8 <= len(data):
        kind = data[position : position + 4]
        (size,) = struct.unpack_from("<I", data, position + 4)
        start = position + 8
        if kind == b"data":
            if wav_format is None:
                raise ServerError(
                    "speech_unreadable", problem="the WAV audio has no format"
                )
            open_size = size in _WAV_OPEN_SIZES
            return _WavHeader(wav_format, None if open_size else size), data[start:]
        if start + size > len(data):
            return None
        if kind == b"fmt ":
            wav_format = _pcm_format(data[start : start + size])
        position = start + size + size % 2
    return None


def _pcm_format(chunk: bytes) -> bytes:
    """Return a fmt chunk as plain PCM; raise unless it holds integer samples."""
    if len(chunk) < 16:
        raise ServerError("speech_unreadable", problem="the WAV format is cut short")
    (tag,) = struct.unpack_from("<H", chunk)
    # WAVE_FORMAT_EXTENSIBLE names the sample type in its first GUID bytes.
    if tag == _WAV_EXTENSIBLE and len(chunk) >= 26:
        (tag,) = struct.unpack_from("<H", chunk, 24)
    if tag != _WAV_PCM:
        raise ServerError("speech_unreadable", problem="the WAV audio is not PCM")
    return struct.pack("<H", _WAV_PCM) + chunk[2:16]


def pcm_wav(pcm: bytes, sample_rate: int, sample_width: int, channels: int) -> bytes:
    """Return raw little-endian PCM samples as a WAV file."""
    block = sample_width * channels
    wav_format = struct.pack(
        "<HHIIHH", _WAV_PCM, channels, sample_rate, sample_rate * block, block,
        8 * sample_width,
    )  # fmt: skip
    return (
        b"RIFF"
        + struct.pack("<I", 20 + len(wav_format) + len(pcm))
        + b"WAVEfmt "
        + struct.pack("<I", len(wav_format))
        + wav_format
        + b"data"
        + struct.pack("<I", len(pcm))
        + pcm
    )


def streaming_wav_header(wav_format: bytes) -> bytes:
    """Return a WAV header whose sizes are left open, for audio still coming."""
    return (
        b"RIFF"
        + struct.pack("<I", 0xFFFFFFFF)
        + b"WAVEfmt "
        + struct.pack("<I", len(wav_format))
        + wav_format
        + b"data"
        + struct.pack("<I", 0xFFFFFFFF)
    )


async def _wav_samples(
    header: _WavHeader, rest: bytes, answer: AsyncIterator[bytes]
) -> AsyncIterator[bytes]:
    """Yield the samples of a WAV answer, stopping where its data chunk ends."""
    remaining = header.data_size

    def cut(piece: bytes) -> bytes:
        nonlocal remaining
        if remaining is None:
            return piece
        piece, remaining = piece[:remaining], max(0, remaining - len(piece))
        return piece

    if rest and (piece := cut(rest)):
        yield piece
    async for piece in answer:
        if piece := cut(piece):
            yield piece


async def _without_id3(answer: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Yield an MP3 answer without the ID3v2 tag it may start with."""
    buffer = b""
    skip: int | None = None
    async for piece in answer:
        if skip is None:
            buffer += piece
            if len(buffer) < 10:
                continue
            skip = _id3_size(buffer)
            piece, buffer = buffer, b""
        if skip:
            dropped = min(skip, len(piece))
            piece, skip = piece[dropped:], skip - dropped
        if piece:
            yield piece
    if buffer:
        yield buffer


def _id3_size(head: bytes) -> int:
    """Return the length of the ID3v2 tag at the start of an MP3, or 0."""
    if not head.startswith(b"ID3"):
        return 0
    size = 0
    for byte in head[6:10]:
        size = (size << 7) | (byte & 0x7F)
    footer = 10 if head[5] & 0x10 else 0
    return 10 + size + footer
