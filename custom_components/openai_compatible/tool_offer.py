"""The tools one turn offers, and the calls it answers itself: a cap, lookups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
import json
import re
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.helpers import llm
from homeassistant.util.json import JsonValueType

from .const import CONF_MAX_TOOL_CALLS, CONF_TOOLS, CONF_TOOLS_ON_DEMAND
from .net.shapes import ChatTool
from .net.transport import ToolSet

LOOKUP_TOOL: Final = "find_tools"
# Tools one conversation may look up, and tools one lookup names at most.
MAX_LOOKED_UP: Final = 16
MAX_MATCHES: Final = 5
# A few words say what a tool should do; each is matched against every tool's.
MAX_QUERY_CHARACTERS: Final = 1024

LOOKUP_SCHEMA: Final[ChatTool] = {
    "type": "function",
    "function": {
        "name": LOOKUP_TOOL,
        "description": "Find the tools for a task. Call it first with the "
        "user's request; the tools it names can be called next.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the tool should do, in a few words.",
                }
            },
            "required": ["query"],
        },
    },
}

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SHORT: Final = 3
_FILLERS: Final = frozenset({"the", "and", "for", "please", "can", "you", "with"})

# What a small model is shown of calls: a request, a tool, its arguments.
# The devices are made up, unlike any a home is likely to have by name.
_EXAMPLES: Final = (
    ("Is the hall lamp on?", "GetLiveContext", None),
    ("Turn on the espresso machine", "HassTurnOn", {"name": "espresso machine"}),
    ("Close the study blinds", "HassTurnOff", {"name": "study blinds"}),
    ("Lock the side gate", "HassTurnOn", {"name": "side gate", "domain": ["lock"]}),
    ("Unlock the side gate", "HassTurnOff", {"name": "side gate", "domain": ["lock"]}),
    (
        "Set the nursery to 23 degrees",
        "HassClimateSetTemperature",
        {"area": "nursery", "temperature": 23},
    ),
    ("How warm is the cellar?", "GetLiveContext", None),
)


def _only(tool_set: ToolSet, wire_names: list[str]) -> ToolSet:
    by_name = {tool["function"]["name"]: tool for tool in tool_set.tools}
    from_wire = {wire: tool_set.from_wire[wire] for wire in wire_names}
    return ToolSet(
        [by_name[wire] for wire in wire_names],
        {name: wire for wire, name in from_wire.items()},
        from_wire,
    )


def call_examples(tool_set: ToolSet) -> str:
    """Return examples of calls of the offered tools, as a model writes a call."""
    # Each tool's first wire name, by its name without its API's prefix.
    wires = {name.rpartition("__")[2]: name for name in reversed(tool_set.from_wire)}
    lines = [
        f"{asked} → {json.dumps({'name': wires[tool], 'arguments': arguments or {}})}"
        + (", then answer with what it returns" if arguments is None else "")
        for asked, tool, arguments in _EXAMPLES
        if tool in wires
    ]
    if not lines:
        return ""
    return "\n".join(
        [
            "Examples of calls (the devices in them are made up; use this home's):",
            *lines,
            "Never describe a call in words: make it.",
        ]
    )


def words(text: str) -> set[str]:
    """Return the words of a text, camel case and snake case split, lower case."""
    return {
        word
        for word in _WORD.findall(_CAMEL.sub(r"\1 \2", text).lower())
        if len(word) >= _SHORT and word not in _FILLERS
    }


def matches(tools: list[ChatTool], query: str) -> list[ChatTool]:
    """Return the tools that match a query, best first, at most MAX_MATCHES.

    A tool's score: each word of the query that starts one of its words or the
    other way round; twice in its name.
    """
    wanted = words(query[:MAX_QUERY_CHARACTERS])

    def hits(held: set[str]) -> int:
        return sum(
            any(own.startswith(word) or word.startswith(own) for own in held)
            for word in wanted
        )

    scored = []
    for index, tool in enumerate(tools):
        name = words(tool["function"]["name"])
        text = name | words(tool["function"].get("description", ""))
        scored.append((2 * hits(name) + hits(text), index))
    best = sorted((item for item in scored if item[0]), key=lambda item: -item[0])
    return [tools[index] for _, index in best[:MAX_MATCHES]]


def looked_up(chat_log: conversation.ChatLog) -> list[str]:
    """Return the wire names the conversation's lookups found, in their order."""
    names: dict[str, None] = {}
    for content in chat_log.content:
        if (
            isinstance(content, conversation.ToolResultContent)
            and content.tool_name == LOOKUP_TOOL
            and isinstance(tools := content.result.data.get("tools"), list)
        ):
            names.update(
                (name, None)
                for tool in tools
                if isinstance(tool, dict) and isinstance(name := tool.get("name"), str)
            )
    return list(names)[:MAX_LOOKED_UP]


class ToolOffer:
    """The tools of one turn's requests, and the calls it answers; lookups not capped."""

    def __init__(
        self,
        tool_set: ToolSet,
        options: Mapping[str, Any],
        chat_log: conversation.ChatLog,
        *,
        examples: bool = False,
    ) -> None:
        """Take the agent's choice of tools and what the conversation looked up."""
        if names := options.get(CONF_TOOLS):
            chosen = [
                wire for wire, name in tool_set.from_wire.items() if name in names
            ]
            tool_set = _only(tool_set, chosen)
        self._all = tool_set
        if examples:
            self._all = replace(self._all, examples=call_examples(self._all))
        self._on_demand = bool(options.get(CONF_TOOLS_ON_DEMAND) and self._all.tools)
        self._cap: int | None = options.get(CONF_MAX_TOOL_CALLS)
        self._calls = 0
        self._found = (
            [name for name in looked_up(chat_log) if name in self._all.from_wire]
            if self._on_demand
            else []
        )
        self._sent: ToolSet | None = None

    def tool_set(self) -> ToolSet:
        """Return the tools of the next request, the same while nothing changed."""
        if self._sent is None:
            self._sent = self._build()
        return self._sent

    def _build(self) -> ToolSet:
        """Return the tools to send, answering own calls where an option asks."""
        if not self._on_demand:
            if self._cap is None:
                return self._all
            return replace(self._all, own_calls=self.answer)
        found = _only(self._all, self._found)
        lookup = {LOOKUP_TOOL: LOOKUP_TOOL}
        return ToolSet(
            [LOOKUP_SCHEMA, *found.tools],
            found.to_wire | lookup,
            found.from_wire | lookup,
            self.answer,
        )

    def answer(self, call: llm.ToolInput) -> llm.ToolResult | None:
        """Answer a lookup or a call past the cap; None lets the call run."""
        if self._on_demand and call.tool_name == LOOKUP_TOOL:
            return self._lookup(str(call.tool_args.get("query", "")))
        if self._cap is not None and self._calls >= self._cap:
            return llm.ToolResult(
                {
                    "error": "tool_call_limit",
                    "error_text": f"The user's request allows at most {self._cap} "
                    "tool calls; this one did not run.",
                    "hint": "Answer the user now with what the tools returned.",
                },
                error=True,
            )
        self._calls += 1
        return None

    def _lookup(self, query: str) -> llm.ToolResult:
        """Find tools for a query; those not sent yet go at the end of the list."""
        found = matches(self._all.tools, query)
        wire_names = [tool["function"]["name"] for tool in found]
        room = MAX_LOOKED_UP - len(self._found)
        new = [name for name in wire_names if name not in self._found][: max(room, 0)]
        if new:
            self._found += new
            self._sent = None
        callable_now = [
            tool for tool in found if tool["function"]["name"] in self._found
        ]
        if callable_now:
            note = "These tools can be called now."
        else:
            note = "No tool matches; look up other words."
        if len(callable_now) < len(found):
            note += (
                f" At most {MAX_LOOKED_UP} tools can be looked up in a conversation."
            )
        listed: list[JsonValueType] = []
        for tool in callable_now:
            lines = str(tool["function"].get("description", "")).strip().splitlines()
            listed.append(
                {"name": tool["function"]["name"], "description": (lines or [""])[0]}
            )
        return llm.ToolResult({"tools": listed, "note": note})
