"""What a model's name tells: its kind, fields it takes, languages and voices."""

from __future__ import annotations

from enum import Enum, StrEnum
from functools import lru_cache
import re
from typing import Any, Final

from .server_info import ServerKind

TRANSCRIPTION_MARKERS: Final = (
    "whisper", "transcribe", "parakeet", "canary", "moonshine", "voxtral", "sensevoice",
)  # fmt: skip
# Text to speech; most other such models end in "tts".
SPEECH_MARKERS: Final = (
    "tts", "kokoro", "piper", "orpheus", "xtts", "bark", "melo", "speecht5",
    "chatterbox", "zonos", "vibevoice",
)  # fmt: skip

# ISO 639-1 as Home Assistant names them; Whisper spells Javanese "jw", left out.
WHISPER_LANGUAGES: Final = (
    "af", "am", "ar", "as", "az", "ba", "be", "bg", "bn", "bo", "br", "bs",
    "ca", "cs", "cy", "da", "de", "el", "en", "es", "et", "eu", "fa", "fi",
    "fo", "fr", "gl", "gu", "ha", "haw", "he", "hi", "hr", "ht", "hu", "hy",
    "id", "is", "it", "ja", "ka", "kk", "km", "kn", "ko", "la", "lb", "ln",
    "lo", "lt", "lv", "mg", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my",
    "ne", "nl", "nn", "no", "oc", "pa", "pl", "ps", "pt", "ro", "ru", "sa",
    "sd", "si", "sk", "sl", "sn", "so", "sq", "sr", "su", "sv", "sw", "ta",
    "te", "tg", "th", "tk", "tl", "tr", "tt", "uk", "ur", "uz", "vi", "yi",
    "yo", "yue", "zh",
)  # fmt: skip
PARAKEET_V3_LANGUAGES: Final = (
    "bg", "cs", "da", "de", "el", "en", "es", "et", "fi", "fr", "hr", "hu",
    "it", "lt", "lv", "mt", "nl", "pl", "pt", "ro", "ru", "sk", "sl", "sv",
    "uk",
)  # fmt: skip

# OpenAI's voices; most servers that copy OpenAI's API accept them too.
OPENAI_TTS1_VOICES: Final = (
    "alloy", "ash", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer",
)  # fmt: skip
OPENAI_VOICES: Final = (*OPENAI_TTS1_VOICES, "ballad", "verse", "marin", "cedar")
# The first letter names the language, the second the gender.
KOKORO_VOICES: Final = (
    "af_heart", "af_alloy", "af_aoede", "af_bella", "af_jessica", "af_kore",
    "af_nicole", "af_nova", "af_river", "af_sarah", "af_sky", "am_adam",
    "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx",
    "am_puck", "bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel",
    "bm_fable", "bm_george", "bm_lewis", "ef_dora", "em_alex", "ff_siwis",
    "hf_alpha", "hf_beta", "hm_omega", "hm_psi", "if_sara", "im_nicola",
    "jf_alpha", "jm_kumo", "pf_dora", "pm_alex", "zf_xiaobei", "zm_yunjian",
)  # fmt: skip
KOKORO_LANGUAGES: Final = {
    "a": "en-US", "b": "en-GB", "e": "es", "f": "fr", "h": "hi", "i": "it", "j": "ja",
    "p": "pt-BR", "z": "zh",
}  # fmt: skip
_KOKORO_VOICE = re.compile(r"^(?P<language>[abefhijpz])[fm]_")
# Such as Piper's "en_US-amy-medium".
_LOCALE = re.compile(
    r"(?<![a-z])(?P<language>[a-z]{2})[_-](?P<region>[A-Z]{2})(?![A-Z])"
)


def _has_marker(model: str, markers: tuple[str, ...]) -> bool:
    lowered = model.lower()
    return any(marker in lowered for marker in markers)


def is_transcription_model(model: str) -> bool:
    """Tell whether a model evidently turns speech into text."""
    return _has_marker(model, TRANSCRIPTION_MARKERS)


def is_speech_model(model: str) -> bool:
    """Tell whether a model evidently turns text into speech."""
    return not is_transcription_model(model) and _has_marker(model, SPEECH_MARKERS)


def transcription_languages(model: str) -> list[str]:
    """Return the languages a speech-to-text model understands (by its name)."""
    lowered = model.lower()
    if lowered.endswith(".en") or "moonshine" in lowered:
        return ["en"]
    if "parakeet" in lowered:
        return list(PARAKEET_V3_LANGUAGES) if "v3" in lowered else ["en"]
    return list(WHISPER_LANGUAGES)


def _locale(name: str) -> str | None:
    if match := _LOCALE.search(name):
        return f"{match['language']}-{match['region']}"
    return None


def speech_languages(model: str) -> list[str]:
    """Return the languages a text-to-speech model speaks, by its name."""
    if locale := _locale(model):
        return [locale]
    if "kokoro" in model.lower():
        return sorted(set(KOKORO_LANGUAGES.values()))
    return list(WHISPER_LANGUAGES)


def known_voices(model: str) -> list[str]:
    """Return the voices the family of a text-to-speech model is known to have."""
    lowered = model.lower()
    if "kokoro" in lowered:
        return list(KOKORO_VOICES)
    if lowered.startswith("tts-1"):
        return list(OPENAI_TTS1_VOICES)
    return list(OPENAI_VOICES)


def voice_language(voice: str) -> str | None:
    """Return the language a voice's name gives (Kokoro, Piper), if any."""
    if match := _KOKORO_VOICE.match(voice):
        return KOKORO_LANGUAGES[match["language"]]
    return _locale(voice)


def takes_instructions(model: str) -> bool:
    """Tell whether a speech model takes instructions (tts-1 refuses them)."""
    return not model.lower().startswith("tts-1")


class ModelKind(Enum):
    """What a model name evidently is; pickers offer chat or image, then unknown."""

    CHAT = "chat"
    IMAGE = "image"
    UNKNOWN = "unknown"
    OTHER = "other"


OTHER_MARKERS: Final = (
    "embed", "speech", "audio", "moderation", "guard", "rerank", "realtime", "davinci",
    "babbage", "sora", "search", "ocr", *TRANSCRIPTION_MARKERS, *SPEECH_MARKERS,
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


def model_kind(model: str) -> ModelKind:
    """Return what the model's name says it is."""
    if _has_marker(model, OTHER_MARKERS):
        return ModelKind.OTHER
    if _has_marker(model, IMAGE_MARKERS) and not _has_marker(model, NOT_IMAGE_MARKERS):
        return ModelKind.IMAGE
    words = _WORD.findall(model.lower())
    if any(word.startswith(CHAT_FAMILIES) for word in words) or any(
        word in CHAT_WORDS for word in words
    ):
        return ModelKind.CHAT
    return ModelKind.UNKNOWN


def models_first(models: list[str], kind: ModelKind) -> list[str]:
    """Return the models for a picker: of that kind, then of unknown kind."""
    by_kind: dict[ModelKind, list[str]] = {kind: [], ModelKind.UNKNOWN: []}
    for model in models:  # each model's kind read once
        by_kind.get(model_kind(model), []).append(model)
    return [model for group in by_kind.values() for model in group]


def pick_chat_model(models: list[str], recommended: str | None) -> str | None:
    """Return the recommended model if listed, else the first chat one, else it."""
    if recommended and recommended in models:
        return recommended
    return next(iter(models_first(models, ModelKind.CHAT)), recommended)


def pick_image_model(models: list[str]) -> str | None:
    """Return the first evident image model the server lists, if any."""
    return next((m for m in models if model_kind(m) is ModelKind.IMAGE), None)


def _base_name(model: str) -> str:
    return model.lower().rsplit("/", 1)[-1]


# What a name tells is read once per model, not on every request.
@lru_cache(maxsize=64)
def is_reasoning_model(model: str) -> bool:
    """Tell whether a model is one of OpenAI's reasoning models, by its name."""
    name = _base_name(model)
    # gpt-5-chat is the non-reasoning chat variant of the family.
    return name.startswith(("o1", "o3", "o4", "gpt-5")) and not name.startswith(
        "gpt-5-chat"
    )


@lru_cache(maxsize=64)
def takes_reasoning_effort(model: str) -> bool:
    """Tell whether a model takes a reasoning effort, by its name."""
    return is_reasoning_model(model) or _base_name(model).startswith("gpt-oss")


@lru_cache(maxsize=64)
def takes_verbosity(model: str) -> bool:
    """Tell whether a model takes a verbosity (the GPT-5 reasoning family)."""
    return is_reasoning_model(model) and _base_name(model).startswith("gpt-5")


# OpenAI's service tiers by family; "auto" follows the project's setting.
_PRIORITY_FAMILIES: Final = ("gpt-5", "gpt-4.1", "gpt-4o", "o3", "o4-mini")
_FLEX_FAMILIES: Final = ("gpt-5", "o3", "o4-mini")
# Variants processed at standard speed and price only.
_STANDARD_ONLY: Final = ("-chat", "-pro", "deep-research", "o3-mini", "codex-mini")
_NO_FLEX: Final = ("-codex", "gpt-5.3")


@lru_cache(maxsize=64)
def service_tiers(model: str) -> tuple[str, ...]:
    """Return the service tiers an OpenAI model takes, by its name; () if none."""
    name = _base_name(model)
    if not name.startswith(_PRIORITY_FAMILIES) or any(
        variant in name for variant in _STANDARD_ONLY
    ):
        return ()
    tiers = ["auto"]
    if name.startswith(_FLEX_FAMILIES) and not any(part in name for part in _NO_FLEX):
        tiers.append("flex")
    tiers.append("default")
    if not name.startswith("gpt-5-nano"):
        tiers.append("priority")
    return tuple(tiers)


class Thinking(StrEnum):
    """Whether the model thinks before it answers; default: as the server does."""

    DEFAULT = "default"
    ON = "on"
    OFF = "off"


def thinking_fields(
    setting: Any, kind: ServerKind | None, model: str
) -> dict[str, object]:
    """Return the request fields (Chat Completions form) of a saved thinking switch."""
    if setting not in (Thinking.ON, Thinking.OFF):
        return {}
    on = setting == Thinking.ON
    if kind in (ServerKind.VLLM, ServerKind.LLAMA_CPP):
        return {"chat_template_kwargs": {"enable_thinking": on}}
    if kind is ServerKind.OLLAMA:
        return {"reasoning_effort": "medium" if on else "none"}
    if takes_reasoning_effort(model):
        # Off is the least effort the model takes: GPT-5's minimal, else low.
        least = "minimal" if takes_verbosity(model) else "low"
        return {"reasoning_effort": "medium" if on else least}
    return {}
