"""The capability model: presets, reports, and lessons."""

from __future__ import annotations

from datetime import date, timedelta

from freezegun.api import FrozenDateTimeFactory
import pytest

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.models.capabilities import Capabilities
from custom_components.openai_compatible.models.names import (
    is_reasoning_model,
    service_tiers,
)
from custom_components.openai_compatible.models.providers import PROVIDERS, provider_for
from custom_components.openai_compatible.models.server_info import (
    ModelReport,
    ServerReport,
)


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("gpt-5-mini", True),
        ("o3", True),
        ("openai/o4-mini", True),
        ("gpt-4o-mini", False),
        ("gpt-5-chat-latest", False),
        ("llama3.2:3b", False),
    ],
)
def test_reasoning_models(model: str, reasoning: bool) -> None:
    """OpenAI's reasoning models are told apart from the rest."""
    assert is_reasoning_model(model) is reasoning


@pytest.mark.parametrize(
    ("model", "tiers"),
    [
        ("gpt-5-mini", ("auto", "flex", "default", "priority")),
        ("openai/o3", ("auto", "flex", "default", "priority")),
        ("gpt-5-nano", ("auto", "flex", "default")),
        ("gpt-4o-mini", ("auto", "default", "priority")),
        ("gpt-5-codex", ("auto", "default", "priority")),
        ("gpt-5-chat-latest", ()),
        ("o3-mini", ()),
        ("llama3.2:3b", ()),
    ],
)
def test_service_tiers(model: str, tiers: tuple[str, ...]) -> None:
    """Flex and priority processing are offered for some OpenAI models only."""
    assert service_tiers(model) == tiers


def test_service_tier_by_preset_and_model() -> None:
    """Where a tier can be chosen: OpenAI or a proxy to it, and a model with one."""
    assert not _capabilities("openai").model("gpt-5").refuses(Feature.SERVICE_TIER)
    assert not _capabilities().model("gpt-5").refuses(Feature.SERVICE_TIER)
    assert _capabilities("openai").model("o3-mini").refuses(Feature.SERVICE_TIER)
    assert _capabilities("ollama").model("gpt-5").refuses(Feature.SERVICE_TIER)


def test_unknown_preset_is_custom() -> None:
    """An entry of a preset that no longer exists behaves as a custom server."""
    assert provider_for("gone") is PROVIDERS["custom"]
    assert provider_for(None) is PROVIDERS["custom"]


def _capabilities(
    provider: str = "custom", report: ServerReport | None = None
) -> Capabilities:
    return Capabilities(PROVIDERS[provider], report or ServerReport(), "server")


def test_preset_facts() -> None:
    """What a preset refuses or offers holds for every model."""
    mistral = _capabilities("mistral").model("mistral-small")
    assert mistral.refuses(Feature.STREAM_OPTIONS)
    assert mistral.refuses(Feature.PROMPT_CACHE_KEY)
    openai = _capabilities("openai").model("gpt-5-mini")
    assert not openai.refuses(Feature.PROMPT_CACHE_KEY)
    assert not openai.refuses(Feature.DECISIONS)
    assert openai.reasoning
    assert _capabilities("ollama").model("llama3").refuses(Feature.DECISIONS)


def test_reports() -> None:
    """What the server reports about a model is asked for that model only."""
    report = ServerReport(
        models={"small": ModelReport(context_window=4096, vision=False, tools=False)}
    )
    small = _capabilities(report=report).model("small")
    assert small.context_window == 4096
    assert small.refuses(Feature.IMAGE_INPUT)
    assert small.refuses(Feature.TOOLS)
    other = _capabilities(report=report).model("other")
    assert other.context_window is None
    assert not other.refuses(Feature.TOOLS)


def test_shutdown_dates() -> None:
    """The server's date comes first; the preset's table dates the rest."""
    report = ServerReport(
        models={
            "gpt-5-mini": ModelReport(shutdown=date(2026, 12, 20)),
            "gpt-4o-mini": ModelReport(),
        }
    )
    openai = _capabilities("openai", report)
    assert openai.shutdown("gpt-5-mini") == date(2026, 12, 20)
    assert openai.shutdown("gpt-5-nano") == date(2026, 12, 11)
    assert openai.shutdown("gpt-4o-mini") is None
    assert _capabilities(report=report).shutdown("gpt-5-nano") is None


def test_new_report_keeps_or_forgets_lessons() -> None:
    """A newer report of the same server keeps the lessons; another server's not."""
    capabilities = _capabilities()
    capabilities.model("m").learn_refused(Feature.LOGPROBS, "HTTP 400: refused")
    newer = ServerReport(models={"m": ModelReport(context_window=2048)})

    capabilities.update_report(newer, "server")

    assert capabilities.model("m").refuses(Feature.LOGPROBS)
    assert capabilities.model("m").context_window == 2048

    capabilities.update_report(ServerReport(), "another server")

    assert capabilities.server == "another server"
    assert not capabilities.model("m").refuses(Feature.LOGPROBS)


def test_lessons() -> None:
    """Lessons are per model; a refused JSON schema rules out strict mode too."""
    capabilities = _capabilities()
    model = capabilities.model("m")
    assert model.structured_output_start() is Feature.STRICT_SCHEMA
    model.learn_refused(Feature.JSON_SCHEMA, "HTTP 400: refused")
    assert model.refuses(Feature.STRICT_SCHEMA)
    assert model.structured_output_start() is Feature.JSON_OBJECT
    model.learn_refused(Feature.JSON_OBJECT, "HTTP 400: refused")
    assert capabilities.model("m").structured_output_start() is None
    assert capabilities.model("other").structured_output_start() is (
        Feature.STRICT_SCHEMA
    )
    model.learn_proven(Feature.LOGPROBS)
    assert model.lessons.proved(Feature.LOGPROBS)
    model.learn_refused(Feature.LOGPROBS, "HTTP 400: refused")
    assert not model.lessons.proved(Feature.LOGPROBS)
    model.learn_proven(Feature.LOGPROBS)
    assert not model.lessons.proved(Feature.LOGPROBS)
    model.learn_context_window(8192)
    assert capabilities.model("m").context_window == 8192


def test_lessons_that_only_refuse_hold_an_hour(freezer: FrozenDateTimeFactory) -> None:
    """Refused tools block the request for an hour, then it is asked again."""
    model = _capabilities().model("m")
    model.learn_refused(Feature.TOOLS, "HTTP 400: gemma does not support tools")
    # Refused again while it holds: the first lesson and its date stay.
    model.learn_refused(Feature.TOOLS, "HTTP 400: again")
    assert model.lessons.refused[Feature.TOOLS].source == (
        "HTTP 400: gemma does not support tools"
    )

    freezer.tick(timedelta(minutes=59))
    assert model.refuses(Feature.TOOLS)
    freezer.tick(timedelta(minutes=2))
    assert not model.refuses(Feature.TOOLS)

    # Refused again: learned again, from now.
    model.learn_refused(Feature.TOOLS, "HTTP 400: still no tools")
    assert model.refuses(Feature.TOOLS)
    assert model.lessons.refused[Feature.TOOLS].source == "HTTP 400: still no tools"


def test_lessons_with_a_fallback_hold_a_day(freezer: FrozenDateTimeFactory) -> None:
    """A server that gains json_schema gets it back within a day."""
    model = _capabilities().model("m")
    model.learn_refused(Feature.JSON_SCHEMA, "HTTP 400: no json_schema")
    model.learn_proven(Feature.LOGPROBS)

    freezer.tick(timedelta(hours=23))
    assert model.structured_output_start() is Feature.JSON_OBJECT
    assert model.lessons.proved(Feature.LOGPROBS)
    freezer.tick(timedelta(hours=2))
    assert model.structured_output_start() is Feature.STRICT_SCHEMA
    assert not model.lessons.proved(Feature.LOGPROBS)


def test_lesson_dated_ahead_holds_no_longer(freezer: FrozenDateTimeFactory) -> None:
    """A clock set back does not make a lesson last until it catches up."""
    model = _capabilities().model("m")
    model.learn_refused(Feature.JSON_SCHEMA, "HTTP 400: no json_schema")

    freezer.tick(-timedelta(minutes=1))

    assert not model.refuses(Feature.JSON_SCHEMA)


def test_learned_window_holds_a_day(freezer: FrozenDateTimeFactory) -> None:
    """A server whose window grew gets it used within a day; an overflow re-dates."""
    capabilities = _capabilities()
    capabilities.model("m").learn_context_window(4096)

    freezer.tick(timedelta(hours=23))
    assert capabilities.model("m").context_window == 4096
    freezer.tick(timedelta(hours=2))
    assert capabilities.model("m").context_window is None
    assert not capabilities.model("m").lessons.any()

    capabilities.model("m").learn_context_window(4096)
    assert capabilities.model("m").context_window == 4096


def test_learned_window_yields_to_a_newer_report() -> None:
    """A window an overflow named holds until the server reports another one."""
    reported = ServerReport(models={"m": ModelReport(context_window=8192)})
    capabilities = _capabilities(report=reported)
    capabilities.model("m").learn_context_window(4096)
    assert capabilities.model("m").context_window == 4096

    # The same report again: what the server's own error said still holds.
    capabilities.update_report(reported, "server")
    assert capabilities.model("m").context_window == 4096

    # The model was loaded again with a larger context, and reported so.
    larger = ServerReport(models={"m": ModelReport(context_window=16384)})
    capabilities.update_report(larger, "server")
    assert capabilities.model("m").context_window == 16384

    # An overflow under the new report teaches again, and is kept with it.
    capabilities.model("m").learn_context_window(12000)
    assert capabilities.model("m").context_window == 12000
    assert capabilities.model("m").lessons.reported_window == 16384
    # A report that goes back finds the lesson of another report, not its own.
    capabilities.update_report(reported, "server")
    assert capabilities.model("m").context_window == 8192


def test_forget_tells_what_held() -> None:
    """Forgetting returns a line per model that learned; a long source is cut."""
    capabilities = _capabilities()
    capabilities.model("m").learn_context_window(4096)
    capabilities.model("m").learn_refused(Feature.LOGPROBS, "x" * 90)
    capabilities.model("n")
    assert capabilities.model("m").lessons.refused[Feature.LOGPROBS].source == (
        "x" * 79 + "…"
    )

    assert capabilities.forget() == ["m: refused logprobs; read at most 4096 tokens"]
    assert capabilities.forget() == []
