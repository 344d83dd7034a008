"""Text-to-speech: the entity against the simulator's speech route."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
import io
import struct
from typing import Any
from unittest.mock import patch

from homeassistant.components import tts
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from mutagen.mp3 import MP3
import pytest

from custom_components.openai_compatible.const import CONF_TIMEOUT, Feature
from custom_components.openai_compatible.models.names import KOKORO_VOICES
from custom_components.openai_compatible.tts import OpenAICompatibleTTSEntity
from simulator import OpenAISimulator
from simulator.audio import synthesize

from .conftest import TTS_ENTITY, SetupEntry


def entity(hass: HomeAssistant) -> OpenAICompatibleTTSEntity:
    """Return our text-to-speech entity."""
    found = tts.get_engine_instance(hass, TTS_ENTITY)
    assert isinstance(found, OpenAICompatibleTTSEntity)
    return found


async def speak(
    hass: HomeAssistant,
    message: str | AsyncGenerator[str],
    options: dict[str, Any] | None = None,
) -> bytes:
    """Have the entity speak a text, whole or streamed, as a pipeline does."""
    stream = tts.async_create_stream(hass, TTS_ENTITY, options=options)
    if isinstance(message, str):
        stream.async_set_message(message)
    else:
        stream.async_set_message_stream(message)
    return b"".join([piece async for piece in stream.async_stream_result()])


def spoken(simulator: OpenAISimulator) -> list[dict[str, Any]]:
    """Return the bodies of the speech requests received."""
    return [
        request.json
        for request in simulator.requests
        if request.path.endswith("/audio/speech")
    ]


async def pieces(*texts: str) -> AsyncGenerator[str]:
    """Stream a text in pieces."""
    for text in texts:
        yield text


# --- whole texts --------------------------------------------------------------


async def test_whole_text_in_one_request_when_streaming_is_off(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """With streaming off the whole text goes out at once, as MP3."""
    await setup_voice(tts={"streaming": False})
    text = "Hello there. How are you?"

    audio = await speak(hass, text)

    assert spoken(simulator) == [
        {"model": "tts-1", "voice": "alloy", "input": text, "response_format": "mp3"}
    ]
    assert MP3(io.BytesIO(audio)).info.length == pytest.approx(len(text) * 0.06, 0.1)
    assert not entity(hass).async_supports_streaming_input()
    assert hass.states.get(TTS_ENTITY).state not in (None, "unknown")


async def test_a_long_text_goes_in_pieces_that_fit(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A text over the server's limit is asked in sentences that fit."""
    await setup_voice(tts={"streaming": False, "audio_format": "wav"})
    sentence = "This sentence is exactly fifty characters long!!! "
    text = sentence * 200

    audio = await speak(hass, text)

    inputs = [body["input"] for body in spoken(simulator)]
    assert [len(piece) for piece in inputs] == [3999, 3999, 1999]
    assert " ".join(inputs) == text.strip()
    samples = b"".join(synthesize(piece, "pcm") for piece in inputs)
    assert audio[44:] == samples


async def test_options_of_the_subentry_and_of_the_request(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Speed and instructions come from the subentry, each request may change them."""
    await setup_voice(
        tts={
            "audio_model": "gpt-4o-mini-tts",
            "voice": "coral",
            "speed": 1.25,
            "instructions": "Speak warmly.",
            "streaming": False,
        }
    )

    await speak(hass, "First.")
    await speak(
        hass, "Second.", {"voice": "nova", "speed": 0.5, "instructions": "Whisper."}
    )

    first, second = spoken(simulator)
    assert first == {
        "model": "gpt-4o-mini-tts",
        "voice": "coral",
        "input": "First.",
        "response_format": "mp3",
        "speed": 1.25,
        "instructions": "Speak warmly.",
    }
    assert (second["voice"], second["speed"], second["instructions"]) == (
        "nova",
        0.5,
        "Whisper.",
    )


async def test_no_instructions_for_a_model_that_refuses_them(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """tts-1 gets no instructions, which it would refuse."""
    await setup_voice(tts={"instructions": "Speak warmly."})

    await speak(hass, "Hello.", {"instructions": "Whisper."})

    assert "instructions" not in spoken(simulator)[0]


@pytest.mark.parametrize(
    ("field", "feature", "options"),
    [
        ("speed", Feature.SPEECH_SPEED, {"speed": 1.5}),
        ("instructions", Feature.SPEECH_INSTRUCTIONS, {"instructions": "Whisper."}),
    ],
)
async def test_a_refused_field_is_dropped_and_learned(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    field: str,
    feature: Feature,
    options: dict[str, Any],
) -> None:
    """A field the server does not know is left out, now and from then on."""
    entry = await setup_voice(tts={"audio_model": "gpt-4o-mini-tts", **options})
    simulator.settings.speech_fields_refused = (field,)

    first = await speak(hass, "Hello.")
    second = await speak(hass, "Hello again.")

    assert first
    assert second
    assert [field in body for body in spoken(simulator)] == [True, False, False]
    capabilities = entry.runtime_data.capabilities.model("gpt-4o-mini-tts")
    assert capabilities.refuses(feature)


async def test_a_refusal_of_this_speed_only_is_not_learned(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A refusal of one value is retried without the field, and not remembered."""
    entry = await setup_voice(tts={"speed": 1.5})
    simulator.enqueue(
        "/audio/speech",
        status=400,
        json={"error": {"message": "speed 1.5 is too fast for this voice"}},
    )

    assert await speak(hass, "Hello.")

    assert ["speed" in body for body in spoken(simulator)] == [True, False]
    capabilities = entry.runtime_data.capabilities.model("tts-1")
    assert not capabilities.refuses(Feature.SPEECH_SPEED)


async def test_a_format_the_server_makes_is_asked_for(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A whole text in FLAC is asked as FLAC and passed on as it comes."""
    await setup_voice(tts={"streaming": False})
    simulator.enqueue(
        "/audio/speech", raw=b"fLaC-audio", headers={"Content-Type": "audio/flac"}
    )

    audio = await speak(hass, "In FLAC, please.", {"preferred_format": "flac"})

    assert audio == b"fLaC-audio"
    assert spoken(simulator)[0]["response_format"] == "flac"


# --- streaming ----------------------------------------------------------------


async def test_each_sentence_is_spoken_while_the_text_is_written(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """The first sentence is asked before the rest of the text exists."""
    await setup_voice(tts={})
    first_asked = asyncio.Event()

    async def written() -> AsyncGenerator[str]:
        yield "The kitchen light "
        yield "is on. The door"
        async with asyncio.timeout(10):
            while not spoken(simulator):
                await asyncio.sleep(0.01)
        first_asked.set()
        yield " is closed!\n**\nBye"

    audio = await speak(hass, written())

    assert first_asked.is_set()
    inputs = [body["input"] for body in spoken(simulator)]
    assert inputs == ["The kitchen light is on.", "The door is closed!", "Bye"]
    assert audio == b"".join(synthesize(text, "mp3") for text in inputs)
    assert entity(hass).async_supports_streaming_input()


async def test_a_markdown_answer_is_spoken_not_read_out(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Marks, code and emoji never reach the voice, wherever the stream is cut."""
    await setup_voice(tts={})
    text = "## Lights 💡\n1. The **kitchen** light is on.\n```\nx = 1\n```\nDone ✅\n42"

    await speak(hass, pieces(*(text[i : i + 3] for i in range(0, len(text), 3))))

    inputs = [body["input"] for body in spoken(simulator)]
    assert inputs == ["Lights", "The kitchen light is on.", "Done", "42"]


async def test_a_whole_markdown_text_is_spoken_not_read_out(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """With streaming off, the whole text loses its marks too."""
    await setup_voice(tts={"streaming": False})

    await speak(hass, "- Door: **open** 🚪\n- See [camera](http://cam)")

    assert [body["input"] for body in spoken(simulator)] == ["Door: open. See camera."]


async def test_a_run_on_text_is_cut_at_a_space(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Text without a sentence end is cut at a space once it is too long."""
    await setup_voice(tts={"audio_format": "pcm"})
    words = "word " * 1000

    await speak(hass, pieces(words, "x" * 4500))

    inputs = [body["input"] for body in spoken(simulator)]
    assert [len(text) for text in inputs] == [3999, 999, 3999, 501]
    assert "".join(inputs).replace(" ", "") == words.replace(" ", "") + "x" * 4500


async def test_streamed_wav_has_one_header(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """WAV sentences are joined under one header whose sizes stay open."""
    await setup_voice(tts={})

    audio = await speak(
        hass, pieces("One. ", "Two and three."), {"preferred_format": "wav"}
    )

    assert [body["response_format"] for body in spoken(simulator)] == ["wav", "wav"]
    assert audio[:4] == b"RIFF"
    assert struct.unpack_from("<I", audio, 4) == (0xFFFFFFFF,)
    assert struct.unpack_from("<HHI", audio, 20) == (1, 1, 24_000)
    assert audio[36:40] == b"data"
    assert struct.unpack_from("<I", audio, 40) == (0xFFFFFFFF,)
    assert audio[44:] == synthesize("One.", "pcm") + synthesize("Two and three.", "pcm")


async def test_streamed_pcm_is_joined_as_it_is(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Raw PCM sentences follow each other."""
    await setup_voice(tts={"audio_format": "pcm"})

    audio = await speak(hass, pieces("One. Two."))

    assert audio == synthesize("One.", "pcm") + synthesize("Two.", "pcm")


async def test_formats_that_cannot_be_joined_come_as_wav(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Streamed FLAC sentences are asked as WAV, for Home Assistant to convert."""
    await setup_voice(tts={})

    response = await entity(hass).async_stream_tts_audio(
        tts.TTSAudioRequest("en", {"preferred_format": "flac"}, pieces("A. B."))
    )
    audio = b"".join([piece async for piece in response.data_gen])

    assert response.extension == "wav"
    assert [body["response_format"] for body in spoken(simulator)] == ["wav", "wav"]
    assert audio[44:] == synthesize("A.", "pcm") + synthesize("B.", "pcm")


async def test_unknown_formats_fall_back_to_the_subentrys(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A format no server makes gets the subentry's, converted by Home Assistant."""
    await setup_voice(tts={"audio_format": "pcm"})

    response = await entity(hass).async_stream_tts_audio(
        tts.TTSAudioRequest("en", {"preferred_format": "webm"}, pieces("Hi."))
    )
    audio = b"".join([piece async for piece in response.data_gen])

    assert response.extension == "pcm"
    assert audio == synthesize("Hi.", "pcm")


async def test_mp3_tags_of_later_sentences_are_dropped(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """An ID3 tag that starts each answer stays only at the very start."""
    await setup_voice(tts={})
    tag = b"ID3\x04\x00\x00\x00\x00\x00\x05title"
    frames = synthesize("x", "mp3")
    for _ in range(2):
        simulator.enqueue(
            "/audio/speech",
            raw=tag + frames,
            headers={"Content-Type": "audio/mpeg"},
        )

    audio = await speak(hass, pieces("One. Two."))

    assert audio.startswith(tag)
    assert audio.count(b"ID3") == 1


# --- voices and languages -----------------------------------------------------


async def test_voices_the_server_lists(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A voice list is used, its languages matched where the names tell."""
    simulator.models.append("kokoro")
    simulator.settings.voices = ("af_heart", "bf_emma", "ff_siwis", "custom")
    simulator.settings.voices_endpoint = True
    await setup_voice(tts={"audio_model": "kokoro", "voice": "af_heart"})
    await hass.async_block_till_done(wait_background_tasks=True)
    text_to_speech = entity(hass)

    def names(language: str) -> list[str]:
        return [v.voice_id for v in text_to_speech.async_get_supported_voices(language)]

    assert names("en-US") == ["af_heart", "custom"]
    assert names("en") == ["af_heart", "bf_emma", "custom"]
    assert names("fr") == ["ff_siwis", "custom"]
    assert names("de") == ["custom"]
    assert text_to_speech.supported_languages == sorted(
        ["en-US", "en-GB", "es", "fr", "hi", "it", "ja", "pt-BR", "zh"]
    )
    assert text_to_speech.default_language == "en-US"


async def test_known_voices_without_a_list(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Without a voice list the model family's voices are offered."""
    await setup_voice(tts={"voice": "my-own"})
    await hass.async_block_till_done(wait_background_tasks=True)
    text_to_speech = entity(hass)

    voices = [v.voice_id for v in text_to_speech.async_get_supported_voices("en")]

    assert voices[:3] == ["my-own", "alloy", "ash"]
    assert "marin" not in voices  # gpt-4o-mini-tts has it, tts-1 has not
    assert text_to_speech.default_options == {
        "voice": "my-own",
        "preferred_format": "mp3",
    }
    assert "de" in text_to_speech.supported_languages


async def test_kokoro_voices_and_the_default_language(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Kokoro gets its own voices; the default language follows Home Assistant."""
    simulator.models.append("kokoro")
    hass.config.language = "fr"
    await setup_voice(tts={"audio_model": "kokoro", "voice": ""})

    text_to_speech = entity(hass)

    assert text_to_speech.voice == KOKORO_VOICES[0]
    assert text_to_speech.default_language == "fr"


async def test_a_piper_voice_speaks_its_language(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A locale in the model's name is its only language."""
    model = "speaches-ai/piper-en_GB-alan-low"
    simulator.models.append(model)
    await setup_voice(tts={"audio_model": model})

    assert entity(hass).supported_languages == ["en-GB"]
    assert entity(hass).default_language == "en-GB"


# --- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "scripted", "message"),
    [
        (
            {"voice": "nobody"},
            None,
            "The server does not know the voice nobody: Invalid value: 'nobody'.",
        ),
        (
            {},
            {"status": 404, "json": {"detail": "Not Found"}},
            "This server has no text-to-speech route (/audio/speech)",
        ),
        (
            {},
            {"status": 405, "raw": "Method Not Allowed"},
            "This server has no text-to-speech route (/audio/speech)",
        ),
        (
            {},
            {
                "status": 400,
                "json": {
                    "detail": {
                        "error": "invalid_model",
                        "message": "Unsupported model: tts-1",
                    }
                },
            },
            "The server does not know the model tts-1",
        ),
        (
            {},
            {"status": 200, "json": {"audio": "none"}},
            (
                "The server's speech cannot be used: the server sent "
                "application/json instead of audio"
            ),
        ),
        (
            {"speed": 9},
            None,
            "The speed 9 is not a number from 0.25 to 4.0",
        ),
        (
            {"speed": "fast"},
            None,
            "The speed fast is not a number from 0.25 to 4.0",
        ),
        (
            {"speed": 10**309},  # beyond any float
            None,
            "The speed 10000000000",  # the number shortened in the message
        ),
        (
            {"preferred_format": "wav"},
            {"status": 200, "raw": b"RIFF....WAVEjunk"},
            "The server's speech cannot be used: the answer is no WAV audio",
        ),
        (
            {},
            {"status": 500, "json": {"error": {"message": "out of memory"}}},
            "The model server answered with an error: out of memory",
        ),
    ],
)
async def test_errors_are_translated(
    hass: HomeAssistant,
    setup_voice: SetupEntry,
    simulator: OpenAISimulator,
    options: dict[str, Any],
    scripted: dict[str, Any] | None,
    message: str,
) -> None:
    """Each failure reaches the caller as our translated error."""
    await setup_voice(tts={})
    if scripted is not None:
        simulator.enqueue("/audio/speech", **scripted)

    with pytest.raises(HomeAssistantError) as err:
        await speak(hass, pieces("Something to say."), options)

    assert str(err.value).startswith(message)


async def test_unknown_model(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A model the server does not have is named in the error."""
    await setup_voice(tts={"audio_model": "tts-9", "streaming": False})

    with pytest.raises(HomeAssistantError) as err:
        await speak(hass, "Hello.")

    assert str(err.value) == (
        "The server does not know the model tts-9: The model 'tts-9' does not "
        "exist. Choose a model it lists"
    )


async def test_audio_beyond_the_cap_is_stopped(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """More audio than the cap, in one answer or joined, is refused."""
    await setup_voice(tts={})

    with (
        patch("custom_components.openai_compatible.voice.audio.MAX_SPEECH_BYTES", 3000),
        pytest.raises(HomeAssistantError, match="answer is larger than"),
    ):
        await speak(hass, pieces("A long enough sentence for the cap."))
    with (
        patch("custom_components.openai_compatible.tts.MAX_SPEECH_BYTES", 2000),
        pytest.raises(HomeAssistantError, match="answer is larger than"),
    ):
        await speak(hass, pieces("A one. B two. C three. D four. E five."))


async def test_wav_that_changes_format_is_refused(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """Sentences in different WAV formats cannot be joined."""
    await setup_voice(tts={})
    other_rate = bytearray(synthesize("x", "wav"))
    struct.pack_into("<I", other_rate, 24, 16_000)
    simulator.enqueue("/audio/speech", raw=synthesize("x", "wav"))
    simulator.enqueue("/audio/speech", raw=bytes(other_rate))

    with pytest.raises(HomeAssistantError, match="the audio format changed"):
        await speak(hass, pieces("One. Two."), {"preferred_format": "wav"})


async def test_a_slow_server_times_out(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A server slower than the entry's request timeout gives a timeout."""
    entry = await setup_voice(tts={})
    hass.config_entries.async_update_entry(entry, options={CONF_TIMEOUT: 0.2})
    await hass.async_block_till_done()
    simulator.settings.latency = 1.0

    with pytest.raises(HomeAssistantError, match="did not answer in time"):
        await speak(hass, pieces("Slowly."))


async def test_a_refused_key_starts_reauthentication(
    hass: HomeAssistant, setup_voice: SetupEntry, simulator: OpenAISimulator
) -> None:
    """A 401 starts re-authentication of the entry."""
    await setup_voice(tts={})
    simulator.enqueue(
        "/audio/speech",
        status=401,
        json={"error": {"message": "Incorrect API key", "code": "invalid_api_key"}},
    )

    with pytest.raises(HomeAssistantError, match="Re-authentication has been started"):
        await speak(hass, pieces("Hello."))

    flows = hass.config_entries.flow.async_progress_by_handler("openai_compatible")
    assert [flow["context"]["source"] for flow in flows] == ["reauth"]
