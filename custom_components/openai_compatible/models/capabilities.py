"""What we know of a server and its models: preset, report, then lessons from refusals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from homeassistant.util import dt as dt_util

from ..const import LOGGER, PROVIDER_TOOLS, RESPONSE_FORMATS, Feature
from .names import (
    is_reasoning_model,
    service_tiers,
    takes_reasoning_effort,
    takes_verbosity,
)
from .providers import Provider
from .server_info import ModelReport, ServerKind, ServerReport

BLOCKING_LIFETIME: Final = timedelta(hours=1)
FALLBACK_LIFETIME: Final = timedelta(days=1)
_SOURCE_LENGTH: Final = 80
# Lessons that only refuse: without what the model refused, nothing can go out.
# They hold an hour, to ask again soon; a lesson that enables a fallback, a day.
BLOCKING: Final = frozenset(
    {
        Feature.TOOLS,
        Feature.IMAGE_INPUT,
        Feature.FILE_INPUT,
        Feature.IMAGES_GENERATIONS,
        Feature.IMAGES_EDITS,
    }
)


@dataclass(frozen=True, slots=True)
class Lesson:
    """One lesson's date, source and lifetime."""

    learned: datetime
    source: str
    lifetime: timedelta

    @classmethod
    def now(cls, source: str, lifetime: timedelta) -> Lesson:
        """Return a lesson learned now, its source on one line of a readable length."""
        line = " ".join(source.split())
        if len(line) > _SOURCE_LENGTH:
            line = line[: _SOURCE_LENGTH - 1] + "…"
        return cls(dt_util.utcnow(), line, lifetime)

    def holds(self) -> bool:
        """Tell whether the lesson is younger than its lifetime, and not dated ahead."""
        return timedelta(0) <= dt_util.utcnow() - self.learned < self.lifetime

    def diagnostics(self) -> dict[str, int | str]:
        """Return the lesson's age in whole seconds, and its source."""
        age = dt_util.utcnow() - self.learned
        return {"age_seconds": int(age.total_seconds()), "source": self.source}


@dataclass(slots=True)
class Lessons:
    """What one model taught us: features refused in general, or proven."""

    refused: dict[Feature, Lesson] = field(default_factory=dict)
    proven: dict[Feature, Lesson] = field(default_factory=dict)
    # The user's extra request fields refused, by name.
    fields: dict[str, Lesson] = field(default_factory=dict)
    # The window an overflow named (learned at `window`), and the report's then.
    context_window: int | None = None
    reported_window: int | None = None
    window: Lesson | None = None
    # The largest prompt answered; whether tools seemed dropped.
    accepted_prompt: int = 0
    tools_doubted: bool = False

    def refuses(self, feature: Feature) -> bool:
        """Tell whether a refusal of the feature was learned and still holds."""
        return feature in holding(self.refused)

    def proved(self, feature: Feature) -> bool:
        """Tell whether the feature was proven and that still holds."""
        return feature in holding(self.proven)

    def any(self) -> bool:
        """Tell whether anything learned still holds."""
        return any(self.diagnostics().values())

    def holds_window(self) -> bool:
        """Tell whether a window an overflow named was learned and still holds."""
        return bool(self.context_window and self.window and self.window.holds())

    def diagnostics(self) -> dict[str, object]:
        """Return each lesson that holds with its age and source."""

        def each(lessons: Mapping[Any, Lesson]) -> dict[str, object]:
            return {str(f): one.diagnostics() for f, one in holding(lessons).items()}

        learned = self.window if self.holds_window() else None
        return {
            "refused": each(self.refused),
            "proven": each(self.proven),
            "fields": each(self.fields),
            "context_window": self.context_window if learned else None,
            "reported_window": self.reported_window if learned else None,
            "window": learned.diagnostics() if learned else None,
        }


def holding[K: str](lessons: Mapping[K, Lesson]) -> dict[K, Lesson]:
    """Return the lessons that still hold, by feature or field, in order."""
    return {f: lessons[f] for f in sorted(lessons) if lessons[f].holds()}


def lifetime(feature: Feature) -> timedelta:
    """Return how long a lesson about a feature holds before it is asked again."""
    return BLOCKING_LIFETIME if feature in BLOCKING else FALLBACK_LIFETIME


SERVER_LESSONS: Final = "*"
# Routes of the server, not of one model: a refusal holds for every model.
SERVER_ROUTES: Final = frozenset({Feature.DECISIONS})


class WireApi(StrEnum):
    """The API requests go over; automatic lets the preset decide."""

    CHAT_COMPLETIONS = "chat_completions"
    RESPONSES = "responses"
    AUTOMATIC = "automatic"


def api_setting(value: Any) -> WireApi:
    """Return an entry's saved API setting; automatic when unset or unknown."""
    return WireApi(value) if value in WireApi else WireApi.AUTOMATIC


@dataclass(eq=False)
class ModelCapabilities:
    """The view of one model that every request path asks: preset, report, lessons."""

    model: str
    provider: Provider
    report: ModelReport
    lessons: Lessons
    # What the server as a whole taught (its routes), and its software.
    _server: Lessons = field(default_factory=Lessons)
    kind: ServerKind | None = None

    @property
    def reasoning(self) -> bool:
        """Tell whether the model reasons first (no sampling settings, no logprobs)."""
        return is_reasoning_model(self.model)

    @property
    def context_window(self) -> int | None:
        """Return the window an overflow named (a day, same report), else reported."""
        lessons, reported = self.lessons, self.report.context_window
        if lessons.holds_window() and lessons.reported_window == reported:
            return lessons.context_window
        return reported

    @property
    def caches_prompts(self) -> bool:
        """Tell whether the server keeps a prompt cache worth filling: local software."""
        return self.kind is not None and not self.provider.api_key_required

    def refuses(self, feature: Feature) -> bool:
        """Tell whether a request with this feature is known to be refused."""
        if feature in self.provider.refuses or self.lessons.refuses(feature):
            return True
        if feature in SERVER_ROUTES and self._server.refuses(feature):
            return True
        if feature is Feature.STRICT_SCHEMA:
            return self.refuses(Feature.JSON_SCHEMA)
        if feature is Feature.TOOLS:
            return self.report.tools is False
        if feature is Feature.IMAGE_INPUT:
            return self.report.vision is False
        # The rest are ruled out by the preset or the model's kind.
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
        """Return the API for the setting: automatic is Responses where it may be."""
        if setting is not WireApi.AUTOMATIC:
            return setting
        if self.provider.responses and not self.refuses(Feature.RESPONSES_API):
            return WireApi.RESPONSES
        return WireApi.CHAT_COMPLETIONS

    def structured_output_start(self) -> Feature | None:
        """Return the strongest JSON format not refused; None: schema in instructions."""
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

    def refused_fields(self) -> frozenset[str]:
        """Return the extra request fields the model is known to refuse."""
        return frozenset(holding(self.lessons.fields))

    def learn_refused_fields(self, names: tuple[str, ...], source: str) -> None:
        """Remember extra request fields the model refused, and what said so."""
        lesson = Lesson.now(source, FALLBACK_LIFETIME)
        self.lessons.fields.update(dict.fromkeys(names, lesson))
        LOGGER.debug("%s refuses %s (%s)", self.model, ", ".join(names), source)

    def learn_proven(self, feature: Feature) -> None:
        """Remember that the model handled the feature."""
        if self.lessons.proved(feature) or self.lessons.refuses(feature):
            return
        self.lessons.proven[feature] = Lesson.now(
            "an answer to a request with it", lifetime(feature)
        )

    def accepted_prompt(self, tokens: int) -> None:
        """Remember a prompt the server answered: the window holds at least that."""
        self.lessons.accepted_prompt = max(self.lessons.accepted_prompt, tokens)

    def believed_window(self, tokens: int | None) -> int | None:
        """Return a window a server named, unless it is smaller than a prompt it answered."""
        if tokens is not None and tokens < self.lessons.accepted_prompt:
            LOGGER.debug(
                "%s named a window of %d tokens after answering %d; not believed",
                self.model,
                tokens,
                self.lessons.accepted_prompt,
            )
            return None
        return tokens

    def learn_context_window(self, tokens: int) -> None:
        """Remember the context window an overflow error named, and the report."""
        lesson = (tokens, self.report.context_window)
        known = (self.lessons.context_window, self.lessons.reported_window)
        if lesson != known or not self.lessons.holds_window():
            self.lessons.context_window, self.lessons.reported_window = lesson
            self.lessons.window = Lesson.now(
                "the server's context overflow error", FALLBACK_LIFETIME
            )


@dataclass(eq=False)
class Capabilities:
    """Everything known about one entry's server, per model, while it is loaded."""

    provider: Provider
    report: ServerReport
    # What identifies the server (coordinator.Survey.server): lessons are about it.
    server: object = None
    _lessons: dict[str, Lessons] = field(default_factory=dict)

    @property
    def local(self) -> bool:
        """Tell whether the server runs locally: a local preset, or known software."""
        return self.provider.local or bool(self.report.kind)

    def model(self, name: str) -> ModelCapabilities:
        """Return what is known about a model of this server."""
        return ModelCapabilities(
            name,
            self.provider,
            self.report.models.get(name, ModelReport()),
            self._lessons.setdefault(name, Lessons()),
            self._lessons.setdefault(SERVER_LESSONS, Lessons()),
            self.report.kind or self.provider.kind,
        )

    def shutdown(self, name: str) -> date | None:
        """Return the day a model shuts down: as the server, else the preset, says."""
        report = self.report.models.get(name)
        return (report and report.shutdown) or self.provider.shutdowns.get(name)

    def update_report(self, report: ServerReport, server: object) -> None:
        """Take a newer report; forget the lessons when the server changed."""
        self.report = report
        if server == self.server:
            return
        LOGGER.debug("The server changed; forgetting what was learned about it")
        self.server = server
        self.forget()

    def forget(self) -> list[str]:
        """Forget every lesson; return what held, a line per model."""
        forgotten = [
            _told(name, lessons.diagnostics())
            for name, lessons in sorted(self._lessons.items())
            if lessons.any()
        ]
        self._lessons.clear()
        return forgotten

    def diagnostics(self, models: Iterable[str]) -> dict[str, object]:
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
            "models": {
                model.model: {
                    "reported": asdict(model.report),
                    "learned": model.lessons.diagnostics(),
                    "refused": sorted(f for f in Feature if model.refuses(f)),
                    "context_window": model.context_window,
                }
                for model in map(self.model, names)
            },
        }


_TOLD: Final = {"refused": "refused", "proven": "took", "fields": "refused the fields"}


def _told(model: str, lessons: Mapping[str, object]) -> str:
    parts = [
        f"{label} {', '.join(map(str, learned))}"
        for key, label in _TOLD.items()
        if isinstance(learned := lessons[key], Mapping) and learned
    ]
    if window := lessons["context_window"]:
        parts.append(f"read at most {window} tokens")
    return f"{model}: {'; '.join(parts)}"
