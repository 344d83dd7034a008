"""Text-to-speech entities, one per text-to-speech subentry."""

from __future__ import annotations

from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Mapping,
)
from dataclasses import dataclass, replace
import re
from typing import Any, Final, override

from homeassistant.components import tts
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import OpenAICompatibleConfigEntry
from .const import (
    CONF_AUDIO_FORMAT,
    CONF_AUDIO_MODEL,
    CONF_INSTRUCTIONS,
    CONF_SPEED,
    CONF_STREAMING,
    CONF_VOICE,
    DEFAULT_AUDIO_FORMAT,
    SUBENTRY_TTS,
)
from .entity import OpenAICompatibleSubentryEntity
from .errors import InputError, RequestRejectedError
from .features import Feature
from .models.audio_models import (
    known_voices,
    speech_languages,
    takes_instructions,
    voice_language,
)
from .net.sse import async_capped
from .net.transport import Budget
from .voice.audio import (
    MAX_SPEECH_BYTES,
    MAX_SPEED,
    MIN_SPEED,
    SpeechRequest,
    async_fetch_voices,
    async_speak,
)
from .voice.audio_files import JOINABLE_FORMATS, async_join
from .voice.speech_text import async_spoken_lines, spoken_sentence, spoken_text

PARALLEL_UPDATES = 0

# Optional fields of a speech request, and the value that leaves each out.
_WITHOUT: Final[dict[Feature, dict[str, Any]]] = {
    Feature.SPEECH_SPEED: {"speed": 1.0},
    Feature.SPEECH_INSTRUCTIONS: {"instructions": None},
}

# OpenAI takes at most 4096 characters per request.
MAX_SPEECH_CHARACTERS: Final = 4000
SERVER_FORMATS: Final = {
    "mp3": "mp3",
    "wav": "wav",
    "flac": "flac",
    "opus": "opus",
    "ogg": "opus",
    "oga": "opus",
    "aac": "aac",
    "pcm": "pcm",
    "raw": "pcm",
}
# A sentence's punctuation and the space after, or a line end; possessive: linear.
_SENTENCE_END = re.compile(r"(?<![.!?…。！？])[.!?…。！？]++[\"')\]]*+(?=\s)|\n")


async def async_setup_entry(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a text-to-speech entity for each speech subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_TTS:
            async_add_entities(
                [OpenAICompatibleTTSEntity(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


def _speakable(text: str) -> bool:
    """Tell whether a piece of text has anything to say (not only marks)."""
    return any(character.isalnum() for character in text)


def _cut(text: str, limit: int) -> int | None:
    """Return where the first sentence ends, else a long text's last space in `limit`."""
    if (match := _SENTENCE_END.search(text)) and match.end() <= limit:
        return match.end()
    if len(text) <= limit:
        return None
    space = text.rfind(" ", 0, limit)
    return space if space > 0 else limit


async def async_sentences(
    text: AsyncIterable[str], limit: int = MAX_SPEECH_CHARACTERS
) -> AsyncIterator[str]:
    """Yield each sentence of a text stream as soon as it is complete."""
    pending = ""
    async for delta in text:
        pending += delta
        while (end := _cut(pending, limit)) is not None:
            sentence, pending = pending[:end], pending[end:]
            if _speakable(sentence):
                yield sentence.strip()
    while pending:
        end = _cut(pending, limit) or len(pending)
        sentence, pending = pending[:end], pending[end:]
        if _speakable(sentence):
            yield sentence.strip()


async def async_spoken_sentences(text: AsyncIterable[str]) -> AsyncIterator[str]:
    """Yield each sentence of a text stream as it should be said, when complete."""
    async for sentence in async_sentences(async_spoken_lines(text)):
        if _speakable(said := spoken_sentence(sentence)):
            yield said


def text_pieces(text: str, limit: int = MAX_SPEECH_CHARACTERS) -> list[str]:
    """Return a whole text in as few requests' worth as the limit allows."""
    pieces: list[str] = []
    pending = text
    while pending:
        end = _cut(pending, limit) or len(pending)
        sentence, pending = pending[:end].strip(), pending[end:]
        if not _speakable(sentence):
            continue
        if pieces and len(pieces[-1]) + 1 + len(sentence) <= limit:
            pieces[-1] = f"{pieces[-1]} {sentence}"
        else:
            pieces.append(sentence)
    return pieces


async def _async_items(items: Iterable[str]) -> AsyncIterator[str]:
    for item in items:
        yield item


@dataclass(frozen=True, slots=True)
class _Speaking:
    """How to speak: the subentry's settings with a request's options over them."""

    voice: str
    speed: float
    instructions: str | None


class OpenAICompatibleTTSEntity(tts.TextToSpeechEntity, OpenAICompatibleSubentryEntity):
    """Text to speech through the server's speech route."""

    model_key = CONF_AUDIO_MODEL
    _attr_translation_key = "tts"
    _attr_supported_options = [
        tts.ATTR_VOICE,
        tts.ATTR_PREFERRED_FORMAT,
        CONF_SPEED,
        CONF_INSTRUCTIONS,
    ]

    def __init__(
        self, entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Describe the entity; the server's voice list comes once it is added."""
        super().__init__(entry, subentry)
        # Text-to-speech refuses an entity without a name of its own.
        self._attr_has_entity_name = False
        self._server_voices: list[str] | None = None

    @property
    @override
    def name(self) -> str:
        """Return the subentry's title."""
        return self.subentry.title

    @property
    @override
    def supported_languages(self) -> list[str]:
        """Return the languages the subentry's model speaks."""
        return speech_languages(self.model)

    @property
    def _audio_format(self) -> str:
        return str(self.subentry.data.get(CONF_AUDIO_FORMAT, DEFAULT_AUDIO_FORMAT))

    @property
    def _voices(self) -> list[str]:
        """Return the voices to offer: the server's list, else the model's."""
        return self._server_voices or known_voices(self.model)

    @property
    def voice(self) -> str:
        """Return the subentry's voice, else the first one known."""
        return str(self.subentry.data.get(CONF_VOICE) or self._voices[0])

    @property
    @override
    def default_language(self) -> str:
        """Return Home Assistant's language when the model speaks it."""
        languages = self.supported_languages
        wanted = self.hass.config.language
        for language in (wanted, wanted.split("-")[0], "en", "en-US"):
            if language in languages:
                return language
        return languages[0]

    @property
    @override
    def default_options(self) -> Mapping[str, Any]:
        """Return the subentry's voice and format."""
        return {
            tts.ATTR_VOICE: self.voice,
            tts.ATTR_PREFERRED_FORMAT: self._audio_format,
        }

    @override
    async def async_added_to_hass(self) -> None:
        """Learn the server's voices in the background, where it lists them."""
        await super().async_added_to_hass()
        self.entry.async_create_background_task(
            self.hass, self._async_load_voices(), f"{self.entity_id} voices"
        )

    async def _async_load_voices(self) -> None:
        self._server_voices = await async_fetch_voices(self.runtime.transport)

    @callback
    @override
    def async_get_supported_voices(self, language: str) -> list[tts.Voice]:
        """Return the voices, those of the language first where names tell."""
        voices = list(dict.fromkeys([self.voice, *self._voices]))
        primary = language.split("-", maxsplit=1)[0]
        matching = [
            voice
            for voice in voices
            if (spoken := voice_language(voice)) is None
            or spoken == language
            or spoken.split("-")[0] == primary == language
        ]
        return [tts.Voice(voice, voice) for voice in matching or voices]

    @override
    def async_supports_streaming_input(self) -> bool:
        """Tell whether sentences are spoken while the text is written."""
        return bool(self.subentry.data.get(CONF_STREAMING, True))

    def _output(self, options: Mapping[str, object], joined: bool) -> tuple[str, str]:
        """Return the format to ask for and the extension; joined ones must be joinable."""
        wanted = str(options.get(tts.ATTR_PREFERRED_FORMAT) or self._audio_format)
        if wanted not in SERVER_FORMATS:
            wanted = self._audio_format
        server_format = SERVER_FORMATS[wanted]
        if joined and server_format not in JOINABLE_FORMATS:
            return "wav", "wav"
        return server_format, wanted

    def _speaking(self, options: Mapping[str, object]) -> _Speaking:
        data = self.subentry.data
        speed = _speed(options.get(CONF_SPEED, data.get(CONF_SPEED, 1.0)))
        if not MIN_SPEED <= speed <= MAX_SPEED:
            raise InputError(
                "speed_out_of_range",
                speed=str(options.get(CONF_SPEED)),
                minimum=str(MIN_SPEED),
                maximum=str(MAX_SPEED),
            )
        instructions = options.get(CONF_INSTRUCTIONS, data.get(CONF_INSTRUCTIONS))
        capabilities = self.runtime.capabilities.model(self.model)
        if not takes_instructions(self.model) or capabilities.refuses(
            Feature.SPEECH_INSTRUCTIONS
        ):
            instructions = None
        if capabilities.refuses(Feature.SPEECH_SPEED):
            speed = 1.0
        return _Speaking(
            voice=str(options.get(tts.ATTR_VOICE) or self.voice),
            speed=speed,
            instructions=str(instructions) if instructions else None,
        )

    async def _async_spoken(
        self, sentences: AsyncIterator[str], server_format: str, how: _Speaking
    ) -> AsyncGenerator[bytes]:
        """Yield the joined audio of the sentences, each asked on its own."""
        budget = self.budget()
        answers = (
            self._async_speak(
                SpeechRequest(
                    model=self.model,
                    voice=how.voice,
                    text=sentence,
                    audio_format=server_format,
                    speed=how.speed,
                    instructions=how.instructions,
                ),
                budget,
            )
            async for sentence in sentences
        )
        with self._server_errors():
            async for piece in async_capped(
                async_join(server_format, answers), MAX_SPEECH_BYTES
            ):
                yield piece

    async def _async_speak(
        self, request: SpeechRequest, budget: Budget
    ) -> AsyncIterator[bytes]:
        """Yield a text's audio, asking again without a field the model refuses."""
        try:
            async for piece in async_speak(self.runtime.transport, request, budget):
                yield piece
        except RequestRejectedError as err:
            if err.feature not in _WITHOUT:
                raise
            if err.general:
                self.runtime.capabilities.model(self.model).learn_refused(
                    err.feature, err.lesson_source
                )
            without = replace(request, **_WITHOUT[err.feature])
            async for piece in self._async_speak(without, budget):
                yield piece

    @override
    async def async_stream_tts_audio(
        self, request: tts.TTSAudioRequest
    ) -> tts.TTSAudioResponse:
        """Speak each sentence as soon as the text stream completes it."""
        server_format, extension = self._output(request.options, joined=True)
        how = self._speaking(request.options)
        return tts.TTSAudioResponse(
            extension,
            self._async_spoken(
                async_spoken_sentences(request.message_gen), server_format, how
            ),
        )

    @override
    async def async_get_tts_audio(
        self, message: str, language: str, options: dict[str, object]
    ) -> tts.TtsAudioType:
        """Speak a whole text, in one request where it fits."""
        pieces = text_pieces(spoken_text(message))
        server_format, extension = self._output(options, joined=len(pieces) > 1)
        how = self._speaking(options)
        audio = [
            piece
            async for piece in self._async_spoken(
                _async_items(pieces), server_format, how
            )
        ]
        return extension, b"".join(audio)


def _speed(value: object) -> float:
    """Return a speed as a number; 0 (out of range) when it is none."""
    if not isinstance(value, int | float | str):
        return 0.0
    try:
        return float(value)
    except ValueError:
        return 0.0
