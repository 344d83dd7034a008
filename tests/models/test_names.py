"""What a model's name tells: its kind, and an audio model's task, languages, voices."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible.models.names import (
    KOKORO_VOICES,
    OPENAI_TTS1_VOICES,
    OPENAI_VOICES,
    WHISPER_LANGUAGES,
    ModelKind,
    is_speech_model,
    is_transcription_model,
    known_voices,
    model_kind,
    models_first,
    pick_chat_model,
    pick_image_model,
    speech_languages,
    takes_instructions,
    transcription_languages,
    voice_language,
)

# Names as OpenAI, Ollama, Groq, Mistral, Gemini, xAI, Together and OpenRouter
# list them.
KINDS = {
    ModelKind.CHAT: [
        "gpt-5-mini",
        "gpt-4o-mini",
        "chatgpt-4o-latest",
        "o3-mini",
        "o4-mini-2025-04-16",
        "openai/gpt-5-mini",
        "llama3.1:8b",
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "qwen2.5:7b-instruct",
        "qwen2.5-vl:7b",
        "llava:13b",
        "mistral-medium-latest",
        "open-mixtral-8x22b",
        "gemma3:4b",
        "models/gemini-2.5-flash",
        "grok-4-fast",
        "deepseek-chat",
        "phi4-mini",
        "command-r7b",
        "anthropic/claude-sonnet-4",
        "granite3.3:8b",
        "my-finetune-chat",
    ],
    ModelKind.IMAGE: [
        "gpt-image-1",
        "dall-e-3",
        "imagen-3.0-generate-002",
        "grok-2-image-1212",
        "black-forest-labs/FLUX.1-schnell",
        "stabilityai/stable-diffusion-xl-base-1.0",
        "sdxl-turbo",
    ],
    ModelKind.OTHER: [
        "text-embedding-3-small",
        "nomic-embed-text:latest",
        "mistral-embed",
        "whisper-1",
        "whisper-large-v3",
        "gpt-4o-mini-tts",
        "gpt-4o-transcribe",
        "gpt-4o-audio-preview",
        "gpt-4o-realtime-preview",
        "gpt-4o-search-preview",
        "omni-moderation-latest",
        "meta-llama/llama-guard-4-12b",
        "BAAI/bge-reranker-v2-m3",
        "mistral-ocr-latest",
        "babbage-002",
        "davinci-002",
        "sora-2",
    ],
    ModelKind.UNKNOWN: ["probe", "my-local-model", "hidream-i1", "aqa"],
}


@pytest.mark.parametrize(
    ("model", "kind"),
    [(model, kind) for kind, names in KINDS.items() for model in names],
)
def test_model_kind(model: str, kind: ModelKind) -> None:
    """A name says what a model is only when it evidently does."""
    assert model_kind(model) is kind


MIXED = [
    "dall-e-3",
    "gpt-4o-mini",
    "hidream-i1",
    "llama3.1:8b",
    "text-embedding-3-small",
    "whisper-1",
    "gpt-image-1",
]


def test_models_first() -> None:
    """Models of the kind lead, then of unknown kind; the others stay out."""
    chat = models_first(MIXED, ModelKind.CHAT)
    assert chat == ["gpt-4o-mini", "llama3.1:8b", "hidream-i1"]
    image = models_first(MIXED, ModelKind.IMAGE)
    assert image == ["dall-e-3", "gpt-image-1", "hidream-i1"]


@pytest.mark.parametrize(
    ("models", "recommended", "picked"),
    [
        (MIXED, "llama3.1:8b", "llama3.1:8b"),
        (MIXED, "gpt-5-mini", "gpt-4o-mini"),
        (MIXED, None, "gpt-4o-mini"),
        (["whisper-1", "my-local-model"], None, "my-local-model"),
        (["whisper-1", "dall-e-3"], None, None),
        (["whisper-1", "dall-e-3"], "gpt-5-mini", "gpt-5-mini"),
        ([], "gpt-5-mini", "gpt-5-mini"),
    ],
)
def test_pick_chat_model(
    models: list[str], recommended: str | None, picked: str | None
) -> None:
    """The recommended model if listed, else the likeliest chat model, else none."""
    assert pick_chat_model(models, recommended) == picked


def test_pick_image_model() -> None:
    """Only an evident image model is picked."""
    assert pick_image_model(MIXED) == "dall-e-3"
    assert pick_image_model(["gpt-4o-mini", "hidream-i1"]) is None


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
