"""What we know about a server and each of its models, in one place.

Three sources, asked in this order of trust:

1. the preset's facts (`Provider`): what a hosted service is known to refuse
   or need, where a local server keeps its info route;
2. what the server reports (`ServerReport`, `ModelReport`): its version, and
   per model the context window, vision and tool support, from `/models` or
   the server's native info route (see server_info.py), and the day it will
   shut the model down (see model_lifecycle.py);
3. what was learned from rejections (`Lessons`): a request feature the model
   refused in general, or one it proved to handle, each with its date and
   source, holding for a while only (lessons.py).

Every path asks `Capabilities.model(name)`. Lessons that enable a fallback are
kept with the entry in a `Store`; all are forgotten when the server, its
version or its model list change, and when the user asks (the entry's button).
Once the entry unloads, nothing more is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from enum import StrEnum
import hashlib
from typing import Any, Final

from homeassistant.core import HomeAssistant
from homeassistant.helpers.storage import Store

from .const import DOMAIN, LOGGER
from .lessons import (
    BLOCKING_LIFETIME,
    FALLBACK_LIFETIME,
    WINDOW_LIFETIME,
    Lesson,
    Lessons,
    holding,
)
from .model_lifecycle import OPENAI_SHUTDOWNS


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
    # Messages of the system role, which some chat templates drop without a
    # word (llama-cpp-python's gemma format): the system prompt then goes at
    # the start of the first user message, as Gemma's own template puts it.
    SYSTEM_MESSAGES = "system_messages"
    DECISIONS = "decisions"
    # The Responses API's route, and what only it takes.
    RESPONSES_API = "responses_api"
    REASONING = "reasoning"
    REASONING_SUMMARY = "reasoning_summary"
    VERBOSITY = "verbosity"
    SERVICE_TIER = "service_tier"
    WEB_SEARCH = "web_search"
    CODE_INTERPRETER = "code_interpreter"
    IMAGE_GENERATION = "image_generation"
    # Transcript events from the transcription route.
    TRANSCRIPT_STREAM = "transcript_stream"
    # The speech route's optional fields.
    SPEECH_SPEED = "speech_speed"
    SPEECH_INSTRUCTIONS = "speech_instructions"
    # The Images API's routes: drawing, and editing attached images.
    IMAGES_GENERATIONS = "images_generations"
    IMAGES_EDITS = "images_edits"


# The ways of asking for JSON, strongest first (see structured.py).
RESPONSE_FORMATS: Final = (
    Feature.STRICT_SCHEMA,
    Feature.JSON_SCHEMA,
    Feature.JSON_OBJECT,
)


# Routes of the server, not of one model: a refusal holds for every model.
SERVER_ROUTES: Final = frozenset({Feature.DECISIONS})
# Where the lessons about the whole server are kept, beside those of models.
SERVER_LESSONS: Final = "*"


# Tools the provider runs itself, offered over the Responses API.
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


def api_setting(value: Any) -> WireApi:
    """Return an entry's saved API setting; automatic when unset or unknown."""
    return WireApi(str(value)) if value in WireApi else WireApi.AUTOMATIC


class ServerKind(StrEnum):
    """Server software whose native info route we know."""

    LLAMA_CPP = "llama_cpp"
    OLLAMA = "ollama"
    VLLM = "vllm"
    LM_STUDIO = "lm_studio"


@dataclass(frozen=True, slots=True)
class Provider:
    """A preset: where a server lives and what is known about it up front."""

    name: str
    base_url: str
    api_key_required: bool
    recommended_model: str | None = None
    local: bool = False
    # Request features the service refuses whatever the model.
    refuses: frozenset[Feature] = frozenset({Feature.PROMPT_CACHE_KEY})
    # Mistral only accepts tool call ids of exactly nine letters or digits.
    short_tool_call_ids: bool = False
    # OpenAI's Decisions API may be there (OpenAI, Azure, or a proxy to them).
    decisions: bool = False
    # The server software, when the preset names it.
    kind: ServerKind | None = None
    # Evaluation questions asked at once per entry.
    concurrency: int = 4
    # How a server of the user's own is made to take connections from the
    # network: the connect step's hint (commands read the same in every language).
    listen_command: str | None = None

    @property
    def asks_for_resource(self) -> bool:
        """Tell whether the preset's URL holds a placeholder for the user's own."""
        return URL_PLACEHOLDER in self.base_url.lower()

    # The automatic API setting takes the Responses API.
    responses: bool = False
    # The provider-run tools its Responses API runs.
    provider_tools: frozenset[Feature] = frozenset()
    # Its Responses API takes a service tier (flex or priority processing).
    service_tiers: bool = False
    # Shutdown dates the provider announced, by model (model_lifecycle.py).
    shutdowns: Mapping[str, date] = field(default_factory=dict, compare=False)
    # Requests may name only models the server lists.
    lists_every_model: bool = True
    # The speech-to-text and text-to-speech models a new voice subentry
    # starts from where the server lists no evident one.
    transcription_model: str | None = None
    speech_model: str | None = None


PROVIDER_CUSTOM: Final = "custom"
# Placeholder left in a preset's URL for the user to replace (Azure).
URL_PLACEHOLDER: Final = "your-resource"

PROVIDERS: Final[dict[str, Provider]] = {
    "openai": Provider(
        "OpenAI",
        "https://api.openai.com/v1",
        api_key_required=True,
        recommended_model="gpt-4o-mini",
        refuses=frozenset(),
        decisions=True,
        responses=True,
        provider_tools=frozenset(PROVIDER_TOOLS),
        service_tiers=True,
        shutdowns=OPENAI_SHUTDOWNS,
        transcription_model="gpt-4o-mini-transcribe",
        speech_model="gpt-4o-mini-tts",
    ),
    "azure": Provider(
        "Azure OpenAI",
        "https://YOUR-RESOURCE.openai.azure.com/openai/v1",
        api_key_required=True,
        decisions=True,
        responses=True,
        provider_tools=frozenset({Feature.CODE_INTERPRETER, Feature.IMAGE_GENERATION}),
        # Requests name a deployment, which the models list need not show.
        lists_every_model=False,
    ),
    "openrouter": Provider(
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        api_key_required=True,
        recommended_model="openai/gpt-4o-mini",
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
        # Mistral reports usage in its last chunk unasked.
        refuses=frozenset({Feature.PROMPT_CACHE_KEY, Feature.STREAM_OPTIONS}),
        short_tool_call_ids=True,
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
        "Ollama",
        "http://localhost:11434/v1",
        api_key_required=False,
        local=True,
        kind=ServerKind.OLLAMA,
        concurrency=1,
        listen_command="OLLAMA_HOST=0.0.0.0",
    ),
    "lm_studio": Provider(
        "LM Studio",
        "http://localhost:1234/v1",
        api_key_required=False,
        local=True,
        kind=ServerKind.LM_STUDIO,
        concurrency=1,
        listen_command="lms server start --bind 0.0.0.0",
    ),
    "vllm": Provider(
        "vLLM",
        "http://localhost:8000/v1",
        api_key_required=False,
        local=True,
        kind=ServerKind.VLLM,
        concurrency=2,
        listen_command="vllm serve MODEL --host 0.0.0.0",
    ),
    "llama_cpp": Provider(
        "llama.cpp server",
        "http://localhost:8080/v1",
        api_key_required=False,
        local=True,
        kind=ServerKind.LLAMA_CPP,
        concurrency=1,
        listen_command="llama-server --host 0.0.0.0",
    ),
    "localai": Provider(
        "LocalAI",
        "http://localhost:8080/v1",
        api_key_required=False,
        local=True,
        concurrency=1,
        listen_command="local-ai run --address 0.0.0.0:8080",
    ),
    "litellm": Provider(
        "LiteLLM proxy",
        "http://localhost:4000/v1",
        api_key_required=False,
        listen_command="litellm --host 0.0.0.0",
    ),
    # A custom server may be a proxy to OpenAI.
    PROVIDER_CUSTOM: Provider(
        "OpenAI-compatible server",
        "",
        api_key_required=False,
        decisions=True,
        concurrency=2,
        provider_tools=frozenset(PROVIDER_TOOLS),
        service_tiers=True,
    ),
}


def provider_for(key: str | None) -> Provider:
    """Return the preset of an entry; custom for a missing or unknown key."""
    return PROVIDERS.get(key or PROVIDER_CUSTOM, PROVIDERS[PROVIDER_CUSTOM])


def _base_name(model: str) -> str:
    """Return a model id without its vendor prefix, in lower case."""
    return model.lower().rsplit("/", 1)[-1]


def is_reasoning_model(model: str) -> bool:
    """Tell whether a model is one of OpenAI's reasoning models, by its name."""
    name = _base_name(model)
    # gpt-5-chat is the non-reasoning chat variant of the family.
    return name.startswith(("o1", "o3", "o4", "gpt-5")) and not name.startswith(
        "gpt-5-chat"
    )


def takes_reasoning_effort(model: str) -> bool:
    """Tell whether a model takes a reasoning effort, by its name."""
    return is_reasoning_model(model) or _base_name(model).startswith("gpt-oss")


def takes_verbosity(model: str) -> bool:
    """Tell whether a model takes a verbosity (the GPT-5 reasoning family)."""
    return is_reasoning_model(model) and _base_name(model).startswith("gpt-5")


# OpenAI's service tiers by model family; "auto" follows the project's setting
# and "default" is standard processing.
_PRIORITY_FAMILIES: Final = ("gpt-5", "gpt-4.1", "gpt-4o", "o3", "o4-mini")
_FLEX_FAMILIES: Final = ("gpt-5", "o3", "o4-mini")
# Variants processed at standard speed and price only.
_STANDARD_ONLY: Final = ("-chat", "-pro", "deep-research", "o3-mini", "codex-mini")
_NO_FLEX: Final = ("-codex", "gpt-5.3")


def service_tiers(model: str) -> tuple[str, ...]:
    """Return the service tiers an OpenAI model takes, by its name; () if none.

    Flex processing is cheaper and slower, priority processing faster and
    dearer; each is offered for some model families only.
    """
    name = _base_name(model)
    if not name.startswith(_PRIORITY_FAMILIES) or any(
        variant in name for variant in _STANDARD_ONLY
    ):
        return ()
    tiers = ["auto"]
    if name.startswith(_FLEX_FAMILIES) and not any(part in name for part in _NO_FLEX):
        tiers.append("flex")
    tiers.append("default")
    if not name.startswith("gpt-5-nano"):
        tiers.append("priority")
    return tuple(tiers)


@dataclass(frozen=True, slots=True)
class ModelReport:
    """What the server says about one model; None where it says nothing."""

    context_window: int | None = None
    vision: bool | None = None
    tools: bool | None = None
    # The day the server will shut the model down.
    shutdown: date | None = None


@dataclass(frozen=True, slots=True)
class ServerReport:
    """What the server says about itself and its models."""

    kind: ServerKind | None = None
    version: str | None = None
    models: dict[str, ModelReport] = field(default_factory=dict)


# Lessons that only refuse: without what the model refused, nothing can go out.
BLOCKING: Final = frozenset(
    {
        Feature.TOOLS,
        Feature.IMAGE_INPUT,
        Feature.FILE_INPUT,
        Feature.IMAGES_GENERATIONS,
        Feature.IMAGES_EDITS,
    }
)


def lifetime(feature: Feature) -> timedelta:
    """Return how long a lesson about a feature holds before it is asked again."""
    return BLOCKING_LIFETIME if feature in BLOCKING else FALLBACK_LIFETIME


def read_lessons(data: Any) -> Lessons[Feature]:
    """Return a model's lessons from their stored form, skipping what is unknown."""
    if not isinstance(data, dict):
        return Lessons()
    window = _window(data.get("context_window"))
    return Lessons(
        refused=_lessons(data.get("refused")),
        proven=_lessons(data.get("proven")),
        context_window=window,
        reported_window=_window(data.get("reported_window")),
        window=Lesson.from_dict(data.get("window"), WINDOW_LIFETIME)
        if window
        else None,
    )


def _window(value: Any) -> int | None:
    """Return a stored window, or None where it is no positive integer."""
    return value if isinstance(value, int) and value > 0 else None


def _lessons(values: Any) -> dict[Feature, Lesson]:
    """Return the stored lessons that still hold and outlast a reload.

    An earlier version stored a list of names without dates: those count from
    now, so the fallbacks they enable stay until they are asked again.
    """
    if isinstance(values, list):
        values = dict.fromkeys(v for v in values if isinstance(v, str))
    if not isinstance(values, dict):
        return {}
    known = {feature.value for feature in Feature} - set(BLOCKING)
    return holding(
        {
            Feature(name): Lesson.from_dict(data, lifetime(Feature(name)))
            for name, data in values.items()
            if name in known
        }
    )


class ModelCapabilities:
    """The view of one model that every request path asks."""

    def __init__(
        self,
        model: str,
        provider: Provider,
        report: ModelReport,
        lessons: Lessons[Feature],
        on_learn: Callable[[], None],
        server: Lessons[Feature] | None = None,
        kind: ServerKind | None = None,
    ) -> None:
        """Combine the preset, the server's report and the lessons.

        `server` holds what the whole server taught (SERVER_ROUTES); `kind` is
        the server software, as reported or else as the preset names it.
        """
        self.model = model
        self.provider = provider
        self.kind = kind or provider.kind
        self.report = report
        self.lessons = lessons
        self._on_learn = on_learn
        self._server = server if server is not None else lessons

    @property
    def reasoning(self) -> bool:
        """Tell whether the model reasons first (no sampling settings, no logprobs)."""
        return is_reasoning_model(self.model)

    @property
    def context_window(self) -> int | None:
        """Return the model's context window in tokens, if known.

        The window an overflow error named holds while the server reports what
        it reported then. A different report is newer (the model was loaded
        again with another context) and holds instead, until an overflow
        error teaches again; so each report costs one overflow at most.
        """
        lessons, reported = self.lessons, self.report.context_window
        if lessons.context_window and lessons.reported_window == reported:
            return lessons.context_window
        return reported

    def refuses(self, feature: Feature) -> bool:
        """Tell whether a request with this feature is known to be refused."""
        if feature in self.provider.refuses or self.lessons.refuses(feature):
            return True
        if feature in SERVER_ROUTES and self._server.refuses(feature):
            return True
        if feature is Feature.STRICT_SCHEMA:
            # No strict mode where there is no JSON schema at all.
            return self.refuses(Feature.JSON_SCHEMA)
        if feature is Feature.TOOLS:
            return self.report.tools is False
        if feature is Feature.IMAGE_INPUT:
            return self.report.vision is False
        return self._refuses_by_nature(feature)

    def _refuses_by_nature(self, feature: Feature) -> bool:
        """Tell whether the preset or the model's kind rule a feature out."""
        if feature is Feature.DECISIONS:
            return not self.provider.decisions
        if feature in PROVIDER_TOOLS:
            return feature not in self.provider.provider_tools
        if feature is Feature.REASONING_SUMMARY:
            return self.refuses(Feature.REASONING)
        if feature is Feature.REASONING:
            return not takes_reasoning_effort(self.model)
        if feature is Feature.VERBOSITY:
            return not takes_verbosity(self.model)
        if feature is Feature.SERVICE_TIER:
            return not self.provider.service_tiers or not (
                {"flex", "priority"} & set(service_tiers(self.model))
            )
        return False

    def api(self, setting: WireApi) -> WireApi:
        """Return the API requests go over, for the entry's setting.

        Automatic: the Responses API where the preset has it, unless the server
        refused its route; Chat Completions elsewhere.
        """
        if setting is not WireApi.AUTOMATIC:
            return setting
        if self.provider.responses and not self.refuses(Feature.RESPONSES_API):
            return WireApi.RESPONSES
        return WireApi.CHAT_COMPLETIONS

    def proven(self, feature: Feature) -> bool:
        """Tell whether the model answered a request with this feature."""
        return self.lessons.proved(feature)

    def structured_output_start(self) -> Feature | None:
        """Return the strongest way of asking for JSON not known to be refused.

        None: no response format at all, the schema goes in the instructions.
        """
        return next((f for f in RESPONSE_FORMATS if not self.refuses(f)), None)

    def learn_refused(self, feature: Feature, source: str) -> None:
        """Remember that the model refuses the feature in general, and what said so."""
        if self.lessons.refuses(feature):
            return
        LOGGER.debug(
            "%s refuses %s (%s); not asking for it for %s",
            self.model,
            feature,
            source,
            lifetime(feature),
        )
        lesson = Lesson.now(source, lifetime(feature))
        self.lessons.refused[feature] = lesson
        self.lessons.proven.pop(feature, None)
        if feature in SERVER_ROUTES:
            self._server.refused[feature] = lesson
        self._on_learn()

    def learn_proven(self, feature: Feature) -> None:
        """Remember that the model handled the feature."""
        if self.lessons.proved(feature) or self.lessons.refuses(feature):
            return
        self.lessons.proven[feature] = Lesson.now(
            "an answer to a request with it", lifetime(feature)
        )
        self._on_learn()

    def learn_context_window(self, tokens: int) -> None:
        """Remember the context window an overflow error named, and the report."""
        lesson = (tokens, self.report.context_window)
        if tokens > 0 and lesson != (
            self.lessons.context_window,
            self.lessons.reported_window,
        ):
            self.lessons.context_window, self.lessons.reported_window = lesson
            self.lessons.window = Lesson.now(
                "the server's context overflow error", WINDOW_LIFETIME
            )
            self._on_learn()


# Version 1 throughout: lists of names (without dates) load as learned now.
STORAGE_VERSION: Final = 1
_SAVE_DELAY: Final = 5.0
# What a model's stored lessons hold when there is something to keep.
_STORED_KINDS: Final = ("refused", "proven", "context_window")


def server_fingerprint(
    base_url: str, api_key: str | None, report: ServerReport, models: list[str]
) -> str:
    """Return what identifies the server whose lessons we keep; never the key.

    A new address, key, server version or model list gives a new fingerprint,
    and the lessons of the old one are forgotten.
    """
    text = "\n".join([base_url, api_key or "", report.version or "", *sorted(models)])
    return hashlib.sha256(text.encode()).hexdigest()


class Capabilities:
    """Everything known about one entry's server, per model, kept across restarts."""

    def __init__(
        self,
        hass: HomeAssistant,
        entry_id: str,
        provider: Provider,
        report: ServerReport,
        fingerprint: str,
    ) -> None:
        """Start with no lessons; `async_load` brings back the stored ones."""
        self.provider = provider
        self.report = report
        self.fingerprint = fingerprint
        self._lessons: dict[str, Lessons[Feature]] = {}
        self._store = _store(hass, entry_id)
        # Set once the entry unloads: a request still running writes nothing.
        self._closed = False

    def model(self, name: str) -> ModelCapabilities:
        """Return what is known about a model of this server."""
        return ModelCapabilities(
            name,
            self.provider,
            self.report.models.get(name, ModelReport()),
            self._lessons.setdefault(name, Lessons()),
            self._schedule_save,
            self._lessons.setdefault(SERVER_LESSONS, Lessons()),
            self.report.kind,
        )

    def shutdown(self, name: str) -> date | None:
        """Return the day a model shuts down: as the server, else the preset, says."""
        report = self.report.models.get(name)
        return (report and report.shutdown) or self.provider.shutdowns.get(name)

    def update_report(self, report: ServerReport, fingerprint: str) -> None:
        """Take a newer report; forget the lessons when the server changed."""
        self.report = report
        if fingerprint == self.fingerprint:
            return
        LOGGER.debug("The server changed; forgetting what was learned about it")
        self.fingerprint = fingerprint
        self.forget()

    def forget(self) -> None:
        """Forget every lesson about the server, now and in the store."""
        self._lessons.clear()
        self._schedule_save()

    async def async_load(self) -> None:
        """Bring back the lessons stored for this very server, if any."""
        stored = await self._store.async_load()
        if not isinstance(stored, dict):
            return
        if stored.get("fingerprint") != self.fingerprint:
            LOGGER.debug("The server changed; forgetting what was learned about it")
            await self._store.async_remove()
            return
        models = stored.get("models")
        if isinstance(models, dict):
            self._lessons = {
                str(name): read_lessons(data) for name, data in models.items()
            }

    async def async_close(self) -> None:
        """Write the lessons a last time, then no more (the entry is unloading).

        The save replaces one still delayed; what a request still running
        learns afterwards stays in memory.
        """
        self._closed = True
        await self._store.async_save(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        """Return the lessons that outlast a restart, in their stored form."""
        stored = {name: lessons.as_dict() for name, lessons in self._lessons.items()}
        return {
            "fingerprint": self.fingerprint,
            "models": {
                name: stored[name]
                for name in sorted(stored)
                if any(stored[name][kind] for kind in _STORED_KINDS)
            },
        }

    def diagnostics(self, models: Iterable[str]) -> dict[str, Any]:
        """Return what is known, for the given models and those with lessons."""
        learned = (name for name, lessons in self._lessons.items() if lessons.any())
        names = sorted({*models, *learned})
        return {
            "preset": {
                "name": self.provider.name,
                "refuses": sorted(self.provider.refuses),
                "decisions": self.provider.decisions,
                "kind": self.provider.kind,
            },
            "server": {"kind": self.report.kind, "version": self.report.version},
            "models": {name: self._model_diagnostics(name) for name in names},
        }

    def _model_diagnostics(self, name: str) -> dict[str, Any]:
        """Return what is known about one model, and what it adds up to."""
        model = self.model(name)
        return {
            "reported": asdict(model.report),
            "learned": model.lessons.diagnostics(),
            "refused": sorted(f for f in Feature if model.refuses(f)),
            "context_window": model.context_window,
        }

    def _schedule_save(self) -> None:
        """Save the lessons soon, once for a burst of them; never once closed."""
        if not self._closed:
            self._store.async_delay_save(self.as_dict, _SAVE_DELAY)


def _store(hass: HomeAssistant, entry_id: str) -> Store[dict[str, Any]]:
    """Return where an entry's lessons are kept."""
    return Store(hass, STORAGE_VERSION, f"{DOMAIN}.{entry_id}.capabilities")


async def async_forget(hass: HomeAssistant, entry_id: str) -> None:
    """Forget everything learned for a removed entry."""
    await _store(hass, entry_id).async_remove()
