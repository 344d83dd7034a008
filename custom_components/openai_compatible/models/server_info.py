"""What a server reports of itself and its models, from `/models` and native routes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
import re
from typing import Any, Final

from ..const import LOGGER
from ..errors import ServerError
from ..net.readers import read_window
from ..net.shapes import JsonObject
from ..net.transport import Budget, Transport
from .listing import VALIDATION_BUDGET, ModelListing


class ServerKind(StrEnum):
    """Server software whose native info route we know."""

    LLAMA_CPP = "llama_cpp"
    OLLAMA = "ollama"
    VLLM = "vllm"
    LM_STUDIO = "lm_studio"


@dataclass(frozen=True, slots=True)
class ModelReport:
    """What the server says about one model; None where it says nothing."""

    context_window: int | None = None
    vision: bool | None = None
    tools: bool | None = None
    shutdown: date | None = None


@dataclass(frozen=True, slots=True)
class ServerReport:
    """What the server says about itself and its models."""

    kind: ServerKind | None = None
    version: str | None = None
    models: dict[str, ModelReport] = field(default_factory=dict)


# Native routes are a bonus: asked briefly, read up to a small size.
NATIVE_BUDGET: Final = Budget(5.0)
MAX_NATIVE_BYTES: Final = 1024 * 1024
OLLAMA_DEFAULT_CONTEXT: Final = 4096
_CONTEXT_KEYS: Final = (
    "loaded_context_length",
    "max_model_len",
    "context_length",
    "context_window",
    "max_context_length",
)
# Within one line, in linear time; a figure of ten digits or more is none.
_NUM_CTX: Final = re.compile(r"^[ \t]*num_ctx[ \t]+(\d{1,9})(?!\d)", re.MULTILINE)
_OWNERS: Final = {
    "llamacpp": ServerKind.LLAMA_CPP,
    "vllm": ServerKind.VLLM,
    "organization_owner": ServerKind.LM_STUDIO,
}


def listed_kind(listing: ModelListing | None) -> tuple[ServerKind | None, bool]:
    """Return the software a models list names; whether it looks like Ollama's."""
    entries = listing.entries if listing else {}
    kinds = (
        _OWNERS.get(str(entry.get("owned_by", "")).lower())
        or (ServerKind.VLLM if "max_model_len" in entry else None)
        for entry in entries.values()
    )
    ollama_like = any(
        ":" in model_id or str(entry.get("owned_by", "")).lower() == "library"
        for model_id, entry in entries.items()
    )
    return next(filter(None, kinds), None), ollama_like


async def async_guess_kind(
    transport: Transport, listing: ModelListing | None
) -> ServerKind | None:
    """Return the software the models list, or else Ollama's `/api/version`, tells."""
    kind, ollama_like = await transport.hass.async_add_executor_job(
        listed_kind, listing
    )
    if kind is not None or not ollama_like:
        return kind
    answer = await _async_native(
        transport, "GET", "//api/version", budget=VALIDATION_BUDGET
    )
    return ServerKind.OLLAMA if _text(answer, "version") else None


def listed_reports(
    listing: ModelListing | None,
) -> tuple[ServerKind | None, dict[str, ModelReport]]:
    """Return the software a models list gives away, and each model's report."""
    entries = listing.entries if listing else {}
    reports = {model_id: listed_report(entry) for model_id, entry in entries.items()}
    return listed_kind(listing)[0], reports


def listed_report(entry: Mapping[str, Any]) -> ModelReport:
    """Return what a `/models` entry says about its model."""
    if entry.keys() <= _PLAIN_KEYS:
        return _NOTHING_SAID
    architecture = entry.get("architecture")
    modalities = (
        architecture.get("input_modalities") if isinstance(architecture, dict) else None
    )
    capabilities = entry.get("capabilities")
    vision = _listed(modalities, "image")
    tools = _listed(entry.get("supported_parameters"), "tools")
    return ModelReport(
        context_window=_context(entry),
        vision=_flag(capabilities, "vision") if vision is None else vision,
        tools=_flag(capabilities, "function_calling") if tools is None else tools,
        shutdown=listed_shutdown(entry),
    )


# OpenAI's `shutdown_date` and OpenRouter's `expiration_date`: YYYY-MM-DD or null.
SHUTDOWN_FIELDS: Final = ("shutdown_date", "expiration_date")
# An entry of only these says nothing of its model (most servers' entries).
_PLAIN_KEYS: Final = frozenset({"id", "object", "created", "owned_by"})
_NOTHING_SAID: Final = ModelReport()


def listed_shutdown(entry: Mapping[str, Any]) -> date | None:
    """Return the shutdown date a `/models` entry gives its model, if any."""
    for value in map(entry.get, SHUTDOWN_FIELDS):
        if isinstance(value, str):
            with suppress(ValueError):
                return date.fromisoformat(value[:10])
    return None


def _context(entry: Mapping[str, Any]) -> int | None:
    """Return the first context length an entry names, as a window is believed."""
    windows = (read_window(entry.get(key)) for key in _CONTEXT_KEYS)
    return next((window for window in windows if window is not None), None)


def _flag(capabilities: Any, name: str) -> bool | None:
    if isinstance(capabilities, dict) and isinstance(capabilities.get(name), bool):
        return bool(capabilities[name])
    return None


def _listed(names: Any, name: str) -> bool | None:
    return name in names if isinstance(names, list) else None


async def async_server_report(
    transport: Transport,
    kind: ServerKind | None,
    listing: ModelListing | None,
    models_in_use: Iterable[str],
) -> ServerReport:
    """Return what the server reports, asking its native routes where it has them."""
    guessed, models = await transport.hass.async_add_executor_job(
        listed_reports, listing
    )
    kind = kind or guessed
    version: str | None = None
    if kind is ServerKind.LLAMA_CPP:
        version = await _async_llama_cpp(transport, models)
    elif kind is ServerKind.OLLAMA:
        version = await _async_ollama(transport, models, sorted(set(models_in_use)))
    elif kind is ServerKind.VLLM:
        version = _text(await _async_native(transport, "GET", "//version"), "version")
    elif kind is ServerKind.LM_STUDIO:
        await _async_lm_studio(transport, models)
    return ServerReport(kind=kind, version=version, models=models)


async def _async_native(
    transport: Transport,
    method: str,
    path: str,
    body: JsonObject | None = None,
    *,
    budget: Budget = NATIVE_BUDGET,
) -> JsonObject | None:
    try:
        answer = await transport.async_exchange(
            method, path, budget=budget, body=body, limit=MAX_NATIVE_BYTES
        )
    except ServerError as err:
        LOGGER.debug("No answer from %s: %s", path, err)
        return None
    data = answer.json() if answer.status == 200 else None
    return data if isinstance(data, dict) else None


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _text(data: JsonObject | None, key: str) -> str | None:
    value = data.get(key) if data else None
    return value if isinstance(value, str) and value else None


async def _async_llama_cpp(
    transport: Transport, models: dict[str, ModelReport]
) -> str | None:
    """Read llama.cpp's /props: slot context, vision, template tool support, build."""
    props = await _async_native(transport, "GET", "//props")
    if props is None:
        return None
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    window = read_window(n_ctx) or read_window(props.get("n_ctx"))
    vision = _flag(props.get("modalities"), "vision")
    tools = _flag(props.get("chat_template_caps"), "supports_tools")
    for name, report in models.items():
        models[name] = ModelReport(window or report.context_window, vision, tools)
    build = props.get("build_info")
    return str(build) if isinstance(build, (str, int)) and build else None


async def _async_ollama(
    transport: Transport, models: dict[str, ModelReport], in_use: list[str]
) -> str | None:
    """Read Ollama's version, and per model in use its window and capabilities."""
    version = _text(await _async_native(transport, "GET", "//api/version"), "version")
    running = await _async_native(transport, "GET", "//api/ps")
    loaded = {
        str(item.get("name")): _context(item)
        for item in _list((running or {}).get("models"))
        if isinstance(item, dict)
    }
    for model in in_use:
        shown = await _async_native(transport, "POST", "//api/show", {"model": model})
        if shown is None:
            continue
        capabilities = shown.get("capabilities")
        models[model] = ModelReport(
            context_window=loaded.get(model) or _ollama_context(shown),
            vision=_listed(capabilities, "vision"),
            tools=_listed(capabilities, "tools"),
        )
    return version


def _ollama_context(shown: JsonObject) -> int | None:
    """Return Ollama's context for a model: num_ctx or default, within its training."""
    parameters = shown.get("parameters")
    match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    window = int(match[1]) if match else OLLAMA_DEFAULT_CONTEXT
    info = shown.get("model_info")
    trained = [
        value
        for key, value in (info.items() if isinstance(info, dict) else ())
        if key.endswith(".context_length") and isinstance(value, int) and value > 0
    ]
    return read_window(min([window, *trained]))


async def _async_lm_studio(
    transport: Transport, models: dict[str, ModelReport]
) -> None:
    listed = await _async_native(transport, "GET", "//api/v0/models")
    for item in _list((listed or {}).get("data")):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        models[item["id"]] = ModelReport(
            context_window=_context(item),
            vision=None if "type" not in item else item["type"] == "vlm",
            tools=_listed(item.get("capabilities"), "tool_use"),
        )
