"""The shapes of what is sent, on `openai`'s types, wider where servers take more."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Required, TypedDict

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionContentPartParam,
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionStreamOptionsParam,
    )
    from openai.types.responses import (
        ResponseInputFileParam,
        ResponseInputImageParam,
        ResponseInputTextParam,
    )

# Open JSON: a schema, a tool's parameters, an answer not yet read.
type JsonObject = dict[str, object]

type ChatPart = ChatCompletionContentPartParam
type ChatTool = ChatCompletionFunctionToolParam
type ChatToolCall = ChatCompletionMessageFunctionToolCallParam
type InputPart = (
    ResponseInputTextParam | ResponseInputImageParam | ResponseInputFileParam
)


class ChatMessage(TypedDict, total=False):
    """A Chat Completions message of any role, as servers take it."""

    role: Required[str]
    content: str | list[ChatPart] | None
    tool_calls: list[ChatToolCall]
    tool_call_id: str
    name: str
    # What reasoning servers (DeepSeek, vLLM) give back of the thinking.
    reasoning_content: str


class JsonSchemaFormat(TypedDict, total=False):
    """A named JSON schema the answer follows."""

    name: Required[str]
    schema: JsonSchema
    strict: bool
    description: str


class ResponseFormat(TypedDict, total=False):
    """A Chat Completions response format; `json_object` may carry a schema."""

    type: Required[str]
    json_schema: JsonSchemaFormat
    # vLLM and llama.cpp take a schema beside `json_object`.
    schema: JsonSchema


class ChatFields(TypedDict, total=False):
    """The fields of a Chat Completions request beside the model and messages."""

    tools: list[ChatTool]
    tool_choice: str
    response_format: ResponseFormat
    stream: bool
    stream_options: ChatCompletionStreamOptionsParam
    max_tokens: int | None
    max_completion_tokens: int | None
    temperature: float
    top_p: float
    prompt_cache_key: str
    logprobs: bool
    top_logprobs: int
    # llama.cpp: probabilities after sampling, and the chain that leads to them.
    post_sampling_probs: bool
    top_k: int
    min_p: float
    seed: int
    # vLLM and llama.cpp: arguments to the model's chat template.
    chat_template_kwargs: JsonObject


class ChatBody(ChatFields, total=False):
    """A Chat Completions request body."""

    model: Required[str]
    messages: Required[list[ChatMessage]]


class ResponsesItem(TypedDict, total=False):
    """A Responses API input item: a message, a call, its output, reasoning."""

    type: Required[str]
    role: str
    content: str | list[InputPart] | list[JsonObject]
    call_id: str
    name: str
    arguments: str
    output: str
    id: str
    status: str
    summary: list[JsonObject]
    encrypted_content: str | None


class TextParams(TypedDict, total=False):
    """The `text` of a Responses body: the answer's format, its verbosity."""

    format: JsonObject
    verbosity: str


class ResponsesBody(TypedDict, total=False):
    """A Responses API request body."""

    model: Required[str]
    input: Required[list[ResponsesItem]]
    tools: list[JsonObject]
    text: TextParams
    reasoning: JsonObject
    include: list[str]
    stream: bool
    store: bool
    service_tier: str
    max_output_tokens: int
    temperature: float
    top_p: float
    prompt_cache_key: str
    top_logprobs: int


class TranscriptionBody(TypedDict, total=False):
    """The fields of an `/audio/transcriptions` form, beside the file."""

    model: Required[str]
    response_format: str
    language: str
    prompt: str
    stream: bool


class SpeechBody(TypedDict, total=False):
    """An `/audio/speech` request body."""

    model: Required[str]
    voice: str
    input: str
    response_format: str
    speed: float
    instructions: str


type WireBody = ChatBody | ResponsesBody
type WireItem = ChatMessage | ResponsesItem

# A JSON schema: open JSON, read and rewritten keyword by keyword.
type JsonSchema = dict[str, Any]
