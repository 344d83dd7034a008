"""Titles of entries and subentries: what pickers and device lists show."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from yarl import URL

from .capabilities import PROVIDER_CUSTOM, PROVIDERS, provider_for
from .const import (
    CONF_AUDIO_MODEL,
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONVERSATION_NAME,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)

SEPARATOR: Final = " · "
# What a subentry title adds after server and model, by subentry type, so
# that agents and tasks of one model can be told apart; an agent adds nothing.
KIND_SUFFIXES: Final[dict[str, str]] = {
    SUBENTRY_AI_TASK: "AI task",
    SUBENTRY_STT: "Speech-to-text",
    SUBENTRY_TTS: "Text-to-speech",
}
# The fixed titles that subentries got before titles named server and model.
LEGACY_TITLES: Final[dict[str, str]] = {
    SUBENTRY_CONVERSATION: DEFAULT_CONVERSATION_NAME,
    SUBENTRY_AI_TASK: DEFAULT_AI_TASK_NAME,
}


def entry_title(provider_key: str, base_url: str) -> str:
    """Return the title of an entry: the provider, plus the host when useful.

    Hosted services are named alone; self-hosted and custom servers, and
    hosted ones at another address than the preset's, also show their host.
    """
    preset = provider_for(provider_key)
    url = URL(base_url)
    preset_host = URL(preset.base_url).host if preset.base_url else None
    if (
        provider_key != PROVIDER_CUSTOM
        and not preset.local
        and preset_host not in (None, "localhost")
        and url.host == preset_host
    ):
        return preset.name
    return f"{preset.name} ({url.host_port_subcomponent or ''})"


def server_label(entry_data: Mapping[str, Any]) -> str:
    """Return a short name of the server: its preset, or a custom server's host."""
    key = entry_data.get(CONF_PROVIDER)
    if key != PROVIDER_CUSTOM and key in PROVIDERS:
        return PROVIDERS[key].name
    return str(URL(entry_data[CONF_BASE_URL]).host)


def subentry_title(
    subentry_type: str, entry_data: Mapping[str, Any], subentry_data: Mapping[str, Any]
) -> str:
    """Return the title a subentry gets unless the user names it.

    "Ollama · llama3.1:8b" for an agent, "Ollama · llama3.1:8b · AI task" for
    a task, "OpenAI · whisper-1 · Speech-to-text" for speech-to-text.
    """
    parts = [server_label(entry_data)]
    if model := subentry_data.get(CONF_CHAT_MODEL) or subentry_data.get(
        CONF_AUDIO_MODEL
    ):
        parts.append(str(model))
    if suffix := KIND_SUFFIXES.get(subentry_type):
        parts.append(suffix)
    return SEPARATOR.join(parts)


def is_generated_title(
    title: str,
    subentry_type: str,
    entry_data: Mapping[str, Any],
    subentry_data: Mapping[str, Any],
) -> bool:
    """Tell whether a subentry still has a title the integration gave it."""
    return title in (
        subentry_title(subentry_type, entry_data, subentry_data),
        LEGACY_TITLES.get(subentry_type),
    )


def followed_title(
    title: str,
    subentry_type: str,
    entry_data: Mapping[str, Any],
    old_data: Mapping[str, Any],
    new_data: Mapping[str, Any],
) -> str:
    """Return a subentry's title after its settings change: a given name stays."""
    if is_generated_title(title, subentry_type, entry_data, old_data):
        return subentry_title(subentry_type, entry_data, new_data)
    return title
