"""What refusals taught about a model: when, from what, and for how long."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from homeassistant.util import dt as dt_util

from ..const import Feature

BLOCKING_LIFETIME: Final = timedelta(hours=1)
FALLBACK_LIFETIME: Final = timedelta(days=1)
WINDOW_LIFETIME: Final = FALLBACK_LIFETIME
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
        """Return a lesson learned now."""
        return cls(dt_util.utcnow(), short(source), lifetime)

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


def short(text: str) -> str:
    """Return a source on one line, cut to a readable length."""
    line = " ".join(text.split())
    if len(line) <= _SOURCE_LENGTH:
        return line
    return line[: _SOURCE_LENGTH - 1] + "…"


def lifetime(feature: Feature) -> timedelta:
    """Return how long a lesson about a feature holds before it is asked again."""
    return BLOCKING_LIFETIME if feature in BLOCKING else FALLBACK_LIFETIME
