"""What a request may ask for: the API it goes over, the features a server may refuse."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final


class Feature(StrEnum):
    """A part of a request that a server or one of its models may refuse."""

    STRICT_SCHEMA = "strict_schema"
    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    # A schema next to json_object, which llama.cpp's servers constrain to.
    JSON_OBJECT_SCHEMA = "json_object_schema"
    LOGPROBS = "logprobs"
    STREAM_OPTIONS = "stream_options"
    TOOLS = "tools"
    TOOL_CHOICE = "tool_choice"
    STREAM_WITH_TOOLS = "stream_with_tools"
    MAX_COMPLETION_TOKENS = "max_completion_tokens"
    MAX_TOKENS = "max_tokens"
    SAMPLING = "sampling"
    PROMPT_CACHE_KEY = "prompt_cache_key"
    IMAGE_INPUT = "image_input"
    FILE_INPUT = "file_input"
    # Some chat templates drop system messages unread (llama-cpp-python's gemma):
    # the system prompt then opens the first user message, as Gemma's own does.
    SYSTEM_MESSAGES = "system_messages"
    # Thinking given back (llama.cpp, vLLM, DeepSeek): a plan lasts across a tool call.
    REASONING_CONTENT = "reasoning_content"
    DECISIONS = "decisions"
    RESPONSES_API = "responses_api"
    REASONING = "reasoning"
    REASONING_SUMMARY = "reasoning_summary"
    VERBOSITY = "verbosity"
    SERVICE_TIER = "service_tier"
    WEB_SEARCH = "web_search"
    CODE_INTERPRETER = "code_interpreter"
    IMAGE_GENERATION = "image_generation"
    TRANSCRIPT_STREAM = "transcript_stream"
    SPEECH_SPEED = "speech_speed"
    SPEECH_INSTRUCTIONS = "speech_instructions"
    IMAGES_GENERATIONS = "images_generations"
    IMAGES_EDITS = "images_edits"


# The ways of asking for JSON, strongest first (see structured/rungs.py).
RESPONSE_FORMATS: Final = (
    Feature.STRICT_SCHEMA,
    Feature.JSON_SCHEMA,
    Feature.JSON_OBJECT,
)

# Routes of the server, not of one model: a refusal holds for every model.
SERVER_ROUTES: Final = frozenset({Feature.DECISIONS})

PROVIDER_TOOLS: Final = (
    Feature.WEB_SEARCH,
    Feature.CODE_INTERPRETER,
    Feature.IMAGE_GENERATION,
)


class WireApi(StrEnum):
    """The API requests go over; automatic lets the preset decide."""

    CHAT_COMPLETIONS = "chat_completions"
    RESPONSES = "responses"
    AUTOMATIC = "automatic"


def saved_choice[E: StrEnum](choices: type[E], value: Any, default: E) -> E:
    """Return a saved setting as one of its choices; the default when unknown."""
    return choices(str(value)) if value in choices else default


def api_setting(value: Any) -> WireApi:
    """Return an entry's saved API setting; automatic when unset or unknown."""
    return saved_choice(WireApi, value, WireApi.AUTOMATIC)
