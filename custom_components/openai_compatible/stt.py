"""Speech-to-text entities: the recording posted whole to `/audio/transcriptions`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from typing import Final, override

from homeassistant.components import conversation, stt
from homeassistant.components.homeassistant.exposed_entities import async_should_expose
from homeassistant.const import CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

from . import OpenAICompatibleConfigEntry
from .const import CONF_AUDIO_MODEL, CONF_HINT_NAMES, LOGGER, SUBENTRY_STT, Feature
from .entity import OpenAICompatibleSubentryEntity
from .errors import InputError, TranslatedError
from .models.names import transcription_languages
from .net.readers import mebibytes
from .net.shapes import TranscriptionBody
from .voice.audio import MAX_RECORDING_BYTES, async_transcribe, pcm_wav

PARALLEL_UPDATES = 0

# Whisper reads the last 224 tokens of a prompt; names fit in about this much.
MAX_PROMPT_CHARACTERS: Final = 800


async def async_setup_entry(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add an entity for each speech-to-text subentry."""
    for subentry in entry.subentries.values():
        if subentry.subentry_type == SUBENTRY_STT:
            async_add_entities(
                [OpenAICompatibleSTTEntity(entry, subentry)],
                config_subentry_id=subentry.subentry_id,
            )


class OpenAICompatibleSTTEntity(stt.SpeechToTextEntity, OpenAICompatibleSubentryEntity):
    """Speech to text through the server's transcription route."""

    model_key = CONF_AUDIO_MODEL
    _attr_translation_key = "stt"

    # Servers decode WAV (PCM, of any width, rate and channels) and Ogg (Opus).
    supported_formats = [stt.AudioFormats.WAV, stt.AudioFormats.OGG]
    supported_codecs = [stt.AudioCodecs.PCM, stt.AudioCodecs.OPUS]
    supported_bit_rates = list(stt.AudioBitRates)
    supported_sample_rates = list(stt.AudioSampleRates)
    supported_channels = list(stt.AudioChannels)

    @property
    @override
    def supported_languages(self) -> list[str]:
        """Return the languages of the model (Whisper's for most)."""
        return transcription_languages(self.model)

    @override
    async def async_process_audio_stream_with_progress(
        self, metadata: stt.SpeechMetadata, stream: AsyncIterable[bytes]
    ) -> AsyncGenerator[stt.PartialSpeechResult | stt.SpeechResult]:
        """Yield what the server heard so far, then all; a failure ends in ERROR."""
        try:
            audio = bytearray()
            async for chunk in stream:
                audio += chunk
                if len(audio) > MAX_RECORDING_BYTES:
                    limit = mebibytes(MAX_RECORDING_BYTES)
                    raise InputError("recording_too_large", limit=limit)
            recording = ("speech.ogg", bytes(audio))
            if metadata.format is not stt.AudioFormats.OGG:  # raw samples get a header
                wav = pcm_wav(
                    bytes(audio),
                    metadata.sample_rate.value,
                    metadata.bit_rate.value // 8,
                    metadata.channel.value,
                )
                recording = ("speech.wav", wav)
            body: TranscriptionBody = {"model": self.model, "response_format": "json"}
            # Whisper wants ISO 639-1 (en), Home Assistant may say en-US.
            if language := metadata.language.split("-", maxsplit=1)[0].lower():
                body["language"] = language
            if prompt := self._prompt():
                body["prompt"] = prompt
            capabilities = self.runtime.capabilities.model(self.model)
            if not capabilities.refuses(Feature.TRANSCRIPT_STREAM):
                body["stream"] = True
            with self._server_errors():
                async for text, final in async_transcribe(
                    self.runtime.transport, capabilities, body, recording, self.budget()
                ):
                    if final:
                        yield stt.SpeechResult(text, stt.SpeechResultState.SUCCESS)
                    else:
                        yield stt.PartialSpeechResult(text)
        except TranslatedError as err:
            LOGGER.warning("Speech-to-text failed: %s", err)
            yield stt.SpeechResult(None, stt.SpeechResultState.ERROR)

    def _prompt(self) -> str | None:
        """Return the prompt: the subentry's text, then the home's names."""
        parts: list[str] = []
        if text := str(self.subentry.data.get(CONF_PROMPT) or "").strip():
            parts.append(text)
        if self.subentry.data.get(CONF_HINT_NAMES):
            hass, names = self.hass, ""
            exposed = sorted(
                state.name
                for state in hass.states.async_all()
                if async_should_expose(hass, conversation.DOMAIN, state.entity_id)
            )
            areas = [area.name for area in ar.async_get(hass).async_list_areas()]
            for name in dict.fromkeys([*areas, *exposed]):
                if len(names) + len(name) + 2 > MAX_PROMPT_CHARACTERS:
                    break
                names = f"{names}, {name}" if names else name
            if names:
                parts.append(f"{names}.")
        return " ".join(parts) or None
