"""The Chat Completions dialect, and the chat log rendering both dialects share.

Rendering is deterministic, so a request repeats the previous one's start for
the prompt cache; with tools, what of the system prompt varies by device or
command goes in a system message of its own after them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
import hashlib
import re
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from homeassistant.components import conversation
from homeassistant.components.intent.llm import DEVICE_CONTROL_TOOL_USAGE_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps
from homeassistant.helpers.llm import DATE_TIME_PROMPT

from ..const import Feature
from ..media.attachments import LoadedFile, async_load_attachments
from ..net.shapes import ChatBody, ChatMessage, ChatPart, ResponseFormat
from ..net.transport import RequestSettings, ToolSet, without_keys
from ..window.prompt_fit import CallRef, ItemKind, PromptItem, split_turns
from .chat_stream import ChatStreamParser
from .tool_calls import checked_calls, model_calls

if TYPE_CHECKING:
    from .responses_stream import ResponsesStreamParser

type Role = Literal["system", "user", "assistant"]
# Text added to one user message (the task's own), so it stays in place.
type Instructions = tuple[conversation.UserContent, str]

# Where Home Assistant's system prompt turns to what varies: after the Assist
# API's device control line (the area, timers), or at the date line; a
# satellite's extra system prompt comes after both.
_VARIES_AFTER: Final = f"{DEVICE_CONTROL_TOOL_USAGE_PROMPT}\n"
_VARIES_FROM: Final = "\n" + DATE_TIME_PROMPT.split("{{", 1)[0]
_MISTRAL_ID: Final = re.compile(r"^[a-zA-Z0-9]{9}$")
_FIELD_FEATURES: Final = {
    "logprobs": Feature.LOGPROBS,
    "stream_options": Feature.STREAM_OPTIONS,
    "max_completion_tokens": Feature.MAX_COMPLETION_TOKENS,
    "max_tokens": Feature.MAX_TOKENS,
    "temperature": Feature.SAMPLING,
    "top_p": Feature.SAMPLING,
    "prompt_cache_key": Feature.PROMPT_CACHE_KEY,
    "tool_choice": Feature.TOOL_CHOICE,
}
# The feature of each type of attachment part (either dialect's) or provider tool.
TYPE_FEATURES: Final = {
    "image_url": Feature.IMAGE_INPUT,
    "file": Feature.FILE_INPUT,
    "input_image": Feature.IMAGE_INPUT,
    "input_file": Feature.FILE_INPUT,
    "web_search": Feature.WEB_SEARCH,
    "web_search_preview": Feature.WEB_SEARCH,
    "code_interpreter": Feature.CODE_INTERPRETER,
    "image_generation": Feature.IMAGE_GENERATION,
}
# The fields that go with a feature that can go, in either dialect.
DROPPED_KEYS: Final = {
    Feature.STREAM_OPTIONS: ("stream_options",),
    Feature.STREAM_WITH_TOOLS: ("stream", "stream_options"),
    Feature.PROMPT_CACHE_KEY: ("prompt_cache_key",),
    Feature.SERVICE_TIER: ("service_tier",),
    Feature.TOOL_CHOICE: ("tool_choice",),
    Feature.SAMPLING: ("temperature", "top_p"),
}


def split_instructions(text: str) -> tuple[str, str]:
    """Return the part of a system prompt every device and command shares, and the rest."""
    cut = len(text)
    if (found := text.find(_VARIES_AFTER)) >= 0:
        cut = found + len(_VARIES_AFTER) - 1
    if (found := text.find(_VARIES_FROM)) >= 0:
        cut = min(cut, found)
    return text[:cut], text[cut:].strip("\n")


class Dialect[Item, Part, Body]:
    """What one wire API tells the round trip, and the chat log rendered for it."""

    route: str
    # What opening an answer proves the model takes; None: nothing.
    proves: Feature | None
    # Whether an empty stream next to tools is asked again unstreamed.
    retries_unstreamed: bool
    # The tools as the body holds them, for the window to count.
    tools: Sequence[Mapping[str, object]]
    # Where the body holds the answer's limit, and the least it may be.
    limit_key: str
    least_limit: int
    # What a body holds to ask for a streamed answer.
    stream_fields: Mapping[str, object]
    # The body around a conversation (unlimited), the features a body holds,
    # the body asking the same without one (None: it cannot), its parser.
    body: Callable[[list[Item], ResponseFormat | None], Body]
    body_features: Callable[[Body], frozenset[Feature]]
    without_feature: Callable[[Body, Feature], Body | None]
    parser: Callable[[Body], ChatStreamParser | ResponsesStreamParser]
    # The conversation as the window fits it: each part's kind told.
    prompt_items: Callable[[list[Item]], list[PromptItem]]
    # The content part of an attachment, a text part's type, what a message
    # holds before its role; an answer's items, and a tool call's result.
    _attachment_part: Callable[[LoadedFile], Part]
    _text_type: str
    _message_head: Mapping[str, str]
    _assistant: Callable[[conversation.AssistantContent], list[Item]]
    _result: Callable[[str, Any], Item]

    def __init__(
        self, hass: HomeAssistant, settings: RequestSettings, tool_set: ToolSet
    ) -> None:
        """Prepare for a run of rounds, with an empty cache."""
        self._hass = hass
        self.settings = settings
        self.tool_set = tool_set
        self._rendered: dict[
            int, tuple[conversation.Content, str | None, list[Item]]
        ] = {}

    async def async_render(
        self,
        contents: list[conversation.Content],
        instructions: Instructions | None = None,
    ) -> list[Item]:
        """Return the whole log; `instructions` go with the task's own user message."""
        items: list[Item] = []
        open_calls: dict[str, None] = {}
        for content in contents:
            # Each content is rendered once per text added to it.
            extra = (
                instructions[1] if instructions and instructions[0] is content else None
            )
            cached = self._rendered.get(id(content))
            if cached is None or cached[0] is not content or cached[1] != extra:
                cached = (content, extra, await self._async_convert(content, extra))
                self._rendered[id(content)] = cached
            rendered = cached[2]
            if isinstance(content, conversation.ToolResultContent):
                if content.tool_call_id in open_calls:
                    del open_calls[content.tool_call_id]
                    items.extend(rendered)
                continue
            # A placeholder result for each call that never got one.
            no_result = {"error": "no result"}
            items.extend(self._result(call, no_result) for call in open_calls)
            open_calls = {}
            if isinstance(content, conversation.AssistantContent):
                open_calls = dict.fromkeys(self._call_ids(content, rendered))
            items.extend(rendered)
        return items

    async def _async_convert(
        self, content: conversation.Content, extra: str | None
    ) -> list[Item]:
        if isinstance(content, conversation.SystemContent):
            if not self.tool_set.tools:
                return [self._message("system", content.content)]
            shared, varying = split_instructions(content.content)
            if examples := self.tool_set.examples:
                shared = f"{shared}\n{examples}"
            varying_message = [self._message("system", varying)] if varying else []
            return [self._message("system", shared), *varying_message]
        if isinstance(content, conversation.UserContent):
            text = f"{content.content}\n\n{extra}" if extra else content.content
            if not content.attachments:
                return [self._message("user", text)]
            files = await async_load_attachments(self._hass, content.attachments)
            text_part = cast("Part", {"type": self._text_type, "text": text})
            parts = [text_part, *map(self._attachment_part, files)]
            return [self._message("user", parts)]
        if isinstance(content, conversation.AssistantContent):
            return self._assistant(content)
        result = content.result
        if result.error and "error" not in result.data:
            # The model must read it as a failure, as core integrations tell it.
            return [self._result(content.tool_call_id, {"error": result.data})]
        return [self._result(content.tool_call_id, result.data)]

    def _message(self, role: Role, content: str | list[Part]) -> Item:
        return cast("Item", {**self._message_head, "role": role, "content": content})

    def _call_ids(
        self, content: conversation.AssistantContent, rendered: list[Item]
    ) -> Iterable[str]:
        return [call.id for call in model_calls(content)]


def _wire_call_id(call_id: str, short: bool) -> str:
    # Always the same one, as Mistral takes them where `short`.
    if not short or _MISTRAL_ID.match(call_id):
        return call_id
    return hashlib.sha256(call_id.encode()).hexdigest().lstrip("0")[:9]


def attachment_part(file: LoadedFile) -> ChatPart:
    """Return the content part for one attachment."""
    if file.mime_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": file.data_url}}
    return {"type": "file", "file": {"filename": file.name, "file_data": file.data_url}}


def chat_items(messages: Iterable[ChatMessage]) -> list[PromptItem]:
    """Return the messages as prompt items, each with its kind and calls told."""
    return [_chat_item(message) for message in messages]


def _chat_item(message: ChatMessage) -> PromptItem:
    if message.get("role") == "tool":
        answers = str(message.get("tool_call_id"))
        return PromptItem(ItemKind.RESULT, message, answers=answers)
    calls = tuple(
        CallRef(call.get("id"), call["function"]["name"], call["function"]["arguments"])
        for call in message.get("tool_calls") or ()
    )
    return PromptItem(ItemKind.of_role(message.get("role")), message, calls=calls)


def fold_system(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Return the leading system messages put at the start of the first user one.

    As Gemma's own chat template does: their text, a blank line, the user's.
    """
    count = len(split_turns(chat_items(messages))[0])
    if not count:
        return messages
    head, rest = messages[:count], messages[count:]
    text = "\n\n".join(str(message.get("content") or "") for message in head)
    if not rest or rest[0].get("role") != "user":
        return [{"role": "user", "content": text}, *rest]
    content = rest[0].get("content")
    folded: str | list[ChatPart] = (
        [{"type": "text", "text": f"{text}\n\n"}, *content]
        if isinstance(content, list)
        else f"{text}\n\n{content or ''}"
    )
    return [{**rest[0], "content": folded}, *rest[1:]]


def body_features(body: ChatBody) -> frozenset[Feature]:
    """Return the request features a Chat Completions body holds."""
    response_format: Mapping[str, Any] = body.get("response_format") or {}
    features = shared_features(body, response_format, _FIELD_FEATURES)
    for message in body.get("messages") or ():
        if ItemKind.of_role(message.get("role")) is ItemKind.INSTRUCTIONS:
            features.add(Feature.SYSTEM_MESSAGES)
        if "reasoning_content" in message:
            features.add(Feature.REASONING_CONTENT)
    return frozenset(features)


def shared_features(
    body: Mapping[str, Any],
    response_format: Mapping[str, Any],
    fields: Mapping[str, Feature],
) -> set[Feature]:
    """Return the features either dialect's body holds alike."""
    features: set[Feature] = set()
    kind = response_format.get("type")
    if kind == "json_schema":
        features.add(Feature.JSON_SCHEMA)
        if (response_format.get("json_schema") or response_format).get("strict"):
            features.add(Feature.STRICT_SCHEMA)
    elif kind == "json_object":
        features.add(Feature.JSON_OBJECT)
        if "schema" in response_format:
            features.add(Feature.JSON_OBJECT_SCHEMA)
    for tool in body.get("tools") or ():
        if tool["type"] == "function":
            features.add(Feature.TOOLS)
            if body.get("stream"):
                features.add(Feature.STREAM_WITH_TOOLS)
        elif feature := TYPE_FEATURES.get(str(tool["type"])):
            features.add(feature)
    features.update(feature for key, feature in fields.items() if key in body)
    return features | {
        TYPE_FEATURES[str(part["type"])]
        for item in body.get("messages") or body.get("input") or ()
        if isinstance(content := item.get("content"), list)
        for part in content
        if part.get("type") in TYPE_FEATURES
    }


def without_feature(body: ChatBody, feature: Feature) -> ChatBody | None:
    """Return the body asking the same without the feature; None if it cannot.

    What tunes the answer, the thinking given back, and system messages can go.
    """
    if keys := DROPPED_KEYS.get(feature):
        return without_keys(body, keys)
    changed = body.copy()
    if feature is Feature.JSON_OBJECT_SCHEMA:
        changed["response_format"] = without_keys(body["response_format"], ("schema",))
    elif feature is Feature.MAX_COMPLETION_TOKENS and "max_tokens" not in body:
        changed["max_tokens"] = changed.pop("max_completion_tokens", None)
    elif feature is Feature.MAX_TOKENS and "max_completion_tokens" not in body:
        changed["max_completion_tokens"] = changed.pop("max_tokens", None)
    elif feature is Feature.SYSTEM_MESSAGES:
        changed["messages"] = fold_system(body["messages"])
    elif feature is Feature.REASONING_CONTENT:
        changed["messages"] = [
            without_keys(message, ("reasoning_content",))
            for message in body["messages"]
        ]
    else:
        return None
    return changed


class ChatCompletionsDialect(Dialect[ChatMessage, ChatPart, ChatBody]):
    """`/chat/completions`: messages in, a chat completion or its chunks out."""

    _attachment_part = staticmethod(attachment_part)
    _text_type = "text"
    _message_head: Mapping[str, str] = {}
    route: str = "/chat/completions"
    proves: Feature | None = None
    retries_unstreamed: bool = True
    least_limit: int = 1
    stream_fields: Mapping[str, object] = {
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body_features = staticmethod(body_features)
    without_feature = staticmethod(without_feature)
    prompt_items = staticmethod(chat_items)

    def __init__(
        self, hass: HomeAssistant, settings: RequestSettings, tool_set: ToolSet
    ) -> None:
        """Prepare for a run of rounds."""
        super().__init__(hass, settings, tool_set)
        self.tools = tool_set.tools
        self.limit_key = settings.limit_key

    def body(
        self, conversation: list[ChatMessage], response_format: ResponseFormat | None
    ) -> ChatBody:
        """Return the request body around the messages."""
        # `auto` is the default with tools, which some servers only follow when told.
        tools = {"tools": self.tools, "tool_choice": "auto"} if self.tools else {}
        asked = {"response_format": response_format} if response_format else {}
        body = {"model": self.settings.model, "messages": conversation, **tools}
        return cast("ChatBody", body | self.settings.body() | asked)

    def parser(self, body: ChatBody) -> ChatStreamParser:
        """Return a parser for the answer to a body."""
        return ChatStreamParser(
            self.tool_set.from_wire,
            own_calls=checked_calls(self.tool_set),
            short_call_ids=self.settings.short_tool_call_ids,
            structured="response_format" in body,
        )

    def _result(self, call_id: str, data: Any) -> ChatMessage:
        return {
            "role": "tool",
            "tool_call_id": _wire_call_id(call_id, self.settings.short_tool_call_ids),
            "content": json_dumps(data),
        }

    def _assistant(self, content: conversation.AssistantContent) -> list[ChatMessage]:
        calls = model_calls(content)
        if not calls and not content.content:
            # Only provider-run calls leave nothing to replay.
            return [] if content.tool_calls else [{"role": "assistant", "content": ""}]
        # Empty text, not null: llama-cpp-python refuses null next to tool calls.
        message: ChatMessage = {"role": "assistant", "content": content.content or ""}
        if content.thinking_content:
            message["reasoning_content"] = content.thinking_content
        to_wire = self.tool_set.to_wire
        if calls:
            message["tool_calls"] = [
                {
                    "id": _wire_call_id(call.id, self.settings.short_tool_call_ids),
                    "type": "function",
                    "function": {
                        "name": to_wire.get(call.tool_name, call.tool_name),
                        "arguments": json_dumps(call.tool_args),
                    },
                }
                for call in calls
            ]
        return [message]
