"""What audio model names tell: task, languages and voices."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible.models.audio_models import (
    KOKORO_VOICES,
    OPENAI_TTS1_VOICES,
    OPENAI_VOICES,
    WHISPER_LANGUAGES,
    is_speech_model,
    is_transcription_model,
    known_voices,
    pick_speech_model,
    pick_transcription_model,
    speech_languages,
    takes_instructions,
    transcription_languages,
    voice_language,
)
from custom_components.openai_compatible.models.kinds import ModelKind, model_kind


@pytest.mark.parametrize(
    ("model", "transcribes", "speaks"),
    [
        ("whisper-1", True, False),
        ("gpt-4o-mini-transcribe", True, False),
        ("Systran/faster-distil-whisper-small.en", True, False),
        ("nvidia/parakeet-tdt-0.6b-v2", True, False),
        ("mistralai/Voxtral-Mini-3B-2507", True, False),
        ("tts-1-hd", False, True),
        ("gpt-4o-mini-tts", False, True),
        ("kokoro", False, True),
        ("speaches-ai/Kokoro-82M-v1.0-ONNX", False, True),
        ("speaches-ai/piper-en_US-amy-medium", False, True),
        ("canopylabs/orpheus-3b-0.1-ft", False, True),
        ("gpt-4o-mini", False, False),
        ("llama3.2:3b", False, False),
    ],
)
def test_what_a_model_does(model: str, transcribes: bool, speaks: bool) -> None:
    """Audio models are told apart, and never taken for chat or unknown models."""
    assert is_transcription_model(model) is transcribes
    assert is_speech_model(model) is speaks
    assert (model_kind(model) is ModelKind.OTHER) is (transcribes or speaks)


def test_picking_models() -> None:
    """The first evident model of each kind is picked, none if there is none."""
    models = ["gpt-4o-mini", "kokoro", "whisper-large-v3", "tts-1"]

    assert pick_transcription_model(models) == "whisper-large-v3"
    assert pick_speech_model(models) == "kokoro"
    assert pick_transcription_model(["gpt-4o-mini"]) is None
    assert pick_speech_model(["gpt-4o-mini"]) is None


@pytest.mark.parametrize(
    ("model", "languages"),
    [
        ("whisper-1", list(WHISPER_LANGUAGES)),
        ("distil-whisper/distil-small.en", ["en"]),
        ("UsefulSensors/moonshine-base", ["en"]),
        ("nvidia/parakeet-tdt-0.6b-v2", ["en"]),
    ],
)
def test_transcription_languages(model: str, languages: list[str]) -> None:
    """English-only models say so in their names; others get Whisper's."""
    assert transcription_languages(model) == languages


def test_parakeet_v3_speaks_european_languages() -> None:
    """Parakeet v3 transcribes 25 European languages."""
    languages = transcription_languages("nvidia/parakeet-tdt-0.6b-v3")

    assert len(languages) == 25
    assert {"en", "de", "fr", "uk"} <= set(languages)
    assert "ja" not in languages


@pytest.mark.parametrize(
    ("model", "languages"),
    [
        ("speaches-ai/piper-de_DE-thorsten-medium", ["de-DE"]),
        ("kokoro", ["en-GB", "en-US", "es", "fr", "hi", "it", "ja", "pt-BR", "zh"]),
        ("tts-1", list(WHISPER_LANGUAGES)),
    ],
)
def test_speech_languages(model: str, languages: list[str]) -> None:
    """A locale in the name wins; Kokoro's come from its voices."""
    assert speech_languages(model) == languages


@pytest.mark.parametrize(
    ("model", "voices"),
    [
        ("kokoro", list(KOKORO_VOICES)),
        ("tts-1", list(OPENAI_TTS1_VOICES)),
        ("gpt-4o-mini-tts", list(OPENAI_VOICES)),
        ("some-server-tts", list(OPENAI_VOICES)),
    ],
)
def test_known_voices(model: str, voices: list[str]) -> None:
    """Each family has its voices; unknown ones get OpenAI's, which most copy."""
    assert known_voices(model) == voices


@pytest.mark.parametrize(
    ("voice", "language"),
    [
        ("af_heart", "en-US"),
        ("bm_george", "en-GB"),
        ("zf_xiaobei", "zh"),
        ("en_US-amy-medium", "en-US"),
        ("alloy", None),
        ("xf_unknown", None),
    ],
)
def test_voice_language(voice: str, language: str | None) -> None:
    """Kokoro and Piper voice names tell their language."""
    assert voice_language(voice) == language


def test_instructions() -> None:
    """tts-1 refuses instructions; gpt-4o-mini-tts takes them."""
    assert not takes_instructions("tts-1-hd")
    assert takes_instructions("gpt-4o-mini-tts")
