"""Chat Completions wire adapter: chat log to request, SSE stream to deltas.

Requests are rendered from the chat log by pure functions, so every request of
one conversation repeats the previous request byte for byte at its start; that
is what lets servers reuse their prompt cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
import hashlib
import json
import re
from typing import Any
from uuid import uuid4

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.json import json_dumps
from homeassistant.util.json import json_loads
import httpx2
import openai
import probatio

from .api import translate_errors
from .attachments import LoadedFile, async_load_attachments
from .const import LOGGER, WHOLE_ANSWER_TIMEOUT_SECONDS
from .errors import ModelError, ServerError

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MISTRAL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")
_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
# How an answer starts when a model writes its tool call as text.
_TEXT_CALL_TAGS = ("<tool_call>", "```")
_LONGEST_MARKER = max(len(tag) for tag in _TEXT_CALL_TAGS)
_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)

type Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequestSettings:
    """Per-subentry request parameters, already adapted to the model."""

    model: str
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning_model: bool = False
    prompt_cache_key: str | None = None
    # Mistral only accepts tool call ids of exactly nine letters or digits.
    short_tool_call_ids: bool = False
    # Ask for usage figures in the stream (servers that refuse the field
    # report them unasked, or not at all).
    stream_usage: bool = True
    # Off for servers whose streaming breaks tool calls or structured output.
    stream: bool = True

    def body(self) -> dict[str, Any]:
        """Return the sampling parameters the user set; nothing otherwise."""
        params: dict[str, Any] = {}
        if self.max_tokens is not None:
            key = "max_completion_tokens" if self.reasoning_model else "max_tokens"
            params[key] = self.max_tokens
        if not self.reasoning_model:
            if self.temperature is not None:
                params["temperature"] = self.temperature
            if self.top_p is not None:
                params["top_p"] = self.top_p
        if self.prompt_cache_key:
            params["prompt_cache_key"] = self.prompt_cache_key
        return params


@dataclass(frozen=True, slots=True)
class ToolSet:
    """The tools of the chat log's LLM API in wire form, and the name mapping."""

    tools: list[dict[str, Any]]
    to_wire: dict[str, str]
    from_wire: dict[str, str]


def _wire_tool_name(name: str, taken: set[str]) -> str:
    """Return a name the server accepts, unique among the taken ones."""
    if _TOOL_NAME.match(name) and name not in taken:
        return name
    cleaned = _INVALID_NAME_CHARS.sub("_", name) or "tool"
    digest = hashlib.sha256(name.encode()).hexdigest()
    candidate = cleaned[:64]
    if len(cleaned) > 64 or candidate in taken:
        candidate = f"{cleaned[:55]}_{digest[:8]}"
    return candidate


def build_tool_set(llm_api: llm.APIInstance | None) -> ToolSet:
    """Convert every tool of the API, in a stable order."""
    if llm_api is None or not llm_api.tools:
        return ToolSet([], {}, {})
    serializer: Callable[[Any], Any] = (
        llm_api.custom_serializer or llm.selector_serializer
    )
    tools: list[dict[str, Any]] = []
    to_wire: dict[str, str] = {}
    from_wire: dict[str, str] = {}
    for tool in sorted(llm_api.tools, key=lambda tool: tool.name):
        wire_name = _wire_tool_name(tool.name, set(from_wire))
        to_wire[tool.name] = wire_name
        from_wire[wire_name] = tool.name
        function: dict[str, Any] = {"name": wire_name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = probatio.to_openapi(
            tool.parameters, custom_serializer=serializer, openapi_version="3.1.0"
        )
        tools.append({"type": "function", "function": function})
    return ToolSet(tools, to_wire, from_wire)


def _wire_call_id(call_id: str, short: bool) -> str:
    """Return the call id in a form the server accepts, always the same one."""
    if not short or _MISTRAL_ID.match(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode()).hexdigest()
    return format(int(digest, 16), "x")[:9]


def attachment_part(file: LoadedFile) -> dict[str, Any]:
    """Return the content part for one attachment."""
    if file.mime_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": file.data_url}}
    return {"type": "file", "file": {"filename": file.name, "file_data": file.data_url}}


class MessageRenderer:
    """Render chat log content as Chat Completions messages.

    Rendering is deterministic; within one round trip each content object is
    rendered once and attachments are read once.
    """

    def __init__(
        self, hass: HomeAssistant, tool_set: ToolSet, settings: RequestSettings
    ) -> None:
        """Prepare an empty cache."""
        self._hass = hass
        self._tool_set = tool_set
        self._short_ids = settings.short_tool_call_ids
        self._rendered: dict[int, tuple[conversation.Content, list[Message]]] = {}

    async def async_render(
        self,
        contents: list[conversation.Content],
        instructions: tuple[conversation.UserContent, str] | None = None,
    ) -> list[Message]:
        """Return the messages for the whole log.

        `instructions` adds text to one user message (the task's own), so it
        stays in place when later rounds add to the log.
        """
        messages: list[Message] = []
        open_calls: dict[str, str] = {}
        for content in contents:
            if not isinstance(content, conversation.ToolResultContent):
                # A server refuses a call left without a result; answer it.
                messages.extend(self._unanswered(open_calls))
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
                    continue  # external or orphaned: the server never saw a call
                del open_calls[content.tool_call_id]
            elif isinstance(content, conversation.AssistantContent):
                open_calls = {
                    call.id: call.tool_name
                    for call in content.tool_calls or ()
                    if not call.external
                }
            messages.extend(cached[1])
        return messages

    def _unanswered(self, open_calls: dict[str, str]) -> list[Message]:
        """Return placeholder results for calls that never got one."""
        return [
            {
                "role": "tool",
                "tool_call_id": _wire_call_id(call_id, self._short_ids),
                "content": json_dumps({"error": "no result"}),
            }
            for call_id in open_calls
        ]

    async def _async_convert(
        self, content: conversation.Content, extra: str | None
    ) -> list[Message]:
        """Convert one piece of content."""
        if isinstance(content, conversation.SystemContent):
            return [{"role": "system", "content": content.content}]
        if isinstance(content, conversation.UserContent):
            text = f"{content.content}\n\n{extra}" if extra else content.content
            if not content.attachments:
                return [{"role": "user", "content": text}]
            files = await async_load_attachments(self._hass, content.attachments)
            parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
            parts.extend(attachment_part(file) for file in files)
            return [{"role": "user", "content": parts}]
        if isinstance(content, conversation.AssistantContent):
            calls = [call for call in content.tool_calls or () if not call.external]
            if not calls and not content.content:
                if content.tool_calls:
                    return []  # only provider-run calls: nothing to replay
                return [{"role": "assistant", "content": ""}]
            message: Message = {"role": "assistant", "content": content.content}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": _wire_call_id(call.id, self._short_ids),
                        "type": "function",
                        "function": {
                            "name": self._tool_set.to_wire.get(
                                call.tool_name, call.tool_name
                            ),
                            "arguments": json_dumps(call.tool_args),
                        },
                    }
                    for call in calls
                ]
            return [message]
        return [
            {
                "role": "tool",
                "tool_call_id": _wire_call_id(content.tool_call_id, self._short_ids),
                "content": json_dumps(content.result.data),
            }
        ]


class ThinkTagSplitter:
    """Separate `<think>...</think>` blocks from spoken text, across chunks."""

    def __init__(self) -> None:
        """Start outside a think block."""
        self._buffer = ""
        self._thinking = False
        self._after_close = False

    def feed(self, text: str) -> list[tuple[bool, str]]:
        """Return (is_thinking, text) pieces that are certain so far."""
        self._buffer += text
        pieces: list[tuple[bool, str]] = []
        while self._buffer:
            tag = _THINK_CLOSE if self._thinking else _THINK_OPEN
            position = self._buffer.find(tag)
            if position >= 0:
                self._emit(pieces, self._buffer[:position])
                self._buffer = self._buffer[position + len(tag) :]
                self._after_close = self._thinking
                self._thinking = not self._thinking
                continue
            keep = _partial_suffix(self._buffer, tag)
            self._emit(pieces, self._buffer[: len(self._buffer) - keep])
            self._buffer = self._buffer[len(self._buffer) - keep :]
            break
        return pieces

    def flush(self) -> list[tuple[bool, str]]:
        """Return what is left at the end of the stream."""
        pieces: list[tuple[bool, str]] = []
        self._emit(pieces, self._buffer)
        self._buffer = ""
        return pieces

    def _emit(self, pieces: list[tuple[bool, str]], text: str) -> None:
        """Add a piece; spoken text right after a think block loses its indent."""
        if self._after_close and not self._thinking:
            text = text.lstrip()
            if text:
                self._after_close = False
        if text:
            pieces.append((self._thinking, text))


def _partial_suffix(text: str, tag: str) -> int:
    """Return the length of the longest end of text that starts the tag."""
    for length in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:length]):
            return length
    return 0


@dataclass(slots=True)
class _PendingCall:
    """A tool call being assembled from stream fragments."""

    call_id: str | None
    name: str | None
    arguments: list[str] = field(default_factory=list)

    def arguments_complete(self) -> bool:
        """Tell whether the fragments so far form a whole JSON value."""
        try:
            json.loads("".join(self.arguments))
        except ValueError:
            return False
        return True


class ChatStreamParser:
    """Turn Chat Completions chunks into chat log deltas."""

    def __init__(self, tool_set: ToolSet, settings: RequestSettings) -> None:
        """Prepare for one streamed answer."""
        self._tool_set = tool_set
        self._short_ids = settings.short_tool_call_ids
        self._calls: list[_PendingCall] = []
        self._by_index: dict[int, _PendingCall] = {}
        self._think = ThinkTagSplitter()
        self._calls_sent = False
        self._spoken = False
        # Spoken text held back because it may be a tool call written as text.
        self._held: list[str] | None = None
        self._held_settled = False
        # The token usage the server reported, if it did.
        self.usage: dict[str, Any] | None = None

    def feed(
        self, chunk: dict[str, Any]
    ) -> list[conversation.AssistantContentDeltaDict]:
        """Return the deltas one chunk adds."""
        if error := chunk.get("error"):
            message = error.get("message") if isinstance(error, dict) else error
            raise ServerError("api_error", message=str(message))
        if usage := chunk.get("usage"):
            self.usage = usage
        deltas: list[conversation.AssistantContentDeltaDict] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                deltas.append({"thinking_content": reasoning})
            text = delta.get("content")
            if not isinstance(text, str):
                text = delta.get("refusal")
            if isinstance(text, str) and text:
                deltas.extend(self._text(self._think.feed(text)))
            for call in delta.get("tool_calls") or ():
                self._add_call_fragment(call)
            if choice.get("finish_reason"):
                deltas.extend(self._finish())
        return deltas

    def close(self) -> list[conversation.AssistantContentDeltaDict]:
        """Return what remains when the stream ends."""
        return [*self._text(self._think.flush()), *self._finish()]

    def _text(
        self, pieces: list[tuple[bool, str]]
    ) -> list[conversation.AssistantContentDeltaDict]:
        """Return deltas for thinking and spoken text.

        When tools are offered, the start of the answer is held back for as
        long as it can still be a tool call written as text.
        """
        deltas: list[conversation.AssistantContentDeltaDict] = []
        for thinking, text in pieces:
            if thinking:
                deltas.append({"thinking_content": text})
            elif self._spoken or not self._tool_set.tools:
                deltas.append({"content": text})
            elif self._held is not None and self._held_settled:
                self._held.append(text)
            else:
                self._held = [*(self._held or ()), text]
                held = "".join(self._held)
                if not _may_be_call(held):
                    self._held = None
                    self._spoken = True
                    deltas.append({"content": held})
                # Past the longest marker the verdict cannot change.
                self._held_settled = len("".join(held.split())) > _LONGEST_MARKER
        return deltas

    def _release_held(self) -> list[conversation.AssistantContentDeltaDict]:
        """Turn held text into tool calls if it is one, else speak it."""
        if self._held is None:
            return []
        text = "".join(self._held)
        self._held = None
        self._spoken = True
        calls = _calls_in_text(text, self._tool_set)
        if calls is None:
            return [{"content": text}]
        if not self._calls:
            self._calls.extend(calls)
        # With native calls too, the text only repeats them: say nothing.
        return []

    def _add_call_fragment(self, fragment: dict[str, Any]) -> None:
        """Merge one tool call fragment into the call it belongs to."""
        index = fragment.get("index")
        if not isinstance(index, int):
            index = len(self._calls)
        function = fragment.get("function") or {}
        call_id = fragment.get("id") or None
        name = function.get("name") or None
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        current = self._by_index.get(index)
        starts_new = current is None or (
            # Some servers put several calls under one index.
            (call_id is not None and current.call_id not in (None, call_id))
            or (
                call_id is None
                and name is not None
                and current.name is not None
                and isinstance(arguments, str)
                and arguments.lstrip().startswith("{")
                and current.arguments_complete()
            )
        )
        if starts_new or current is None:
            current = _PendingCall(call_id, name)
            self._calls.append(current)
            self._by_index[index] = current
        else:
            current.call_id = current.call_id or call_id
            current.name = current.name or name
        if isinstance(arguments, str) and arguments:
            current.arguments.append(arguments)

    def _finish(self) -> list[conversation.AssistantContentDeltaDict]:
        """Hand over the assembled calls once, however often the stream ends."""
        deltas = self._release_held()
        if self._calls_sent or not self._calls:
            return deltas
        self._calls_sent = True
        tool_inputs = [
            llm.ToolInput(
                tool_name=self._tool_set.from_wire.get(call.name, call.name),
                tool_args=_decode_arguments(call),
                id=call.call_id or self._new_call_id(),
            )
            for call in self._calls
            if call.name
        ]
        if tool_inputs:
            deltas.append({"tool_calls": tool_inputs})
        return deltas

    def _new_call_id(self) -> str:
        """Make an id for a call the server sent without one."""
        if self._short_ids:
            return uuid4().hex[:9]
        return f"call_{uuid4().hex[:24]}"


def _may_be_call(text: str) -> bool:
    """Tell whether an answer that starts like this can be a call written out."""
    start = text.lstrip()
    if start[:1] in ("{", "["):
        rest = start[1:].lstrip()
        if not rest:
            return True
        return rest[0] == '"' if start[0] == "{" else _may_be_call(rest)
    return any(
        start.startswith(tag) or tag.startswith(start) for tag in _TEXT_CALL_TAGS
    )


def _calls_in_text(text: str, tool_set: ToolSet) -> list[_PendingCall] | None:
    """Return the tool calls a model wrote as text, if that is all it wrote.

    Takes a JSON object (or a fenced one) or Hermes-style `<tool_call>` blocks
    that name an offered tool and give its arguments.
    """
    stripped = text.strip()
    if stripped.startswith("<tool_call>"):
        bodies = _TOOL_CALL_TAG.findall(stripped)
        if _TOOL_CALL_TAG.sub("", stripped).strip() or stripped.count(
            "<tool_call>"
        ) != len(bodies):
            return None  # words besides the calls, or a call cut short
    else:
        bodies = [_FENCE.sub(r"\1", stripped)]
    calls: list[_PendingCall] = []
    for body in bodies:
        try:
            value = json.loads(body)
        except ValueError:
            return None
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict):
                return None
            name = _offered_name(item.get("name"), tool_set)
            arguments = item.get("arguments", item.get("parameters"))
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    return None
            if name is None or not isinstance(arguments, dict):
                return None
            calls.append(_PendingCall(None, name, [json.dumps(arguments)]))
    return calls or None


def _offered_name(name: Any, tool_set: ToolSet) -> str | None:
    """Return the offered tool a written name means, also without its prefix."""
    if not isinstance(name, str):
        return None
    if name in tool_set.from_wire:
        return name
    matches = [wire for wire in tool_set.from_wire if wire.endswith(f"__{name}")]
    return matches[0] if len(matches) == 1 else None


def _decode_arguments(call: _PendingCall) -> dict[str, Any]:
    """Return the call's arguments; null or empty means none."""
    raw = "".join(call.arguments).strip()
    if not raw or raw == "null":
        return {}
    try:
        value = json.loads(raw)
    except ValueError as err:
        raise ModelError(
            "invalid_tool_arguments", name=str(call.name), message=str(err)
        ) from err
    if isinstance(value, str):
        # A few servers encode the arguments twice.
        return _decode_arguments(_PendingCall(call.call_id, call.name, [value]))
    return value if isinstance(value, dict) else {}


async def async_sse_chunks(
    lines: AsyncIterator[str],
) -> AsyncIterator[dict[str, Any]]:
    """Yield the JSON events of a server-sent event stream.

    The stream is read to its end, past `[DONE]`, so that the connection can
    be reused for the next request.
    """
    done = False
    async for line in lines:
        if done or not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        if not data:
            continue
        try:
            event = json_loads(data)
        except ValueError:
            LOGGER.debug("Skipping a stream line that is not JSON: %s", data)
            continue
        if isinstance(event, dict):
            yield event


class ChatCompletionsAdapter:
    """One round trip over `/chat/completions`, streamed."""

    def __init__(
        self,
        hass: HomeAssistant,
        client: openai.AsyncOpenAI,
        settings: RequestSettings,
        tool_set: ToolSet,
    ) -> None:
        """Prepare the renderer for a run of rounds."""
        self._client = client
        self._settings = settings
        self.tool_set = tool_set
        self._renderer = MessageRenderer(hass, self.tool_set, settings)

    async def async_build_body(
        self,
        chat_log: conversation.ChatLog,
        *,
        response_format: dict[str, Any] | None = None,
        instructions: tuple[conversation.UserContent, str] | None = None,
    ) -> dict[str, Any]:
        """Return the request body for the chat log as it is now."""
        body: dict[str, Any] = {
            "model": self._settings.model,
            "messages": await self._renderer.async_render(
                chat_log.content, instructions
            ),
        }
        if self.tool_set.tools:
            body["tools"] = self.tool_set.tools
        body.update(self._settings.body())
        if response_format:
            body["response_format"] = response_format
        return body

    def _stream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """Return the body asking for a streamed answer."""
        if self._settings.stream_usage:
            return {**body, "stream": True, "stream_options": {"include_usage": True}}
        return {**body, "stream": True}

    async def async_stream(
        self, chat_log: conversation.ChatLog, body: dict[str, Any]
    ) -> AsyncIterator[conversation.AssistantContentDeltaDict]:
        """Send the request and yield the answer as chat log deltas."""
        parser = ChatStreamParser(self.tool_set, self._settings)
        yield {"role": "assistant"}
        with translate_errors():
            # The body is already plain JSON; the SDK's typed transform of
            # every message would only cost time.
            response = await self._client.post(
                "/chat/completions",
                cast_to=httpx2.Response,
                body=self._stream_body(body) if self._settings.stream else body,
                stream=self._settings.stream,
                options={}
                if self._settings.stream
                else {"timeout": WHOLE_ANSWER_TIMEOUT_SECONDS},
            )
            try:
                if self._settings.stream:
                    async for chunk in async_sse_chunks(response.aiter_lines()):
                        for delta in parser.feed(chunk):
                            yield delta
                else:
                    for delta in parser.feed(_as_chunk(await response.aread())):
                        yield delta
            finally:
                await response.aclose()
        for delta in parser.close():
            yield delta
        if usage := parser.usage:
            chat_log.async_trace({"stats": _usage_stats(usage), "usage": usage})


def _as_chunk(raw: bytes) -> dict[str, Any]:
    """Return a whole (non-streamed) answer in the form of one stream chunk."""
    try:
        answer = json_loads(raw)
    except ValueError as err:
        raise ServerError("api_error", message=f"not JSON: {err}") from err
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(answer, dict) or not isinstance(choices, (list, type(None))):
        raise ServerError("api_error", message="the answer is not a chat completion")
    chunk: dict[str, Any] = {
        "choices": [
            {
                "index": choice.get("index", 0),
                "delta": choice.get("message") or {},
                "finish_reason": choice.get("finish_reason"),
            }
            for choice in choices or ()
            if isinstance(choice, dict)
        ],
        "usage": answer.get("usage"),
    }
    if error := answer.get("error"):
        chunk["error"] = error
    return chunk


def _usage_stats(usage: dict[str, Any]) -> dict[str, Any]:
    """Return the token figures Home Assistant's trace view shows."""
    details = usage.get("prompt_tokens_details") or {}
    return {
        "input_tokens": usage.get("prompt_tokens"),
        "cached_input_tokens": details.get("cached_tokens") or 0,
        "output_tokens": usage.get("completion_tokens"),
    }
