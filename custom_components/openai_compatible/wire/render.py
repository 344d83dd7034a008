"""The chat log rendered for a request, the same way over either wire API.

Deterministic, so each request repeats the previous one's start for the
server's prompt cache; each content object is rendered once per round trip. A
call without a result gets a placeholder (servers refuse it otherwise); a
result whose call the server never saw is left out. With tools, the system
prompt goes as what every device and command shares, then what varies
(`split_instructions`), which the dialects move to the first user message once
fitted: the system prompt and the tools after it then stay the same.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal

from homeassistant.components import conversation
from homeassistant.components.intent.llm import DEVICE_CONTROL_TOOL_USAGE_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers.llm import DATE_TIME_PROMPT

from ..media.attachments import LoadedFile, async_load_attachments
from ..net.request import ToolSet

type Role = Literal["system", "user", "assistant"]
type Instructions = tuple[conversation.UserContent, str]

# Where Home Assistant's system prompt turns to what varies: after the Assist
# API's device control line (the area, timers), or at the date line; a
# satellite's extra system prompt comes after both.
_VARIES_AFTER: Final = f"{DEVICE_CONTROL_TOOL_USAGE_PROMPT}\n"
_VARIES_FROM: Final = "\n" + DATE_TIME_PROMPT.split("{{", 1)[0]


def split_instructions(text: str) -> tuple[str, str]:
    """Return the part of a system prompt every device and command shares, and the rest."""
    cut = len(text)
    if (found := text.find(_VARIES_AFTER)) >= 0:
        cut = found + len(_VARIES_AFTER) - 1
    if (found := text.find(_VARIES_FROM)) >= 0:
        cut = min(cut, found)
    return text[:cut], text[cut:].strip("\n")


class ChatLogRenderer[Item, Part](ABC):
    """Render chat log content as one wire API's messages or items."""

    # The content part of an attachment.
    _attachment_part: Callable[[LoadedFile], Part]

    def __init__(self, hass: HomeAssistant, tool_set: ToolSet) -> None:
        """Prepare an empty cache."""
        self._hass = hass
        self.tool_set = tool_set
        self._rendered: dict[int, tuple[conversation.Content, list[Item]]] = {}

    async def async_render(
        self,
        contents: list[conversation.Content],
        instructions: Instructions | None = None,
    ) -> list[Item]:
        """Return the whole log; `instructions` go with the task's own user message."""
        items: list[Item] = []
        open_calls: dict[str, None] = {}
        for content in contents:
            if not isinstance(content, conversation.ToolResultContent):
                items.extend(self._unanswered(open_calls))
                open_calls = {}
            rendered = await self._async_cached(content, instructions)
            if isinstance(content, conversation.ToolResultContent):
                if content.tool_call_id not in open_calls:
                    continue
                del open_calls[content.tool_call_id]
            elif isinstance(content, conversation.AssistantContent):
                open_calls = dict.fromkeys(self._call_ids(content, rendered))
            items.extend(rendered)
        return items

    async def _async_cached(
        self, content: conversation.Content, instructions: Instructions | None
    ) -> list[Item]:
        """Return one piece of content rendered, once per content object."""
        cached = self._rendered.get(id(content))
        if cached is None or cached[0] is not content:
            extra = (
                instructions[1] if instructions and instructions[0] is content else None
            )
            cached = (content, await self._async_convert(content, extra))
            self._rendered[id(content)] = cached
        return cached[1]

    def _unanswered(self, open_calls: Iterable[str]) -> list[Item]:
        """Return placeholder results for calls that never got one."""
        return [self._result(call_id, {"error": "no result"}) for call_id in open_calls]

    async def _async_convert(
        self, content: conversation.Content, extra: str | None
    ) -> list[Item]:
        """Convert one piece of content."""
        if isinstance(content, conversation.SystemContent):
            if not self.tool_set.tools:
                return [self._message("system", content.content)]
            shared, varying = split_instructions(content.content)
            varying_message = [self._message("system", varying)] if varying else []
            return [self._message("system", shared), *varying_message]
        if isinstance(content, conversation.UserContent):
            return [await self._async_user(content, extra)]
        if isinstance(content, conversation.AssistantContent):
            return self._assistant(content)
        result = content.result
        if result.error and "error" not in result.data:
            # The model must read it as a failure, as core integrations tell it.
            return [self._result(content.tool_call_id, {"error": result.data})]
        return [self._result(content.tool_call_id, result.data)]

    async def _async_user(
        self, content: conversation.UserContent, extra: str | None
    ) -> Item:
        """Convert a user message, its attachments read."""
        text = f"{content.content}\n\n{extra}" if extra else content.content
        if not content.attachments:
            return self._message("user", text)
        files = await async_load_attachments(self._hass, content.attachments)
        parts = [self._text_part(text), *map(self._attachment_part, files)]
        return self._message("user", parts)

    @abstractmethod
    def _text_part(self, text: str) -> Part:
        """Return a text content part."""

    @abstractmethod
    def _message(self, role: Role, content: str | list[Part]) -> Item:
        """Return a message of a role."""

    @abstractmethod
    def _assistant(self, content: conversation.AssistantContent) -> list[Item]:
        """Convert an answer."""

    @abstractmethod
    def _result(self, call_id: str, data: Any) -> Item:
        """Return the result of a tool call."""

    @abstractmethod
    def _call_ids(
        self, content: conversation.AssistantContent, rendered: list[Item]
    ) -> Iterable[str]:
        """Return the ids of the calls the server sees in a rendered answer."""
