"""Native info routes of local servers, as they answer them.

llama.cpp: `GET /props`; Ollama: `GET /api/version`, `GET /api/ps`,
`POST /api/show`; vLLM: `GET /version` and `max_model_len` in `/v1/models`;
LM Studio: `GET /api/v0/models`. The simulator serves those of the server its
`native` setting names, with its `context_window` as the context in use.
"""

from __future__ import annotations

from typing import Any, Final, Literal

type NativeServer = Literal["llama_cpp", "ollama", "vllm", "lm_studio"]

VERSIONS: Final[dict[NativeServer, str]] = {
    "llama_cpp": "b6543",
    "ollama": "0.12.3",
    "vllm": "0.11.0",
    "lm_studio": "0.3.30",
}
# The context the simulated models were trained for.
TRAINED_CONTEXT: Final = 131072
# What Ollama uses when neither the model nor the request sets a context.
OLLAMA_DEFAULT_CONTEXT: Final = 4096


def llama_cpp_props(
    window: int | None, models: list[str], *, tools: bool = True
) -> dict[str, Any]:
    """Return llama.cpp's /props: the slots' context, modalities, template, build.

    Without `tools` the chat template has no tool format (as ChatML's).
    """
    return {
        "default_generation_settings": {"n_ctx": window or TRAINED_CONTEXT},
        "total_slots": 1,
        "model_path": f"/models/{models[0] if models else 'model'}.gguf",
        "modalities": {"vision": False, "audio": False},
        "chat_template": "{{ messages }}",
        "chat_template_caps": {"supports_tools": tools, "supports_tool_calls": tools},
        "build_info": VERSIONS["llama_cpp"],
    }


def ollama_show(model: str, window: int | None, *, tools: bool) -> dict[str, Any]:
    """Return Ollama's /api/show for a model; `window` as its num_ctx.

    Without `tools` its capabilities say only completion, as for gemma.
    """
    parameters = 'stop "<|eot_id|>"'
    if window:
        parameters = f"num_ctx {window}\n{parameters}"
    return {
        "modelfile": f"FROM {model}",
        "parameters": parameters,
        "details": {"family": "llama", "parameter_size": "3.2B"},
        "model_info": {
            "general.architecture": "llama",
            "llama.context_length": TRAINED_CONTEXT,
        },
        "capabilities": ["completion", "tools"] if tools else ["completion"],
    }


def ollama_ps(models: list[str]) -> dict[str, Any]:
    """Return Ollama's /api/ps: no model loaded."""
    del models
    return {"models": []}


def lm_studio_models(models: list[str], window: int | None) -> dict[str, Any]:
    """Return LM Studio's /api/v0/models: each model with its loaded context."""
    return {
        "object": "list",
        "data": [
            {
                "id": model,
                "object": "model",
                "type": "vlm" if "vision" in model else "llm",
                "state": "loaded",
                "max_context_length": TRAINED_CONTEXT,
                **({"loaded_context_length": window} if window else {}),
                "capabilities": ["tool_use"],
            }
            for model in models
        ],
    }


def answer(
    server: NativeServer,
    route: tuple[str, str],
    body: Any,
    models: list[str],
    window: int | None,
    *,
    tools: bool,
) -> tuple[dict[str, Any], int] | None:
    """Return a native route's body and status as `server` answers it; None: no route.

    `route` is the request's method and path, `body` its JSON.
    """
    if (server, *route) == ("llama_cpp", "GET", "/props"):
        return llama_cpp_props(window, models, tools=tools), 200
    if (server, *route) in {
        ("vllm", "GET", "/version"),
        ("ollama", "GET", "/api/version"),
    }:
        return {"version": VERSIONS[server]}, 200
    if (server, *route) == ("ollama", "GET", "/api/ps"):
        return ollama_ps(models), 200
    if (server, *route) == ("ollama", "POST", "/api/show"):
        model = (body or {}).get("model")
        if model not in models:
            return {"error": f"model '{model}' not found"}, 404
        return ollama_show(model, window, tools=tools), 200
    if (server, *route) == ("lm_studio", "GET", "/api/v0/models"):
        return lm_studio_models(models, window), 200
    return None
