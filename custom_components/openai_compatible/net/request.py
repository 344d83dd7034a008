"""What a request asks, whichever wire API carries it: settings and tools."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
import hashlib
import re
from typing import TYPE_CHECKING, Any, Final, cast

from homeassistant.components.intent.const import DOMAIN as INTENT_DOMAIN
from homeassistant.components.intent.llm import TIMER_INTENTS
from homeassistant.helpers import llm
import probatio

from .shapes import JsonObject

if TYPE_CHECKING:
    from openai.types.shared_params import FunctionDefinition

    from .shapes import ChatTool

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
# Timer tools go only to some devices: last, so the tools before are always the same.
_DEVICE_TOOLS: Final = frozenset(
    f"{INTENT_DOMAIN}__{intent}" for intent in TIMER_INTENTS
)


@dataclass(frozen=True, slots=True)
class RequestSettings:
    """Per-subentry request parameters, already adapted to the model."""

    model: str
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning_model: bool = False
    prompt_cache_key: str | None = None
    short_tool_call_ids: bool = False
    # Off for servers whose streaming breaks tool calls or structured output.
    stream: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def limit_key(self) -> str:
        """Return the name of the answer's limit for this model."""
        return "max_completion_tokens" if self.reasoning_model else "max_tokens"

    def body(self) -> JsonObject:
        """Return the parameters the user set, extra fields last; nothing otherwise."""
        limit = {} if self.max_tokens is None else {self.limit_key: self.max_tokens}
        return limit | self.sampling() | self.extra

    def sampling(self) -> JsonObject:
        """Return the sampling settings (a reasoning model takes none), the cache key."""
        params: JsonObject = {
            "temperature": None if self.reasoning_model else self.temperature,
            "top_p": None if self.reasoning_model else self.top_p,
            "prompt_cache_key": self.prompt_cache_key or None,
        }
        return {key: value for key, value in params.items() if value is not None}


# Answers a call itself (a tool lookup, a call past the cap), or None to run it.
type OwnCalls = Callable[[llm.ToolInput], llm.ToolResult | None]


@dataclass(frozen=True, slots=True)
class ToolSet:
    """The tools of the chat log's LLM API in wire form, and the name mapping."""

    tools: list[ChatTool]
    to_wire: dict[str, str]
    from_wire: dict[str, str]
    own_calls: OwnCalls | None = None
    # Examples of calls of these tools, shown after the instructions.
    examples: str = ""


def without_keys[B: Mapping[str, object]](body: B, keys: tuple[str, ...]) -> B:
    """Return a copy of a request's object without some of its keys."""
    return cast("B", {key: value for key, value in body.items() if key not in keys})


def _wire_tool_name(name: str, taken: set[str]) -> str:
    """Return a name the server accepts, unique among the taken ones."""
    if _TOOL_NAME.match(name) and name not in taken:
        return name
    cleaned = _INVALID_NAME_CHARS.sub("_", name) or "tool"
    if len(cleaned) <= 64 and cleaned not in taken:
        return cleaned
    return f"{cleaned[:55]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def build_tool_set(llm_api: llm.APIInstance | None) -> ToolSet:
    """Convert every tool of the API, by name; the tools only some devices get last."""
    if llm_api is None or not llm_api.tools:
        return ToolSet([], {}, {})
    serializer: Callable[[Any], Any] = (
        llm_api.custom_serializer or llm.selector_serializer
    )
    tools: list[ChatTool] = []
    to_wire: dict[str, str] = {}
    from_wire: dict[str, str] = {}
    for tool in sorted(
        llm_api.tools, key=lambda tool: (tool.name in _DEVICE_TOOLS, tool.name)
    ):
        name = _wire_tool_name(tool.name, set(from_wire))
        to_wire[tool.name] = name
        from_wire[name] = tool.name
        function: FunctionDefinition = {"name": name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = probatio.to_openapi(
            tool.parameters, custom_serializer=serializer, openapi_version="3.1.0"
        )
        tools.append({"type": "function", "function": function})
    return ToolSet(tools, to_wire, from_wire)
