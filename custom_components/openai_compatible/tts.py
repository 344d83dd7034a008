"""Text-to-speech entities, one per text-to-speech subentry."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Any, Final, override

from homeassistant.components import tts
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
    Feature,
)
from .entity import OpenAICompatibleSubentryEntity
from .errors import InputError
from .models.names import (
    known_voices,
    speech_languages,
    takes_instructions,
    voice_language,
)
from .net.readers import async_capped
from .net.shapes import SpeechBody
from .voice.audio import (
    JOINABLE_FORMATS,
    MAX_SPEECH_BYTES,
    MAX_SPEED,
    MIN_SPEED,
    async_fetch_voices,
    async_join,
    async_speak,
)
from .voice.speech_text import async_spoken_sentences, spoken_pieces

PARALLEL_UPDATES = 0

SERVER_FORMATS: Final = {"ogg": "opus", "oga": "opus", "raw": "pcm"} | {
    name: name for name in ("mp3", "wav", "flac", "opus", "aac", "pcm")
}


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


async def _async_items(items: Iterable[str]) -> AsyncIterator[str]:
    for item in items:
        yield item


class OpenAICompatibleTTSEntity(tts.TextToSpeechEntity, OpenAICompatibleSubentryEntity):
    """Text to speech through the server's speech route."""

    model_key = CONF_AUDIO_MODEL
    _attr_translation_key = "tts"
    # Text-to-speech refuses an entity without a name of its own.
    _attr_has_entity_name = False
    # The server's voice list, once it is added.
    _server_voices: list[str] | None = None
    _attr_supported_options = [
        tts.ATTR_VOICE,
        tts.ATTR_PREFERRED_FORMAT,
        CONF_SPEED,
        CONF_INSTRUCTIONS,
    ]

    @property
    @override
    def name(self) -> str:
        return self.subentry.title

    @property
    @override
    def supported_languages(self) -> list[str]:
        return speech_languages(self.model)

    @property
    def _audio_format(self) -> str:
        return str(self.subentry.data.get(CONF_AUDIO_FORMAT, DEFAULT_AUDIO_FORMAT))

    @property
    def _voices(self) -> list[str]:
        return self._server_voices or known_voices(self.model)

    @property
    def voice(self) -> str:
        """Return the subentry's voice, else the first one known."""
        return str(self.subentry.data.get(CONF_VOICE) or self._voices[0])

    @property
    @override
    def default_language(self) -> str:
        """Return Home Assistant's language when the model speaks it."""
        languages, wanted = self.supported_languages, self.hass.config.language
        candidates = (wanted, wanted.split("-")[0], "en", "en-US")
        return next((code for code in candidates if code in languages), languages[0])

    @property
    @override
    def default_options(self) -> Mapping[str, Any]:
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

    def _speech(self, options: Mapping[str, object], audio_format: str) -> SpeechBody:
        """Return a body with no text yet: the subentry's settings, options over them."""
        data = self.subentry.data
        asked = options.get(CONF_SPEED, data.get(CONF_SPEED, 1.0))
        try:  # a speed that is no number is 0: out of range
            speed = float(asked) if isinstance(asked, int | float | str) else 0.0
        except ValueError, OverflowError:
            speed = 0.0
        if not MIN_SPEED <= speed <= MAX_SPEED:
            raise InputError(
                "speed_out_of_range",
                speed=str(options.get(CONF_SPEED)),
                minimum=str(MIN_SPEED),
                maximum=str(MAX_SPEED),
            )
        instructions = options.get(CONF_INSTRUCTIONS, data.get(CONF_INSTRUCTIONS))
        refuses = self.runtime.capabilities.model(self.model).refuses
        body: SpeechBody = {
            "model": self.model,
            "voice": str(options.get(tts.ATTR_VOICE) or self.voice),
            "input": "",
            "response_format": audio_format,
        }
        if speed != 1.0 and not refuses(Feature.SPEECH_SPEED):
            body["speed"] = speed
        if (
            instructions
            and takes_instructions(self.model)
            and not refuses(Feature.SPEECH_INSTRUCTIONS)
        ):
            body["instructions"] = str(instructions)
        return body

    async def _async_spoken(
        self, sentences: AsyncIterator[str], speech: SpeechBody
    ) -> AsyncGenerator[bytes]:
        """Yield the joined audio of the sentences, each asked on its own."""
        transport, budget = self.runtime.transport, self.budget()
        capabilities = self.runtime.capabilities.model(self.model)
        answers = (
            async_speak(transport, capabilities, {**speech, "input": text}, budget)
            async for text in sentences
        )
        with self._server_errors():
            joined = async_join(speech["response_format"], answers)
            async for piece in async_capped(joined, MAX_SPEECH_BYTES):
                yield piece

    @override
    async def async_stream_tts_audio(
        self, request: tts.TTSAudioRequest
    ) -> tts.TTSAudioResponse:
        """Speak each sentence as soon as the text stream completes it."""
        server_format, extension = self._output(request.options, joined=True)
        speech = self._speech(request.options, server_format)
        sentences = async_spoken_sentences(request.message_gen)
        return tts.TTSAudioResponse(extension, self._async_spoken(sentences, speech))

    @override
    async def async_get_tts_audio(
        self, message: str, language: str, options: dict[str, object]
    ) -> tts.TtsAudioType:
        """Speak a whole text, in one request where it fits."""
        pieces = spoken_pieces(message)
        server_format, extension = self._output(options, joined=len(pieces) > 1)
        speech = self._speech(options, server_format)
        spoken = self._async_spoken(_async_items(pieces), speech)
        return extension, b"".join([piece async for piece in spoken])
