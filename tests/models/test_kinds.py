"""What a listed model evidently is, and the order of the model pickers."""

from __future__ import annotations

import pytest

from custom_components.openai_compatible.models.kinds import (
    ModelKind,
    chat_models_first,
    image_models_first,
    model_kind,
    pick_chat_model,
    pick_image_model,
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


def test_chat_models_first() -> None:
    """Chat models lead, then models of unknown kind; image and other models stay out."""
    assert chat_models_first(MIXED) == ["gpt-4o-mini", "llama3.1:8b", "hidream-i1"]


def test_image_models_first() -> None:
    """Image models lead, then models of unknown kind; chat and other models stay out."""
    assert image_models_first(MIXED) == ["dall-e-3", "gpt-image-1", "hidream-i1"]


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
