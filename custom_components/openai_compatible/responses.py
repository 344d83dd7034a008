"""Responses API wire adapter: chat log to request, events to deltas.

The same interface as the Chat Completions adapter: `async_build_body`,
`async_stream` and `async_complete`. Requests are stateless: the whole
conversation is sent each round, reasoning items with their encrypted content,
so the request prefix stays stable for the prompt cache. Nothing is stored at
the provider (`store: false`) unless the subentry opts in.

`async_complete` takes a request in the Chat Completions form (evaluate and
the structured-output ladder build those) and gives the answer in that form.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant

from .capabilities import PROVIDER_TOOLS, Feature, ModelCapabilities
from .chat_completions import RequestSettings, ToolSet
from .const import LOGGER
from .errors import (
    ContextOverflowError,
    MalformedAnswerError,
    RequestRejectedError,
    ServerError,
)
from .prompt_items import responses_items
from .responses_render import InputRenderer, function_tools
from .responses_stream import ResponsesStreamParser, async_read_events, chat_usage
from .sse import async_read_body
from .transport import Budget, Opened, Transport, parse_json
from .window import observe_usage

if TYPE_CHECKING:
    from .window import RequestFit

# OpenAI refuses a smaller limit on the answer's tokens.
MIN_OUTPUT_TOKENS: Final = 16
ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"
OUTPUT_LOGPROBS: Final = "message.output_text.logprobs"
# The feature each provider-run tool type, and each include, stands for.
_TOOL_FEATURES: Final = {
    "web_search": Feature.WEB_SEARCH,
    "web_search_preview": Feature.WEB_SEARCH,
    "code_interpreter": Feature.CODE_INTERPRETER,
    "image_generation": Feature.IMAGE_GENERATION,
}
_INCLUDE_FEATURES: Final = {
    ENCRYPTED_REASONING: Feature.REASONING,
    OUTPUT_LOGPROBS: Feature.LOGPROBS,
    "web_search_call.action.sources": Feature.WEB_SEARCH,
    "code_interpreter_call.outputs": Feature.CODE_INTERPRETER,
}
# What the request includes of the calls of each provider-run tool.
_TOOL_INCLUDES: Final = {
    "web_search": "web_search_call.action.sources",
    "code_interpreter": "code_interpreter_call.outputs",
}
_FIELD_FEATURES: Final = {
    "temperature": Feature.SAMPLING,
    "top_p": Feature.SAMPLING,
    "prompt_cache_key": Feature.PROMPT_CACHE_KEY,
    "top_logprobs": Feature.LOGPROBS,
    "service_tier": Feature.SERVICE_TIER,
}
_PART_FEATURES: Final = {
    "input_image": Feature.IMAGE_INPUT,
    "input_file": Feature.FILE_INPUT,
}


@dataclass(frozen=True, slots=True)
class ResponsesOptions:
    """What a subentry asks of the Responses API beyond the common settings."""

    # None: the model's own default.
    reasoning_effort: str | None = None
    reasoning_summary: bool = False
    verbosity: str | None = None
    # None: the default tier, which is not sent.
    service_tier: str | None = None
    # The provider keeps the requests and answers (and shows them in its logs).
    store: bool = False
    # Provider-run tools in their wire form (see provider_tools.py).
    provider_tools: tuple[dict[str, Any], ...] = ()
    # Inline web-search citations are taken out of the spoken answer.
    remove_citations: bool = False


def settings_body(
    settings: RequestSettings,
    options: ResponsesOptions,
    capabilities: ModelCapabilities,
) -> dict[str, Any]:
    """Return the request parameters of the settings and options."""
    params: dict[str, Any] = {}
    if settings.max_tokens is not None:
        params["max_output_tokens"] = max(settings.max_tokens, MIN_OUTPUT_TOKENS)
    if not settings.reasoning_model:
        if settings.temperature is not None:
            params["temperature"] = settings.temperature
        if settings.top_p is not None:
            params["top_p"] = settings.top_p
    if settings.prompt_cache_key:
        params["prompt_cache_key"] = settings.prompt_cache_key
    reasoning: dict[str, Any] = {}
    if options.reasoning_effort:
        reasoning["effort"] = options.reasoning_effort
    if options.reasoning_summary:
        reasoning["summary"] = "auto"
    if reasoning:
        params["reasoning"] = reasoning
    if options.verbosity:
        params["text"] = {"verbosity": options.verbosity}
    include = [
        _TOOL_INCLUDES[tool["type"]]
        for tool in options.provider_tools
        if tool["type"] in _TOOL_INCLUDES
    ]
    if not capabilities.refuses(Feature.REASONING):
        # Stateless: the chain of thought goes back encrypted.
        include.append(ENCRYPTED_REASONING)
    if include:
        params["include"] = include
    return params


def handling_body(options: ResponsesOptions) -> dict[str, Any]:
    """Return how the provider is to handle the request: its tier, and storing."""
    params: dict[str, Any] = {}
    if options.service_tier:
        params["service_tier"] = options.service_tier
    params["store"] = options.store
    return params


def body_features(body: dict[str, Any]) -> frozenset[Feature]:
    """Return the request features a Responses body holds."""
    features: set[Feature] = {Feature.RESPONSES_API}
    text = body.get("text") or {}
    text_format = text.get("format") or {}
    kind = text_format.get("type")
    if kind == "json_schema":
        features.add(Feature.JSON_SCHEMA)
        if text_format.get("strict"):
            features.add(Feature.STRICT_SCHEMA)
    elif kind == "json_object":
        features.add(Feature.JSON_OBJECT)
    if "verbosity" in text:
        features.add(Feature.VERBOSITY)
    reasoning = body.get("reasoning") or {}
    if "effort" in reasoning:
        features.add(Feature.REASONING)
    if "summary" in reasoning:
        features.add(Feature.REASONING_SUMMARY)
    for tool in body.get("tools") or ():
        if tool["type"] == "function":
            features.add(Feature.TOOLS)
            if body.get("stream"):
                features.add(Feature.STREAM_WITH_TOOLS)
        elif feature := _TOOL_FEATURES.get(tool["type"]):
            features.add(feature)
    features.update(
        _INCLUDE_FEATURES[value]
        for value in body.get("include") or ()
        if value in _INCLUDE_FEATURES
    )
    features.update(feature for key, feature in _FIELD_FEATURES.items() if key in body)
    for item in body.get("input") or ():
        if isinstance(content := item.get("content"), list):
            features.update(
                _PART_FEATURES[part["type"]]
                for part in content
                if part.get("type") in _PART_FEATURES
            )
    return frozenset(features)


def without_feature(body: dict[str, Any], feature: Feature) -> dict[str, Any] | None:
    """Return the body asking the same without the feature; None if it cannot.

    What only tunes the answer can go: sampling, the cache key, reasoning
    settings, the verbosity, the service tier, streaming next to tools, and a
    provider-run tool (the model answers without it). A response format,
    function tools, log-probabilities or attachments are the request itself.
    """
    changed = dict(body)
    if feature is Feature.PROMPT_CACHE_KEY:
        changed.pop("prompt_cache_key", None)
    elif feature is Feature.SERVICE_TIER:
        changed.pop("service_tier", None)
    elif feature is Feature.SAMPLING:
        changed.pop("temperature", None)
        changed.pop("top_p", None)
    elif feature is Feature.STREAM_WITH_TOOLS:
        changed.pop("stream", None)
    elif feature is Feature.REASONING:
        changed.pop("reasoning", None)
        _drop_include(changed, ENCRYPTED_REASONING)
    elif feature is Feature.REASONING_SUMMARY:
        _drop_key(changed, "reasoning", "summary")
    elif feature is Feature.VERBOSITY:
        _drop_key(changed, "text", "verbosity")
    elif feature in PROVIDER_TOOLS:
        _drop_provider_tool(changed, feature)
    else:
        return None
    return changed


def _drop_key(body: dict[str, Any], field: str, key: str) -> None:
    """Remove a key of an object field, and the field once it is empty."""
    rest = {name: value for name, value in body.get(field, {}).items() if name != key}
    if rest:
        body[field] = rest
    else:
        body.pop(field, None)


def _drop_include(body: dict[str, Any], value: str) -> None:
    """Remove one value of `include`, and the field once it is empty."""
    rest = [item for item in body.get("include") or () if item != value]
    if rest:
        body["include"] = rest
    else:
        body.pop("include", None)


def _drop_provider_tool(body: dict[str, Any], feature: Feature) -> None:
    """Remove a provider-run tool and what the request includes of its calls."""
    tools = [
        tool
        for tool in body.get("tools") or ()
        if _TOOL_FEATURES.get(tool["type"]) is not feature
    ]
    if tools:
        body["tools"] = tools
    else:
        body.pop("tools", None)
    for value, included in _INCLUDE_FEATURES.items():
        if included is feature:
            _drop_include(body, value)


def shaped_body(
    body: dict[str, Any], capabilities: ModelCapabilities, stream: bool
) -> dict[str, Any]:
    """Return the body as the model takes it, streamed when it may be."""
    if stream:
        body = {**body, "stream": True}
    for feature in body_features(body):
        if capabilities.refuses(feature) and (
            changed := without_feature(body, feature)
        ):
            body = changed
    return body


def _refitted(
    body: dict[str, Any], err: ContextOverflowError, fit: RequestFit
) -> dict[str, Any]:
    """Return the body fitted again after an overflow, its answer limit with it."""
    return fit.limited(
        fit.after_overflow(body, err), "max_output_tokens", MIN_OUTPUT_TOKENS
    )


# --- requests and answers in the Chat Completions form ---------------------------


def responses_request(chat_body: dict[str, Any]) -> dict[str, Any]:
    """Return a Chat Completions request as the same Responses request."""
    body: dict[str, Any] = {
        "model": chat_body["model"],
        "input": [_input_message(message) for message in chat_body["messages"]],
    }
    limit = chat_body.get("max_completion_tokens", chat_body.get("max_tokens"))
    if limit is not None:
        body["max_output_tokens"] = max(limit, MIN_OUTPUT_TOKENS)
    for key in ("temperature", "top_p", "prompt_cache_key"):
        if key in chat_body:
            body[key] = chat_body[key]
    if chat_body.get("logprobs"):
        body["include"] = [OUTPUT_LOGPROBS]
        body["top_logprobs"] = chat_body.get("top_logprobs", 0)
    if text_format := responses_format(chat_body.get("response_format")):
        body["text"] = {"format": text_format}
    return body


def responses_format(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return a Chat Completions response format as `text.format`."""
    if not response_format:
        return None
    if response_format["type"] != "json_schema":
        return {"type": response_format["type"]}
    return {"type": "json_schema", **response_format["json_schema"]}


def _input_message(message: dict[str, Any]) -> dict[str, Any]:
    """Return one Chat Completions message as a Responses message item."""
    content = message["content"]
    if isinstance(content, list):
        content = [_input_part(part) for part in content]
    return {"type": "message", "role": message["role"], "content": content}


def _input_part(part: dict[str, Any]) -> dict[str, Any]:
    """Return one Chat Completions content part in the Responses form."""
    if part["type"] == "image_url":
        return {
            "type": "input_image",
            "image_url": part["image_url"]["url"],
            "detail": "auto",
        }
    if part["type"] == "file":
        return {"type": "input_file", **part["file"]}
    return {"type": "input_text", "text": part["text"]}


def chat_completion(answer: dict[str, Any]) -> dict[str, Any]:
    """Return a whole Responses answer in the form of a chat completion."""
    output = answer.get("output")
    if answer.get("status") == "failed" or not isinstance(output, list):
        error = answer.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        if message is None and output is not None:
            raise MalformedAnswerError(part="response.output")
        raise ServerError("api_error", message=str(message or "no output"))
    texts: list[str] = []
    refusal: str | None = None
    logprobs: list[Any] | None = None
    for item in output:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        for part in item.get("content") or ():
            if not isinstance(part, dict):
                raise MalformedAnswerError(part="message.content")
            if isinstance(text := part.get("text"), str):
                texts.append(text)
                if logprobs is None and isinstance(part.get("logprobs"), list):
                    logprobs = part["logprobs"]
            elif isinstance(part.get("refusal"), str):
                refusal = part["refusal"]
    details = answer.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    usage = answer.get("usage")
    return {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "".join(texts) or None,
                    "refusal": refusal,
                },
                "logprobs": {"content": logprobs} if logprobs else None,
                "finish_reason": _FINISH.get(reason, "stop"),
            }
        ],
        "usage": chat_usage(usage) if isinstance(usage, dict) else None,
    }


_FINISH: Final[dict[Any, str]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


class ResponsesAdapter:
    """Round trips over `/responses`, streamed or whole.

    A request the server refuses for a feature that can go is sent again at
    once without it, and the model's refusal is learned when it holds for any
    request.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        transport: Transport,
        capabilities: ModelCapabilities,
        settings: RequestSettings,
        options: ResponsesOptions,
        tool_set: ToolSet,
        budget: Budget,
        *,
        on_request: Callable[[], None],
        on_usage: Callable[[dict[str, Any]], None],
        fit: RequestFit | None = None,
    ) -> None:
        """Prepare the renderer for a run of rounds.

        With `fit`, each request is fitted into the model's context window.
        """
        self._fit = fit
        self._transport = transport
        self._capabilities = capabilities
        self._settings = settings
        self._options = options
        self._budget = budget
        self._on_request = on_request
        self._on_usage = on_usage
        self.tool_set = tool_set
        self._tools = [*function_tools(tool_set), *options.provider_tools]
        self._renderer = InputRenderer(hass, tool_set)

    async def async_build_body(
        self,
        chat_log: conversation.ChatLog,
        *,
        response_format: dict[str, Any] | None = None,
        instructions: tuple[conversation.UserContent, str] | None = None,
    ) -> dict[str, Any]:
        """Return the request body for the chat log as it is now."""
        items = await self._renderer.async_render(chat_log.content, instructions)
        if self._fit is not None:
            items = self._fit.messages(responses_items(items), self._tools)
        body: dict[str, Any] = {"model": self._settings.model, "input": items}
        if self._tools:
            body["tools"] = self._tools
        body.update(settings_body(self._settings, self._options, self._capabilities))
        if text_format := responses_format(response_format):
            body["text"] = {**body.get("text", {}), "format": text_format}
        body.update(handling_body(self._options))
        if self._fit is None:
            return body
        return self._fit.limited(body, "max_output_tokens", MIN_OUTPUT_TOKENS)

    async def async_stream(
        self, chat_log: conversation.ChatLog, body: dict[str, Any]
    ) -> AsyncIterator[
        conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict
    ]:
        """Send the request and yield the answer as chat log deltas.

        An overflow the stream tells before the answer gives anything is taken
        as one told by the status: fitted and sent again.
        """
        yield {"role": "assistant"}
        body = shaped_body(body, self._capabilities, self._settings.stream)
        while True:
            parser = ResponsesStreamParser(
                self.tool_set.from_wire,
                remove_citations=self._options.remove_citations,
            )
            said = False
            try:
                async with self._async_open(body) as (opened, streamed):
                    async for delta in async_read_events(
                        parser, opened.aiter_bytes(), streamed=streamed
                    ):
                        said = said or any(
                            value for key, value in delta.items() if key != "role"
                        )
                        yield delta
            except ContextOverflowError as err:
                if said or self._fit is None:
                    raise
                body = _refitted(body, err, self._fit)
            else:
                return
            finally:
                observe_usage(chat_log, parser.usage, self._on_usage, self._fit)

    async def async_complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send a request of the Chat Completions form; return a chat completion."""
        request = shaped_body(
            responses_request(body) | handling_body(self._options),
            self._capabilities,
            stream=False,
        )
        async with self._async_open(request) as (opened, _):
            raw = await async_read_body(opened.aiter_bytes())
        answer = parse_json(raw)
        if not isinstance(answer, dict):
            raise MalformedAnswerError(part="the answer")
        completion = chat_completion(answer)
        if usage := completion["usage"]:
            self._on_usage(usage)
        return completion

    @asynccontextmanager
    async def _async_open(
        self, body: dict[str, Any]
    ) -> AsyncIterator[tuple[Opened, bool]]:
        """Open the answer, dropping each feature the server refuses that can go.

        Gives the answer and whether it is streamed.
        """
        async with AsyncExitStack() as stack:
            while True:
                self._on_request()
                try:
                    opened = await stack.enter_async_context(
                        self._transport.async_open(
                            "POST",
                            "/responses",
                            budget=self._budget,
                            body=body,
                            sent=body_features(body),
                        )
                    )
                    break
                except RequestRejectedError as err:
                    body = self._without_refused(body, err)
                except ContextOverflowError as err:
                    if self._fit is None:
                        raise
                    body = _refitted(body, err, self._fit)
            self._capabilities.learn_proven(Feature.RESPONSES_API)
            yield opened, bool(body.get("stream"))

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
