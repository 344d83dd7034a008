"""A request's messages or input items as fitting reads them, each tagged by kind."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import cast

from ..net.shapes import ChatMessage, ResponsesItem, WireItem

# A message or input item as it is sent.
type Message = WireItem


class ItemKind(StrEnum):
    """What a message or input item is to fitting; a user message starts a turn."""

    INSTRUCTIONS = "instructions"
    USER = "user"
    REPLY = "reply"
    RESULT = "result"


# The roles of messages that instruct the model.
_INSTRUCTION_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True)
class CallRef:
    """A tool call an item makes."""

    call_id: str | None
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class PromptItem:
    """One message or input item of a request, tagged with what it is."""

    kind: ItemKind
    wire: Message
    # The field that holds the item's text, or its parts.
    text_field: str = "content"
    calls: tuple[CallRef, ...] = ()
    # The id of the call a result answers.
    answers: str = ""
    # Text read besides the text field: a reasoning summary.
    summary: tuple[str, ...] = ()

    @property
    def text(self) -> object:
        """Return the item's text: a string, a list of parts, or none."""
        return self.wire.get(self.text_field)

    def with_text(self, text: str) -> PromptItem:
        """Return the item with other text, such as a tool result cut short."""
        wire = cast("Message", {**self.wire, self.text_field: text})
        return replace(self, wire=wire)


def chat_items(messages: Iterable[ChatMessage]) -> list[PromptItem]:
    """Return Chat Completions messages as prompt items."""
    return [_chat_item(message) for message in messages]


def _chat_item(message: ChatMessage) -> PromptItem:
    """Return one Chat Completions message as a prompt item."""
    role = message.get("role")
    if role == "tool":
        return PromptItem(
            ItemKind.RESULT, message, answers=str(message.get("tool_call_id"))
        )
    calls = tuple(
        CallRef(
            call.get("id"),
            call["function"]["name"],
            call["function"]["arguments"],
        )
        for call in message.get("tool_calls") or ()
    )
    return PromptItem(_role_kind(role), message, calls=calls)


def responses_items(items: Iterable[ResponsesItem]) -> list[PromptItem]:
    """Return Responses API input items as prompt items."""
    return [_responses_item(item) for item in items]


def _responses_item(item: ResponsesItem) -> PromptItem:
    """Return one Responses API input item as a prompt item."""
    kind = item.get("type")
    summary = tuple(
        text
        for part in item.get("summary") or ()
        if isinstance(part, dict) and isinstance(text := part.get("text"), str)
    )
    if kind == "function_call_output":
        return PromptItem(
            ItemKind.RESULT, item, "output", answers=str(item.get("call_id"))
        )
    if kind == "function_call":
        call = CallRef(
            item.get("call_id"), str(item.get("name")), str(item.get("arguments"))
        )
        return PromptItem(ItemKind.REPLY, item, calls=(call,), summary=summary)
    return PromptItem(_role_kind(item.get("role")), item, summary=summary)


def _role_kind(role: object) -> ItemKind:
    """Return the kind of a message by its role."""
    if role in _INSTRUCTION_ROLES:
        return ItemKind.INSTRUCTIONS
    return ItemKind.USER if role == "user" else ItemKind.REPLY


def wire_messages(items: Iterable[PromptItem]) -> list[Message]:
    """Return the items as they are sent."""
    return [item.wire for item in items]
