"""The tools one turn offers, and the calls it answers itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
import json
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.helpers import llm

from ..const import CONF_MAX_TOOL_CALLS, CONF_TOOLS, CONF_TOOLS_ON_DEMAND
from ..net.request import ToolSet
from .lookup import (
    LOOKUP_SCHEMA,
    LOOKUP_TOOL,
    MAX_LOOKED_UP,
    looked_up,
    lookup_result,
    matches,
)


def chosen(tool_set: ToolSet, names: list[str] | None) -> ToolSet:
    """Return the tools of a subset of Home Assistant's names; all without one."""
    if not names:
        return tool_set
    return _only(
        tool_set,
        [wire for wire in tool_set.from_wire if tool_set.from_wire[wire] in names],
    )


def _only(tool_set: ToolSet, wire_names: list[str]) -> ToolSet:
    """Return some tools of a set, in the order of `wire_names`."""
    by_name = {tool["function"]["name"]: tool for tool in tool_set.tools}
    from_wire = {wire: tool_set.from_wire[wire] for wire in wire_names}
    return ToolSet(
        [by_name[wire] for wire in wire_names],
        {name: wire for wire, name in from_wire.items()},
        from_wire,
    )


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


def call_examples(tool_set: ToolSet) -> str:
    """Return examples of calls of the offered tools, as a model writes a call."""
    lines = []
    for asked, tool, arguments in _EXAMPLES:
        wire = next(
            (name for name in tool_set.from_wire if name.rpartition("__")[2] == tool),
            None,
        )
        if wire is not None:
            call = json.dumps({"name": wire, "arguments": arguments or {}})
            then = ", then answer with what it returns" if arguments is None else ""
            lines.append(f"{asked} → {call}{then}")
    if not lines:
        return ""
    return "\n".join(
        [
            "Examples of calls (the devices in them are made up; use this home's):",
            *lines,
            "Never describe a call in words: make it.",
        ]
    )


def cap_result(cap: int) -> llm.ToolResult:
    """Return the answer to a call past the turn's cap."""
    return llm.ToolResult(
        {
            "error": "tool_call_limit",
            "error_text": f"The user's request allows at most {cap} tool calls; "
            "this one did not run.",
            "hint": "Answer the user now with what the tools returned.",
        },
        error=True,
    )


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
        self._all = chosen(tool_set, options.get(CONF_TOOLS))
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
            return cap_result(self._cap)
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
        return lookup_result(callable_now, full=len(callable_now) < len(found))
