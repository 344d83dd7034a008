"""The capability model: presets, reports, lessons, and keeping them."""

from __future__ import annotations

from datetime import date, timedelta
import logging
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.openai_compatible.const import DOMAIN, Feature
from custom_components.openai_compatible.models.capabilities import (
    Capabilities,
    server_fingerprint,
)
from custom_components.openai_compatible.models.lessons import Lesson, Lessons
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


async def test_service_tier_by_preset_and_model(hass: HomeAssistant) -> None:
    """Where a tier can be chosen: OpenAI or a proxy to it, and a model with one."""
    assert (
        not _capabilities(hass, "openai").model("gpt-5").refuses(Feature.SERVICE_TIER)
    )
    assert not _capabilities(hass).model("gpt-5").refuses(Feature.SERVICE_TIER)
    assert _capabilities(hass, "openai").model("o3-mini").refuses(Feature.SERVICE_TIER)
    assert _capabilities(hass, "ollama").model("gpt-5").refuses(Feature.SERVICE_TIER)


def test_unknown_preset_is_custom() -> None:
    """An entry of a preset that no longer exists behaves as a custom server."""
    assert provider_for("gone") is PROVIDERS["custom"]
    assert provider_for(None) is PROVIDERS["custom"]


def _capabilities(
    hass: HomeAssistant, provider: str = "custom", report: ServerReport | None = None
) -> Capabilities:
    return Capabilities(
        hass, "entry", PROVIDERS[provider], report or ServerReport(), "fingerprint"
    )


async def test_preset_facts(hass: HomeAssistant) -> None:
    """What a preset refuses or offers holds for every model."""
    mistral = _capabilities(hass, "mistral").model("mistral-small")
    assert mistral.refuses(Feature.STREAM_OPTIONS)
    assert mistral.refuses(Feature.PROMPT_CACHE_KEY)
    openai = _capabilities(hass, "openai").model("gpt-5-mini")
    assert not openai.refuses(Feature.PROMPT_CACHE_KEY)
    assert not openai.refuses(Feature.DECISIONS)
    assert openai.reasoning
    assert _capabilities(hass, "ollama").model("llama3").refuses(Feature.DECISIONS)


async def test_reports(hass: HomeAssistant) -> None:
    """What the server reports about a model is asked for that model only."""
    report = ServerReport(
        models={"small": ModelReport(context_window=4096, vision=False, tools=False)}
    )
    small = _capabilities(hass, report=report).model("small")
    assert small.context_window == 4096
    assert small.refuses(Feature.IMAGE_INPUT)
    assert small.refuses(Feature.TOOLS)
    other = _capabilities(hass, report=report).model("other")
    assert other.context_window is None
    assert not other.refuses(Feature.TOOLS)


async def test_shutdown_dates(hass: HomeAssistant) -> None:
    """The server's date comes first; the preset's table dates the rest."""
    report = ServerReport(
        models={
            "gpt-5-mini": ModelReport(shutdown=date(2026, 12, 20)),
            "gpt-4o-mini": ModelReport(),
        }
    )
    openai = _capabilities(hass, "openai", report)
    assert openai.shutdown("gpt-5-mini") == date(2026, 12, 20)
    assert openai.shutdown("gpt-5-nano") == date(2026, 12, 11)
    assert openai.shutdown("gpt-4o-mini") is None
    assert _capabilities(hass, report=report).shutdown("gpt-5-nano") is None


async def test_new_report_keeps_or_forgets_lessons(hass: HomeAssistant) -> None:
    """A newer report of the same server keeps the lessons; another server's not."""
    capabilities = _capabilities(hass)
    capabilities.model("m").learn_refused(Feature.LOGPROBS, "HTTP 400: refused")
    newer = ServerReport(models={"m": ModelReport(context_window=2048)})

    capabilities.update_report(newer, "fingerprint")

    assert capabilities.model("m").refuses(Feature.LOGPROBS)
    assert capabilities.model("m").context_window == 2048

    capabilities.update_report(ServerReport(), "another server")

    assert capabilities.fingerprint == "another server"
    assert not capabilities.model("m").refuses(Feature.LOGPROBS)
    assert capabilities.as_dict() == {"fingerprint": "another server", "models": {}}


async def test_lessons(hass: HomeAssistant) -> None:
    """Lessons are per model; a refused JSON schema rules out strict mode too."""
    capabilities = _capabilities(hass)
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


async def test_lessons_survive_a_restart(hass: HomeAssistant) -> None:
    """What was learned is stored, and loaded again for the same server."""
    first = _capabilities(hass)
    first.model("m").learn_refused(Feature.JSON_SCHEMA, "HTTP 400: refused")
    first.model("m").learn_context_window(2048)
    await hass.async_block_till_done()
    # Saving is delayed; unloading writes at once.
    await first.async_close()

    again = _capabilities(hass)
    await again.async_load()
    assert again.model("m").refuses(Feature.JSON_SCHEMA)
    assert again.model("m").context_window == 2048

    other = Capabilities(
        hass, "entry", PROVIDERS["custom"], ServerReport(), "another server"
    )
    await other.async_load()
    assert not other.model("m").refuses(Feature.JSON_SCHEMA)
    # And the old lessons are gone for good.
    again = _capabilities(hass)
    await again.async_load()
    assert not again.model("m").refuses(Feature.JSON_SCHEMA)


async def test_lessons_that_only_refuse_hold_an_hour(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory
) -> None:
    """Refused tools block the request for an hour, then it is asked again."""
    model = _capabilities(hass).model("m")
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


async def test_lessons_with_a_fallback_hold_a_day(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory
) -> None:
    """A server that gains json_schema gets it back within a day."""
    model = _capabilities(hass).model("m")
    model.learn_refused(Feature.JSON_SCHEMA, "HTTP 400: no json_schema")
    model.learn_proven(Feature.LOGPROBS)

    freezer.tick(timedelta(hours=23))
    assert model.structured_output_start() is Feature.JSON_OBJECT
    assert model.lessons.proved(Feature.LOGPROBS)
    freezer.tick(timedelta(hours=2))
    assert model.structured_output_start() is Feature.STRICT_SCHEMA
    assert not model.lessons.proved(Feature.LOGPROBS)


async def test_lesson_dated_ahead_holds_no_longer(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory
) -> None:
    """A clock set back does not make a lesson last until it catches up."""
    model = _capabilities(hass).model("m")
    model.learn_refused(Feature.JSON_SCHEMA, "HTTP 400: no json_schema")

    freezer.tick(-timedelta(minutes=1))

    assert not model.refuses(Feature.JSON_SCHEMA)


async def test_lessons_that_only_refuse_are_not_kept(
    hass: HomeAssistant, hass_storage: dict[str, Any]
) -> None:
    """A reload or restart asks again for what only blocked the request."""
    first = _capabilities(hass)
    first.model("m").learn_refused(Feature.TOOLS, "HTTP 400: no tools")
    first.model("m").learn_refused(Feature.IMAGES_EDITS, "HTTP 404: Not Found")
    first.model("m").learn_refused(Feature.LOGPROBS, "HTTP 400: no logprobs")
    await first.async_close()
    stored = hass_storage[f"{DOMAIN}.entry.capabilities"]["data"]
    assert list(stored["models"]["m"]["refused"]) == ["logprobs"]

    again = _capabilities(hass)
    await again.async_load()

    assert not again.model("m").refuses(Feature.TOOLS)
    assert not again.model("m").refuses(Feature.IMAGES_EDITS)
    assert again.model("m").refuses(Feature.LOGPROBS)


async def test_a_lesson_with_an_impossible_date_is_dropped(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stored date past the calendar loads as no lesson, with a debug line."""
    bad = {"learned": "2026-13-45T25:61:00+00:00", "source": "HTTP 400: x"}
    hass_storage[f"{DOMAIN}.entry.capabilities"] = {
        "version": 1,
        "minor_version": 1,
        "key": f"{DOMAIN}.entry.capabilities",
        "data": {
            "fingerprint": "fingerprint",
            "models": {"m": {"refused": {"logprobs": bad}, "window": bad}},
        },
    }
    capabilities = _capabilities(hass)

    with caplog.at_level(logging.DEBUG):
        await capabilities.async_load()

    assert not capabilities.model("m").refuses(Feature.LOGPROBS)
    assert "no readable date" in caplog.text


async def test_closed_capabilities_write_nothing(
    hass: HomeAssistant,
    hass_storage: dict[str, Any],
    freezer: FrozenDateTimeFactory,
) -> None:
    """Once closed (the entry unloaded), a lesson learned late is not saved."""
    capabilities = _capabilities(hass)
    capabilities.model("m").learn_refused(Feature.LOGPROBS, "HTTP 400: no logprobs")
    await capabilities.async_close()
    key = f"{DOMAIN}.entry.capabilities"
    written = hass_storage.pop(key)
    assert list(written["data"]["models"]) == ["m"]

    capabilities.model("n").learn_refused(Feature.JSON_SCHEMA, "HTTP 400: refused")
    capabilities.forget()
    freezer.tick(timedelta(minutes=1))
    async_fire_time_changed(hass)
    await hass.async_block_till_done()

    assert key not in hass_storage


async def test_learned_window_holds_a_day(
    hass: HomeAssistant, freezer: FrozenDateTimeFactory
) -> None:
    """A server whose window grew gets it used within a day; an overflow re-dates."""
    capabilities = _capabilities(hass)
    capabilities.model("m").learn_context_window(4096)

    freezer.tick(timedelta(hours=23))
    assert capabilities.model("m").context_window == 4096
    freezer.tick(timedelta(hours=2))
    assert capabilities.model("m").context_window is None
    assert not capabilities.model("m").lessons.any()

    capabilities.model("m").learn_context_window(4096)
    assert capabilities.model("m").context_window == 4096


async def test_learned_window_yields_to_a_newer_report(hass: HomeAssistant) -> None:
    """A window an overflow named holds until the server reports another one."""
    reported = ServerReport(models={"m": ModelReport(context_window=8192)})
    capabilities = _capabilities(hass, report=reported)
    capabilities.model("m").learn_context_window(4096)
    assert capabilities.model("m").context_window == 4096

    # The same report again: what the server's own error said still holds.
    capabilities.update_report(reported, "fingerprint")
    assert capabilities.model("m").context_window == 4096

    # The model was loaded again with a larger context, and reported so.
    larger = ServerReport(models={"m": ModelReport(context_window=16384)})
    capabilities.update_report(larger, "fingerprint")
    assert capabilities.model("m").context_window == 16384

    # An overflow under the new report teaches again, and is stored with it.
    capabilities.model("m").learn_context_window(12000)
    assert capabilities.model("m").context_window == 12000
    assert capabilities.as_dict()["models"]["m"]["reported_window"] == 16384
    # A report that goes back finds the lesson of another report, not its own.
    capabilities.update_report(reported, "fingerprint")
    assert capabilities.model("m").context_window == 8192


def test_stored_form_skips_what_is_unknown(freezer: FrozenDateTimeFactory) -> None:
    """Lessons from another version, or damaged, load without what cannot be read."""
    learned = dt_util.utcnow() - timedelta(hours=2)
    lessons = Lessons.from_dict(
        {
            "refused": {
                "logprobs": {"learned": learned.isoformat(), "source": "x" * 90},
                "json_schema": {"learned": "yesterday"},
                "strict_schema": {"learned": "2026-13-45T25:61:00+00:00"},
                "json_object": None,
                "teleport": {"learned": learned.isoformat()},
            },
            "proven": "x",
            "fields": {"seed": {"learned": "2026-13-45T00:00:00+00:00"}},
            "context_window": -1,
            "reported_window": "8192",
        }
    )
    # Unreadable or missing dates drop their lessons.
    assert lessons.refused == {
        Feature.LOGPROBS: Lesson(learned, "x" * 79 + "…", timedelta(days=1)),
    }
    assert lessons.fields == {}
    assert (lessons.proven, lessons.context_window, lessons.window) == ({}, None, None)
    assert Lessons.from_dict(None) == Lessons()


def test_fingerprint_follows_server_version_and_models() -> None:
    """A new version or model list of the same server makes a new fingerprint."""
    base = server_fingerprint("http://a/v1", "key", ServerReport(version="1"), ["m"])
    assert base == server_fingerprint(
        "http://a/v1", "key", ServerReport(version="1"), ["m"]
    )
    assert base != server_fingerprint(
        "http://a/v1", "key", ServerReport(version="2"), ["m"]
    )
    assert base != server_fingerprint(
        "http://a/v1", "key", ServerReport(version="1"), ["m", "n"]
    )
    assert base != server_fingerprint(
        "http://b/v1", "key", ServerReport(version="1"), ["m"]
    )
