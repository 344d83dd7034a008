"""Constants for the OpenAI Compatible integration."""

from dataclasses import dataclass
import logging
from typing import Final

DOMAIN: Final = "openai_compatible"
LOGGER = logging.getLogger(__package__)

CONF_PROVIDER: Final = "provider"
CONF_BASE_URL: Final = "base_url"
CONF_CHAT_MODEL: Final = "chat_model"
CONF_IMAGE_MODEL: Final = "image_model"
CONF_RECOMMENDED: Final = "recommended"
CONF_MAX_TOKENS: Final = "max_tokens"
CONF_TEMPERATURE: Final = "temperature"
CONF_TOP_P: Final = "top_p"
CONF_STREAMING: Final = "streaming"

SUBENTRY_CONVERSATION: Final = "conversation"
SUBENTRY_AI_TASK: Final = "ai_task_data"

DEFAULT_CONVERSATION_NAME: Final = "OpenAI Compatible conversation"
DEFAULT_AI_TASK_NAME: Final = "OpenAI Compatible AI task"

# Round limits of the tool loop.
MAX_TOOL_ROUNDS_CONVERSATION: Final = 10
MAX_TOOL_ROUNDS_AI_TASK: Final = 20

TIMEOUT_SECONDS: Final = 120.0
# A whole (non-streamed) answer arrives only once the model has finished.
WHOLE_ANSWER_TIMEOUT_SECONDS: Final = 600.0
VALIDATION_TIMEOUT_SECONDS: Final = 10.0


@dataclass(frozen=True, slots=True)
class Provider:
    """A known server: where it lives and what suits it."""

    name: str
    base_url: str
    api_key_required: bool
    recommended_model: str | None = None
    # OpenAI's own API takes prompt_cache_key; most others reject unknown fields.
    accepts_prompt_cache_key: bool = False
    # Mistral refuses stream_options (it reports usage in its last chunk anyway).
    accepts_stream_options: bool = True
    local: bool = False


PROVIDER_CUSTOM: Final = "custom"

PROVIDERS: Final[dict[str, Provider]] = {
    "openai": Provider(
        "OpenAI",
        "https://api.openai.com/v1",
        api_key_required=True,
        recommended_model="gpt-5-mini",
        accepts_prompt_cache_key=True,
    ),
    "azure": Provider(
        "Azure OpenAI",
        "https://YOUR-RESOURCE.openai.azure.com/openai/v1",
        api_key_required=True,
    ),
    "openrouter": Provider(
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        api_key_required=True,
        recommended_model="openai/gpt-5-mini",
    ),
    "groq": Provider(
        "Groq",
        "https://api.groq.com/openai/v1",
        api_key_required=True,
        recommended_model="llama-3.3-70b-versatile",
    ),
    "mistral": Provider(
        "Mistral",
        "https://api.mistral.ai/v1",
        api_key_required=True,
        recommended_model="mistral-medium-latest",
        accepts_stream_options=False,
    ),
    "deepseek": Provider(
        "DeepSeek",
        "https://api.deepseek.com/v1",
        api_key_required=True,
        recommended_model="deepseek-chat",
    ),
    "xai": Provider(
        "xAI",
        "https://api.x.ai/v1",
        api_key_required=True,
        recommended_model="grok-4-fast",
    ),
    "together": Provider(
        "Together",
        "https://api.together.xyz/v1",
        api_key_required=True,
        recommended_model="meta-llama/Llama-3.3-70B-Instruct-Turbo",
    ),
    "gemini": Provider(
        "Gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        api_key_required=True,
        recommended_model="gemini-2.5-flash",
    ),
    "ollama": Provider(
        "Ollama", "http://localhost:11434/v1", api_key_required=False, local=True
    ),
    "lm_studio": Provider(
        "LM Studio", "http://localhost:1234/v1", api_key_required=False, local=True
    ),
    "vllm": Provider(
        "vLLM", "http://localhost:8000/v1", api_key_required=False, local=True
    ),
    "llama_cpp": Provider(
        "llama.cpp server",
        "http://localhost:8080/v1",
        api_key_required=False,
        local=True,
    ),
    "localai": Provider(
        "LocalAI", "http://localhost:8080/v1", api_key_required=False, local=True
    ),
    "litellm": Provider(
        "LiteLLM proxy", "http://localhost:4000/v1", api_key_required=False
    ),
    PROVIDER_CUSTOM: Provider("Custom", "", api_key_required=False),
}

RECOMMENDED_MAX_TOKENS: Final = 3000
RECOMMENDED_TEMPERATURE: Final = 1.0
RECOMMENDED_TOP_P: Final = 1.0
