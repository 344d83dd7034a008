"""What a listed model evidently is, by its name: for pickers and defaults."""

from __future__ import annotations

from enum import Enum
import re
from typing import Final

from .audio_models import SPEECH_MARKERS, TRANSCRIPTION_MARKERS


class ModelKind(Enum):
    """What a model name evidently is."""

    CHAT = "chat"
    IMAGE = "image"
    UNKNOWN = "unknown"
    OTHER = "other"


OTHER_MARKERS: Final = (
    "embed", "whisper", "tts", "transcribe", "speech", "audio", "moderation", "guard",
    "rerank", "realtime", "davinci", "babbage", "sora", "search", "ocr",
    *TRANSCRIPTION_MARKERS, *SPEECH_MARKERS,
)  # fmt: skip
# A vision model reads images, it does not make them.
IMAGE_MARKERS: Final = (
    "gpt-image", "dall-e", "imagen", "flux", "stable-diffusion", "sdxl", "image",
)  # fmt: skip
NOT_IMAGE_MARKERS: Final = ("vision", "-vl")
# Words that open a chat model family's name ("llama3.1:8b", "openai/gpt-5").
CHAT_FAMILIES: Final = (
    "chatgpt", "claude", "codestral", "command", "deepseek", "gemini", "gemma", "glm",
    "gpt", "granite", "grok", "hermes", "kimi", "llama", "llava", "magistral",
    "ministral", "mistral", "mixtral", "nemotron", "o1", "o3", "o4", "olmo", "phi",
    "qwen", "qwq", "smollm",
)  # fmt: skip
CHAT_WORDS: Final = ("chat", "instruct")

_WORD = re.compile(r"[a-z0-9]+")

# More than anyone scrolls, few enough to read each kind on the event loop.
MAX_OFFERED: Final = 2000


def offered(models: list[str]) -> list[str]:
    """Return the listed models the pickers offer and the defaults come from."""
    return models[:MAX_OFFERED]


def model_kind(model: str) -> ModelKind:
    """Return what the model's name says it is."""
    lowered = model.lower()
    if any(marker in lowered for marker in OTHER_MARKERS):
        return ModelKind.OTHER
    if any(marker in lowered for marker in IMAGE_MARKERS) and not any(
        marker in lowered for marker in NOT_IMAGE_MARKERS
    ):
        return ModelKind.IMAGE
    words = _WORD.findall(lowered)
    if any(word.startswith(CHAT_FAMILIES) for word in words) or any(
        word in CHAT_WORDS for word in words
    ):
        return ModelKind.CHAT
    return ModelKind.UNKNOWN


# Evidently other models are left out of the pickers; any name can be typed.
def chat_models_first(models: list[str]) -> list[str]:
    """Return the models for a chat-model picker: evident chat ones, then unknown."""
    return _picks(models, (ModelKind.CHAT, ModelKind.UNKNOWN))


def image_models_first(models: list[str]) -> list[str]:
    """Return the models for an image-model picker: evident image ones, then unknown."""
    return _picks(models, (ModelKind.IMAGE, ModelKind.UNKNOWN))


def _picks(models: list[str], kinds: tuple[ModelKind, ...]) -> list[str]:
    """Return the models of the kinds, by kind in that order; each kind read once."""
    by_kind: dict[ModelKind, list[str]] = {kind: [] for kind in kinds}
    for model in models:
        by_kind.get(model_kind(model), []).append(model)
    return [model for kind in kinds for model in by_kind[kind]]


def pick_chat_model(models: list[str], recommended: str | None) -> str | None:
    """Return the recommended model if listed, else the first chat one, else it."""
    if recommended and recommended in models:
        return recommended
    return next(iter(chat_models_first(models)), recommended)


def pick_image_model(models: list[str]) -> str | None:
    """Return the first evident image model the server lists, if any."""
    return next(iter(_picks(models, (ModelKind.IMAGE,))), None)
