"""The simulator's native info routes of local servers."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from simulator import OpenAISimulator
from simulator.native import TRAINED_CONTEXT, VERSIONS


async def _get(sim: OpenAISimulator, path: str, body: Any = None) -> httpx2.Response:
    root = sim.base_url.removesuffix("/v1")
    async with httpx2.AsyncClient() as client:
        if body is None:
            return await client.get(f"{root}{path}")
        return await client.post(f"{root}{path}", json=body)


async def test_routes_answer_only_for_their_server(sim: OpenAISimulator) -> None:
    """Without a native server set, and for another server's route: 404."""
    assert (await _get(sim, "/props")).status_code == 404
    sim.settings.native = "ollama"
    assert (await _get(sim, "/props")).status_code == 404
    assert (await _get(sim, "/api/version")).json() == {"version": VERSIONS["ollama"]}


async def test_llama_cpp(sim: OpenAISimulator) -> None:
    """/props tells the slots' context; /v1/models names llama.cpp as owner."""
    sim.settings.native = "llama_cpp"
    sim.settings.context_window = 8192
    props = (await _get(sim, "/props")).json()
    assert props["default_generation_settings"]["n_ctx"] == 8192
    assert props["build_info"] == VERSIONS["llama_cpp"]
    models = (await _get(sim, "/v1/models")).json()["data"]
    assert {model["owned_by"] for model in models} == {"llamacpp"}


async def test_ollama_show(sim: OpenAISimulator) -> None:
    """/api/show gives num_ctx when set, the trained context and capabilities."""
    sim.settings.native = "ollama"
    shown = (await _get(sim, "/api/show", {"model": "llama3.2:3b"})).json()
    assert "num_ctx" not in shown["parameters"]
    assert shown["model_info"]["llama.context_length"] == TRAINED_CONTEXT
    sim.settings.context_window = 2048
    shown = (await _get(sim, "/api/show", {"model": "llama3.2:3b"})).json()
    assert shown["parameters"].startswith("num_ctx 2048")
    missing = await _get(sim, "/api/show", {"model": "nope"})
    assert missing.status_code == 404
    assert (await _get(sim, "/api/ps")).json() == {"models": []}


@pytest.mark.parametrize(
    ("window", "expected"), [(None, TRAINED_CONTEXT), (4096, 4096)]
)
async def test_vllm(sim: OpenAISimulator, window: int | None, expected: int) -> None:
    """VLLM lists max_model_len with every model, and its version."""
    sim.settings.native = "vllm"
    sim.settings.context_window = window
    models = (await _get(sim, "/v1/models")).json()["data"]
    assert {model["max_model_len"] for model in models} == {expected}
    assert (await _get(sim, "/version")).json() == {"version": VERSIONS["vllm"]}


async def test_lm_studio(sim: OpenAISimulator) -> None:
    """/api/v0/models lists each model with its loaded context."""
    sim.settings.native = "lm_studio"
    sim.settings.context_window = 16384
    listed = (await _get(sim, "/api/v0/models")).json()["data"]
    assert {item["loaded_context_length"] for item in listed} == {16384}
    assert {item["id"] for item in listed} == set(sim.models)
