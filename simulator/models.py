"""The models the simulator lists, and what their names say of them."""

from __future__ import annotations

from typing import Any

from .native import TRAINED_CONTEXT, NativeServer

DEFAULT_MODELS = (
    "gpt-4o-mini",
    "gpt-5-mini",
    "gpt-image-1",
    "text-embedding-3-small",
    "llama3.2:3b",
)


def is_reasoning_model(model: str) -> bool:
    """Tell whether the model id names one of OpenAI's reasoning models."""
    return model.lower().rsplit("/", 1)[-1].startswith(("o1", "o3", "o4", "gpt-5"))


def is_gpt5(model: str) -> bool:
    """Tell whether the model is of the GPT-5 family, which takes a verbosity."""
    name = model.lower().rsplit("/", 1)[-1]
    return name.startswith("gpt-5") and not name.startswith("gpt-5-chat")


def model_entry(
    model: str, server: NativeServer | None = None, window_size: int | None = None
) -> dict[str, Any]:
    """Return one entry of the model list, as the server named lists it."""
    entry: dict[str, Any] = {
        "id": model,
        "object": "model",
        "created": 1_700_000_000,
        "owned_by": "library" if ":" in model else "openai",
    }
    if server == "llama_cpp":
        entry["owned_by"] = "llamacpp"
    elif server == "ollama":
        entry["owned_by"] = "library"
    elif server == "lm_studio":
        entry["owned_by"] = "organization_owner"
    elif server == "vllm":
        entry["owned_by"] = "vllm"
        entry["max_model_len"] = window_size or TRAINED_CONTEXT
    elif window_size is not None:
        # As OpenRouter and other hosted services report it.
        entry["context_length"] = window_size
    return entry


def model_list(
    models: list[str],
    server: NativeServer | None,
    window_size: int | None,
    shutdown_dates: dict[str, str],
) -> dict[str, Any]:
    """Return GET /v1/models: each model's entry, with its shutdown date if set."""
    return {
        "object": "list",
        "data": [
            model_entry(model, server, window_size)
            | (
                {"shutdown_date": shutdown_dates[model]}
                if model in shutdown_dates
                else {}
            )
            for model in models
        ],
    }
