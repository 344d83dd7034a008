"""Fallback between servers: another agent or AI task answers when ours cannot.

Two simulators: the `simulator` fixture serves the entry that falls back,
a second one (`backup`) the entry that takes over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
import logging
from typing import Any

from homeassistant.components import ai_task, conversation
from homeassistant.components.conversation import trace
from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME, STATE_UNAVAILABLE
from homeassistant.core import Context, HomeAssistant
from homeassistant.data_entry_flow import FlowResultType, InvalidData
from homeassistant.exceptions import Unauthorized
from homeassistant.helpers import entity_registry as er, intent
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, MockUser

from custom_components.openai_compatible.const import (
    CONF_CHAT_MODEL,
    CONF_FALLBACK,
    CONF_RECOMMENDED,
    CONF_TIMEOUT,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)
from simulator import (
    OpenAISimulator,
    Pause,
    chunk,
    message_item,
    reasoning_item,
    response_stream,
    sse_text,
)

from .conftest import SetupEntry, served, speech, stored_chat_log

_DOMAINS = {SUBENTRY_CONVERSATION: "conversation", SUBENTRY_AI_TASK: "ai_task"}


@pytest.fixture
async def backup(socket_enabled: None) -> AsyncIterator[OpenAISimulator]:
    """Serve the second server, the one the fallback runs on."""
    async with served(OpenAISimulator()) as sim:
        yield sim


def entity_of(hass: HomeAssistant, entry: MockConfigEntry, subentry_type: str) -> str:
    """Return the entity of the entry's subentry of a type."""
    subentry = next(
        sub for sub in entry.subentries.values() if sub.subentry_type == subentry_type
    )
    entity_id = er.async_get(hass).async_get_entity_id(
        _DOMAINS[subentry_type], DOMAIN, subentry.subentry_id
    )
    assert entity_id is not None
    return entity_id


async def pair(
    hass: HomeAssistant, setup_entry: SetupEntry, backup: OpenAISimulator, **kwargs: Any
) -> tuple[MockConfigEntry, MockConfigEntry]:
    """Set up the backup's entry, then ours naming its agent and task as fallbacks."""
    spare = await setup_entry(base_url=backup.base_url, title="Backup")
    ours = await setup_entry(
        title="Ours",
        conversation={
            CONF_FALLBACK: entity_of(hass, spare, SUBENTRY_CONVERSATION),
            CONF_LLM_HASS_API: [],
        },
        ai_task={CONF_FALLBACK: entity_of(hass, spare, SUBENTRY_AI_TASK)},
        **kwargs,
    )
    return ours, spare


async def ask(
    hass: HomeAssistant, agent: str, text: str
) -> conversation.ConversationResult:
    """Send one sentence to an agent."""
    return await conversation.async_converse(
        hass, text, None, Context(), agent_id=agent
    )


@pytest.fixture(autouse=True)
def earlier_traces() -> None:
    """Remember the traces of earlier tests: Home Assistant keeps them."""
    _EARLIER.clear()
    _EARLIER.update(recent.trace_id for recent in trace.async_get_traces())


_EARLIER: set[str] = set()


def fallback_events() -> list[dict[str, Any]]:
    """Return the fallback details this test's conversation traces hold."""
    return [
        event["data"]["fallback"]
        for recent in trace.async_get_traces()
        if recent.trace_id not in _EARLIER
        for event in recent.as_dict()["events"]
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        and "fallback" in event["data"]
    ]


async def test_stopped_server_hands_over(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Our server is down: the fallback agent answers in the same conversation."""
    ours, spare = await pair(hass, setup_entry, backup)
    agent = entity_of(hass, ours, SUBENTRY_CONVERSATION)
    other = entity_of(hass, spare, SUBENTRY_CONVERSATION)
    await simulator.stop()
    backup.enqueue("/chat/completions", sse=sse_text("The backup answers."))

    with caplog.at_level(logging.INFO):
        result = await ask(hass, agent, "Hello")

    assert result.response.response_type == intent.IntentResponseType.ACTION_DONE
    assert speech(result) == "The backup answers."
    assert f"{agent} cannot answer (cannot_connect); {other} answers" in caplog.text
    assert fallback_events() == [
        {"from": agent, "to": other, "reason": "cannot_connect"}
    ]
    log = stored_chat_log(hass, result.conversation_id)
    assert [(content.role, content.content) for content in log.content[1:]] == [
        ("user", "Hello"),
        ("assistant", "The backup answers."),
    ]
    assert backup.chat_requests()[0]["messages"][-1] == {
        "role": "user",
        "content": "Hello",
    }


@pytest.mark.parametrize(
    ("answers", "options"),
    [
        ([{"status": 503}], {}),
        ([{"status": 500, "json": {"error": {"message": "CUDA out of memory"}}}], {}),
        ([{"status": 429}], {}),
        (
            [{"sse": [Pause(1.0), chunk({"role": "assistant", "content": "Late."})]}],
            {CONF_TIMEOUT: 0.3},
        ),
    ],
    ids=["unavailable", "failed", "rate_limited", "timeout"],
)
async def test_failing_server_hands_over(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
    answers: list[dict[str, Any]],
    options: dict[str, Any],
) -> None:
    """A 5xx, a rate limit or a timeout is answered by the fallback."""
    ours, _ = await pair(hass, setup_entry, backup, options=options)
    for answer in answers:
        simulator.enqueue("/chat/completions", **answer)
    backup.enqueue("/chat/completions", sse=sse_text("Backup here."))

    result = await ask(hass, entity_of(hass, ours, SUBENTRY_CONVERSATION), "Hi")

    assert speech(result) == "Backup here."
    assert len(backup.chat_requests()) == 1


async def test_refused_key_is_not_handed_over(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
) -> None:
    """A 401 is the user's to fix: its error is spoken, the fallback not asked."""
    ours, _ = await pair(hass, setup_entry, backup)
    simulator.enqueue(
        "/chat/completions",
        status=401,
        json={"error": {"message": "Incorrect API key provided"}},
    )

    result = await ask(hass, entity_of(hass, ours, SUBENTRY_CONVERSATION), "Hi")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "refused the API key" in speech(result)
    assert not backup.chat_requests()
    assert not fallback_events()


async def test_unavailable_agent_hands_over_at_once(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
) -> None:
    """An agent the coordinator found down hands over without asking its server."""
    ours, _ = await pair(hass, setup_entry, backup)
    agent = entity_of(hass, ours, SUBENTRY_CONVERSATION)
    await simulator.stop()
    await ours.runtime_data.coordinator.async_refresh()
    await hass.async_block_till_done()
    state = hass.states.get(agent)
    assert state is not None
    assert state.state == STATE_UNAVAILABLE
    backup.enqueue("/chat/completions", sse=sse_text("Still here."))

    result = await ask(hass, agent, "Hi")

    assert speech(result) == "Still here."
    assert fallback_events()[-1]["reason"] == "unavailable"


async def test_loop_made_outside_the_form_does_not_recurse(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
) -> None:
    """A → B → A with both servers down: each hands over once, then an error."""
    ours, spare = await pair(hass, setup_entry, backup)
    agent = entity_of(hass, ours, SUBENTRY_CONVERSATION)
    subentry = next(
        sub
        for sub in spare.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    hass.config_entries.async_update_subentry(
        spare, subentry, data={**subentry.data, CONF_FALLBACK: agent}
    )
    await hass.async_block_till_done()
    for sim in (simulator, backup):
        sim.enqueue("/chat/completions", status=503)

    result = await ask(hass, agent, "Hi")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert [event["from"] for event in fallback_events()] == [agent]


async def test_ai_task_hands_over(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
) -> None:
    """A generate-data task whose server is down is done by the fallback task."""
    ours, _ = await pair(hass, setup_entry, backup)
    await simulator.stop()
    backup.enqueue("/chat/completions", sse=sse_text('{"colour": "blue"}'))

    result = await ai_task.async_generate_data(
        hass,
        task_name="Sky",
        entity_id=entity_of(hass, ours, SUBENTRY_AI_TASK),
        instructions="What colour is the sky?",
        structure=None,
    )

    assert result.data == '{"colour": "blue"}'
    [request] = backup.chat_requests()
    assert request["messages"][-1]["content"] == "What colour is the sky?"


async def test_ai_task_image_hands_over(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
) -> None:
    """An image task whose server fails is done by a fallback that makes images."""
    ours, _ = await pair(hass, setup_entry, backup)
    simulator.enqueue("/images/generations", status=502)

    result = await ai_task.async_generate_image(
        hass,
        task_name="Cat",
        entity_id=entity_of(hass, ours, SUBENTRY_AI_TASK),
        instructions="A cat",
    )

    assert result["model"] == "gpt-image-1"
    assert any(
        request.path.endswith("/images/generations") for request in backup.requests
    )


async def test_ai_task_image_fallback_needs_control_of_it(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
    hass_admin_user: MockUser,
) -> None:
    """A user who may not control the fallback task gets no image from it."""
    ours, spare = await pair(hass, setup_entry, backup)
    own = entity_of(hass, ours, SUBENTRY_AI_TASK)
    hass_admin_user.groups = []
    hass_admin_user.mock_policy({"entities": {"entity_ids": {own: True}}})
    simulator.enqueue("/images/generations", status=502)

    with pytest.raises(Unauthorized) as raised:
        await ai_task.async_generate_image(
            hass,
            task_name="Cat",
            entity_id=own,
            instructions="A cat",
            context=Context(user_id=hass_admin_user.id),
        )

    assert raised.value.entity_id == entity_of(hass, spare, SUBENTRY_AI_TASK)
    assert not any(
        request.path.endswith("/images/generations") for request in backup.requests
    )


async def _configure(
    hass: HomeAssistant, entry: MockConfigEntry, fallback: str
) -> dict[str, Any]:
    """Reconfigure the entry's agent to fall back to `fallback`."""
    subentry_id = next(
        sub.subentry_id
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    result = await entry.start_subentry_reconfigure_flow(hass, subentry_id)
    return dict(
        await hass.config_entries.subentries.async_configure(
            result["flow_id"],
            {
                CONF_CHAT_MODEL: "gpt-4o-mini",
                CONF_RECOMMENDED: True,
                CONF_FALLBACK: fallback,
            },
        )
    )


async def test_form_refuses_a_loop(
    hass: HomeAssistant, backup: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A → B → A is refused with its error, A → A by the selector."""
    ours, spare = await pair(hass, setup_entry, backup)
    agent = entity_of(hass, ours, SUBENTRY_CONVERSATION)

    result = await _configure(hass, spare, agent)
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_FALLBACK: "fallback_loop"}
    with pytest.raises(InvalidData):
        await _configure(hass, ours, agent)

    result = await _configure(hass, spare, "conversation.home_assistant")
    assert result["reason"] == "reconfigure_successful"
    assert result["type"] is FlowResultType.ABORT


async def test_form_offers_agents_but_itself(
    hass: HomeAssistant, backup: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The new agent's form offers any agent; a saved one's excludes itself."""
    ours, _ = await pair(hass, setup_entry, backup)
    result = await hass.config_entries.subentries.async_init(
        (ours.entry_id, SUBENTRY_CONVERSATION), context={"source": SOURCE_USER}
    )
    schema = result["data_schema"].schema
    field = next(key for key in schema if key == CONF_FALLBACK)
    assert schema[field].config["exclude_entities"] == []
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Third",
            CONF_CHAT_MODEL: "gpt-4o-mini",
            CONF_RECOMMENDED: True,
            CONF_FALLBACK: entity_of(hass, ours, SUBENTRY_CONVERSATION),
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_FALLBACK] == entity_of(hass, ours, SUBENTRY_CONVERSATION)


async def test_the_first_servers_reasoning_stays_with_it(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    backup: OpenAISimulator,
    setup_entry: SetupEntry,
) -> None:
    """After a handover, the other server gets the earlier answer as a message."""
    spare = await setup_entry(
        base_url=backup.base_url, title="Backup", provider="openai"
    )
    ours = await setup_entry(
        title="Ours",
        provider="openai",
        conversation={
            CONF_FALLBACK: entity_of(hass, spare, SUBENTRY_CONVERSATION),
            CONF_LLM_HASS_API: [],
        },
    )
    agent = entity_of(hass, ours, SUBENTRY_CONVERSATION)
    simulator.enqueue(
        "/responses",
        sse=response_stream([reasoning_item("Greet back."), message_item("Hello!")]),
    )
    first = await ask(hass, agent, "Hi")
    simulator.enqueue("/responses", status=503)
    backup.enqueue("/responses", sse=response_stream([message_item("Backup here.")]))

    result = await conversation.async_converse(
        hass, "And now?", first.conversation_id, Context(), agent_id=agent
    )

    assert speech(result) == "Backup here."
    (sent,) = backup.responses_requests()
    assert {"type": "message", "role": "assistant", "content": "Hello!"} in sent[
        "input"
    ]
    assert not [item for item in sent["input"] if item["type"] == "reasoning"]
