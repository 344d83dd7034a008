"""The presets, and the Responses API options a subentry asks for.

Presets: where each known server lives, what is known of it up front, which
answer. Options: reasoning, verbosity, the tier, the provider-run tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import partial
from types import MappingProxyType
from typing import Any, Final

from homeassistant.core import HomeAssistant

from ..const import PROVIDER_TOOLS, Feature
from ..errors import ServerError
from ..net.shapes import JsonObject
from ..net.transport import Transport
from .listing import async_fetch_models
from .server_info import ServerKind

PROVIDER_CUSTOM: Final = "custom"
# Placeholder left in a preset's URL for the user to replace (Azure).
URL_PLACEHOLDER: Final = "your-resource"
DISCOVERY_SECONDS: Final = 1.5

# From https://developers.openai.com/api/docs/deprecations (2026-12-01); it also
# dates models `/models` no longer shows, whose `shutdown_date` is read first.
OPENAI_SHUTDOWNS: Final[Mapping[str, date]] = MappingProxyType(
    dict.fromkeys(
        ("chatgpt-image-latest", "gpt-image-1-mini", "gpt-image-1.5",
         "gpt-image-1.5-2025-12-16"),
        date(2026, 12, 1),
    )
    | dict.fromkeys(
        ("gpt-5", "gpt-5-2025-08-07", "gpt-5-mini", "gpt-5-mini-2025-08-07",
         "gpt-5-nano", "gpt-5-nano-2025-08-07"),
        date(2026, 12, 11),
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Provider:
    """A preset: where a server lives and what is known about it up front."""

    name: str
    base_url: str
    api_key_required: bool
    recommended_model: str | None = None
    local: bool = False
    refuses: frozenset[Feature] = frozenset({Feature.PROMPT_CACHE_KEY})
    # Mistral only accepts tool call ids of exactly nine letters or digits.
    short_tool_call_ids: bool = False
    # OpenAI's Decisions API may be there (OpenAI, Azure, or a proxy to them).
    decisions: bool = False
    kind: ServerKind | None = None
    # Evaluation questions asked at once per entry.
    concurrency: int = 4
    # The connect step's hint to listen on the network (the same in every language).
    listen_command: str | None = None
    # The automatic API setting takes the Responses API.
    responses: bool = False
    provider_tools: frozenset[Feature] = frozenset()
    service_tiers: bool = False
    shutdowns: Mapping[str, date] = field(default_factory=dict, compare=False)
    # Requests may name only models the server lists.
    lists_every_model: bool = True
    # A voice subentry's defaults where the server lists no evident audio model.
    transcription_model: str | None = None
    speech_model: str | None = None

    @property
    def asks_for_resource(self) -> bool:
        """Tell whether the preset's URL holds a placeholder for the user's own."""
        return URL_PLACEHOLDER in self.base_url.lower()


def _hosted(name: str, base_url: str, model: str) -> Provider:
    return Provider(name, base_url, api_key_required=True, recommended_model=model)


# Server software the user runs on a machine of theirs.
_local: Final = partial(Provider, api_key_required=False, local=True, concurrency=1)


PROVIDERS: Final[dict[str, Provider]] = {
    "openai": Provider(
        "OpenAI",
        "https://api.openai.com/v1",
        api_key_required=True,
        recommended_model="gpt-4o-mini",
        refuses=frozenset(),
        decisions=True,
        responses=True,
        provider_tools=frozenset(PROVIDER_TOOLS),
        service_tiers=True,
        shutdowns=OPENAI_SHUTDOWNS,
        transcription_model="gpt-4o-mini-transcribe",
        speech_model="gpt-4o-mini-tts",
    ),
    "azure": Provider(
        "Azure OpenAI",
        "https://YOUR-RESOURCE.openai.azure.com/openai/v1",
        api_key_required=True,
        decisions=True,
        responses=True,
        provider_tools=frozenset({Feature.CODE_INTERPRETER, Feature.IMAGE_GENERATION}),
        # Requests name a deployment, which the models list need not show.
        lists_every_model=False,
    ),
    "openrouter": _hosted(
        "OpenRouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini"
    ),
    "groq": _hosted(
        "Groq", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile"
    ),
    "mistral": Provider(
        "Mistral",
        "https://api.mistral.ai/v1",
        api_key_required=True,
        recommended_model="mistral-medium-latest",
        # Mistral reports usage in its last chunk unasked.
        refuses=frozenset({Feature.PROMPT_CACHE_KEY, Feature.STREAM_OPTIONS}),
        short_tool_call_ids=True,
    ),
    "deepseek": _hosted("DeepSeek", "https://api.deepseek.com/v1", "deepseek-chat"),
    "xai": _hosted("xAI", "https://api.x.ai/v1", "grok-4-fast"),
    "together": _hosted(
        "Together",
        "https://api.together.xyz/v1",
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    ),
    "gemini": _hosted(
        "Gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "gemini-2.5-flash",
    ),
    "ollama": _local(
        "Ollama",
        "http://localhost:11434/v1",
        listen_command="OLLAMA_HOST=0.0.0.0",
        kind=ServerKind.OLLAMA,
    ),
    "lm_studio": _local(
        "LM Studio",
        "http://localhost:1234/v1",
        listen_command="lms server start --bind 0.0.0.0",
        kind=ServerKind.LM_STUDIO,
    ),
    "vllm": _local(
        "vLLM",
        "http://localhost:8000/v1",
        listen_command="vllm serve MODEL --host 0.0.0.0",
        kind=ServerKind.VLLM,
        concurrency=2,
    ),
    "llama_cpp": _local(
        "llama.cpp server",
        "http://localhost:8080/v1",
        listen_command="llama-server --host 0.0.0.0",
        kind=ServerKind.LLAMA_CPP,
    ),
    "localai": _local(
        "LocalAI",
        "http://localhost:8080/v1",
        listen_command="local-ai run --address 0.0.0.0:8080",
    ),
    "litellm": Provider(
        "LiteLLM proxy",
        "http://localhost:4000/v1",
        api_key_required=False,
        listen_command="litellm --host 0.0.0.0",
    ),
    # A custom server may be a proxy to OpenAI.
    PROVIDER_CUSTOM: Provider(
        "OpenAI-compatible server",
        "",
        api_key_required=False,
        decisions=True,
        concurrency=2,
        provider_tools=frozenset(PROVIDER_TOOLS),
        service_tiers=True,
    ),
}


def provider_for(key: str | None) -> Provider:
    """Return the preset of an entry; custom for a missing or unknown key."""
    return PROVIDERS.get(key or PROVIDER_CUSTOM, PROVIDERS[PROVIDER_CUSTOM])


def _presets_by_address() -> dict[str, list[str]]:
    """Return the local presets by default address (several share one)."""
    by_address: dict[str, list[str]] = {}
    for key, preset in PROVIDERS.items():
        if preset.local:
            by_address.setdefault(preset.base_url, []).append(key)
    return by_address


PRESETS_BY_ADDRESS: Final = _presets_by_address()


async def async_answering_presets(hass: HomeAssistant) -> list[str]:
    """Return the local presets whose server lists models at its default address."""
    found = await asyncio.gather(
        *(_async_found(hass, *by_address) for by_address in PRESETS_BY_ADDRESS.items())
    )
    return [key for keys in found for key in keys]


async def _async_found(hass: HomeAssistant, address: str, keys: list[str]) -> list[str]:
    try:
        async with asyncio.timeout(DISCOVERY_SECONDS):
            listing = await async_fetch_models(Transport(hass, address, None))
    except ServerError, TimeoutError:
        return []
    return [] if listing is None else keys


@dataclass(frozen=True, slots=True)
class ResponsesOptions:
    """What a subentry asks of the Responses API beyond the common settings."""

    reasoning_effort: str | None = None
    reasoning_summary: bool = False
    verbosity: str | None = None
    service_tier: str | None = None
    # The provider keeps the requests and answers (and shows them in its logs).
    store: bool = False
    provider_tools: tuple[JsonObject, ...] = ()
    remove_citations: bool = False


CONF_REASONING_EFFORT: Final = "reasoning_effort"
CONF_REASONING_SUMMARY: Final = "reasoning_summary"
CONF_VERBOSITY: Final = "verbosity"
CONF_SERVICE_TIER: Final = "service_tier"
CONF_STORE_RESPONSES: Final = "store_responses"
CONF_WEB_SEARCH: Final = "web_search"
CONF_WEB_SEARCH_CONTEXT_SIZE: Final = "web_search_context_size"
CONF_WEB_SEARCH_USER_LOCATION: Final = "web_search_user_location"
CONF_WEB_SEARCH_CITATIONS: Final = "web_search_citations"
CONF_CODE_INTERPRETER: Final = "code_interpreter"
CONF_IMAGE_GENERATION: Final = "image_generation"

REASONING_EFFORTS: Final = ("minimal", "low", "medium", "high")
VERBOSITIES: Final = ("low", "medium", "high")
SEARCH_CONTEXT_SIZES: Final = ("low", "medium", "high")
DEFAULT_SEARCH_CONTEXT_SIZE: Final = "medium"
# "auto", the project's own tier, is what a request without a tier gets.
DEFAULT_SERVICE_TIER: Final = "auto"
SENT_SERVICE_TIERS: Final = ("flex", "default", "priority")
# Summaries are asked for unless switched off; a refusal is learned.
DEFAULT_REASONING_SUMMARY: Final = True


def responses_options(
    hass: HomeAssistant, options: Mapping[str, Any]
) -> ResponsesOptions:
    """Return what a subentry's options ask of the Responses API."""
    tools: list[JsonObject] = []
    web_search = bool(options.get(CONF_WEB_SEARCH))
    if web_search:
        tool: JsonObject = {
            "type": "web_search",
            "search_context_size": _choice(
                options.get(CONF_WEB_SEARCH_CONTEXT_SIZE), SEARCH_CONTEXT_SIZES
            )
            or DEFAULT_SEARCH_CONTEXT_SIZE,
        }
        if options.get(CONF_WEB_SEARCH_USER_LOCATION):
            location: dict[str, str] = {"type": "approximate"}
            if hass.config.country:
                location["country"] = hass.config.country
            if hass.config.time_zone:
                location["timezone"] = hass.config.time_zone
            tool["user_location"] = location
        tools.append(tool)
    if options.get(CONF_CODE_INTERPRETER):
        tools.append({"type": "code_interpreter", "container": {"type": "auto"}})
    if options.get(CONF_IMAGE_GENERATION):
        tools.append({"type": "image_generation", "output_format": "png"})
    return ResponsesOptions(
        reasoning_effort=_choice(options.get(CONF_REASONING_EFFORT), REASONING_EFFORTS),
        reasoning_summary=bool(
            options.get(CONF_REASONING_SUMMARY, DEFAULT_REASONING_SUMMARY)
        ),
        verbosity=_choice(options.get(CONF_VERBOSITY), VERBOSITIES),
        service_tier=_choice(options.get(CONF_SERVICE_TIER), SENT_SERVICE_TIERS),
        store=bool(options.get(CONF_STORE_RESPONSES)),
        provider_tools=tuple(tools),
        remove_citations=web_search and not options.get(CONF_WEB_SEARCH_CITATIONS),
    )


def _choice(value: Any, choices: tuple[str, ...]) -> str | None:
    return value if value in choices else None
