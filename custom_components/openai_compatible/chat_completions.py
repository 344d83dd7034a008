"""Chat Completions wire adapter: chat log to request, answer to deltas.

Requests are rendered from the chat log by pure functions, so every request of
one conversation repeats the previous request byte for byte at its start; that
is what lets servers reuse their prompt cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
import hashlib
import re
from typing import TYPE_CHECKING, Any, Final

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.json import json_dumps
import probatio

from .attachments import LoadedFile, async_load_attachments
from .capabilities import Feature, ModelCapabilities
from .chat_stream import ChatStreamParser, Delta, async_read_answer
from .const import LOGGER
from .errors import ContextOverflowError, MalformedAnswerError, RequestRejectedError
from .prompt_fit import fold_system
from .prompt_items import chat_items
from .sse import async_read_body
from .tool_answers import model_calls
from .transport import Budget, Transport, parse_json
from .window import observe_usage

if TYPE_CHECKING:
    from .window import RequestFit

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MISTRAL_ID = re.compile(r"^[a-zA-Z0-9]{9}$")

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
    # Off for servers whose streaming breaks tool calls or structured output.
    stream: bool = True

    @property
    def limit_key(self) -> str:
        """Return the name of the answer's limit for this model."""
        return "max_completion_tokens" if self.reasoning_model else "max_tokens"

    def body(self) -> dict[str, Any]:
        """Return the sampling parameters the user set; nothing otherwise."""
        params: dict[str, Any] = {}
        if self.max_tokens is not None:
            params[self.limit_key] = self.max_tokens
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
                open_calls = {call.id: call.tool_name for call in model_calls(content)}
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
            calls = model_calls(content)
            if not calls and not content.content:
                if content.tool_calls:
                    return []  # only provider-run calls: nothing to replay
                return [{"role": "assistant", "content": ""}]
            # Empty text, not null: llama-cpp-python refuses null next to tool calls.
            message: Message = {"role": "assistant", "content": content.content or ""}
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


def body_features(body: dict[str, Any]) -> frozenset[Feature]:
    """Return the request features a Chat Completions body holds."""
    features: set[Feature] = set()
    response_format = body.get("response_format") or {}
    kind = response_format.get("type")
    if kind == "json_schema":
        features.add(Feature.JSON_SCHEMA)
        if response_format.get("json_schema", {}).get("strict"):
            features.add(Feature.STRICT_SCHEMA)
    elif kind == "json_object":
        features.add(Feature.JSON_OBJECT)
        if "schema" in response_format:
            features.add(Feature.JSON_OBJECT_SCHEMA)
    if body.get("tools"):
        features.add(Feature.TOOLS)
        if body.get("stream"):
            features.add(Feature.STREAM_WITH_TOOLS)
    for key, feature in _FIELD_FEATURES.items():
        if key in body:
            features.add(feature)
    for message in body.get("messages") or ():
        if message.get("role") in _SYSTEM_ROLES:
            features.add(Feature.SYSTEM_MESSAGES)
        if isinstance(content := message.get("content"), list):
            kinds = {part.get("type") for part in content}
            if "image_url" in kinds:
                features.add(Feature.IMAGE_INPUT)
            if "file" in kinds:
                features.add(Feature.FILE_INPUT)
    return frozenset(features)


_SYSTEM_ROLES: Final = ("system", "developer")
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


def without_feature(body: dict[str, Any], feature: Feature) -> dict[str, Any] | None:
    """Return the body asking the same without the feature; None if it cannot.

    Only what changes how the answer is sent or tuned can go: a response
    format, log-probabilities, tools or attachments are the request itself.
    The system prompt is not left out but moved into the first user message.
    """
    changed = dict(body)
    if feature is Feature.STREAM_OPTIONS:
        changed.pop("stream_options", None)
    elif feature is Feature.STREAM_WITH_TOOLS:
        changed.pop("stream", None)
        changed.pop("stream_options", None)
    elif feature is Feature.PROMPT_CACHE_KEY:
        changed.pop("prompt_cache_key", None)
    elif feature is Feature.TOOL_CHOICE:
        changed.pop("tool_choice", None)
    elif feature is Feature.JSON_OBJECT_SCHEMA:
        response_format = dict(body["response_format"])
        response_format.pop("schema", None)
        changed["response_format"] = response_format
    elif feature is Feature.SAMPLING:
        changed.pop("temperature", None)
        changed.pop("top_p", None)
    elif feature is Feature.MAX_COMPLETION_TOKENS and "max_tokens" not in body:
        changed["max_tokens"] = changed.pop("max_completion_tokens", None)
    elif feature is Feature.MAX_TOKENS and "max_completion_tokens" not in body:
        changed["max_completion_tokens"] = changed.pop("max_tokens", None)
    elif feature is Feature.SYSTEM_MESSAGES:
        changed["messages"] = fold_system(body["messages"])
    else:
        return None
    return changed


def shaped_body(
    body: dict[str, Any], capabilities: ModelCapabilities, stream: bool
) -> dict[str, Any]:
    """Return the body as the model takes it, streamed when it may be."""
    if stream:
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    for feature in body_features(body):
        if capabilities.refuses(feature) and (
            changed := without_feature(body, feature)
        ):
            body = changed
    return body


class ChatCompletionsAdapter:
    """Round trips over `/chat/completions`, streamed or whole.

    A request the server refuses for a feature that can go (stream options,
    streaming next to tools, a sampling setting, the name of the token limit,
    the cache key) is sent again at once without it, and the model's refusal
    is learned when it holds for any request.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        transport: Transport,
        capabilities: ModelCapabilities,
        settings: RequestSettings,
        tool_set: ToolSet,
        budget: Budget,
        *,
        on_request: Callable[[], None],
        on_usage: Callable[[dict[str, Any]], None],
        fit: RequestFit | None = None,
    ) -> None:
        """Prepare the renderer for a run of rounds.

        `on_request` hears of every request sent, `on_usage` of the tokens
        each answer reports. With `fit`, each request is fitted into the
        model's context window.
        """
        self._transport = transport
        self._capabilities = capabilities
        self._settings = settings
        self._budget = budget
        self._on_request = on_request
        self._on_usage = on_usage
        self._fit = fit
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
        messages = await self._renderer.async_render(chat_log.content, instructions)
        if self._fit is not None:
            messages = self._fit.messages(chat_items(messages), self.tool_set.tools)
        body: dict[str, Any] = {"model": self._settings.model, "messages": messages}
        if self.tool_set.tools:
            body["tools"] = self.tool_set.tools
            # The default where tools are offered; some servers only consider
            # tools when it is said.
            body["tool_choice"] = "auto"
        body.update(self._settings.body())
        if response_format:
            body["response_format"] = response_format
        if self._fit is None:
            return body
        return self._fit.limited(body, self._settings.limit_key)

    def _refitted(
        self, body: dict[str, Any], err: ContextOverflowError, fit: RequestFit
    ) -> dict[str, Any]:
        """Return the body fitted again after an overflow, as the model takes it."""
        refitted = fit.limited(fit.after_overflow(body, err), self._settings.limit_key)
        return shaped_body(refitted, self._capabilities, stream=False)

    async def async_stream(
        self, chat_log: conversation.ChatLog, body: dict[str, Any]
    ) -> AsyncIterator[Delta]:
        """Send the request and yield the answer as chat log deltas.

        An empty streamed answer next to tools (a gateway's rendering of a
        server that cannot stream when it may choose a tool) is asked again
        unstreamed; when that answers, the model's refusal is learned. So is
        a stream that ends in a tool call the server could not parse, unlearned.
        """
        yield {"role": "assistant"}
        body = shaped_body(body, self._capabilities, self._settings.stream)
        said, learn = False, True
        try:
            async for delta in self._async_answer(chat_log, body):
                said = said or _says_something(delta)
                yield delta
        except RequestRejectedError as err:
            streamed = body.get("stream") and err.feature is Feature.STREAM_WITH_TOOLS
            if said or not streamed:
                raise
            learn = False
        if said or not (body.get("stream") and body.get("tools")):
            return
        LOGGER.debug("Empty streamed answer next to tools; asking unstreamed")
        unstreamed = without_feature(body, Feature.STREAM_WITH_TOOLS) or body
        async for delta in self._async_answer(chat_log, unstreamed):
            if _says_something(delta) and not said:
                said = True
                if learn:
                    self._capabilities.learn_refused(
                        Feature.STREAM_WITH_TOOLS,
                        "an empty stream, answered unstreamed",
                    )
            yield delta

    async def _async_answer(
        self, chat_log: conversation.ChatLog, body: dict[str, Any]
    ) -> AsyncIterator[Delta]:
        """Send one request and yield its answer's deltas; trace its usage.

        An overflow a gateway tells as a stream event before the answer says
        anything is taken as one told by the status: fitted and sent again.
        """
        while True:
            parser = ChatStreamParser(
                self.tool_set.from_wire,
                short_call_ids=self._settings.short_tool_call_ids,
                structured="response_format" in body,
            )
            said = False
            try:
                async with self._async_open(body) as (chunks, streamed):
                    async for delta in async_read_answer(
                        parser, chunks, streamed=streamed
                    ):
                        said = said or _says_something(delta)
                        yield delta
            except ContextOverflowError as err:
                if said or self._fit is None:
                    raise
                body = self._refitted(body, err, self._fit)
            else:
                return
            finally:
                observe_usage(chat_log, parser.usage, self._on_usage, self._fit)

    async def async_complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send the request unstreamed and return the chat completion as JSON."""
        async with self._async_open(
            shaped_body(body, self._capabilities, stream=False)
        ) as (chunks, _):
            raw = await async_read_body(chunks)
        answer = parse_json(raw)
        if not isinstance(answer, dict):
            raise MalformedAnswerError(part="the answer")
        if isinstance(usage := answer.get("usage"), dict):
            self._on_usage(usage)
        return answer

    @asynccontextmanager
    async def _async_open(
        self, body: dict[str, Any]
    ) -> AsyncIterator[tuple[AsyncIterator[bytes], bool]]:
        """Open the answer, dropping each feature the server refuses that can go.

        Gives the answer's bytes and whether it is streamed.
        """
        async with AsyncExitStack() as stack:
            while True:
                self._on_request()
                try:
                    chunks = await self._async_attempt(stack, body)
                    break
                except RequestRejectedError as err:
                    body = self._without_refused(body, err)
                except ContextOverflowError as err:
                    if self._fit is None:
                        raise
                    body = self._refitted(body, err, self._fit)
            yield chunks, bool(body.get("stream"))

    async def _async_attempt(
        self, stack: AsyncExitStack, body: dict[str, Any]
    ) -> AsyncIterator[bytes]:
        """Send the request; return its body, whose closing `stack` takes on.

        A stream next to tools that ends before its first byte (llama-cpp-python
        when it may choose a tool) is a refusal of streaming with tools.
        """
        async with AsyncExitStack() as attempt:
            opened = await attempt.enter_async_context(
                self._transport.async_open(
                    "POST",
                    "/chat/completions",
                    budget=self._budget,
                    body=body,
                    sent=body_features(body),
                )
            )
            chunks = opened.aiter_bytes()
            first = await anext(chunks, None)
            if first is None and body.get("stream") and body.get("tools"):
                raise RequestRejectedError(
                    "the stream ended before it began",
                    Feature.STREAM_WITH_TOOLS,
                    general=True,
                )
            stack.push_async_exit(attempt.pop_all())
        return _prepended(first, chunks)

    def _without_refused(
        self, body: dict[str, Any], err: RequestRejectedError
    ) -> dict[str, Any]:
        """Return the body without the feature the server refused; else raise."""
        changed = without_feature(body, err.feature) if err.feature else None
        if changed is None or changed == body:
            raise err
        LOGGER.debug("Sending again without %s: %s", err.feature, err.server_message)
        if err.general and err.feature is not None:
            self._capabilities.learn_refused(err.feature, err.lesson_source)
        return changed


async def _prepended(
    first: bytes | None, rest: AsyncIterator[bytes]
) -> AsyncIterator[bytes]:
    """Yield the first chunk of a body read ahead, then the rest."""
    if first is not None:
        yield first
    async for chunk in rest:
        yield chunk


def _says_something(delta: Delta) -> bool:
    """Tell whether a delta holds words, thinking or tool calls."""
    return bool(
        delta.get("content") or delta.get("thinking_content") or delta.get("tool_calls")
    )
