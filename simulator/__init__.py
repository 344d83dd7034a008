"""A local, deterministic server that speaks the OpenAI wire protocol.

It is a simulator, not a model: built-in answers follow simple rules, and
tests script exact responses with `OpenAISimulator.enqueue`.
"""

from .audio import AUDIO_MODELS
from .chat_output import chunk, sse_text, sse_tool_calls
from .models import DEFAULT_MODELS
from .recording import RecordedRequest
from .responses_events import response_stream
from .responses_items import (
    code_interpreter_item,
    function_call_item,
    image_generation_item,
    message_item,
    reasoning_item,
    usage_block,
    web_search_item,
)
from .served_files import ServedFile
from .server import OpenAISimulator
from .settings import OPENAI_VOICES, SimulatorSettings
from .streams import Pause

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
