"""Fitting conversations into the context window, over HTTP against the simulator."""

from __future__ import annotations

from collections.abc import Iterator
import socket
import threading
import time
from typing import Any
from unittest.mock import ANY

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT, CONF_URL
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import intent, issue_registry as ir
from mcp.server import MCPServer
import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_time_changed,
)
import uvicorn

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_CHAT_MODEL,
    CONF_CONTEXT_WINDOW,
    CONF_HISTORY_TURNS,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)
from custom_components.openai_compatible.coordinator import REFRESH_INTERVAL
from custom_components.openai_compatible.diagnostics import (
    async_get_config_entry_diagnostics,
)
from custom_components.openai_compatible.errors import ContextWindowError
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.window.context_window import (
    MAX_CONVERSATIONS,
    ContextWindow,
    observe_usage,
)
from custom_components.openai_compatible.window.prompt_fit import MIN_ANSWER_TOKENS
from simulator import OpenAISimulator, sse_text, sse_tool_calls
from simulator.responses_as_chat import chat_body
from simulator.window import counted_tokens, prompt_tokens
from tests.conftest import MakeConfigEntry, SetupEntry, converse, speech

# About 1,000 tokens as the simulator counts them, 2,000 as we first guess.
LONG_PROMPT = "You are a test assistant. " + "filler " * 1000


def words(count: int, word: str = "light") -> str:
    """Return a sentence of `count` words."""
    return " ".join([word] * count)


async def setup_agent(setup_entry: SetupEntry, **options: Any) -> MockConfigEntry:
    """Set up an agent without tools, with the long prompt and these options."""
    return await setup_entry(
        conversation={CONF_PROMPT: LONG_PROMPT, CONF_LLM_HASS_API: [], **options}
    )


def agent_subentry_id(entry: MockConfigEntry) -> str:
    """Return the id of the entry's conversation subentry."""
    return next(
        subentry.subentry_id
        for subentry in entry.subentries.values()
        if subentry.subentry_type == SUBENTRY_CONVERSATION
    )


def learned_window(entry: MockConfigEntry) -> int | None:
    """Return the window the entry learned for the agent's model."""
    model = entry.subentries[agent_subentry_id(entry)].data[CONF_CHAT_MODEL]
    window: int | None = entry.runtime_data.capabilities.model(
        model
    ).lessons.context_window
    return window


def context_details() -> list[dict[str, Any]]:
    """Return the context details traced by the last conversation turn."""
    events = trace.async_get_traces()[-1].as_dict()["events"]
    return [
        event["data"]["context"]
        for event in events
        if event["event_type"] == trace.ConversationTraceEventType.AGENT_DETAIL
        and "context" in event["data"]
    ]


def statuses(simulator: OpenAISimulator) -> list[bool]:
    """Return, per chat request, whether the simulator took it."""
    return [
        prompt_tokens(body) <= (simulator.settings.context_window or 0)
        for body in simulator.chat_requests()
    ]


async def test_no_window_sends_everything(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """With no window known, every turn is sent, as before."""
    await setup_agent(setup_entry)

    first = await converse(hass, words(300))
    for _ in range(3):
        await converse(hass, words(300), first.conversation_id)

    last = simulator.chat_requests()[-1]
    assert len(last["messages"]) == 1 + 3 * 2 + 1
    (details,) = context_details()
    assert details["window"] is None
    assert details["kept_turns"] == 3
    assert details["dropped_turns"] == 0


async def test_window_setting_fits_every_request(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """With the window set, old turns go and no request is over it."""
    simulator.settings.context_window = 4000
    await setup_agent(setup_entry, **{CONF_CONTEXT_WINDOW: 4000})

    first = await converse(hass, words(300))
    for _ in range(10):
        result = await converse(hass, words(300), first.conversation_id)
        assert result.response.response_type == intent.IntentResponseType.ACTION_DONE

    assert all(statuses(simulator))
    (details,) = context_details()
    assert details["window"] == 4000
    assert details["dropped_turns"] > 0
    assert details["estimated_tokens"] <= 4000
    last = simulator.chat_requests()[-1]
    assert last["messages"][0]["content"].startswith("You are a test assistant.")


async def test_history_setting(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """History to keep caps earlier turns, even with no window known."""
    await setup_agent(setup_entry, **{CONF_HISTORY_TURNS: 3})

    first = await converse(hass, "one")
    for text in ("two", "three", "four", "five", "six", "seven"):
        await converse(hass, text, first.conversation_id)

    users = [
        [m["content"] for m in body["messages"] if m["role"] == "user"]
        for body in simulator.chat_requests()
    ]
    assert users == [
        ["one"],
        ["one", "two"],
        ["one", "two", "three"],
        ["one", "two", "three", "four"],
        # Over three earlier turns: two go at once, and the next turn adds.
        ["three", "four", "five"],
        ["three", "four", "five", "six"],
        ["five", "six", "seven"],
    ]


@pytest.mark.parametrize(
    "style", ["openai", "vllm", "llama_cpp", "lm_studio", "litellm"]
)
async def test_overflow_teaches_the_window(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    style: Any,
) -> None:
    """An overflow error's window is learned; the same request goes again, trimmed."""
    entry = await setup_agent(setup_entry)
    # Set after setup: the server's model list did not report it.
    simulator.settings.context_window = 4000
    simulator.settings.overflow_style = style

    first = await converse(hass, words(300))
    conversation_id = first.conversation_id
    results = [first]
    while learned_window(entry) is None:
        assert len(results) < 10
        results.append(await converse(hass, words(300), conversation_id))
    results += [await converse(hass, words(300), conversation_id) for _ in range(3)]

    assert learned_window(entry) == 4000
    assert all(
        result.response.response_type == intent.IntentResponseType.ACTION_DONE
        for result in results
    )
    taken = statuses(simulator)
    # One refused request, sent again at once trimmed; none refused after it.
    assert taken.count(False) == 1
    refused = taken.index(False)
    assert taken[refused + 1 :] == [True] * (len(taken) - refused - 1)
    bodies = simulator.chat_requests()
    assert len(bodies[refused + 1]["messages"]) < len(bodies[refused]["messages"])
    assert bodies[refused + 1]["messages"][-1] == bodies[refused]["messages"][-1]
    assert len(bodies) == len(results) + 1


async def test_prompt_too_large_first_turn_and_repair(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A prompt that cannot fit fails the first turn with numbers, and a repair says so."""
    entry = await setup_agent(setup_entry, **{CONF_CONTEXT_WINDOW: 1500})
    subentry_id = agent_subentry_id(entry)
    issue_id = f"prompt_too_large_{subentry_id}"

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    text = speech(result)
    assert "context window is 1,500 tokens" in text
    assert "Expose fewer entities" in text
    assert simulator.chat_requests() == []
    issue = ir.async_get(hass).async_get_issue(DOMAIN, issue_id)
    assert issue is not None
    assert issue.translation_key == "prompt_too_large"
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["window"] == "1,500"
    assert issue.translation_placeholders["name"] == entry.subentries[subentry_id].title
    assert f"about {issue.translation_placeholders['needed']} tokens" in text

    # A larger window fixes it: the next turn answers, and the issue goes.
    subentry = entry.subentries[subentry_id]
    hass.config_entries.async_update_subentry(
        entry, subentry, data={**subentry.data, CONF_CONTEXT_WINDOW: 8000}
    )
    await hass.async_block_till_done()
    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ACTION_DONE
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


async def test_no_repair_issue_once_the_entry_is_gone(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A turn still running when its entry is removed opens no repair issue."""
    entry = await setup_agent(setup_entry, **{CONF_CONTEXT_WINDOW: 1500})
    window = ContextWindow(entry.entry_id, entry.subentries[agent_subentry_id(entry)])
    too_large = ContextWindowError("prompt_too_large", window="1,500", needed="2,000")
    chat_log = conversation.ChatLog(hass, "late")
    window.report(chat_log, too_large)
    assert ir.async_get(hass).async_get_issue(DOMAIN, window.issue_id) is not None

    await hass.config_entries.async_remove(entry.entry_id)
    window.report(chat_log, too_large)

    assert ir.async_get(hass).async_get_issue(DOMAIN, window.issue_id) is None


@pytest.mark.parametrize(
    "style", ["openai", "vllm", "llama_cpp", "lm_studio", "litellm"]
)
async def test_overflow_that_trimming_cannot_fix(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    style: Any,
) -> None:
    """A window named too small for the prompt gives the translated message, no raw text."""
    entry = await setup_agent(setup_entry)
    simulator.settings.context_window = 900  # not reported: set after setup
    simulator.settings.overflow_style = style

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    text = speech(result)
    assert "context window is 900 tokens" in text
    assert "context size" not in text
    assert "maximum context" not in text
    assert len(simulator.chat_requests()) == 1
    assert learned_window(entry) == 900
    issue_id = f"prompt_too_large_{agent_subentry_id(entry)}"
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None


async def test_overflow_again_after_trimming(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A trimmed request refused again gives the translated message."""
    await setup_agent(setup_entry)
    overflow = {
        "error": {
            "message": "This model's maximum context length is 8000 tokens. However, "
            "your messages resulted in 9000 tokens.",
            "code": "context_length_exceeded",
        }
    }
    for _ in range(2):
        simulator.enqueue("/chat/completions", status=400, json=overflow)

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "context window is 8,000 tokens" in speech(result)
    # The prompt the server counted, and the least room for an answer.
    assert f"about {9000 + MIN_ANSWER_TOKENS:,} tokens" in speech(result)
    assert len(simulator.chat_requests()) == 2


async def test_overflow_naming_no_window(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An overflow that names no window, with none known, says what to set."""
    await setup_agent(setup_entry)
    simulator.enqueue(
        "/chat/completions",
        status=400,
        json={"error": {"message": "Input too big", "code": "context_length_exceeded"}},
    )

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "Set the agent's context window" in speech(result)
    assert "Input too big" not in speech(result)
    assert len(simulator.chat_requests()) == 1


async def test_overflow_count_recalibrates(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An overflow that counts the prompt corrects the estimate and is sent again."""
    await setup_agent(setup_entry, **{CONF_CONTEXT_WINDOW: 100_000})
    body = {
        "error": {
            "message": "Prompt contains 3000 tokens and 0 draft tokens, too large "
            "for model"
        }
    }
    simulator.enqueue("/chat/completions", status=400, json=body)

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ACTION_DONE
    assert len(simulator.chat_requests()) == 2


async def test_overflow_with_nothing_new_to_fit_by(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An overflow that teaches nothing new is not sent again the same."""
    await setup_agent(setup_entry, **{CONF_CONTEXT_WINDOW: 4000})
    body = {"error": {"message": "context window exceeded", "type": "overflow"}}
    simulator.enqueue("/chat/completions", status=400, json=body)

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "context window is 4,000 tokens" in speech(result)
    assert len(simulator.chat_requests()) == 1


async def test_usage_calibrates_the_estimate(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The server's prompt count of one request corrects the next estimate."""
    await setup_agent(setup_entry)

    first = await converse(hass, "hello")
    uncalibrated = context_details()[0]["estimated_tokens"]
    await converse(hass, "hello", first.conversation_id)
    calibrated = context_details()[0]["estimated_tokens"]

    counted = [prompt_tokens(body) for body in simulator.chat_requests()]
    # The first guess is twice the simulator's count; the next one is close.
    assert uncalibrated > 1.5 * counted[0]
    assert abs(calibrated - counted[1]) < 0.05 * counted[1]


def test_conversations_remembered_are_bounded(
    make_config_entry: MakeConfigEntry,
) -> None:
    """What was cut is kept for the most recent conversations only."""
    entry = make_config_entry()
    window = ContextWindow(entry.entry_id, entry.subentries[agent_subentry_id(entry)])
    first = window.cut("first")
    first.dropped_turns = 2

    assert window.cut("first") is first
    for number in range(MAX_CONVERSATIONS):
        window.cut(str(number))

    assert window.cut("first") is not first


async def test_message_too_large(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A message that cannot fit on its own is refused with numbers, no repair."""
    entry = await setup_agent(setup_entry, **{CONF_CONTEXT_WINDOW: 4000})

    result = await converse(hass, words(3000))

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "This message needs about" in speech(result)
    assert "context window is 4,000 tokens" in speech(result)
    assert simulator.chat_requests() == []
    issue_id = f"prompt_too_large_{agent_subentry_id(entry)}"
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


# About 1,400 tokens as the simulator counts them: an Assist prompt that a
# window of 2,611 tokens leaves about 1,080 tokens for the turns and answer.
ASSIST_PROMPT = "You are a test assistant. " + "filler " * 1400


@pytest.mark.parametrize("style", ["llama_cpp", "vllm"])
async def test_small_learned_window_answers_every_turn(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    style: Any,
) -> None:
    """A window learned from an overflow that leaves less than the usual answer room.

    Every turn is answered, its answer limited to what the window leaves; no
    request is over the window but the one that taught it.
    """
    entry = await setup_entry(
        conversation={CONF_PROMPT: ASSIST_PROMPT, CONF_LLM_HASS_API: []}
    )
    simulator.settings.context_window = 2611  # not reported: set after setup
    simulator.settings.overflow_style = style

    first = await converse(hass, words(150))
    results = [first]
    results += [
        await converse(hass, words(150), first.conversation_id) for _ in range(11)
    ]

    assert learned_window(entry) == 2611
    assert [speech(result).startswith("You said") for result in results] == [True] * 12
    bodies = simulator.chat_requests()
    over = [counted_tokens(body, style) > 2611 for body in bodies]
    assert over.count(True) == 1
    limited = bodies[over.index(True) + 1 :]
    assert all(
        MIN_ANSWER_TOKENS <= body["max_tokens"] < 1024
        and prompt_tokens(body) + body["max_tokens"] <= 2611
        for body in limited
    )
    assert context_details()[-1]["answer_tokens"] == limited[-1]["max_tokens"]
    # Half of what the prompt leaves keeps the last turn.
    assert context_details()[-1]["kept_turns"] >= 1


async def test_local_server_limits_the_answer(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A local server gets an answer limit unasked: a quarter of a small window."""
    await setup_entry(
        provider="ollama",
        conversation={CONF_LLM_HASS_API: [], CONF_CONTEXT_WINDOW: 2048},
    )

    await converse(hass, "hello")

    assert simulator.chat_requests()[-1]["max_tokens"] == 512


async def test_local_server_without_a_window_limits_the_answer(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """With no window known, a local server's answers stop at the usual room."""
    await setup_entry(provider="llama_cpp", conversation={CONF_LLM_HASS_API: []})

    await converse(hass, "hello")

    assert simulator.chat_requests()[-1]["max_tokens"] == 1024


async def test_hosted_server_gets_no_answer_limit(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A hosted service answers as long as the model does, as before."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [], CONF_CONTEXT_WINDOW: 2048})

    await converse(hass, "hello")

    assert "max_tokens" not in simulator.chat_requests()[-1]


async def test_dropped_system_prompt_is_folded(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A server that counts no system prompt gets it in the first user message.

    Learned from the first answer's prompt count, told in diagnostics; each
    request after it starts with the one before, so the cache is reused (the
    clock is held: Home Assistant's prompt says the time to the second).
    """
    simulator.settings.system_messages = False
    entry = await setup_entry(
        conversation={CONF_PROMPT: LONG_PROMPT, CONF_LLM_HASS_API: []}
    )

    first = await converse(hass, "hello")
    assert context_details()[-1]["system_folded"] is False
    for text in ("and now?", "thanks"):
        await converse(hass, text, first.conversation_id)

    plain, *folded = simulator.chat_requests()
    assert plain["messages"][0]["role"] == "system"
    for body in folded:
        assert [message["role"] for message in body["messages"]][:1] == ["user"]
        assert body["messages"][0]["content"].startswith("You are a test assistant.")
        assert body["messages"][0]["content"].endswith("\n\nhello")
    assert folded[1]["messages"][: len(folded[0]["messages"])] == folded[0]["messages"]
    assert context_details()[-1]["system_folded"] is True
    diagnostics = await async_get_config_entry_diagnostics(hass, entry)
    model = diagnostics["capabilities"]["models"]["gpt-4o-mini"]
    assert "system_messages" in model["learned"]["refused"]
    # Folded, the prompt is counted again and calibrates the estimate.
    counted = prompt_tokens(folded[-1])
    assert abs(context_details()[-1]["estimated_tokens"] - counted) < 0.05 * counted


async def test_small_count_on_ollama_is_no_dropped_system_prompt(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Ollama's count may leave out what its cache held: nothing is folded there."""
    simulator.settings.system_messages = False
    await setup_entry(
        provider="ollama",
        conversation={CONF_PROMPT: LONG_PROMPT, CONF_LLM_HASS_API: []},
    )

    first = await converse(hass, "hello")
    await converse(hass, "and now?", first.conversation_id)

    assert [body["messages"][0]["role"] for body in simulator.chat_requests()] == [
        "system",
        "system",
    ]


# --- tools from an MCP server ----------------------------------------------------

ROOMS = 20
DEVICES = 3000


@pytest.fixture
def mcp_server(socket_enabled: None) -> Iterator[str]:
    """Serve a small MCP server whose tool answers at length; yield its URL."""
    server: MCPServer[Any] = MCPServer("House devices")

    @server.tool(description="List the devices of the house, or of one room.")
    def list_devices(room: int | None = None) -> str:
        return "\n".join(
            f"device {number}: lamp in room {number % ROOMS}, on"
            for number in range(DEVICES)
            if room is None or number % ROOMS == room
        )

    listening = socket.create_server(("127.0.0.1", 0))
    runner = uvicorn.Server(
        uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    )
    thread = threading.Thread(
        target=runner.run, kwargs={"sockets": [listening]}, name="mcp-server"
    )
    thread.start()
    try:
        while not runner.started:
            assert thread.is_alive()
            time.sleep(0.01)
        yield f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"
    finally:
        runner.should_exit = True
        thread.join(10)
        listening.close()


async def test_mcp_tool_result_is_capped(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    mcp_server: str,
) -> None:
    """An MCP server's tool, chosen as an API of the agent, has its long answer cut."""
    simulator.settings.context_window = 4000
    mcp_entry = MockConfigEntry(
        domain="mcp", title="House devices", data={CONF_URL: mcp_server}
    )
    mcp_entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(mcp_entry.entry_id)
    await hass.async_block_till_done()
    api_id = f"mcp-{mcp_entry.entry_id}"
    await setup_entry(
        conversation={
            CONF_PROMPT: "You know the house.",
            CONF_LLM_HASS_API: [api_id],
            CONF_CONTEXT_WINDOW: 4000,
        }
    )
    simulator.enqueue(
        "/chat/completions", sse=sse_tool_calls([("call_1", "list_devices", {})])
    )
    simulator.enqueue("/chat/completions", sse=sse_text("Many lamps are on."))

    result = await converse(hass, "Which lamps are on?")

    assert speech(result) == "Many lamps are on."
    first, second = simulator.chat_requests()
    assert [tool["function"]["name"] for tool in first["tools"]] == ["list_devices"]
    answer = second["messages"][-1]
    assert answer["role"] == "tool"
    assert "device 0: lamp in room 0, on" in answer["content"]
    assert f"device {DEVICES - 1}:" not in answer["content"]
    assert answer["content"].endswith(
        "For the rest, call list_devices again with narrower arguments (room).]"
    )
    assert prompt_tokens(second) <= 4000


def stream_overflow(window: int) -> list[dict[str, Any]]:
    """Return a gateway's overflow told as the first event of a stream."""
    message = (
        "litellm.ContextWindowExceededError: This model's maximum context length "
        f"is {window} tokens."
    )
    return [{"error": {"message": message}}]


async def test_overflow_inside_the_stream_teaches_the_window(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An overflow a gateway sends as a stream event is learned and sent again."""
    entry = await setup_agent(setup_entry)
    simulator.enqueue("/chat/completions", sse=stream_overflow(8192))

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ACTION_DONE
    assert speech(result) == "You said: hello"
    assert learned_window(entry) == 8192
    first, again = simulator.chat_requests()
    assert again["messages"] == first["messages"]


async def test_overflow_inside_the_stream_that_trimming_cannot_fix(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A stream event naming a window too small for the prompt is told in our words."""
    await setup_agent(setup_entry)
    simulator.enqueue("/chat/completions", sse=stream_overflow(900))

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "context window is 900 tokens" in speech(result)
    assert "litellm" not in speech(result)
    assert len(simulator.chat_requests()) == 1


async def test_overflow_inside_the_stream_after_words(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An overflow after the answer began is not sent again: the words stay."""
    await setup_agent(setup_entry)
    words_said = sse_text("Partly ")[:-1]
    simulator.enqueue("/chat/completions", sse=[*words_said, *stream_overflow(8192)])

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "larger than the model's context window" in speech(result)
    assert len(simulator.chat_requests()) == 1


async def test_reported_window_fits_from_the_first_request(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A window the server reports is fitted into without any overflow."""
    simulator.settings.context_window = 4000
    await setup_agent(setup_entry)

    first = await converse(hass, words(300))
    for _ in range(6):
        await converse(hass, words(300), first.conversation_id)

    assert all(statuses(simulator))
    (details,) = context_details()
    assert details["window"] == 4000
    assert details["dropped_turns"] > 0


async def test_removed_agent_leaves_no_repair(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Removing an agent whose prompt did not fit closes its repair issue."""
    entry = await setup_agent(setup_entry, **{CONF_CONTEXT_WINDOW: 1500})
    subentry_id = agent_subentry_id(entry)
    issue_id = f"prompt_too_large_{subentry_id}"
    await converse(hass, "hello")
    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is not None

    assert hass.config_entries.async_remove_subentry(entry, subentry_id)
    await hass.async_block_till_done()

    assert ir.async_get(hass).async_get_issue(DOMAIN, issue_id) is None


async def test_ai_task_window_setting(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An AI task's window setting fits its requests, as an agent's does."""
    entry = await setup_entry(ai_task={CONF_CONTEXT_WINDOW: 1500})
    task = {"task_name": "Count", "entity_id": "ai_task.openai_compatible_ai_task"}

    with pytest.raises(HomeAssistantError) as err:
        await hass.services.async_call(
            "ai_task",
            "generate_data",
            {**task, "instructions": words(2000)},
            blocking=True,
            return_response=True,
        )

    assert err.value.translation_key == "message_too_large"
    assert err.value.translation_placeholders["window"] == "1,500"
    assert simulator.chat_requests() == []

    # A larger window lets the same task through.
    subentry = next(
        sub
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_AI_TASK
    )
    hass.config_entries.async_update_subentry(
        entry, subentry, data={**subentry.data, CONF_CONTEXT_WINDOW: 8000}
    )
    await hass.async_block_till_done()
    simulator.enqueue("/chat/completions", sse=sse_text("2000"))
    response = await hass.services.async_call(
        "ai_task",
        "generate_data",
        {**task, "instructions": words(2000)},
        blocking=True,
        return_response=True,
    )

    assert response == {"conversation_id": ANY, "data": "2000"}
    assert len(simulator.chat_requests()) == 1


async def test_newer_report_replaces_the_learned_window(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
) -> None:
    """A window learned under one report gives way when the server reports anew."""
    simulator.settings.context_window = 8000  # what the model list reports
    entry = await setup_agent(setup_entry)
    simulator.settings.context_window = 4000  # what the server takes
    first = await converse(hass, words(300))
    while learned_window(entry) is None:
        assert len(simulator.chat_requests()) < 20
        await converse(hass, words(300), first.conversation_id)
    assert learned_window(entry) == 4000
    assert context_details()[-1]["window"] == 4000

    # The model is loaded again with a larger context; the next refresh says so.
    simulator.settings.context_window = 16000
    freezer.tick(REFRESH_INTERVAL)
    async_fire_time_changed(hass)
    await hass.async_block_till_done(wait_background_tasks=True)
    sent = len(simulator.chat_requests())
    again = await converse(hass, words(300))
    for _ in range(5):
        await converse(hass, words(300), again.conversation_id)

    assert all(statuses(simulator)[sent:])
    (details,) = context_details()
    assert details["window"] == 16000
    assert details["dropped_turns"] == 0


async def setup_responses_agent(setup_entry: SetupEntry) -> MockConfigEntry:
    """Set up an agent without tools, with the long prompt, over the Responses API."""
    return await setup_entry(
        options={CONF_API: WireApi.RESPONSES},
        conversation={CONF_PROMPT: LONG_PROMPT, CONF_LLM_HASS_API: []},
    )


def responses_statuses(simulator: OpenAISimulator) -> list[bool]:
    """Return, per Responses request, whether the simulator took it."""
    return [
        prompt_tokens(chat_body(body)) <= (simulator.settings.context_window or 0)
        for body in simulator.responses_requests()
    ]


async def test_responses_requests_fit_the_window(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Over the Responses API, old turns go as well, and no request is over."""
    simulator.settings.context_window = 4000
    await setup_responses_agent(setup_entry)

    first = await converse(hass, words(300))
    for _ in range(6):
        await converse(hass, words(300), first.conversation_id)

    assert simulator.chat_requests() == []
    assert all(responses_statuses(simulator))
    (details,) = context_details()
    assert details["window"] == 4000
    assert details["dropped_turns"] > 0


async def test_responses_overflow_in_openai_words(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """OpenAI's Responses overflow, which names no number, is told in our words."""
    await setup_responses_agent(setup_entry)
    simulator.settings.context_window = 900
    simulator.settings.overflow_style = "openai_responses"

    result = await converse(hass, "hello")

    assert result.response.response_type == intent.IntentResponseType.ERROR
    assert "larger than the model's context window" in speech(result)
    assert "adjust your input" not in speech(result)


async def test_responses_overflow_inside_the_stream_teaches_the_window(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """An overflow told as a failed response is learned, and sent again trimmed."""
    entry = await setup_responses_agent(setup_entry)
    failed = {
        "type": "response.failed",
        "response": {
            "status": "failed",
            "error": {
                "code": "context_length_exceeded",
                "message": "This model's maximum context length is 8192 tokens.",
            },
        },
    }
    simulator.enqueue("/responses", sse=[failed])

    result = await converse(hass, "hello")

    assert speech(result) == "You said: hello"
    assert learned_window(entry) == 8192
    first, again = simulator.responses_requests()
    assert again["input"] == first["input"]


def test_usage_stats(hass: HomeAssistant) -> None:
    """Cached tokens come from the details when they are an object."""
    chat_log = conversation.ChatLog(hass, "stats")
    traced: list[dict[str, Any]] = []
    chat_log.async_trace = traced.append  # type: ignore[method-assign]
    usage: dict[str, Any] = {
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 4},
    }
    observe_usage(chat_log, usage, lambda _: None, None)
    observe_usage(chat_log, {"prompt_tokens_details": [1]}, lambda _: None, None)
    observe_usage(chat_log, None, lambda _: None, None)

    assert [event["stats"] for event in traced] == [
        {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 2},
        {"input_tokens": None, "cached_input_tokens": 0, "output_tokens": None},
    ]
