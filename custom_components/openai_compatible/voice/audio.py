"""A server's audio routes (transcription, speech, voices), and the audio they carry."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
import json
import struct
from typing import Any, Final, cast

import httpx2

from ..const import LOGGER, Feature
from ..errors import RequestRejectedError, ServerError
from ..models.capabilities import ModelCapabilities
from ..models.listing import VALIDATION_BUDGET
from ..net.readers import (
    EventStream,
    async_capped,
    async_read_body,
    error_message,
    read_list,
    read_object_or_empty,
)
from ..net.shapes import JsonObject, SpeechBody, TranscriptionBody
from ..net.transport import Budget, Transport, parse_json
from ..server_errors.routes import is_missing_route, route_error

TRANSCRIPTION_ROUTE: Final = "/audio/transcriptions"
SPEECH_ROUTE: Final = "/audio/speech"
VOICES_ROUTE: Final = "/audio/voices"

# OpenAI's upload limit; local servers take as much.
MAX_RECORDING_BYTES: Final = 25 * 1024 * 1024
# The audio of one speech request: 10 minutes of 24 kHz WAV fit.
MAX_SPEECH_BYTES: Final = 32 * 1024 * 1024
MAX_TEXT_BYTES: Final = 1024 * 1024
MAX_VOICES: Final = 1000


def _media_type(headers: httpx2.Headers) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


# Optional fields of an audio request, by the feature a server may refuse.
_OPTIONAL: Final = {
    Feature.SPEECH_SPEED: "speed",
    Feature.SPEECH_INSTRUCTIONS: "instructions",
    Feature.TRANSCRIPT_STREAM: "stream",
}


def _sent(body: Mapping[str, object]) -> frozenset[Feature]:
    return frozenset(feature for feature, key in _OPTIONAL.items() if key in body)


async def async_transcribe(
    transport: Transport,
    capabilities: ModelCapabilities,
    body: TranscriptionBody,
    recording: tuple[str, bytes],
    budget: Budget,
) -> AsyncIterator[tuple[str, bool]]:
    """Yield (the transcript so far, False) as the server gives it, then (all, True)."""
    try:
        async with transport.async_open(
            "POST",
            TRANSCRIPTION_ROUTE,
            budget=budget,
            body=body,
            files=[("file", recording)],
            sent=_sent(body),
        ) as opened:
            media_type = _media_type(opened.response.headers)
            if media_type == "text/event-stream":
                events = EventStream(opened.aiter_bytes(), max_bytes=MAX_TEXT_BYTES)
                async for part in _transcript_events(events):
                    yield part
            else:
                raw = await async_read_body(opened.aiter_bytes(), MAX_TEXT_BYTES)
                yield _transcript_text(raw, media_type), True
    except ServerError as err:
        retried = _without_refused(err, TRANSCRIPTION_ROUTE, body, capabilities)
        async for part in async_transcribe(
            transport,
            capabilities,
            cast("TranscriptionBody", retried),
            recording,
            budget,
        ):
            yield part


def _transcript_text(raw: bytes, media_type: str) -> str:
    """Return the text of a whole answer, JSON or plain; refuse bytes that are no text."""
    if media_type.startswith("text/plain"):
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            text = "\x00"
        if any(ord(char) < 32 and char not in "\t\n\r" for char in text):
            raise ServerError("transcript_unreadable", problem="the answer is no text")
        return text.strip()
    try:
        answer = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise ServerError(
            "transcript_unreadable", problem="the answer is not JSON"
        ) from err
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        raise ServerError("transcript_unreadable", problem="the answer has no text")
    return str(answer["text"]).strip()


def _event_text(event: JsonObject) -> str:
    """Return the new text of one transcript event (OpenAI's, vLLM's or Speaches')."""
    if event.get("type") == "transcript.text.delta":
        return str(event.get("delta") or "")
    if event.get("object") == "transcription.chunk":
        choices = read_list(event.get("choices"), "choices")
        first = read_object_or_empty(choices[0] if choices else None, "choices")
        delta = read_object_or_empty(first.get("delta"), "choices.delta")
        return str(delta.get("content") or "")
    if "type" not in event and isinstance(event.get("text"), str):
        return str(event["text"])
    return ""


async def _transcript_events(events: EventStream) -> AsyncIterator[tuple[str, bool]]:
    """Yield the growing transcript of an event stream, then the final one."""
    heard = ""
    final: str | None = None
    async for batch in events:
        for event in batch:
            if error := event.get("error"):
                raise ServerError("api_error", message=error_message(error))
            if event.get("type") == "transcript.text.done":
                final = str(event.get("text") or heard)
            elif piece := _event_text(event):
                heard += piece
                yield heard.strip(), False
    yield (heard if final is None else final).strip(), True


# The speeds OpenAI's speech route takes.
MIN_SPEED: Final = 0.25
MAX_SPEED: Final = 4.0


async def async_speak(
    transport: Transport,
    capabilities: ModelCapabilities,
    body: SpeechBody,
    budget: Budget,
) -> AsyncIterator[bytes]:
    """Yield the audio of a text as the server sends it."""
    try:
        async with transport.async_open(
            "POST", SPEECH_ROUTE, budget=budget, body=body, sent=_sent(body)
        ) as opened:
            media_type = _media_type(opened.response.headers)
            if media_type.startswith(("application/json", "text/")):
                raise unreadable(f"the server sent {media_type} instead of audio")
            pieces = async_capped(opened.aiter_bytes(), MAX_SPEECH_BYTES)
            async for piece in _audio_only(pieces, body["response_format"]):
                yield piece
    except ServerError as err:
        retried = _without_refused(err, SPEECH_ROUTE, body, capabilities)
        async for piece in async_speak(
            transport, capabilities, cast("SpeechBody", retried), budget
        ):
            yield piece


def _without_refused(
    err: ServerError,
    route: str,
    body: Mapping[str, Any],
    capabilities: ModelCapabilities,
) -> dict[str, Any]:
    """Return the body without a refused field (learned if refused in general); or raise."""
    if isinstance(err, RequestRejectedError) and err.feature in _OPTIONAL:
        if err.general:
            capabilities.learn_refused(err.feature, err.lesson_source)
        refused = _OPTIONAL[err.feature]
        return {key: value for key, value in body.items() if key != refused}
    if specific := route_error(err, route, body["model"], body.get("voice")):
        raise specific from err
    raise err


async def _audio_only(
    pieces: AsyncIterator[bytes], audio_format: str
) -> AsyncIterator[bytes]:
    """Yield speech; refuse an answer that starts as JSON or HTML (an error page)."""
    checked = audio_format == "pcm"
    async for piece in pieces:
        if not checked and (start := piece.lstrip()[:1]):
            checked = True
            if start in (b"{", b"[", b"<"):
                raise unreadable("the server sent text instead of audio")
        yield piece


async def async_fetch_voices(transport: Transport) -> list[str] | None:
    """Return the voices at /audio/voices (Kokoro-FastAPI's); None if none or failed."""
    try:
        async with transport.async_open(
            "GET", VOICES_ROUTE, budget=VALIDATION_BUDGET
        ) as opened:
            raw = await async_read_body(opened.aiter_bytes(), MAX_TEXT_BYTES)
        answer = parse_json(raw)
    except ServerError as err:
        if not is_missing_route(err):
            LOGGER.debug("The voice list could not be read: %s", err)
        return None
    return parse_voices(answer)


def parse_voices(answer: Any) -> list[str] | None:
    """Return the voice names of a voice list, in any of its usual shapes."""
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


JOINABLE_FORMATS: Final = ("mp3", "wav", "pcm")
_WAV_HEADER_LIMIT: Final = 64 * 1024
# Data sizes that mean "until the end" in a streamed WAV header.
_WAV_OPEN_SIZES: Final = frozenset({0, 0xFFFFFFFF})
_WAV_PCM: Final = 1
_WAV_EXTENSIBLE: Final = 0xFFFE


async def async_join(
    audio_format: str, answers: AsyncIterator[AsyncIterator[bytes]]
) -> AsyncIterator[bytes]:
    """Yield one stream from several speech answers: one WAV header, no later ID3 tag."""
    wav_format: bytes | None = None
    first = True
    async for answer in answers:
        if audio_format == "wav":
            this_format, data_size, rest = await _read_wav_header(answer)
            if wav_format is None:
                wav_format = this_format
                yield streaming_wav_header(this_format)
            elif this_format != wav_format:
                raise unreadable("the audio format changed")
            pieces = _trimmed(rest, answer, skip=0, keep=data_size)
        elif audio_format == "mp3" and not first:
            head = b""
            while len(head) < 10 and (piece := await anext(answer, None)) is not None:
                head += piece
            pieces = _trimmed(head, answer, skip=_id3_size(head), keep=None)
        else:
            pieces = answer
        first = False
        async for piece in pieces:
            yield piece


def unreadable(problem: str) -> ServerError:
    """Return the error of a speech answer that cannot be read as audio."""
    return ServerError("speech_unreadable", problem=problem)


type _WavHeader = tuple[bytes, int | None, bytes]


async def _read_wav_header(answer: AsyncIterator[bytes]) -> _WavHeader:
    """Read an answer up to its samples; return the header and what follows."""
    buffer = b""
    async for piece in answer:
        buffer += piece
        if (parsed := parse_wav_header(buffer)) is not None:
            return parsed
        if len(buffer) > _WAV_HEADER_LIMIT:
            break
    raise unreadable("the answer is no WAV audio")


def parse_wav_header(data: bytes) -> _WavHeader | None:
    """Return a WAV header's format and data size (None: open), and what follows."""
    if len(data) < 12:
        return None
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise unreadable("the answer is no WAV audio")
    position, wav_format = 12, None
    while position + 8 <= len(data):
        kind = data[position : position + 4]
        (size,) = struct.unpack_from("<I", data, position + 4)
        start = position + 8
        if kind == b"data":
            if wav_format is None:
                raise unreadable("the WAV audio has no format")
            open_size = size in _WAV_OPEN_SIZES
            return wav_format, None if open_size else size, data[start:]
        if start + size > len(data):
            return None
        if kind == b"fmt ":
            wav_format = _pcm_format(data[start : start + size])
        position = start + size + size % 2
    return None


def _pcm_format(chunk: bytes) -> bytes:
    """Return a fmt chunk as plain PCM; raise unless it holds integer samples."""
    if len(chunk) < 16:
        raise unreadable("the WAV format is cut short")
    (tag,) = struct.unpack_from("<H", chunk)
    # WAVE_FORMAT_EXTENSIBLE names the sample type in its first GUID bytes.
    if tag == _WAV_EXTENSIBLE and len(chunk) >= 26:
        (tag,) = struct.unpack_from("<H", chunk, 24)
    if tag != _WAV_PCM:
        raise unreadable("the WAV audio is not PCM")
    return struct.pack("<H", _WAV_PCM) + chunk[2:16]


def pcm_wav(pcm: bytes, sample_rate: int, sample_width: int, channels: int) -> bytes:
    """Return raw little-endian PCM samples as a WAV file."""
    block = sample_width * channels
    wav_format = struct.pack(
        "<HHIIHH", _WAV_PCM, channels, sample_rate, sample_rate * block, block,
        8 * sample_width,
    )  # fmt: skip
    return _wav_header(wav_format, 20 + len(wav_format) + len(pcm), len(pcm)) + pcm


def streaming_wav_header(wav_format: bytes) -> bytes:
    """Return a WAV header whose sizes are left open, for audio still coming."""
    return _wav_header(wav_format, 0xFFFFFFFF, 0xFFFFFFFF)


def _wav_header(wav_format: bytes, riff_size: int, data_size: int) -> bytes:
    riff = struct.pack(
        "<4sI4s4sI", b"RIFF", riff_size, b"WAVE", b"fmt ", len(wav_format)
    )
    return riff + wav_format + struct.pack("<4sI", b"data", data_size)


async def _trimmed(
    head: bytes, answer: AsyncIterator[bytes], *, skip: int, keep: int | None
) -> AsyncIterator[bytes]:
    """Yield `head`, then the answer: less the first `skip` bytes, `keep` at most."""
    piece: bytes | None = head
    while piece is not None:
        dropped = min(skip, len(piece))
        piece, skip = piece[dropped:], skip - dropped
        if keep is not None:
            piece, keep = piece[:keep], max(0, keep - len(piece))
        if piece:
            yield piece
        piece = await anext(answer, None)


def _id3_size(head: bytes) -> int:
    """Return the length of the ID3v2 tag at the start of an MP3 (10 bytes), or 0."""
    if len(head) < 10 or not head.startswith(b"ID3"):
        return 0
    size = 0
    for byte in head[6:10]:
        size = (size << 7) | (byte & 0x7F)
    footer = 10 if head[5] & 0x10 else 0
    return 10 + size + footer
