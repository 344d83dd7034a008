"""What a server offers: its model listing, the probe that proves the protocol, lookups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from fnmatch import translate
from itertools import islice
import json
import re
from typing import Any, Final

from homeassistant.const import CONF_API_KEY
from homeassistant.core import HomeAssistant

from ..const import CONF_BASE_URL, VALIDATION_TIMEOUT_SECONDS
from ..errors import (
    AuthError,
    ConnectError,
    NotCompatibleError,
    RequestRejectedError,
    ServerError,
)
from ..net.transport import Answer, Budget, Transport
from ..server_errors.answers import error_for_status, error_text
from ..server_errors.routes import names_unknown_model

# Answers to the probe that mean "no such route here", not "the server failed".
MISSING_ENDPOINT_STATUSES = frozenset({400, 404, 405, 415, 422, 501})
VALIDATION_BUDGET: Final = Budget(VALIDATION_TIMEOUT_SECONDS)
# OpenRouter lists hundreds of models, each with a long description.
MAX_LISTING_BYTES: Final = 8 * 1024 * 1024
# No server lists more; every model read costs memory and the loop's time.
MAX_LISTED_MODELS: Final = 10_000
PROBE_MODEL = "probe"
_DATA_START: Final = re.compile(rb'"data"\s*:\s*\[')
_BETWEEN: Final = re.compile(r"\s*,?\s*")


@dataclass(frozen=True, slots=True)
class ModelListing:
    """The models a server lists, as they came; `cut`: those before a cap."""

    ids: list[str]
    entries: dict[str, dict[str, Any]]
    cut: bool = False


def read_listing(raw: bytes, cut: bool = False) -> ModelListing | None:
    """Return the models of a models page, or None; executor.

    One entry at a time, at most MAX_LISTED_MODELS: one parse of a large page
    would hold the interpreter's lock, so the event loop, for its whole length.
    """
    if (start := _DATA_START.search(raw)) is None:
        return None
    text = raw[start.end() :].decode("utf-8", "ignore")
    decoder = json.JSONDecoder()
    entries: dict[str, dict[str, Any]] = {}
    index = 0
    while (index := _after_separator(text, index)) < len(text):
        try:
            entry, index = decoder.raw_decode(text, index)
        except ValueError, RecursionError:
            break
        if len(entries) == MAX_LISTED_MODELS:
            cut = True
            break
        if isinstance(entry, dict) and isinstance(model_id := entry.get("id"), str):
            entries[model_id] = entry
    entries.pop("", None)
    return ModelListing(sorted(entries), entries, cut)


def _after_separator(text: str, index: int) -> int:
    match = _BETWEEN.match(text, index)
    return match.end() if match else index


async def async_fetch_models(transport: Transport) -> ModelListing | None:
    """Return the listed models; None when the server or key has no models route."""
    try:
        async with transport.async_open(
            "GET", "/models", budget=VALIDATION_BUDGET
        ) as opened:
            raw = await opened.aread_head(MAX_LISTING_BYTES + 1)
    except RequestRejectedError:
        return None
    except ServerError as err:
        if err.translation_key == "permission_denied":
            return None
        raise
    # A 200 that is no models page (HTML, a JSON list): the probe decides.
    return await transport.hass.async_add_executor_job(
        read_listing, raw[:MAX_LISTING_BYTES], len(raw) > MAX_LISTING_BYTES
    )


def _proves_protocol(answer: Answer) -> bool:
    """Tell whether an error proves the protocol: JSON 400/422, or 404 of the model."""
    body = answer.json()
    if not isinstance(body, dict) or not body:
        return False
    if answer.status in (400, 422):
        return True
    return answer.status == 404 and names_unknown_model(error_text(answer.body), body)


async def async_validate_server(
    hass: HomeAssistant, data: Mapping[str, Any], probe_model: str | None
) -> ModelListing:
    """Connect with the settings; return the listing (empty if only the probe passed)."""
    transport = Transport(hass, data[CONF_BASE_URL], data.get(CONF_API_KEY))
    try:
        listing = await async_fetch_models(transport)
    except AuthError, ConnectError:
        raise
    except ServerError:
        listing = None
    if listing is not None:
        return listing
    # The probe: does a chat request without messages find the protocol, take the key?
    answer = await transport.async_exchange(
        "POST",
        "/chat/completions",
        budget=VALIDATION_BUDGET,
        body={"model": probe_model or PROBE_MODEL, "messages": []},
    )
    if answer.status in (401, 403):
        raise AuthError("invalid_auth")
    answered = answer.status < 400 and isinstance(answer.json(), dict)
    if answered or _proves_protocol(answer):
        return ModelListing([], {})
    if answer.status < 400 or answer.status in MISSING_ENDPOINT_STATUSES:
        raise NotCompatibleError("not_compatible")
    raise error_for_status(answer.status, answer.headers, answer.body)


# OpenRouter's routing variants, taken on any model without being listed.
ROUTING_VARIANTS: Final = (":nitro", ":floor", ":exacto", ":online")
# Gemini lists "models/<name>" and takes the bare name.
GEMINI_PREFIX: Final = "models/"
OLLAMA_DEFAULT_TAG: Final = ":latest"
# LiteLLM's wildcard routes are a few; each is matched against each model.
MAX_PATTERNS: Final = 64


@dataclass(frozen=True, slots=True)
class ListedModels:
    """A model list as models are looked up in it: names, and its patterns."""

    names: frozenset[str] = frozenset()
    patterns: re.Pattern[str] | None = None


def listed_models(models: list[str]) -> ListedModels:
    """Return a model list to look up in, its `*` patterns (LiteLLM's) too; executor."""
    patterns = islice((model for model in models if "*" in model), MAX_PATTERNS)
    joined = "|".join(map(translate, patterns))
    return ListedModels(frozenset(models), re.compile(joined) if joined else None)


def lasting_models(models: list[str], shutdowns: Mapping[str, date]) -> list[str]:
    """Return the models with no announced shutdown, or all where none lasts."""
    return [model for model in models if model not in shutdowns] or models


def is_listed(model: str, listed: ListedModels) -> bool:
    """Tell whether a model list holds the model, by a name it may be listed under."""
    names = {model, f"{GEMINI_PREFIX}{model}", model.removeprefix(GEMINI_PREFIX)}
    if ":" not in model:
        names.add(f"{model}{OLLAMA_DEFAULT_TAG}")
    names.update(
        model.removesuffix(variant)
        for variant in ROUTING_VARIANTS
        if model.endswith(variant)
    )
    if not listed.names.isdisjoint(names):
        return True
    return listed.patterns is not None and bool(listed.patterns.match(model))
