"""The chat log rendered as Responses API input items (see render.py).

The agent's own answers go back as the server gave them (`ResponsesReplay`);
any other's as messages and function calls: another server cannot read the
first one's reasoning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps

from ..media.attachments import LoadedFile
from ..net.request import ToolSet
from ..net.shapes import InputPart, JsonObject, ResponsesItem
from .chat_completions import ChatLogRenderer
from .responses_stream import ResponsesReplay
from .tool_answers import model_calls

if TYPE_CHECKING:
    from .chat_completions import Role

type Item = ResponsesItem


def function_tools(tool_set: ToolSet) -> list[JsonObject]:
    """Return the tools in the Responses form, not strict (the API's default is)."""
    return [
        {"type": "function", **tool["function"], "strict": False}
        for tool in tool_set.tools
    ]


def input_attachment(file: LoadedFile) -> InputPart:
    """Return the content part of one attachment."""
    if file.mime_type.startswith("image/"):
        return {"type": "input_image", "image_url": file.data_url, "detail": "auto"}
    return {"type": "input_file", "filename": file.name, "file_data": file.data_url}


class InputRenderer(ChatLogRenderer[Item, InputPart]):
    """Render chat log content as Responses API input items."""

    _attachment_part = staticmethod(input_attachment)

    def __init__(self, hass: HomeAssistant, tool_set: ToolSet, agent_id: str) -> None:
        """Render for one agent: its own answers are replayed as they came."""
        super().__init__(hass, tool_set)
        self._agent_id = agent_id

    def _text_part(self, text: str) -> InputPart:
        return {"type": "input_text", "text": text}

    def _message(self, role: Role, content: str | list[InputPart]) -> Item:
        return {"type": "message", "role": role, "content": content}

    def _result(self, call_id: str, data: Any) -> Item:
        return {
            "type": "function_call_output",
            "call_id": call_id,
            "output": json_dumps(data),
        }

    def _call_ids(
        self, content: conversation.AssistantContent, rendered: list[Item]
    ) -> list[str]:
        return [item["call_id"] for item in rendered if item["type"] == "function_call"]

    def _assistant(self, content: conversation.AssistantContent) -> list[Item]:
        """Convert an answer: as the server gave it, or as text and calls."""
        if (
            isinstance(content.native, ResponsesReplay)
            and content.agent_id == self._agent_id
        ):
            return cast("list[Item]", list(content.native.items))
        calls = model_calls(content)
        if not calls and not content.content:
            if content.tool_calls:
                return []  # only provider-run calls of another agent
            return [self._message("assistant", "")]
        said = [self._message("assistant", content.content)] if content.content else []
        return said + [
            {
                "type": "function_call",
                "call_id": call.id,
                "name": self.tool_set.to_wire.get(call.tool_name, call.tool_name),
                "arguments": json_dumps(call.tool_args),
            }
            for call in calls
        ]
