"""Faults of the connection: deadlines, rate limits, error pages, outages."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.const import CONF_LLM_HASS_API, STATE_UNAVAILABLE
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import intent
from homeassistant.util import dt as dt_util
import pytest
from pytest_homeassistant_custom_component.common import async_fire_time_changed

from custom_components.openai_compatible.const import CONF_TIMEOUT
from custom_components.openai_compatible.coordinator import CHECK_INTERVAL
from custom_components.openai_compatible.errors import MAX_SHOWN_CHARACTERS
from custom_components.openai_compatible.net.transport import RETRY_MIN_WAITS
from custom_components.openai_compatible.server_errors.answers import MAX_ERROR_BYTES
from simulator import OpenAISimulator, Pause, sse_text

from .conftest import FaultHarnessFactory

CHAT = "/chat/completions"
NO_TOOLS = {CONF_LLM_HASS_API: []}
SECRET_KEY = "hunter2-correct-horse-battery"
OTHER_TOKEN = "sk-proj-abcdefghijklmnop0123"


def speech(result: conversation.ConversationResult) -> str:
    """Return what the agent said."""
    return str(result.response.speech["plain"]["speech"])


def failed(result: conversation.ConversationResult) -> bool:
    """Tell whether the turn ended in an error."""
    return result.response.response_type is intent.IntentResponseType.ERROR


async def test_a_trickling_server_meets_the_deadline(
    fault_harness: FaultHarnessFactory,
) -> None:
    """Keep-alive lines without an answer do not hold a turn past its deadline."""
    harness = await fault_harness(conversation=NO_TOOLS, options={CONF_TIMEOUT: 1})
    harness.faulty.enqueue(CHAT, sse=[": keep-alive\n\n", Pause(0.1)] * 40)

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert "did not finish its answer in time" in speech(result)


async def test_a_rate_limit_that_says_when_is_waited_out(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A 429 with a Retry-After inside the budget is sent again, once."""
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(CHAT, status=429, headers={"Retry-After": "0"})
    harness.faulty.enqueue(CHAT, sse=sse_text("Hello there."))

    result = await harness.run(harness.converse("Hi"))

    assert speech(result) == "Hello there."
    assert len(harness.faulty.chat_requests()) == 2


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize(
    "retry_after", ["0", "-5", "Wed, 21 Oct 2015 07:28:00 GMT"], ids=str
)
async def test_a_rate_limit_that_says_now_is_retried_twice_at_most(
    fault_harness: FaultHarnessFactory,
    caplog: pytest.LogCaptureFixture,
    status: int,
    retry_after: str,
) -> None:
    """'Come back now' (or in the past) gets two retries, 0.5 s then 1 s apart."""
    harness = await fault_harness(conversation=NO_TOOLS)
    for _ in range(3):
        harness.faulty.enqueue(
            CHAT, status=status, headers={"Retry-After": retry_after}
        )
    loop = asyncio.get_running_loop()
    started = loop.time()

    with caplog.at_level(logging.DEBUG):
        result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert len(harness.faulty.chat_requests()) == 3
    waits = [r.args[-1] for r in caplog.records if "retrying in" in str(r.msg)]
    assert waits == [0.5, 1.0] == list(RETRY_MIN_WAITS)
    assert loop.time() - started >= sum(waits)


async def test_a_voice_turn_does_not_wait_long(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A 503 asking for more time than a voice turn has fails at once, with the hint."""
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(CHAT, status=503, headers={"Retry-After": "30"})

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert len(harness.faulty.chat_requests()) == 1


async def test_nothing_else_is_retried(fault_harness: FaultHarnessFactory) -> None:
    """A 500 is not sent again, Retry-After or not."""
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(CHAT, status=500, headers={"Retry-After": "0"})

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert len(harness.faulty.chat_requests()) == 1


async def test_an_error_message_is_shown_short_and_plain(
    fault_harness: FaultHarnessFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A server's long message is cut; the whole text goes to the debug log."""
    assert MAX_SHOWN_CHARACTERS == 200
    words = " ".join(f"word{index}" for index in range(400))
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(CHAT, status=500, json={"error": {"message": words}})

    with caplog.at_level(logging.DEBUG):
        result = await harness.run(harness.converse("Hi"))

    said = speech(result)
    assert "word0 word1" in said
    shown = said.split(": ", 1)[1]
    assert len(shown) <= MAX_SHOWN_CHARACTERS
    assert shown.endswith("…")
    assert "word399" in caplog.text


@pytest.mark.parametrize(
    ("status", "told"),
    [
        (502, "A proxy in front of the model server answered 502"),
        (504, "A proxy in front of the model server answered 504"),
        (503, "The model server answered 503: it cannot take requests now"),
        (500, "The model server answered 500: it failed while handling"),
    ],
)
async def test_an_error_page_is_told_by_its_status(
    fault_harness: FaultHarnessFactory,
    caplog: pytest.LogCaptureFixture,
    status: int,
    told: str,
) -> None:
    """An HTML page is told by its status; its first words go to the debug log."""
    words = " ".join(f"word{index}" for index in range(400))
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(
        CHAT,
        status=status,
        raw=f"<html><head><style>p {{}}</style></head><body><h1>{status} Bad"
        f" Gateway</h1><p>{words} Bearer {SECRET_KEY}</p></body>",
        headers={"Content-Type": "text/html"},
    )

    with caplog.at_level(logging.DEBUG):
        result = await harness.run(harness.converse("Hi"))

    said = speech(result)
    assert failed(result)
    assert said.startswith(told), said
    assert "word" not in said
    assert "Bad Gateway" not in said
    assert f"{status} Bad Gateway word0 word1" in caplog.text
    assert "word399" not in caplog.text
    assert "{}" not in caplog.text


async def test_a_page_refusing_a_request_is_told_by_its_status(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A 4xx page is a refusal told as `HTTP 404 Not Found`, not the page."""
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(
        CHAT, status=404, raw="<html><body>Oops, page xyz went missing</body></html>"
    )

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert speech(result).endswith(": HTTP 404 Not Found")


async def test_an_endless_error_body_is_read_only_in_part(
    fault_harness: FaultHarnessFactory,
) -> None:
    """An error body past the cap is cut, and its status still tells."""
    assert MAX_ERROR_BYTES == 64 * 1024
    harness = await fault_harness(conversation=NO_TOOLS)
    harness.faulty.enqueue(CHAT, status=400, raw="x" * (4 * MAX_ERROR_BYTES))

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert "xxxx" in speech(result)


async def test_an_unreachable_server_makes_entities_unavailable(
    hass: HomeAssistant,
    fault_harness: FaultHarnessFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Down: one warning, entities unavailable; back: one info line, available."""
    harness = await fault_harness(conversation=NO_TOOLS)
    port = int(harness.faulty.base_url.rsplit(":", 1)[1].split("/")[0])
    await harness.faulty.stop()

    result = await conversation.async_converse(
        hass, "Hi", None, Context(), agent_id=harness.faulty_agent
    )
    await hass.async_block_till_done()

    assert failed(result)
    assert "Cannot connect" in speech(result)
    assert hass.states.get(harness.faulty_agent).state == STATE_UNAVAILABLE
    assert hass.states.get(harness.faulty_ai_task).state == STATE_UNAVAILABLE
    assert hass.states.get(harness.healthy_agent).state != STATE_UNAVAILABLE
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len([r for r in warnings if "cannot be reached" in r.message]) == 1

    # Still down at the next check: no new warning.
    async_fire_time_changed(hass, dt_util.utcnow() + CHECK_INTERVAL)
    await hass.async_block_till_done(wait_background_tasks=True)
    assert hass.states.get(harness.faulty_agent).state == STATE_UNAVAILABLE

    await harness.faulty.start(port=port)
    caplog.clear()
    async_fire_time_changed(hass, dt_util.utcnow() + 2 * CHECK_INTERVAL)
    await hass.async_block_till_done(wait_background_tasks=True)

    assert hass.states.get(harness.faulty_agent).state != STATE_UNAVAILABLE
    assert hass.states.get(harness.faulty_ai_task).state != STATE_UNAVAILABLE
    assert [r.message for r in caplog.records if "answers again" in r.message]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_retry_budgets(fault_harness: FaultHarnessFactory) -> None:
    """A voice turn waits seconds for a rate limit; an AI task may wait a minute."""
    harness = await fault_harness(options={CONF_TIMEOUT: 120})
    agent = harness.hass.data["entity_components"]["conversation"].get_entity(
        harness.faulty_agent
    )
    task = harness.hass.data["entity_components"]["ai_task"].get_entity(
        harness.faulty_ai_task
    )
    assert (agent.budget().deadline, agent.budget().retry_wait) == (120, 5)
    assert (task.budget().deadline, task.budget().retry_wait) == (120, 60)


async def test_simulator_restarts_on_its_port(simulator: OpenAISimulator) -> None:
    """The outage test restarts the faulty server where it was (a sanity check)."""
    url = simulator.base_url
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    await simulator.stop()
    await simulator.start(port=port)
    assert simulator.base_url == url


@pytest.mark.parametrize(
    "answer",
    [
        {"status": 400, "raw": f"Bad header 'Authorization: Bearer {SECRET_KEY}'"},
        {
            "status": 401,
            "json": {"error": {"message": f"key {SECRET_KEY} is not {OTHER_TOKEN}"}},
        },
        {
            "sse": [{"error": {"message": f"Bearer {SECRET_KEY} or {OTHER_TOKEN}"}}],
        },
    ],
    ids=["400 quoting the header", "401 quoting the key", "stream error event"],
)
async def test_a_key_quoted_back_is_never_shown(
    fault_harness: FaultHarnessFactory,
    caplog: pytest.LogCaptureFixture,
    answer: dict[str, Any],
) -> None:
    """The entry's key and bearer tokens are neither spoken, traced nor logged."""
    harness = await fault_harness(conversation=NO_TOOLS, api_key=SECRET_KEY)
    harness.faulty.enqueue(CHAT, **answer)

    with caplog.at_level(logging.DEBUG):
        result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    traced = json.dumps(trace.async_get_traces()[-1].as_dict(), default=str)
    for text in (speech(result), caplog.text, traced):
        assert SECRET_KEY not in text
        assert OTHER_TOKEN not in text
    assert harness.faulty.requests[-1].headers["authorization"].endswith(SECRET_KEY)


async def test_a_lesson_taught_by_a_text_quoting_the_key_keeps_no_key(
    fault_harness: FaultHarnessFactory,
) -> None:
    """What a refusal taught, shown in diagnostics, holds no key, nor its words."""
    harness = await fault_harness(api_key=SECRET_KEY)
    message = f"Bearer {SECRET_KEY}: gemma does not support tools"
    harness.faulty.enqueue(CHAT, status=400, json={"error": {"message": message}})

    result = await harness.run(harness.converse("Turn on the kitchen light"))

    assert failed(result)
    capabilities = harness.faulty_entry.runtime_data.capabilities
    learned = json.dumps(capabilities.diagnostics([]))
    assert "HTTP 400 refusing tools" in learned
    assert "gemma" not in learned
    assert SECRET_KEY not in learned


async def test_a_redirect_is_told_and_never_followed(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A 307 names where it leads, without credentials or query; no key goes there."""
    harness = await fault_harness(conversation=NO_TOOLS, api_key=SECRET_KEY)
    target = harness.healthy.base_url.replace("://", "://user:pw@", 1)
    harness.faulty.enqueue(
        CHAT, status=307, headers={"Location": f"{target}{CHAT}?key=abc#part"}
    )

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert speech(result) == (
        "The model server redirects the request (307) to "
        f"{harness.healthy.base_url}{CHAT}. The request is not sent on, as the API "
        "key would go with it: if that is the right server, enter its address as "
        "the server URL"
    )
    sent = [
        request.headers.get("authorization") for request in harness.healthy.requests
    ]
    assert f"Bearer {SECRET_KEY}" not in sent


@pytest.mark.parametrize(
    ("headers", "told"),
    [
        ({"Location": "/elsewhere/v1"}, "to http://127.0.0.1:{port}/elsewhere/v1."),
        ({}, "with a redirect (308) without saying where to"),
    ],
    ids=["relative", "no location"],
)
async def test_a_redirect_says_where_it_leads_if_it_can(
    fault_harness: FaultHarnessFactory, headers: dict[str, str], told: str
) -> None:
    """A relative Location is told as an address; none at all, as no address."""
    harness = await fault_harness(conversation=NO_TOOLS)
    port = harness.faulty.base_url.rsplit(":", 1)[1].split("/")[0]
    harness.faulty.enqueue(CHAT, status=308, headers=headers)

    result = await harness.run(harness.converse("Hi"))

    assert failed(result)
    assert told.format(port=port) in speech(result)
