"""Reading a Chat Completions request: a message's text, the tools it offers."""

from __future__ import annotations

from typing import Any


def message_text(content: Any) -> str:
    """Return the text of string or list-of-parts content."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def tool_names(tools: Any) -> list[str]:
    """Return the names of the offered function tools."""
    return [
        tool["function"]["name"]
        for tool in tools or ()
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
    ]
