"""Audio formats: WAV headers, and one stream from several speech answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
import struct
from typing import Final

from ..errors import ServerError

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
