"""Constants for the OpenAI Compatible integration."""

from enum import StrEnum
import logging
from typing import Final

DOMAIN: Final = "openai_compatible"
LOGGER = logging.getLogger(__package__)

CONF_PROVIDER: Final = "provider"
CONF_BASE_URL: Final = "base_url"
# The server software a custom server was recognised as (models.server_info.ServerKind).
CONF_SERVER_KIND: Final = "server_kind"
CONF_CHAT_MODEL: Final = "chat_model"
CONF_IMAGE_MODEL: Final = "image_model"
CONF_RECOMMENDED: Final = "recommended"
CONF_MAX_TOKENS: Final = "max_tokens"
CONF_TEMPERATURE: Final = "temperature"
CONF_TOP_P: Final = "top_p"
CONF_STREAMING: Final = "streaming"
# Agents: earlier turns kept at most (none: all that fit); the window if unreported.
CONF_HISTORY_TURNS: Final = "history_turns"
CONF_CONTEXT_WINDOW: Final = "context_window"
CONF_FALLBACK: Final = "fallback"
# Advanced: fields merged into every request, and the thinking switch.
CONF_EXTRA_FIELDS: Final = "extra_fields"
CONF_THINKING: Final = "thinking"

SUBENTRY_CONVERSATION: Final = "conversation"
SUBENTRY_AI_TASK: Final = "ai_task_data"
SUBENTRY_STT: Final = "stt"
SUBENTRY_TTS: Final = "tts"

DEFAULT_CONVERSATION_NAME: Final = "OpenAI Compatible conversation"
DEFAULT_AI_TASK_NAME: Final = "OpenAI Compatible AI task"

CONF_AUDIO_MODEL: Final = "audio_model"
CONF_HINT_NAMES: Final = "hint_names"
CONF_VOICE: Final = "voice"
CONF_SPEED: Final = "speed"
CONF_INSTRUCTIONS: Final = "instructions"
CONF_AUDIO_FORMAT: Final = "audio_format"
DEFAULT_AUDIO_FORMAT: Final = "mp3"

# Agents: the tools offered (none: all, new ones too), on demand, calls per turn.
CONF_TOOLS: Final = "tools"
CONF_TOOLS_ON_DEMAND: Final = "tools_on_demand"
CONF_MAX_TOOL_CALLS: Final = "max_tool_calls"
# A done intent answered with Home Assistant's sentence, no second round (unset: local).
CONF_ONE_ROUND: Final = "one_round_answers"
# Examples of calls after Home Assistant's instructions (unset: local).
CONF_CALL_EXAMPLES: Final = "call_examples"

# Entry option: the wire API (models.capabilities.WireApi); automatic when unset.
CONF_API: Final = "api"

# Entry option: seconds one round trip with the model may take, answer included.
CONF_TIMEOUT: Final = "timeout"
# Enough for a small local model on a CPU to write a long answer.
DEFAULT_TIMEOUT_SECONDS: Final = 300.0
VALIDATION_TIMEOUT_SECONDS: Final = 10.0

MAX_TOOL_ROUNDS_CONVERSATION: Final = 10
MAX_TOOL_ROUNDS_AI_TASK: Final = 20
RECOMMENDED_MAX_TOKENS: Final = 3000
RECOMMENDED_TEMPERATURE: Final = 1.0
RECOMMENDED_TOP_P: Final = 1.0


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

PROVIDER_TOOLS: Final = (
    Feature.WEB_SEARCH,
    Feature.CODE_INTERPRETER,
    Feature.IMAGE_GENERATION,
)
