"""What the name of an audio model tells: its task, languages and voices."""

from __future__ import annotations

import re
from typing import Final

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


def is_transcription_model(model: str) -> bool:
    """Tell whether a model evidently turns speech into text."""
    lowered = model.lower()
    return any(marker in lowered for marker in TRANSCRIPTION_MARKERS)


def is_speech_model(model: str) -> bool:
    """Tell whether a model evidently turns text into speech."""
    lowered = model.lower()
    return not is_transcription_model(model) and any(
        marker in lowered for marker in SPEECH_MARKERS
    )


def pick_transcription_model(models: list[str]) -> str | None:
    """Return the first evident speech-to-text model listed, if any."""
    return next((model for model in models if is_transcription_model(model)), None)


def pick_speech_model(models: list[str]) -> str | None:
    """Return the first evident text-to-speech model listed, if any."""
    return next((model for model in models if is_speech_model(model)), None)


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
