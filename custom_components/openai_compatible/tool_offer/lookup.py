"""The lookup tool of tools on demand: its schema, the search, what was found."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import re
from typing import Final

from homeassistant.components import conversation
from homeassistant.helpers import llm
from homeassistant.util.json import JsonObjectType, JsonValueType

from ..net.shapes import ChatTool

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


def words(text: str) -> set[str]:
    """Return the words of a text, camel case and snake case split, lower case."""
    return {
        word
        for word in _WORD.findall(_CAMEL.sub(r"\1 \2", text).lower())
        if len(word) >= _SHORT and word not in _FILLERS
    }


def _score(tool: ChatTool, query: set[str]) -> int:
    """Return how well a tool matches: its name's words count twice."""
    function = tool["function"]
    name = words(function["name"])
    text = name | words(function.get("description", ""))
    return sum(2 * _hit(word, name) + _hit(word, text) for word in query)


def _hit(word: str, words_of_tool: set[str]) -> int:
    """Return 1 where a word starts a word of the tool or the other way round."""
    return int(
        any(own.startswith(word) or word.startswith(own) for own in words_of_tool)
    )


def matches(tools: list[ChatTool], query: str) -> list[ChatTool]:
    """Return the tools that match a query, best first, at most MAX_MATCHES."""
    wanted = words(query[:MAX_QUERY_CHARACTERS])
    scored = [(_score(tool, wanted), index) for index, tool in enumerate(tools)]
    best = sorted((item for item in scored if item[0]), key=lambda item: -item[0])
    return [tools[index] for _, index in best[:MAX_MATCHES]]


def summary(tool: ChatTool) -> JsonObjectType:
    """Return a tool's name and the first line of its description."""
    function = tool["function"]
    lines = str(function.get("description", "")).strip().splitlines()
    return {"name": function["name"], "description": lines[0] if lines else ""}


def lookup_result(found: list[ChatTool], full: bool) -> llm.ToolResult:
    """Return the lookup's answer: the tools found, callable from now on."""
    if found:
        note = "These tools can be called now."
    else:
        note = "No tool matches; look up other words."
    if full:
        note += f" At most {MAX_LOOKED_UP} tools can be looked up in a conversation."
    listed: list[JsonValueType] = [summary(tool) for tool in found]
    return llm.ToolResult({"tools": listed, "note": note})


def looked_up(chat_log: conversation.ChatLog) -> list[str]:
    """Return the wire names the conversation's lookups found, in their order."""
    names: dict[str, None] = {}
    for content in chat_log.content:
        if (
            isinstance(content, conversation.ToolResultContent)
            and content.tool_name == LOOKUP_TOOL
        ):
            names.update(dict.fromkeys(_found_names(content.result.data)))
    return list(names)[:MAX_LOOKED_UP]


def _found_names(data: Mapping[str, object]) -> Iterable[str]:
    tools = data.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and isinstance(name := tool.get("name"), str):
            yield name
