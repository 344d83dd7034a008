"""Switches that make the simulator behave like one server or another."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .native import NativeServer
from .profiles import ServerProfile, load_profile

OPENAI_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "coral",
    "echo",
    "fable",
    "nova",
    "onyx",
    "sage",
    "shimmer",
    "verse",
    "marin",
    "cedar",
)
# The provider-run tools of OpenAI's /v1/responses.
HOSTED_TOOLS = (
    "web_search",
    "web_search_preview",
    "code_interpreter",
    "image_generation",
)
# Whose words a context overflow is refused in (window.py).
type OverflowStyle = Literal[
    "openai", "openai_responses", "vllm", "llama_cpp", "lm_studio", "litellm"
]


@dataclass(slots=True)
class SimulatorSettings:
    """Switches that make the simulator behave like one server or another.

    The defaults describe a friendly OpenAI-like server.
    """

    # Kinds of tool_choice (chat_answers.tool_choice_kind) under which tools are
    # ignored and answers are text, as with chat formats without tool support.
    ignore_tools_when: frozenset[str] = frozenset()
    # A real server's recorded refusals, replayed (see profiles.py).
    profile: ServerProfile | None = None

    @classmethod
    def imitating(cls, name: str) -> SimulatorSettings:
        """Return settings that answer as the recorded server `name` did."""
        profile = load_profile(name)
        return cls(
            logprobs=profile.logprobs,
            stream_usage=profile.stream_usage,
            ignore_tools_when=profile.ignore_tools_when,
            profile=profile,
        )

    # False: GET /v1/models answers 404.
    models_endpoint: bool = True
    # False: a request with tools answers 400, as Ollama does for such models.
    supports_tools: bool = True
    # True: tools are taken and left out of the prompt, as llama-server does
    # with a chat template that has no tool format: the answer is text, and
    # the prompt's token count holds no tools.
    drops_tools: bool = False
    # "strict", "non_strict" (rejects strict: true), "json_object" (rejects
    # json_schema) or "none" (rejects any response_format).
    json_schema: Literal["strict", "non_strict", "json_object", "none"] = "strict"
    # False: logprobs and top_logprobs are ignored and `logprobs` is null.
    logprobs: bool = True
    # False: /v1/decisions answers 404.
    decisions: bool = True
    # False: /v1/images/generations and /v1/images/edits answer 404.
    images: bool = True
    # How images come back unless the request says: base64 or a URL served here.
    image_response: Literal["b64_json", "url"] = "b64_json"
    # Where built-in answers put a short reasoning text, if anywhere.
    reasoning: Literal["reasoning_content", "reasoning", "think_tags"] | None = None
    # Set: every number of a built-in JSON answer is written as this literal,
    # its bounds ignored, as llama-server's grammar lets "-7.9E3667" through.
    unbounded_number: str | None = None
    # False: a label answer's top tokens hold no label unless a json_schema
    # enum of the labels holds the answer to them, as random weights do.
    labels_in_top: bool = True
    # True: as llama.cpp, an answer a grammar holds reports the model's token
    # alternatives before the grammar (no label among them), unless asked for
    # `post_sampling_probs`: then the grammar's, as `top_probs` with a `prob`.
    logprobs_before_grammar: bool = False
    # False: a request with prompt_cache_key answers 400.
    prompt_cache_key: bool = True
    # Top-level request fields answered 400 as unknown, on chat and responses.
    refused_fields: tuple[str, ...] = ()
    # False: streams never end with a usage chunk, even when asked.
    stream_usage: bool = True
    # Set: every API request answers this status with an OpenAI-style error.
    fail_status: int | None = None
    fail_message: str = (
        "The server had an error while processing your request. Sorry about that!"
    )
    # Seconds to wait before answering each request.
    latency: float = 0.0
    # Set: chat requests over this many tokens (as `window.prompt_tokens`
    # counts them) are refused, in the words of `overflow_style`'s server.
    context_window: int | None = None
    overflow_style: OverflowStyle = "openai"
    # False: system messages are dropped from chat requests without a word, as
    # llama-cpp-python's gemma chat format does (see window.rendered).
    system_messages: bool = True
    # Seconds to wait between the chunks of a streamed chat answer.
    stream_chunk_delay: float = 0.0
    # What every transcription says; None: a sentence about the audio's length.
    transcript: str | None = None
    # True: transcription refuses the `stream` field, as strict servers do.
    transcription_stream_refused: bool = False
    # Optional speech fields ("speed", "instructions") speech refuses as unknown.
    speech_fields_refused: tuple[str, ...] = ()
    # The voices speech accepts.
    voices: tuple[str, ...] = OPENAI_VOICES
    # True: GET /v1/audio/voices lists them, as Kokoro-FastAPI does; else 404.
    voices_endpoint: bool = False
    # Seconds of synthesis per character of text before speech starts.
    speech_seconds_per_character: float = 0.0
    # False: POST /v1/responses answers 404, as servers without it do.
    responses: bool = True
    # False: reasoning summaries are refused (an organization not verified).
    reasoning_summaries: bool = True
    # The service tiers /v1/responses takes; none: the field is refused.
    service_tiers: tuple[str, ...] = ("auto", "default", "flex", "priority")
    # True: flex processing is full, and a flex request answers 429.
    flex_busy: bool = False
    # The provider-run tools /v1/responses runs; others are refused.
    hosted_tools: frozenset[str] = frozenset(HOSTED_TOOLS)
    # Set: the native info routes of this local server answer (native.py).
    native: NativeServer | None = None
