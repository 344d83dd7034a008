"""Speech-to-text: the entity against the simulator's transcription route."""

from __future__ import annotations

from collections.abc import AsyncIterator
import email
import email.policy
import io
import json
import logging
from typing import Any
from unittest.mock import patch
import wave

from homeassistant.components import stt
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar
import pytest

from custom_components.openai_compatible.const import CONF_TIMEOUT, Feature
from custom_components.openai_compatible.stt import OpenAICompatibleSTTEntity
from simulator import OpenAISimulator

from .conftest import STT_ENTITY, SetupEntry

PCM = b"\x10\x00" * 16_000  # one second of 16 kHz, 16-bit mono samples
EN_US_WAV = stt.SpeechMetadata(
    language="en-US",
    format=stt.AudioFormats.WAV,
    codec=stt.AudioCodecs.PCM,
    bit_rate=stt.AudioBitRates.BITRATE_16,
    sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
    channel=stt.AudioChannels.CHANNEL_MONO,
)


async def chunks(data: bytes, size: int = 4096) -> AsyncIterator[bytes]:
    """Stream bytes the way a pipeline does, in pieces."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


def entity(hass: HomeAssistant) -> OpenAICompatibleSTTEntity:
    """Return our speech-to-text entity."""
    found = stt.async_get_speech_to_text_entity(hass, STT_ENTITY)
    assert isinstance(found, OpenAICompatibleSTTEntity)
    return found


async def transcribe(
    hass: HomeAssistant,
    data: bytes = PCM,
    metadata: stt.SpeechMetadata = EN_US_WAV,
) -> list[stt.PartialSpeechResult | stt.SpeechResult]:
    """Run the entity on a recording; return every result it yields."""
    return [
        result
        async for result in entity(
            hass
        ).internal_async_process_audio_stream_with_progress(metadata, chunks(data))
    ]


def sse_line(event: dict[str, Any]) -> str:
    """Return one server-sent event."""
    return f"data: {json.dumps(event)}\n\n"


def form(body: bytes, content_type: str) -> dict[str, Any]:
    """Return the fields and files of a recorded multipart request."""
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body,
        policy=email.policy.HTTP,
    )
    parts: dict[str, Any] = {}
    for part in message.iter_parts():
        name = str(part.get_param("name", header="content-disposition"))
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        filename = part.get_filename()
        parts[name] = (filename, payload) if filename else payload.decode()
    return parts


def sent(simulator: OpenAISimulator) -> list[dict[str, Any]]:
    """Return the forms of the transcription requests received."""
    return [
        form(request.body, request.headers["content-type"])
        for request in simulator.requests
        if request.path.endswith("/audio/transcriptions")
    ]


async def test_transcribes_the_recording_as_a_wav_file(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Raw samples go out as a WAV file with the language in ISO 639-1."""
    await setup_voice(stt={})
    simulator.settings.transcript = "turn on the kitchen light"

    results = await transcribe(hass)

    assert results == [
        stt.SpeechResult("turn on the kitchen light", stt.SpeechResultState.SUCCESS)
    ]
    (request,) = sent(simulator)
    assert request["model"] == "whisper-1"
    assert request["language"] == "en"
    assert request["response_format"] == "json"
    assert request["stream"] == "true"
    assert "prompt" not in request
    filename, data = request["file"]
    assert filename == "speech.wav"
    with wave.open(io.BytesIO(data)) as recording:
        assert recording.getframerate() == 16_000
        assert recording.getnchannels() == 1
        assert recording.getsampwidth() == 2
        assert recording.readframes(recording.getnframes()) == PCM
    assert hass.states.get(STT_ENTITY).state not in (None, "unknown")


async def test_streamed_transcripts_give_partial_results(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A model that streams gives the transcript as it grows, then all of it."""
    await setup_voice(stt={"audio_model": "gpt-4o-mini-transcribe"})
    simulator.settings.transcript = "turn on the light"

    results = await transcribe(hass)

    assert results == [
        stt.PartialSpeechResult("turn"),
        stt.PartialSpeechResult("turn on"),
        stt.PartialSpeechResult("turn on the"),
        stt.PartialSpeechResult("turn on the light"),
        stt.SpeechResult("turn on the light", stt.SpeechResultState.SUCCESS),
    ]


@pytest.mark.parametrize(
    ("events", "text"),
    [
        # vLLM: chat-like chunks.
        (
            [
                sse_line(
                    {
                        "object": "transcription.chunk",
                        "choices": [{"delta": {"content": "turn on"}}],
                    }
                ),
                sse_line(
                    {
                        "object": "transcription.chunk",
                        "choices": [{"delta": {"content": " the light"}}],
                    }
                ),
            ],
            "turn on the light",
        ),
        # Speaches: one JSON transcription per segment.
        (
            ['data: {"text": " turn on"}\n\n', 'data: {"text": " the light"}\n\n'],
            "turn on the light",
        ),
        # Lines that are no JSON, or no text, are passed over.
        (
            [
                ": keep-alive\n\n",
                "data: not json\n\n",
                'data: {"type": "transcript.text.delta"}\n\n',
                'data: {"object": "transcription.chunk", "choices": []}\n\n',
                'data: {"type": "transcript.text.segment", "text": "no"}\n\n',
                'data: {"text": "the light"}\r\n\r\n',
            ],
            "the light",
        ),
    ],
)
async def test_other_servers_event_shapes(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    events: list[str],
    text: str,
) -> None:
    """The transcript events of vLLM and Speaches are read too."""
    await setup_voice(stt={})
    simulator.enqueue("/audio/transcriptions", sse=events)

    results = await transcribe(hass)

    assert results[-1] == stt.SpeechResult(text, stt.SpeechResultState.SUCCESS)
    assert all(isinstance(result, stt.PartialSpeechResult) for result in results[:-1])


async def test_an_event_stream_without_a_last_line_end(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """The last event counts even when no line end follows it."""
    await setup_voice(stt={})
    simulator.enqueue(
        "/audio/transcriptions",
        raw='data: {"text": "hello"}',
        headers={"Content-Type": "text/event-stream"},
    )

    results = await transcribe(hass)

    assert results[-1] == stt.SpeechResult("hello", stt.SpeechResultState.SUCCESS)


async def test_plain_text_answers_are_read(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A server that answers plain text despite JSON being asked is understood."""
    await setup_voice(stt={})
    simulator.enqueue("/audio/transcriptions", raw=" hello there \n")

    results = await transcribe(hass)

    assert results == [stt.SpeechResult("hello there", stt.SpeechResultState.SUCCESS)]


async def test_a_server_refusing_to_stream_is_asked_again(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A refused `stream` is dropped; the model's capabilities remember it."""
    entry = await setup_voice(stt={})
    simulator.settings.transcription_stream_refused = True
    simulator.settings.transcript = "hello"

    first = await transcribe(hass)
    second = await transcribe(hass)

    assert first == second == [stt.SpeechResult("hello", stt.SpeechResultState.SUCCESS)]
    assert ["stream" in request for request in sent(simulator)] == [True, False, False]
    capabilities = entry.runtime_data.capabilities.model("whisper-1")
    assert capabilities.refuses(Feature.TRANSCRIPT_STREAM)


async def test_a_refusal_of_this_stream_only_is_not_learned(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A refusal that is not general is retried without, and not remembered."""
    entry = await setup_voice(stt={})
    simulator.enqueue(
        "/audio/transcriptions",
        status=400,
        json={"error": {"message": "stream is busy, try later"}},
    )

    results = await transcribe(hass)

    assert results[-1].result is stt.SpeechResultState.SUCCESS
    assert ["stream" in request for request in sent(simulator)] == [True, False]
    capabilities = entry.runtime_data.capabilities.model("whisper-1")
    assert not capabilities.refuses(Feature.TRANSCRIPT_STREAM)


async def test_a_busy_server_is_waited_out(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A 429 that says when to come back is retried, like every other request."""
    await setup_voice(stt={})
    simulator.enqueue(
        "/audio/transcriptions",
        status=429,
        json={"error": {"message": "Rate limit reached"}},
        headers={"Retry-After": "0"},
    )
    simulator.settings.transcript = "hello"

    results = await transcribe(hass)

    assert results == [stt.SpeechResult("hello", stt.SpeechResultState.SUCCESS)]
    assert len(sent(simulator)) == 2


async def test_an_unreachable_server_makes_the_entity_unavailable(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A transcription that cannot reach the server tells the entry's health."""
    await setup_voice(stt={})
    await simulator.stop()

    results = await transcribe(hass)
    await hass.async_block_till_done()

    assert results == ERROR
    assert hass.states.get(STT_ENTITY).state == "unavailable"


async def test_ogg_recordings_go_as_they_are(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """An Ogg Opus recording is sent unchanged."""
    await setup_voice(stt={})
    ogg = b"OggS" + bytes(200)
    metadata = stt.SpeechMetadata(
        language="de",
        format=stt.AudioFormats.OGG,
        codec=stt.AudioCodecs.OPUS,
        bit_rate=stt.AudioBitRates.BITRATE_16,
        sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
        channel=stt.AudioChannels.CHANNEL_MONO,
    )

    results = await transcribe(hass, ogg, metadata)

    assert results == [
        stt.SpeechResult("I heard some audio.", stt.SpeechResultState.SUCCESS)
    ]
    (request,) = sent(simulator)
    assert request["file"] == ("speech.ogg", ogg)
    assert request["language"] == "de"


async def test_prompt_and_the_names_of_the_home(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """The prompt carries the subentry's text and the exposed names."""
    ar.async_get(hass).async_create("Kitchen")
    hass.states.async_set("light.ceiling", "off", {"friendly_name": "Ceiling lamp"})
    hass.states.async_set("sensor.secret", "1", {"friendly_name": "Hidden thing"})
    await setup_voice(stt={"prompt": "Names are Dutch.", "hint_names": True})

    await transcribe(hass)

    (request,) = sent(simulator)
    assert request["prompt"] == "Names are Dutch. Kitchen, Ceiling lamp."


async def test_the_names_fit_the_prompt(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Names stop before the prompt would outgrow what Whisper reads."""
    for number in range(200):
        ar.async_get(hass).async_create(f"Room number {number:03}")
    await setup_voice(stt={"hint_names": True})

    await transcribe(hass)

    (request,) = sent(simulator)
    assert 700 < len(request["prompt"]) <= 801
    assert request["prompt"].startswith("Room number 000, Room number 001,")


def wav_metadata(language: str) -> stt.SpeechMetadata:
    """Return the metadata of a 16 kHz mono WAV recording in a language."""
    return stt.SpeechMetadata(
        language=language,
        format=stt.AudioFormats.WAV,
        codec=stt.AudioCodecs.PCM,
        bit_rate=stt.AudioBitRates.BITRATE_16,
        sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
        channel=stt.AudioChannels.CHANNEL_MONO,
    )


@pytest.mark.parametrize(
    ("model", "languages", "german"),
    [
        ("whisper-1", {"en", "de", "nl", "zh", "yue"}, True),
        ("Systran/faster-distil-whisper-small.en", {"en"}, False),
        ("nvidia/parakeet-tdt-0.6b-v3", {"en", "de", "uk"}, True),
    ],
)
async def test_languages_of_the_model(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    model: str,
    languages: set[str],
    german: bool,
) -> None:
    """The languages follow the model; the metadata check uses them."""
    simulator.models.append(model)
    await setup_voice(stt={"audio_model": model})
    speech_to_text = entity(hass)

    assert languages <= set(speech_to_text.supported_languages)
    assert speech_to_text.check_metadata(wav_metadata("en"))
    assert speech_to_text.check_metadata(wav_metadata("de")) is german


ERROR = [stt.SpeechResult(None, stt.SpeechResultState.ERROR)]


@pytest.mark.parametrize(
    ("scripted", "message"),
    [
        (
            {"status": 404, "json": {"detail": "Not Found"}},
            "This server has no speech-to-text route (/audio/transcriptions)",
        ),
        (
            {"status": 405, "raw": "Method Not Allowed"},
            "This server has no speech-to-text route (/audio/transcriptions)",
        ),
        (
            {
                "status": 404,
                "json": {
                    "detail": "Model 'whisper-1' is not installed locally. You can "
                    "download the model using `POST /v1/models`"
                },
            },
            (
                "The server does not know the model whisper-1: Model 'whisper-1' "
                "is not installed locally"
            ),
        ),
        (
            {
                "status": 200,
                "raw": "<html>Welcome</html>",
                "headers": {"Content-Type": "text/html"},
            },
            "The server's transcription cannot be read: the answer is not JSON",
        ),
        (
            {
                "status": 200,
                "raw": "[" * 100_000,
                "headers": {"Content-Type": "application/json"},
            },
            "The server's transcription cannot be read: the answer is not JSON",
        ),
        (
            {"status": 200, "json": {"result": "hello"}},
            "The server's transcription cannot be read: the answer has no text",
        ),
        (
            {"status": 200, "sse": ['data: {"error": {"message": "GPU on fire"}}\n\n']},
            "The model server answered with an error: GPU on fire",
        ),
        (
            {"status": 500, "json": {"error": {"message": "boom"}}},
            "The model server answered with an error: boom",
        ),
        (
            {"status": 400, "json": {"error": {"message": "Invalid file format"}}},
            "The model server answered with an error: Invalid file format",
        ),
    ],
)
async def test_server_failures_end_in_an_error_result(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    caplog: pytest.LogCaptureFixture,
    scripted: dict[str, Any],
    message: str,
) -> None:
    """Each failure is logged translated, and the result is an error."""
    await setup_voice(stt={})
    simulator.enqueue("/audio/transcriptions", **scripted)

    with caplog.at_level(logging.WARNING):
        results = await transcribe(hass)

    assert results == ERROR
    assert f"Speech-to-text failed: {message}" in caplog.text


async def test_an_answer_that_never_ends_is_cut(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An answer larger than the cap is refused, not held in memory."""
    await setup_voice(stt={})
    simulator.enqueue("/audio/transcriptions", json={"text": "x" * 5000})

    with patch("custom_components.openai_compatible.voice.audio.MAX_TEXT_BYTES", 1000):
        results = await transcribe(hass)

    assert results == ERROR
    assert "The server's answer is larger than 0.000953674 MiB" in caplog.text


async def test_a_slow_server_times_out(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server slower than the entry's request timeout gives a timeout."""
    entry = await setup_voice(stt={})
    hass.config_entries.async_update_entry(entry, options={CONF_TIMEOUT: 0.2})
    await hass.async_block_till_done()
    simulator.settings.latency = 1.0

    results = await transcribe(hass)

    assert results == ERROR
    assert "Speech-to-text failed: The model server did not answer in time" in (
        caplog.text
    )


async def test_a_recording_too_large_is_not_sent(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A recording over the cap stops being read and is never sent."""
    await setup_voice(stt={})

    with patch(
        "custom_components.openai_compatible.stt.MAX_RECORDING_BYTES", 1024 * 1024
    ):
        results = await transcribe(hass, PCM * 50)

    assert results == ERROR
    assert "Speech-to-text failed: The recording is larger than 1 MiB" in caplog.text
    assert sent(simulator) == []


async def test_a_refused_key_starts_reauthentication(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A 401 starts re-authentication of the entry."""
    entry = await setup_voice(stt={})
    simulator.enqueue(
        "/audio/transcriptions",
        status=401,
        json={"error": {"message": "Incorrect API key", "code": "invalid_api_key"}},
    )

    results = await transcribe(hass)

    assert results == ERROR
    flows = hass.config_entries.flow.async_progress_by_handler("openai_compatible")
    assert [flow["context"]["source"] for flow in flows] == ["reauth"]
    assert flows[0]["context"]["entry_id"] == entry.entry_id
