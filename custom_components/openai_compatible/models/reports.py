"""What a server says about itself and its models (see server_info.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum


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
