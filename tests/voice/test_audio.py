"""The audio routes' reading side: voice lists, WAV headers, joined answers."""

from __future__ import annotations

from collections.abc import AsyncIterator
import struct
from typing import Any

from homeassistant.core import HomeAssistant
import pytest

from custom_components.openai_compatible.errors import ServerError
from custom_components.openai_compatible.net.transport import Transport
from custom_components.openai_compatible.voice.audio import (
    async_fetch_voices,
    async_join,
    parse_voices,
    parse_wav_header,
    pcm_wav,
    streaming_wav_header,
)
from simulator import OpenAISimulator
from simulator.audio import synthesize
from tests.conftest import TEST_API_KEY


@pytest.fixture
def transport(hass: HomeAssistant, simulator: OpenAISimulator) -> Transport:
    """Return a transport to the simulator."""
    return Transport(hass, simulator.base_url, TEST_API_KEY)


async def answers(*bodies: list[bytes]) -> AsyncIterator[AsyncIterator[bytes]]:
    """Yield answers, each a stream of the given pieces."""

    async def answer(pieces: list[bytes]) -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    for body in bodies:
        yield answer(body)


async def joined(audio_format: str, *bodies: list[bytes]) -> bytes:
    """Return the joined audio of several answers."""
    return b"".join(
        [piece async for piece in async_join(audio_format, answers(*bodies))]
    )


def in_pieces(data: bytes, size: int) -> list[bytes]:
    """Cut bytes into pieces of a size."""
    return [data[start : start + size] for start in range(0, len(data), size)]


# --- voice lists --------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "voices"),
    [
        ({"voices": ["af_heart", "bf_emma"]}, ["af_heart", "bf_emma"]),
        ({"voices": [{"id": "a", "name": "A"}, {"name": "b"}]}, ["a", "b"]),
        ({"data": [{"voice_id": "x"}, {"voice_id": "x"}, " y "]}, ["x", "y"]),
        (["one", 2, "", {"id": None}], ["one"]),
        ({"voices": []}, None),
        ({"voices": "alloy"}, None),
        ("alloy", None),
    ],
)
def test_parse_voices(answer: Any, voices: list[str] | None) -> None:
    """The usual shapes of voice lists are read; others give none."""
    assert parse_voices(answer) == voices


async def test_fetch_voices(simulator: OpenAISimulator, transport: Transport) -> None:
    """Voices come from the route; a missing route or a failure gives none."""
    assert await async_fetch_voices(transport) is None
    simulator.settings.voices_endpoint = True
    assert await async_fetch_voices(transport) == list(simulator.settings.voices)
    simulator.enqueue("/audio/voices", raw="<html>voices</html>")
    assert await async_fetch_voices(transport) is None
    simulator.enqueue("/audio/voices", status=500)
    assert await async_fetch_voices(transport) is None


async def test_fetch_voices_is_bounded(
    simulator: OpenAISimulator, transport: Transport
) -> None:
    """A voice list beyond the cap is not read."""
    simulator.enqueue("/audio/voices", json={"voices": ["v" * 100] * 20_000})

    assert await async_fetch_voices(transport) is None


# --- WAV headers --------------------------------------------------------------


def test_wav_header_of_a_file_and_of_a_stream() -> None:
    """The format and data size are read; open sizes mean "until the end"."""
    wav = pcm_wav(b"\x01\x02" * 10, 16_000, 2, 1)
    wav_format, size, rest = parse_wav_header(wav) or pytest.fail("no header")
    assert size == 20
    assert rest == b"\x01\x02" * 10
    assert struct.unpack("<HHIIHH", wav_format) == (1, 1, 16_000, 32_000, 2, 16)

    streamed = streaming_wav_header(wav_format) + b"\x05\x06"
    wav_format, size, rest = parse_wav_header(streamed) or pytest.fail("no header")
    assert size is None
    assert rest == b"\x05\x06"


def test_wav_header_needs_more_data_until_complete() -> None:
    """A header cut short asks for more."""
    wav = pcm_wav(b"\x00\x00", 16_000, 2, 1)
    assert parse_wav_header(wav[:8]) is None
    assert parse_wav_header(wav[:30]) is None
    assert parse_wav_header(wav[:40]) is None


def test_extensible_pcm_and_odd_chunks() -> None:
    """WAVE_FORMAT_EXTENSIBLE with PCM samples counts as PCM; odd chunks are padded."""
    extensible = struct.pack("<HHIIHH", 0xFFFE, 1, 8000, 16000, 2, 16) + struct.pack(
        "<HHI", 22, 16, 1
    )
    extensible += struct.pack("<H", 1) + bytes(14)
    wav = (
        b"RIFF\x00\x00\x00\x00WAVE"
        b"LIST\x03\x00\x00\x00abc\x00"
        b"fmt "
        + struct.pack("<I", len(extensible))
        + extensible
        + b"data\x00\x00\x00\x00samples"
    )

    wav_format, _, rest = parse_wav_header(wav) or pytest.fail("no header")

    assert struct.unpack_from("<HHI", wav_format) == (1, 1, 8000)
    assert rest == b"samples"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"ID3 this is an MP3 file", "the answer is no WAV audio"),
        (
            b"RIFF\x00\x00\x00\x00WAVEdata\x00\x00\x00\x00",
            "the WAV audio has no format",
        ),
        (
            b"RIFF\x00\x00\x00\x00WAVEfmt \x04\x00\x00\x00\x01\x00\x01\x00",
            "the WAV format is cut short",
        ),
        (
            b"RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00"
            + struct.pack("<HHIIHH", 3, 1, 8000, 32000, 4, 32),
            "the WAV audio is not PCM",
        ),
    ],
)
def test_wav_headers_that_cannot_be_used(data: bytes, problem: str) -> None:
    """Other audio, and WAV without usable PCM, is refused."""
    with pytest.raises(ServerError) as err:
        parse_wav_header(data)

    assert err.value.translation_placeholders == {"problem": problem}


# --- joining answers ----------------------------------------------------------


async def test_wav_answers_in_small_pieces() -> None:
    """Headers split across pieces are read; the data size ends each answer."""
    first = synthesize("one", "wav") + b"LIST-trailing-chunk"
    second = synthesize("two", "wav")

    audio = await joined("wav", in_pieces(first, 7), in_pieces(second, 5))

    samples = synthesize("one", "pcm") + synthesize("two", "pcm")
    assert audio == streaming_wav_header(audio[20:36]) + samples


async def test_streamed_wav_answers_are_read_to_their_end() -> None:
    """An answer whose header leaves the size open gives all its bytes."""
    wav = synthesize("one", "wav")
    streamed = streaming_wav_header(wav[20:36]) + synthesize("one", "pcm")

    audio = await joined("wav", in_pieces(streamed, 1000), [streamed])

    assert audio == streamed + synthesize("one", "pcm")


async def test_an_endless_header_is_refused() -> None:
    """A WAV header that never ends is not buffered without bound."""
    endless = b"RIFF\x00\x00\x00\x00WAVE" + b"JUNK\xff\xff\x00\x00" + bytes(70_000)

    with pytest.raises(ServerError):
        await joined("wav", in_pieces(endless, 4096))


async def test_an_empty_answer_is_no_wav() -> None:
    """An answer without a byte is refused as WAV."""
    with pytest.raises(ServerError):
        await joined("wav", [])


async def test_mp3_tags_are_dropped_after_the_first_answer() -> None:
    """ID3 tags of later answers go, footer included, however the bytes come."""
    tag = b"ID3\x04\x00\x10\x00\x00\x00\x03abc" + b"3DI\x04\x00\x10\x00\x00\x00\x03"
    frames = synthesize("x", "mp3")

    audio = await joined(
        "mp3",
        [tag + frames],
        in_pieces(tag + frames, 3),
        [frames[:4]],
        [b"\xff\xf3"],
    )

    assert audio == tag + frames + frames + frames[:4] + b"\xff\xf3"
