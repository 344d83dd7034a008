"""The model repair issues, over HTTP against the simulator."""

from __future__ import annotations

from datetime import timedelta

from freezegun.api import FrozenDateTimeFactory
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)

from custom_components.openai_compatible.const import (
    CONF_AUDIO_MODEL,
    CONF_CHAT_MODEL,
    CONF_IMAGE_MODEL,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from custom_components.openai_compatible.coordinator import REFRESH_INTERVAL
from custom_components.openai_compatible.repairs import model_issue_id
from simulator import OpenAISimulator
from tests.conftest import SetupEntry

# Before OpenAI's GPT-5 family shuts down (2026-12-11), after its image models.
BEFORE_GPT5_SHUTDOWN = "2026-12-05 12:00:00+00:00"


@pytest.fixture(autouse=True)
def frozen_time(freezer: FrozenDateTimeFactory) -> None:
    """Hold the clock still, so that shutdown dates lie where tests put them."""
    freezer.move_to(BEFORE_GPT5_SHUTDOWN)


def subentry_id(entry: MockConfigEntry, subentry_type: str) -> str:
    """Return the id of the entry's subentry of a type."""
    return next(
        subentry.subentry_id
        for subentry in entry.subentries.values()
        if subentry.subentry_type == subentry_type
    )


def model_issues(hass: HomeAssistant) -> dict[str, ir.IssueEntry]:
    """Return the open model issues of the integration, by issue id."""
    return {
        issue_id: issue
        for (domain, issue_id), issue in ir.async_get(hass).issues.items()
        if domain == DOMAIN and issue_id.startswith("model_")
    }


def model_list_requests(simulator: OpenAISimulator) -> int:
    """Return how many times the model list was asked for."""
    return sum(request.path.endswith("/models") for request in simulator.requests)


async def refresh(
    hass: HomeAssistant,
    freezer: FrozenDateTimeFactory,
    after: timedelta = REFRESH_INTERVAL,
) -> None:
    """Let time pass, the refresh interval at least, and the refresh finish."""
    freezer.tick(after)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)


async def test_listed_models_open_no_issue(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """An entry whose models the server lists, or leaves unset, has no model issue."""
    await setup_entry(ai_task={CONF_IMAGE_MODEL: ""})

    assert model_issues(hass) == {}


async def test_unlisted_chat_model_opens_a_repair(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A conversation model the server does not list gets a fixable error."""
    entry = await setup_entry(conversation={CONF_CHAT_MODEL: "gpt-3.5-turbo"})
    agent = subentry_id(entry, SUBENTRY_CONVERSATION)

    issues = model_issues(hass)

    assert list(issues) == [model_issue_id(agent, CONF_CHAT_MODEL)]
    issue = issues[model_issue_id(agent, CONF_CHAT_MODEL)]
    assert issue.translation_key == "model_not_listed"
    assert issue.severity is ir.IssueSeverity.ERROR
    assert issue.is_fixable
    assert issue.config_entry_id == entry.entry_id
    assert issue.data == {
        "entry_id": entry.entry_id,
        "subentry_id": agent,
        "model_key": CONF_CHAT_MODEL,
    }
    assert issue.translation_placeholders == {
        "name": entry.subentries[agent].title,
        "model": "gpt-3.5-turbo",
        "server": entry.title,
        "shutdown": "",
    }


@pytest.mark.parametrize(
    ("subentry_type", "key"),
    [
        (SUBENTRY_AI_TASK, CONF_CHAT_MODEL),
        (SUBENTRY_AI_TASK, CONF_IMAGE_MODEL),
        (SUBENTRY_STT, CONF_AUDIO_MODEL),
        (SUBENTRY_TTS, CONF_AUDIO_MODEL),
    ],
)
async def test_every_model_setting_is_checked(
    hass: HomeAssistant, setup_voice: SetupEntry, subentry_type: str, key: str
) -> None:
    """Tasks' chat and image models and the voice models are checked too."""
    changed = {key: "gone-model"}
    entry = await setup_voice(
        ai_task=changed if subentry_type == SUBENTRY_AI_TASK else None,
        stt=changed if subentry_type == SUBENTRY_STT else {},
        tts=changed if subentry_type == SUBENTRY_TTS else {},
    )

    issues = model_issues(hass)

    issue_id = model_issue_id(subentry_id(entry, subentry_type), key)
    assert list(issues) == [issue_id]
    assert issues[issue_id].translation_placeholders is not None
    assert issues[issue_id].translation_placeholders["model"] == "gone-model"


async def test_no_model_list_no_unlisted_issue(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A server without a model list cannot tell that a model is gone."""
    simulator.settings.models_endpoint = False

    await setup_entry(conversation={CONF_CHAT_MODEL: "my-model"})

    assert model_issues(hass) == {}


async def test_azure_deployments_are_not_checked_against_the_list(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """Azure requests name deployments, which its model list need not show."""
    await setup_entry(provider="azure", conversation={CONF_CHAT_MODEL: "my-deploy"})

    assert model_issues(hass) == {}


async def test_shutdown_date_from_the_server(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A date the server gives warns ahead, and turns to an error once it passes."""
    simulator.shutdown_dates["gpt-4o-mini"] = "2026-12-06"
    entry = await setup_entry(ai_task={CONF_CHAT_MODEL: "gpt-5-mini"})
    issue_id = model_issue_id(subentry_id(entry, SUBENTRY_CONVERSATION), "chat_model")

    issue = model_issues(hass)[issue_id]

    assert list(model_issues(hass)) == [issue_id]
    assert issue.translation_key == "model_deprecated"
    assert issue.severity is ir.IssueSeverity.WARNING
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["shutdown"] == "2026-12-06"

    await refresh(hass, freezer, timedelta(days=1))  # The day has come.

    issue = model_issues(hass)[issue_id]
    assert issue.translation_key == "model_shut_down"
    assert issue.severity is ir.IssueSeverity.ERROR


async def test_openai_shutdowns_known_without_the_server(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The OpenAI preset knows OpenAI's announced shutdowns, listed or not."""
    simulator.models.remove("gpt-image-1")
    entry = await setup_entry(
        provider="openai",
        conversation={CONF_CHAT_MODEL: "gpt-5-mini"},
        ai_task={CONF_CHAT_MODEL: "gpt-4o-mini", CONF_IMAGE_MODEL: "gpt-image-1-mini"},
    )

    issues = model_issues(hass)

    agent = model_issue_id(subentry_id(entry, SUBENTRY_CONVERSATION), CONF_CHAT_MODEL)
    image = model_issue_id(subentry_id(entry, SUBENTRY_AI_TASK), CONF_IMAGE_MODEL)
    assert set(issues) == {agent, image}
    assert issues[agent].translation_key == "model_deprecated"
    assert issues[agent].translation_placeholders is not None
    assert issues[agent].translation_placeholders["shutdown"] == "2026-12-11"
    # Shut down on 2026-12-01 and no longer listed: it is gone, and said so.
    assert issues[image].translation_key == "model_shut_down"
    assert issues[image].translation_placeholders is not None
    assert issues[image].translation_placeholders["shutdown"] == "2026-12-01"


async def test_other_servers_do_not_take_openai_dates(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A custom server's gpt-5-mini is not OpenAI's: no date is assumed."""
    await setup_entry(conversation={CONF_CHAT_MODEL: "gpt-5-mini"})

    assert model_issues(hass) == {}


async def test_removed_subentry_and_unloaded_entry_leave_no_issue(
    hass: HomeAssistant, setup_voice: SetupEntry
) -> None:
    """Issues go with their subentry, and all of them with the unloaded entry."""
    entry = await setup_voice(
        conversation={CONF_CHAT_MODEL: "gone-model"},
        stt={CONF_AUDIO_MODEL: "gone-whisper"},
        tts={},
    )
    assert len(model_issues(hass)) == 2

    hass.config_entries.async_remove_subentry(
        entry, subentry_id(entry, SUBENTRY_CONVERSATION)
    )
    await hass.async_block_till_done()

    assert list(model_issues(hass)) == [
        model_issue_id(subentry_id(entry, SUBENTRY_STT), CONF_AUDIO_MODEL)
    ]

    assert await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()

    assert model_issues(hass) == {}
