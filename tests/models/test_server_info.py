"""What servers report about their models, read at setup through their routes."""

from __future__ import annotations

from datetime import date
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.models.capabilities import ModelCapabilities
from custom_components.openai_compatible.models.listing import ModelListing
from custom_components.openai_compatible.models.server_info import (
    OLLAMA_DEFAULT_CONTEXT,
    ServerKind,
    async_guess_kind,
    listed_kind,
    listed_shutdown,
)
from custom_components.openai_compatible.net.readers import MAX_TOKENS, MIN_WINDOW
from custom_components.openai_compatible.net.transport import Transport
from simulator import OpenAISimulator
from simulator.native import TRAINED_CONTEXT, VERSIONS
from tests.conftest import SetupEntry, converse, speech

MODEL = "gpt-4o-mini"


def model_of(entry: MockConfigEntry, model: str = MODEL) -> ModelCapabilities:
    """Return what the loaded entry knows about a model."""
    capabilities: ModelCapabilities = entry.runtime_data.capabilities.model(model)
    return capabilities


@pytest.mark.parametrize(
    ("provider", "native", "kind"),
    [
        ("llama_cpp", "llama_cpp", ServerKind.LLAMA_CPP),
        ("custom", "llama_cpp", ServerKind.LLAMA_CPP),
        ("ollama", "ollama", ServerKind.OLLAMA),
        ("vllm", "vllm", ServerKind.VLLM),
        ("custom", "vllm", ServerKind.VLLM),
        ("lm_studio", "lm_studio", ServerKind.LM_STUDIO),
        ("custom", "lm_studio", ServerKind.LM_STUDIO),
    ],
)
async def test_context_window_from_the_native_route(
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    native: Any,
    kind: ServerKind,
) -> None:
    """Each local server tells the context in use, found by preset or by its list."""
    simulator.settings.native = native
    simulator.settings.context_window = 8192

    entry = await setup_entry(provider=provider)

    report = entry.runtime_data.capabilities.report
    assert report.kind is kind
    assert report.version == (
        None if kind is ServerKind.LM_STUDIO else VERSIONS[native]
    )
    assert model_of(entry).context_window == 8192


async def test_ollama_default_context_and_capabilities(
    simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Without num_ctx, Ollama's default window; tools from its capabilities."""
    simulator.settings.native = "ollama"

    entry = await setup_entry(provider="ollama")

    model = model_of(entry)
    assert model.context_window == OLLAMA_DEFAULT_CONTEXT < TRAINED_CONTEXT
    assert model.report.tools is True
    assert model.report.vision is False
    assert model.refuses(Feature.IMAGE_INPUT)
    shown = [r for r in simulator.requests if r.path == "/api/show"]
    assert [request.json for request in shown] == [{"model": MODEL}]


@pytest.mark.parametrize(
    ("parameters", "window"),
    [
        ("  num_ctx   2048\nstop x", 2048),
        ("stop x\n\tnum_ctx 8192", 8192),
        ("\n" * 100_000 + "num_ctx", OLLAMA_DEFAULT_CONTEXT),
        ("num_ctx\n2048", OLLAMA_DEFAULT_CONTEXT),
        (f"num_ctx {'9' * 5000}", OLLAMA_DEFAULT_CONTEXT),
    ],
    ids=["indented", "later_line", "blank_lines", "split_line", "endless_figure"],
)
async def test_ollama_num_ctx_is_read_from_one_line(
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    parameters: str,
    window: int,
) -> None:
    """num_ctx and its figure share a line; a figure of thousands of digits is none."""
    simulator.settings.native = "ollama"
    simulator.enqueue("/api/show", json={"parameters": parameters})

    entry = await setup_entry(provider="ollama")

    assert model_of(entry).context_window == window


def _listing(*entries: dict[str, Any]) -> ModelListing:
    """Return a models list of the given entries."""
    by_id = {str(entry["id"]): entry for entry in entries}
    return ModelListing(sorted(by_id), by_id)


@pytest.mark.parametrize(
    ("entry", "kind", "ollama_like"),
    [
        ({"id": "m", "owned_by": "llamacpp"}, ServerKind.LLAMA_CPP, False),
        ({"id": "m", "owned_by": "vllm"}, ServerKind.VLLM, False),
        ({"id": "m", "max_model_len": 4096}, ServerKind.VLLM, False),
        ({"id": "m", "owned_by": "organization_owner"}, ServerKind.LM_STUDIO, False),
        ({"id": "llama3.2:3b", "owned_by": "library"}, None, True),
        ({"id": "llama3.2:3b", "owned_by": "someone"}, None, True),
        ({"id": "qwen3", "owned_by": "Library"}, None, True),
        ({"id": "gpt-4o-mini", "owned_by": "openai"}, None, False),
        ({"id": "gpt-4o-mini"}, None, False),
    ],
)
def test_guess_from_the_models_list(
    entry: dict[str, Any], kind: ServerKind | None, ollama_like: bool
) -> None:
    """The list names llama.cpp, vLLM and LM Studio; Ollama it only hints at."""
    assert listed_kind(_listing(entry)) == (kind, ollama_like)


@pytest.mark.parametrize(
    ("native", "models", "kind", "asked"),
    [
        ("ollama", ["llama3.2:3b"], ServerKind.OLLAMA, True),
        (None, ["llama3.2:3b"], None, True),
        ("vllm", ["llama3.2:3b"], ServerKind.VLLM, False),
        ("ollama", ["gpt-4o-mini"], None, False),
    ],
)
async def test_ollama_is_recognised_by_its_version_route(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    native: Any,
    models: list[str],
    kind: ServerKind | None,
    asked: bool,
) -> None:
    """An Ollama-like list asks `/api/version`: an answer says Ollama, a 404 nothing.

    A list that tells its software, or does not look like Ollama's, asks nothing.
    """
    simulator.settings.native = native
    entries = {
        model: {"id": model, "owned_by": "vllm" if native == "vllm" else "x"}
        for model in models
    }
    transport = Transport(hass, simulator.base_url, None)

    guessed = await async_guess_kind(transport, ModelListing(models, entries))

    assert guessed is kind
    assert bool(simulator.requests) is asked


async def test_ollama_version_that_is_no_version_recognises_nothing(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """An `/api/version` answer without a version string is not Ollama's."""
    simulator.enqueue("/api/version", json={"version": ""})
    transport = Transport(hass, simulator.base_url, None)

    listing = _listing({"id": "llama3.2:3b", "owned_by": "library"})

    assert await async_guess_kind(transport, listing) is None


async def test_hosted_listing(
    simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A hosted /models entry tells context length, modalities, parameters, shutdown."""
    simulator.enqueue(
        "/models",
        json={
            "data": [
                {
                    "id": MODEL,
                    "context_length": 128000,
                    "architecture": {"input_modalities": ["text"]},
                    "supported_parameters": ["temperature", "response_format"],
                    "expiration_date": "2027-01-14",
                },
                {
                    "id": "mistral-small",
                    "max_context_length": 32768,
                    "capabilities": {"vision": True, "function_calling": True},
                    "expiration_date": None,
                },
            ]
        },
    )

    entry = await setup_entry(provider="openrouter")

    model = model_of(entry)
    assert (model.context_window, model.report.vision, model.report.tools) == (
        128000,
        False,
        False,
    )
    assert model.refuses(Feature.TOOLS)
    assert model.report.shutdown == date(2027, 1, 14)
    mistral = model_of(entry, "mistral-small")
    assert (mistral.context_window, mistral.report.vision) == (32768, True)
    assert mistral.report.shutdown is None
    assert not mistral.refuses(Feature.TOOLS)


@pytest.mark.parametrize(
    ("listed", "window", "said"),
    [
        (10**400, MAX_TOKENS, "You said: Hello"),
        (1, MIN_WINDOW, "The prompt for your exposed entities and tools needs"),
        (0, None, "You said: Hello"),
    ],
    ids=["400_digits", "one_token", "none"],
)
async def test_a_listed_window_is_read_within_bounds(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    listed: int,
    window: int | None,
    said: str,
) -> None:
    """A context length of 400 digits, or of one token, is not taken as it came."""
    simulator.enqueue(
        "/models", json={"data": [{"id": MODEL, "context_length": listed}]}
    )
    entry = await setup_entry(conversation={CONF_LLM_HASS_API: []})

    result = await converse(hass, "Hello")

    assert model_of(entry).context_window == window
    assert speech(result).startswith(said)


@pytest.mark.parametrize("tools", [True, False])
async def test_llama_cpp_template_without_tools(
    simulator: OpenAISimulator, setup_entry: SetupEntry, tools: bool
) -> None:
    """llama.cpp's template capabilities tell whether its model takes tools.

    A template without a tool format (ChatML's, Gemma's) drops the tools of a
    request without a word: the agent says so before it sends anything.
    """
    simulator.settings.native = "llama_cpp"
    simulator.settings.supports_tools = tools

    entry = await setup_entry(provider="llama_cpp")

    assert model_of(entry).report.tools is tools
    assert model_of(entry).refuses(Feature.TOOLS) is not tools


@pytest.mark.parametrize(
    "answer",
    [
        {"status": 404},
        {"raw": "<html>no</html>"},
        {"json": ["not", "an", "object"]},
        {"status": 500, "json": {"error": {"message": "down"}}},
    ],
)
async def test_native_route_that_fails_is_unknown(
    simulator: OpenAISimulator, setup_entry: SetupEntry, answer: dict[str, Any]
) -> None:
    """A native route that does not answer usefully leaves the facts unknown."""
    simulator.settings.native = "llama_cpp"
    simulator.enqueue("/props", **answer)

    entry = await setup_entry(provider="llama_cpp")

    assert entry.runtime_data.capabilities.report.version is None
    assert model_of(entry).context_window is None


@pytest.mark.parametrize(
    ("entry", "vision", "tools"),
    [
        ({"type": "vlm", "capabilities": ["tool_use"]}, True, True),
        ({"type": "llm", "capabilities": []}, False, False),
        # What an entry does not say stays unknown, and changes nothing.
        ({}, None, None),
    ],
)
async def test_lm_studio_vision_and_tools(
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    entry: dict[str, Any],
    vision: bool | None,
    tools: bool | None,
) -> None:
    """LM Studio's model type and capabilities tell vision and tool use."""
    simulator.settings.native = "lm_studio"
    simulator.enqueue(
        "/api/v0/models", json={"data": [{"id": MODEL, "object": "model", **entry}]}
    )

    loaded = await setup_entry(provider="lm_studio")

    assert (model_of(loaded).report.vision, model_of(loaded).report.tools) == (
        vision,
        tools,
    )


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # OpenAI's List models entry.
        ({"id": "gpt-5", "shutdown_date": "2026-12-11"}, date(2026, 12, 11)),
        ({"id": "gpt-5.1", "shutdown_date": None}, None),
        # OpenRouter's Models API entry, also with a time of day.
        ({"id": "x/y", "expiration_date": "2026-11-08"}, date(2026, 11, 8)),
        ({"id": "x/y", "expiration_date": "2026-11-08T00:00:00Z"}, date(2026, 11, 8)),
        ({"id": "x/y", "expiration_date": None}, None),
        # Whatever else is no date.
        ({"id": "x", "shutdown_date": "soon"}, None),
        ({"id": "x", "shutdown_date": 1_790_000_000}, None),
        # A field that is no date leaves the next one to say.
        (
            {"id": "x", "shutdown_date": "bad", "expiration_date": "2027-01-14"},
            date(2027, 1, 14),
        ),
        ({"id": "x"}, None),
    ],
)
def test_listed_shutdown(entry: dict[str, Any], expected: date | None) -> None:
    """A `/models` entry's shutdown date is read where it is a date."""
    assert listed_shutdown(entry) == expected
