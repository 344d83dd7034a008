"""A local, deterministic server that speaks the OpenAI wire protocol.

It is a simulator, not a model: built-in answers follow simple rules, and
tests script exact responses with `OpenAISimulator.enqueue`.
"""

from .audio import AUDIO_MODELS, OPENAI_VOICES
from .chat import chunk, sse_text, sse_tool_calls
from .responses_output import (
    code_interpreter_item,
    function_call_item,
    image_generation_item,
    message_item,
    reasoning_item,
    response_stream,
    usage_block,
    web_search_item,
)
from .server import (
    DEFAULT_MODELS,
    OpenAISimulator,
    Pause,
    RecordedRequest,
    ServedFile,
    SimulatorSettings,
)

__all__ = [
    "AUDIO_MODELS",
    "DEFAULT_MODELS",
    "OPENAI_VOICES",
    "OpenAISimulator",
    "Pause",
    "RecordedRequest",
    "ServedFile",
    "SimulatorSettings",
    "chunk",
    "code_interpreter_item",
    "function_call_item",
    "image_generation_item",
    "message_item",
    "reasoning_item",
    "response_stream",
    "sse_text",
    "sse_tool_calls",
    "usage_block",
    "web_search_item",
]
