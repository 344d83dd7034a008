"""The chat log rendered as Responses API input items.

Rendering is deterministic, so every request of one conversation repeats the
previous request at its start (the server's prompt cache). Messages of this
integration's Responses answers go back exactly as the server gave them
(`ResponsesReplay`: reasoning with its encrypted content, provider-run calls);
anything else (other agents, Chat Completions rounds) goes back as messages
and function calls.
"""

from __future__ import annotations

from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps

from .attachments import LoadedFile, async_load_attachments
from .request import ToolSet
from .responses_stream import ResponsesReplay
from .tool_answers import model_calls

type Item = dict[str, Any]


def function_tools(tool_set: ToolSet) -> list[dict[str, Any]]:
    """Return the tools in the Responses form, not strict (the API's default is)."""
    return [
        {"type": "function", **tool["function"], "strict": False}
        for tool in tool_set.tools
    ]


def input_attachment(file: LoadedFile) -> dict[str, Any]:
    """Return the content part of one attachment."""
    if file.mime_type.startswith("image/"):
        return {"type": "input_image", "image_url": file.data_url, "detail": "auto"}
    return {"type": "input_file", "filename": file.name, "file_data": file.data_url}


class InputRenderer:
    """Render chat log content as Responses API input items.

    Within one round trip each content object is rendered once and
    attachments are read once.
    """

    def __init__(self, hass: HomeAssistant, tool_set: ToolSet) -> None:
        """Prepare an empty cache."""
        self._hass = hass
        self._tool_set = tool_set
        self._rendered: dict[int, tuple[conversation.Content, list[Item]]] = {}

    async def async_render(
        self,
        contents: list[conversation.Content],
        instructions: tuple[conversation.UserContent, str] | None = None,
    ) -> list[Item]:
        """Return the input items for the whole log.

        `instructions` adds text to one user message (the task's own), so it
        stays in place when later rounds add to the log.
        """
        items: list[Item] = []
        open_calls: dict[str, None] = {}
        for content in contents:
            if not isinstance(content, conversation.ToolResultContent):
                # A server refuses a call left without its output; answer it.
                items.extend(_unanswered(open_calls))
                open_calls = {}
            cached = self._rendered.get(id(content))
            if cached is None or cached[0] is not content:
                extra = (
                    instructions[1]
                    if instructions and instructions[0] is content
                    else None
                )
                cached = (content, await self._async_convert(content, extra))
                self._rendered[id(content)] = cached
            if isinstance(content, conversation.ToolResultContent):
                if content.tool_call_id not in open_calls:
                    continue  # provider-run or orphaned: the server saw no call
                del open_calls[content.tool_call_id]
            elif isinstance(content, conversation.AssistantContent):
                open_calls = {
                    item["call_id"]: None
                    for item in cached[1]
                    if item["type"] == "function_call"
                }
            items.extend(cached[1])
        return items

    async def _async_convert(
        self, content: conversation.Content, extra: str | None
    ) -> list[Item]:
        """Convert one piece of content."""
        if isinstance(content, conversation.SystemContent):
            return [_message("system", content.content)]
        if isinstance(content, conversation.UserContent):
            text = f"{content.content}\n\n{extra}" if extra else content.content
            if not content.attachments:
                return [_message("user", text)]
            files = await async_load_attachments(self._hass, content.attachments)
            parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}]
            parts.extend(input_attachment(file) for file in files)
            return [_message("user", parts)]
        if isinstance(content, conversation.AssistantContent):
            return self._assistant(content)
        return [
            {
                "type": "function_call_output",
                "call_id": content.tool_call_id,
                "output": json_dumps(content.result.data),
            }
        ]

    def _assistant(self, content: conversation.AssistantContent) -> list[Item]:
        """Convert an answer: as the server gave it, or as text and calls."""
        if isinstance(content.native, ResponsesReplay):
            return list(content.native.items)
        calls = model_calls(content)
        if not calls and not content.content:
            if content.tool_calls:
                return []  # only provider-run calls of another agent
            return [_message("assistant", "")]
        items: list[Item] = []
        if content.content:
            items.append(_message("assistant", content.content))
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": self._tool_set.to_wire.get(call.tool_name, call.tool_name),
                "arguments": json_dumps(call.tool_args),
            }
            for call in calls
        )
        return items


def _message(role: str, content: str | list[dict[str, Any]]) -> Item:
    """Return a message item."""
    return {"type": "message", "role": role, "content": content}


def _unanswered(open_calls: dict[str, None]) -> list[Item]:
    """Return placeholder outputs for calls that never got one."""
    return [
        {
            "type": "function_call_output",
            "call_id": call_id,
            "output": json_dumps({"error": "no result"}),
        }
        for call_id in open_calls
    ]
