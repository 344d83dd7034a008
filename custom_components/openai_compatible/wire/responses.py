"""The Responses API dialect: chat log to input items, events to deltas.

Stateless: the whole conversation goes each round, reasoning encrypted, so the
prefix stays for the prompt cache; nothing is stored unless the subentry opts in.
The agent's own answers go back as the server gave them; any other's as
messages and calls: another server cannot read the first one's reasoning.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps

from ..const import PROVIDER_TOOLS, Feature
from ..media.attachments import LoadedFile
from ..models.capabilities import ModelCapabilities
from ..models.providers import ResponsesOptions
from ..net.shapes import (
    InputPart,
    JsonObject,
    ResponseFormat,
    ResponsesBody,
    ResponsesItem,
    TextParams,
)
from ..net.transport import RequestSettings, ToolSet, without_keys
from ..window.prompt_fit import CallRef, ItemKind, PromptItem
from .chat_completions import DROPPED_KEYS, TYPE_FEATURES, Dialect, shared_features
from .responses_stream import ResponsesReplay, ResponsesStreamParser
from .tool_calls import checked_calls, model_calls

ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"
# What the request includes of a provider-run tool's calls.
_TOOL_INCLUDES: Final = {
    "web_search": "web_search_call.action.sources",
    "code_interpreter": "code_interpreter_call.outputs",
}
_INCLUDE_FEATURES: Final = {ENCRYPTED_REASONING: Feature.REASONING} | {
    include: TYPE_FEATURES[tool] for tool, include in _TOOL_INCLUDES.items()
}
_FIELD_FEATURES: Final = dict.fromkeys(("temperature", "top_p"), Feature.SAMPLING) | {
    "prompt_cache_key": Feature.PROMPT_CACHE_KEY,
    "service_tier": Feature.SERVICE_TIER,
}


def body_features(body: ResponsesBody) -> frozenset[Feature]:
    """Return the request features a Responses body holds."""
    text = body.get("text") or {}
    features = shared_features(body, text.get("format") or {}, _FIELD_FEATURES)
    features.add(Feature.RESPONSES_API)
    if "verbosity" in text:
        features.add(Feature.VERBOSITY)
    reasoning = body.get("reasoning") or {}
    if "effort" in reasoning:
        features.add(Feature.REASONING)
    if "summary" in reasoning:
        features.add(Feature.REASONING_SUMMARY)
    features.update(
        _INCLUDE_FEATURES[value]
        for value in body.get("include") or ()
        if value in _INCLUDE_FEATURES
    )
    return frozenset(features)


def without_feature(body: ResponsesBody, feature: Feature) -> ResponsesBody | None:
    """Return the body asking the same without the feature; None if it cannot.

    What only tunes the answer can go, and a provider-run tool; a response
    format, function tools or attachments are the request itself.
    """
    if keys := DROPPED_KEYS.get(feature):
        return without_keys(body, keys)
    fields = cast("dict[str, Any]", body)
    changed: dict[str, Any]
    if feature is Feature.REASONING:
        changed = {"reasoning": None}
    elif feature is Feature.REASONING_SUMMARY:
        changed = {"reasoning": without_keys(fields.get("reasoning", {}), ("summary",))}
    elif feature is Feature.VERBOSITY:
        changed = {"text": without_keys(fields.get("text", {}), ("verbosity",))}
    elif feature in PROVIDER_TOOLS:
        kept = [
            tool
            for tool in fields.get("tools") or ()
            if TYPE_FEATURES.get(str(tool["type"])) is not feature
        ]
        changed = {"tools": kept}
    else:
        return None
    # What the request includes of what goes (encrypted reasoning, a tool's calls).
    changed["include"] = [
        value
        for value in fields.get("include") or ()
        if _INCLUDE_FEATURES.get(value) is not feature
    ]
    merged = {**fields, **changed}
    return cast(
        "ResponsesBody",
        {key: value for key, value in merged.items() if value or key not in changed},
    )


def responses_items(items: Iterable[ResponsesItem]) -> list[PromptItem]:
    """Return input items as prompt items, each with its kind and calls told."""
    return [_responses_item(item) for item in items]


def _responses_item(item: ResponsesItem) -> PromptItem:
    kind = item.get("type")
    if kind == "function_call_output":
        answers = str(item.get("call_id"))
        return PromptItem(ItemKind.RESULT, item, "output", answers=answers)
    summary = tuple(
        text
        for part in item.get("summary") or ()
        if isinstance(part, dict) and isinstance(text := part.get("text"), str)
    )
    if kind == "function_call":
        call = CallRef(
            item.get("call_id"), str(item.get("name")), str(item.get("arguments"))
        )
        return PromptItem(ItemKind.REPLY, item, calls=(call,), summary=summary)
    return PromptItem(ItemKind.of_role(item.get("role")), item, summary=summary)


def input_attachment(file: LoadedFile) -> InputPart:
    """Return the content part of one attachment."""
    if file.mime_type.startswith("image/"):
        return {"type": "input_image", "image_url": file.data_url, "detail": "auto"}
    return {"type": "input_file", "filename": file.name, "file_data": file.data_url}


class ResponsesDialect(Dialect[ResponsesItem, InputPart, ResponsesBody]):
    """`/responses`: input items in, a response or its events out."""

    _attachment_part = staticmethod(input_attachment)
    _text_type = "input_text"
    _message_head: Mapping[str, str] = {"type": "message"}
    route: str = "/responses"
    proves: Feature | None = Feature.RESPONSES_API
    retries_unstreamed: bool = False
    limit_key: str = "max_output_tokens"
    least_limit = 16  # OpenAI refuses a smaller limit on the answer's tokens
    stream_fields: Mapping[str, object] = {"stream": True}
    body_features = staticmethod(body_features)
    without_feature = staticmethod(without_feature)
    prompt_items = staticmethod(responses_items)

    def __init__(
        self,
        hass: HomeAssistant,
        capabilities: ModelCapabilities,
        settings: RequestSettings,
        options: ResponsesOptions,
        tool_set: ToolSet,
        agent_id: str,
    ) -> None:
        """Prepare for rounds of one agent, whose answers go back as they came."""
        super().__init__(hass, settings, tool_set)
        self._agent_id = agent_id
        # Function tools are not strict (the API's default is).
        self.tools = [
            *(
                {"type": "function", **tool["function"], "strict": False}
                for tool in tool_set.tools
            ),
            *options.provider_tools,
        ]
        self._capabilities = capabilities
        self._options = options

    def body(
        self, conversation: list[ResponsesItem], response_format: ResponseFormat | None
    ) -> ResponsesBody:
        """Return the request body around the input items."""
        settings, options = self.settings, self._options
        body: JsonObject = {"model": settings.model, "input": conversation}
        if self.tools:
            body["tools"] = self.tools
        body.update(settings.sampling())
        # The thinking switch's effort goes where this API takes it; the
        # subentry's own reasoning effort comes first.
        body.update(without_keys(settings.extra, ("reasoning_effort",)))
        reasoning: dict[str, object] = {}
        if effort := options.reasoning_effort or settings.extra.get("reasoning_effort"):
            reasoning["effort"] = effort
        if options.reasoning_summary:
            reasoning["summary"] = "auto"
        if reasoning:
            body["reasoning"] = reasoning
        if options.verbosity:
            body["text"] = {"verbosity": options.verbosity}
        include = [
            _TOOL_INCLUDES[str(tool["type"])]
            for tool in options.provider_tools
            if tool["type"] in _TOOL_INCLUDES
        ]
        if not self._capabilities.refuses(Feature.REASONING):
            include.append(ENCRYPTED_REASONING)
        if include:
            body["include"] = include
        if response_format:
            # The Chat Completions response format as `text.format`.
            kind = response_format["type"]
            schema = (
                dict(response_format["json_schema"]) if kind == "json_schema" else {}
            )
            text = cast("TextParams", body.get("text", {}))
            body["text"] = {**text, "format": {"type": kind, **schema}}
        if options.service_tier:
            body["service_tier"] = options.service_tier
        body["store"] = options.store
        return cast("ResponsesBody", body)

    def parser(self, body: ResponsesBody) -> ResponsesStreamParser:
        """Return a parser for the answer to a body."""
        return ResponsesStreamParser(
            self.tool_set.from_wire,
            own_calls=checked_calls(self.tool_set),
            remove_citations=self._options.remove_citations,
        )

    def _result(self, call_id: str, data: Any) -> ResponsesItem:
        return {
            "type": "function_call_output",
            "call_id": call_id,
            "output": json_dumps(data),
        }

    def _call_ids(
        self, content: conversation.AssistantContent, rendered: list[ResponsesItem]
    ) -> list[str]:
        return [item["call_id"] for item in rendered if item["type"] == "function_call"]

    def _assistant(self, content: conversation.AssistantContent) -> list[ResponsesItem]:
        if (
            isinstance(content.native, ResponsesReplay)
            and content.agent_id == self._agent_id
        ):
            return cast("list[ResponsesItem]", list(content.native.items))
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
