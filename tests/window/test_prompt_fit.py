"""Fitting requests into the context window: estimate, turns, cuts, overflows."""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import pytest

from custom_components.openai_compatible.errors import ContextWindowError
from custom_components.openai_compatible.server_errors.answers import (
    MAX_FIGURE_DIGITS,
    parse_overflow,
)
from custom_components.openai_compatible.window.prompt_fit import (
    ATTACHMENT_TOKENS,
    CHARS_PER_TOKEN,
    ESCAPE_TOKENS,
    MESSAGE_TOKENS,
    MIN_ANSWER_TOKENS,
    SAFETY_SHARE,
    CallRef,
    ConversationCut,
    Fitted,
    ItemKind,
    Limits,
    PromptItem,
    TokenEstimate,
    fit,
    raw_message,
    split_turns,
)
from custom_components.openai_compatible.wire.chat_completions import chat_items
from custom_components.openai_compatible.wire.responses import responses_items

SYSTEM = {"role": "system", "content": "You control a home. " * 50}
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "GetLiveContext",
            "parameters": {
                "type": "object",
                "properties": {"domain": {"type": "string"}, "area": {}},
            },
        },
    },
    {"type": "function", "function": {"name": "Ping", "parameters": {}}},
]


def user(text: str) -> dict[str, Any]:
    """Return a user message."""
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    """Return an assistant message."""
    return {"role": "assistant", "content": text}


def tool_round(call_id: str, name: str, result: str) -> list[dict[str, Any]]:
    """Return an assistant tool call and its result."""
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


def chat_turn(index: int, words: int = 20) -> list[dict[str, Any]]:
    """Return one plain turn: a question and an answer."""
    return [user(f"Question {index}: " + "word " * words), assistant("An answer.")]


def tokens_of(messages: list[dict[str, Any]], tools: list[Any]) -> int:
    """Return the uncalibrated estimate of a request."""
    return TokenEstimate().tokens(
        TokenEstimate().raw_request(chat_items(messages), tools)
    )


def _wire(items: list[PromptItem]) -> list[Any]:
    """Return the items as they are sent."""
    return [item.wire for item in items]


def fit_chat(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    limits: Limits,
    estimate: TokenEstimate,
    cut: ConversationCut,
) -> Fitted:
    """Fit Chat Completions messages."""
    return fit(chat_items(messages), tools, limits, estimate, cut)


def raw_chat(message: dict[str, Any]) -> float:
    """Return the raw estimate of one Chat Completions message."""
    return raw_message(*chat_items([message]))


# --- the estimate ---------------------------------------------------------------


def test_raw_message() -> None:
    """Text counts by characters; attachments and calls have fixed costs."""
    assert raw_chat(user("x" * 35)) == MESSAGE_TOKENS + 35 / CHARS_PER_TOKEN
    escaped = json.dumps('a\nb"c')
    assert raw_chat(user(escaped)) == (
        MESSAGE_TOKENS + 2 * ESCAPE_TOKENS + len(escaped) / CHARS_PER_TOKEN
    )
    parts = {
        "role": "user",
        "content": [
            {"type": "text", "text": "x" * 7},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
        ],
    }
    assert raw_chat(parts) == (MESSAGE_TOKENS + ATTACHMENT_TOKENS + 7 / CHARS_PER_TOKEN)
    call = tool_round("c1", "Ping", "{}")[0]
    assert raw_chat(call) == 2 * MESSAGE_TOKENS + len("Ping{}") / CHARS_PER_TOKEN
    assert raw_chat({"role": "assistant", "content": None}) == MESSAGE_TOKENS


def test_tools_are_measured_once_per_list() -> None:
    """The tools of a conversation are the same list each time: measured once."""
    estimate = TokenEstimate()
    tools = [dict(tool) for tool in TOOLS]
    first = estimate.raw_tools(tools)
    tools.append({"type": "function", "function": {"name": "More"}})

    assert estimate.raw_tools(tools) == first  # the same list: the cached figure
    assert estimate.raw_tools(list(tools)) > first
    assert estimate.raw_tools([]) == 0


def test_calibration() -> None:
    """The server's counts correct the estimate; implausible ones are ignored."""
    estimate = TokenEstimate()
    assert estimate.tokens(100) == 100
    assert estimate.chars(100) == 350

    estimate.calibrate(100, 150)
    assert estimate.ratio == 1.5
    assert estimate.calibrated
    estimate.calibrate(100, 250)
    assert estimate.ratio == 2.0  # smoothed: half the old, half the new
    for ignored in (None, "150", 0, 10, 1000):
        estimate.calibrate(100, ignored)
    estimate.calibrate(0, 150)
    assert estimate.ratio == 2.0
    assert estimate.tokens(100) == 200
    assert estimate.chars(100) == 175


# --- turns -----------------------------------------------------------------------


def test_split_turns() -> None:
    """Turns start at user messages; tool rounds stay in their turn."""
    greeting = assistant("Hello, how can I help?")
    first = [user("a"), *tool_round("c1", "Ping", "{}"), assistant("done")]
    second = [user("b")]
    head, turns = split_turns(chat_items([SYSTEM, greeting, *first, *second]))

    assert _wire(head) == [SYSTEM]
    assert [_wire(turn) for turn in turns] == [[greeting], first, second]
    assert split_turns([]) == ([], [])
    head, turns = split_turns(chat_items([SYSTEM]))
    assert (_wire(head), turns) == ([SYSTEM], [])


# --- fitting without a window --------------------------------------------------


def test_no_window_keeps_everything() -> None:
    """With no window known nothing is trimmed, however long."""
    messages = [SYSTEM, *[m for i in range(50) for m in chat_turn(i, 500)], user("q")]
    cut = ConversationCut()

    fitted = fit_chat(messages, TOOLS, Limits(None), TokenEstimate(), cut)

    assert fitted.messages == messages
    assert fitted.kept_turns == 50
    assert fitted.dropped_turns == 0
    assert fitted.tokens == tokens_of(messages, TOOLS)


def test_history_to_keep_drops_in_steps() -> None:
    """Past "history to keep", several turns go at once, then the start holds."""
    cut = ConversationCut()
    history: list[dict[str, Any]] = []
    kept: list[int] = []
    starts: list[str] = []
    for index in range(20):
        fitted = fit_chat(
            [SYSTEM, *history, user(f"now {index}")],
            TOOLS,
            Limits(None, history_turns=10),
            TokenEstimate(),
            cut,
        )
        kept.append(fitted.kept_turns)
        starts.append(str(fitted.messages[1]["content"]))
        history += chat_turn(index)

    assert max(kept) == 10
    assert kept[:11] == list(range(11))
    # At 11 turns, four go: 7 are kept, and the next three turns add to them.
    assert kept[11:] == [7, 8, 9, 10, 7, 8, 9, 10, 7]
    assert len(set(starts[1:])) == 4  # the start changed only three times


@pytest.mark.parametrize(("keep", "kept"), [(0, 0), (1, 1), (2, 2), (3, 2)])
def test_small_history_settings(keep: int, kept: int) -> None:
    """Keeping few turns drops what it must; none keeps only the current turn."""
    messages = [SYSTEM, *[m for i in range(6) for m in chat_turn(i)], user("q")]

    fitted = fit_chat(
        messages,
        [],
        Limits(None, history_turns=keep),
        TokenEstimate(),
        ConversationCut(),
    )

    assert fitted.kept_turns == kept
    assert fitted.messages[-1] == user("q")
    assert fitted.messages[0] == SYSTEM


# --- fitting into a window -----------------------------------------------------


def test_small_request_is_untouched() -> None:
    """A request that fits is sent as it is."""
    messages = [SYSTEM, *chat_turn(1), user("q")]

    fitted = fit_chat(messages, TOOLS, Limits(8192), TokenEstimate(), ConversationCut())

    assert fitted.messages == messages
    assert fitted.tokens == tokens_of(messages, TOOLS)


def test_prompt_too_large() -> None:
    """System prompt and tools that leave no room raise, with the numbers."""
    fixed = tokens_of([SYSTEM], TOOLS)

    with pytest.raises(ContextWindowError) as caught:
        fit_chat(
            [SYSTEM, user("hi")],
            TOOLS,
            Limits(fixed),
            TokenEstimate(),
            ConversationCut(),
        )

    # Refused only because not even the answer's least room is left.
    assert caught.value.translation_key == "prompt_too_large"
    assert caught.value.translation_placeholders == {
        "needed": f"{fixed + MIN_ANSWER_TOKENS:,}",
        "window": f"{fixed:,}",
    }


def _pairs_complete(messages: list[dict[str, Any]]) -> bool:
    """Tell whether every tool call has its result right after it, and vice versa."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            if message["tool_call_id"] not in open_calls:
                return False
            open_calls.discard(message["tool_call_id"])
        elif open_calls:
            return False
        for call in message.get("tool_calls") or ():
            open_calls.add(call["id"])
    return not open_calls


def test_long_conversation_fits_with_a_stable_start() -> None:
    """Turns go whole, several at once; between drops each request extends the last."""
    window = 2400
    estimate = TokenEstimate()
    cut = ConversationCut()
    history: list[dict[str, Any]] = []
    previous: list[dict[str, Any]] | None = None
    changes = 0
    for index in range(40):
        current = [user(f"turn {index}")]
        if index % 5 == 0:
            current += tool_round(f"call{index}", "Ping", '{"ok": true}')
        fitted = fit_chat(
            [SYSTEM, *history, *current], TOOLS, Limits(window), estimate, cut
        )
        assert fitted.tokens + fitted.answer_tokens <= window * 0.95
        assert fitted.answer_tokens >= (window * 0.95 - tokens_of([SYSTEM], TOOLS)) // 2
        assert fitted.messages[0] == SYSTEM
        assert fitted.messages[-len(current) :] == current
        assert _pairs_complete(fitted.messages[1:])
        if previous is not None and fitted.messages[: len(previous)] != previous:
            changes += 1
        previous = fitted.messages
        history += [*current, assistant(f"answer {index} " + "so " * 30)]

    assert cut.dropped_turns > 12
    # Each drop frees room for several turns: the start changed rarely.
    assert 0 < changes <= cut.dropped_turns // 4


def test_dropped_turns_stay_dropped() -> None:
    """A later request that would fit with more history still leaves it out."""
    cut = ConversationCut(dropped_turns=3)
    messages = [SYSTEM, *[m for i in range(5) for m in chat_turn(i)], user("q")]

    fitted = fit_chat(messages, TOOLS, Limits(100_000), TokenEstimate(), cut)

    assert fitted.dropped_turns == 3
    assert fitted.messages[1] == chat_turn(3)[0]
    # A conversation shorter than what was dropped (a new log under the same id).
    fitted = fit_chat([SYSTEM, user("q")], TOOLS, Limits(100_000), TokenEstimate(), cut)
    assert fitted.messages == [SYSTEM, user("q")]
    assert cut.dropped_turns == 0


def test_oversized_tool_result_is_cut_with_a_note() -> None:
    """A result over its budget keeps its start and says how to ask narrower."""
    lines = "\n".join(f"- names: Light {n}\n  state: 'on'" for n in range(2000))
    result = json.dumps({"success": True, "result": lines})
    messages = [
        SYSTEM,
        user("which lights are on?"),
        *tool_round("c1", "GetLiveContext", result),
    ]
    cut = ConversationCut()

    fitted = fit_chat(messages, TOOLS, Limits(4096), TokenEstimate(), cut)

    content = fitted.messages[-1]["content"]
    assert len(content) < len(result) / 4
    assert content.startswith(result[:100])
    assert content.endswith(
        f"[Cut to fit the context window: {cut.result_chars['c1']:,} of "
        f"{len(result):,} characters shown. For the rest, call GetLiveContext "
        "again with narrower arguments (domain, area).]"
    )
    # It ends at a line break of the result, not in the middle of a line.
    assert content.split("\n[Cut")[0].endswith("'on'")
    assert fitted.messages[:-1] == messages[:-1]
    assert fitted.tokens <= 4096 * 0.95 - 1024


def test_a_listing_keeps_what_the_request_names_first() -> None:
    """Of a live context over its budget, the devices the user named stay.

    The rest fill the room in their order; the same request cuts the same way.
    """
    halls = [
        f"- names: Hall Light {n}\n  domain: light\n  areas: Hall" for n in range(400)
    ]
    thermometer = "- names: Thermometer\n  state: '19.5'\n  areas: Living Room"
    living = "- names: Reading Lamp\n  domain: light\n  areas: Living Room"
    listing = "\n".join([*halls[:200], living, *halls[200:], thermometer])
    result = json.dumps({"success": True, "result": f"Live Context:\n{listing}"})
    messages = [
        SYSTEM,
        user("What is the temperature in the living room?"),
        *tool_round("c1", "GetLiveContext", result),
    ]
    cut = ConversationCut()

    fitted = fit_chat(messages, TOOLS, Limits(4096), TokenEstimate(), cut)
    again = fit_chat(messages, TOOLS, Limits(4096), TokenEstimate(), cut)

    content = fitted.messages[-1]["content"]
    assert content == again.messages[-1]["content"]
    assert len(content) <= cut.result_chars["c1"] < len(result) / 4
    assert content.startswith(
        '{"success": true, "result": "Live Context:\\n- names: Hall Light 0\\n'
    )
    shown = content.split("\n[Cut")[0]
    assert shown.index("Reading Lamp") < shown.index("Thermometer\\n  state: '19.5'")
    assert "Hall Light 399" not in shown


def test_a_result_of_a_tool_no_longer_offered_is_cut_without_arguments() -> None:
    """Its note names no arguments: the tool is not there to call again."""
    result = json.dumps({"result": "x" * 40_000})
    messages = [SYSTEM, user("q"), *tool_round("c1", "OldTool", result)]

    fitted = fit_chat(messages, TOOLS, Limits(4096), TokenEstimate(), ConversationCut())

    assert fitted.messages[-1]["content"].endswith(" characters shown.]")


def test_responses_items_are_measured_and_cut_alike() -> None:
    """Responses input items fit as the same messages would, results cut alike."""
    lines = "\n".join(f"- names: Light {n}\n  state: 'on'" for n in range(2000))
    result = json.dumps({"success": True, "result": lines})
    reasoning = {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Look up the lights."}],
        "encrypted_content": "x" * 5000,
    }
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "GetLiveContext",
        "arguments": "{}",
    }
    output = {"type": "function_call_output", "call_id": "c1", "output": result}
    items = [
        {"type": "message", "role": "system", "content": SYSTEM["content"]},
        {"type": "message", "role": "user", "content": "which lights are on?"},
        reasoning,
        call,
        output,
    ]
    tools = [
        {"type": "function", **tool["function"], "strict": False} for tool in TOOLS
    ]
    cut = ConversationCut()

    fitted = fit(
        responses_items(items),
        [*tools, {"type": "web_search"}],
        Limits(4096),
        TokenEstimate(),
        cut,
    )

    read_reasoning, read_call = responses_items([reasoning, call])
    assert raw_message(read_reasoning) == MESSAGE_TOKENS + 19 / CHARS_PER_TOKEN
    assert raw_message(read_call) == raw_chat(tool_round("c1", "GetLiveContext", "")[0])
    text = fitted.messages[-1]["output"]
    assert text.endswith(
        "For the rest, call GetLiveContext again with narrower arguments "
        "(domain, area).]"
    )
    assert len(text) < len(result) / 4
    assert fitted.messages[:-1] == items[:-1]


def test_cut_is_repeated_exactly_in_later_requests() -> None:
    """Later requests cut a result the same way, even after calibration moved."""
    result = "x" * 40_000
    first_turn = [user("show all"), *tool_round("c1", "Ping", result)]
    estimate = TokenEstimate()
    cut = ConversationCut()
    first = fit_chat([SYSTEM, *first_turn], TOOLS, Limits(8192), estimate, cut)

    estimate.calibrate(100, 130)
    later = fit_chat(
        [SYSTEM, *first_turn, assistant("Done."), user("thanks")],
        TOOLS,
        Limits(8192),
        estimate,
        cut,
    )

    assert later.messages[: len(first.messages)] == first.messages
    # A tool without parameters cannot be asked narrower: the note says less.
    assert first.messages[-1]["content"].endswith("characters shown.]")


def test_remembered_cut_longer_than_the_result() -> None:
    """A result shorter than what its remembered cut keeps is sent whole."""
    messages = [SYSTEM, user("q"), *tool_round("c1", "Ping", "z" * 5000)]
    cut = ConversationCut(result_chars={"c1": 10_000})

    fitted = fit_chat(messages, TOOLS, Limits(4096), TokenEstimate(), cut)

    assert fitted.messages == messages


def test_results_of_the_current_turn_share_the_room() -> None:
    """Several big results in one turn are cut further to fit together."""
    rounds = [m for n in range(4) for m in tool_round(f"c{n}", "Ping", "y" * 20_000)]
    cut = ConversationCut()

    fitted = fit_chat(
        [SYSTEM, user("all"), *rounds], TOOLS, Limits(6000), TokenEstimate(), cut
    )

    # Results are cut further rather than the answer's room.
    assert fitted.tokens <= 6000 * 0.95 - 1024
    assert fitted.answer_tokens == 1024
    assert len(cut.result_chars) == 4
    assert len(set(cut.result_chars.values())) == 1


def test_message_too_large() -> None:
    """A user message that cannot fit even alone raises, with the numbers."""
    with pytest.raises(ContextWindowError) as caught:
        fit_chat(
            [SYSTEM, user("word " * 10_000)],
            TOOLS,
            Limits(4096),
            TokenEstimate(),
            ConversationCut(),
        )

    assert caught.value.translation_key == "message_too_large"
    assert caught.value.translation_placeholders is not None
    assert caught.value.translation_placeholders["window"] == "4,096"


# A window learned from an overflow error, and an Assist prompt, as measured
# with a real model: the prompt leaves the turns and the answer 1,069 tokens.
SMALL_WINDOW = 2611
ASSIST_PROMPT = {"role": "system", "content": "x" * int(1411 * CHARS_PER_TOKEN - 14)}


def free_room(window: int) -> int:
    """Return what the Assist prompt leaves free of a window, for turns and answer."""
    return window - math.ceil(window * SAFETY_SHARE) - tokens_of([ASSIST_PROMPT], [])


def test_answer_room_is_what_the_window_leaves() -> None:
    """A message that leaves less than the usual room is sent, the answer smaller."""
    assert tokens_of([ASSIST_PROMPT], []) == 1411
    message = user("x" * int(700 * CHARS_PER_TOKEN))

    fitted = fit_chat(
        [ASSIST_PROMPT, message],
        [],
        Limits(SMALL_WINDOW),
        TokenEstimate(),
        ConversationCut(),
    )

    assert fitted.messages == [ASSIST_PROMPT, message]
    assert MIN_ANSWER_TOKENS <= fitted.answer_tokens < 1024
    assert fitted.tokens + fitted.answer_tokens == SMALL_WINDOW - math.ceil(
        SMALL_WINDOW * SAFETY_SHARE
    )


def test_message_is_refused_only_without_the_least_answer_room() -> None:
    """Refused where even the least room for the answer is not left; with that figure."""
    least = free_room(SMALL_WINDOW) - MIN_ANSWER_TOKENS
    fits = user("x" * int((least - MESSAGE_TOKENS) * CHARS_PER_TOKEN))
    too_long = user("x" * int((least - MESSAGE_TOKENS + 2) * CHARS_PER_TOKEN))
    limits = Limits(SMALL_WINDOW)

    fitted = fit_chat(
        [ASSIST_PROMPT, fits], [], limits, TokenEstimate(), ConversationCut()
    )
    assert fitted.answer_tokens == MIN_ANSWER_TOKENS
    with pytest.raises(ContextWindowError) as caught:
        fit_chat(
            [ASSIST_PROMPT, too_long], [], limits, TokenEstimate(), ConversationCut()
        )

    assert caught.value.translation_key == "message_too_large"
    needed = tokens_of([ASSIST_PROMPT, too_long], []) + MIN_ANSWER_TOKENS
    assert caught.value.translation_placeholders == {
        "needed": f"{needed + math.ceil(SMALL_WINDOW * SAFETY_SHARE):,}",
        "window": f"{SMALL_WINDOW:,}",
    }


def test_small_window_keeps_history_and_half_for_the_answer() -> None:
    """Where the usual answer room would take all, old turns keep half of what is left."""
    estimate, cut = TokenEstimate(), ConversationCut()
    history: list[dict[str, Any]] = []
    for index in range(12):
        current = user(f"Question {index}: " + "word " * 20)
        fitted = fit_chat(
            [ASSIST_PROMPT, *history, current], [], Limits(SMALL_WINDOW), estimate, cut
        )
        history += [current, assistant("An answer. " * 10)]

        assert fitted.tokens + fitted.answer_tokens <= SMALL_WINDOW * 0.95
        assert fitted.answer_tokens >= free_room(SMALL_WINDOW) // 2
    assert fitted.kept_turns >= 3
    assert fitted.dropped_turns > 0


def test_answer_room_with_a_small_limit() -> None:
    """A limit under the least room is kept whole: the least is never more."""
    fitted = fit_chat(
        [ASSIST_PROMPT, user("hi")],
        [],
        Limits(SMALL_WINDOW, answer_tokens=100),
        TokenEstimate(),
        ConversationCut(),
    )

    assert fitted.answer_tokens == 100
    assert Limits(SMALL_WINDOW, answer_tokens=100).least_answer_tokens == 100


# --- overflow errors ---------------------------------------------------------------


class Overflow(NamedTuple):
    """What an overflow error told: the window, and the prompt's tokens."""

    window: int | None = None
    prompt_tokens: int | None = None


def told(message: str, body: Any = None) -> Overflow | None:
    """Return what the overflow error read from a message and body told, if any."""
    error = parse_overflow(message, body)
    return None if error is None else Overflow(error.window, error.prompt_tokens)


@pytest.mark.parametrize(
    ("message", "body", "expected"),
    [
        (
            (
                "This model's maximum context length is 4096 tokens. However, you "
                "requested 5210 tokens (4186 in the messages, 1024 in the completion). "
                "Please reduce the length of the messages or completion."
            ),
            None,
            Overflow(4096, 4186),
        ),
        (
            (
                "This model's maximum context length is 128000 tokens. However, your "
                "messages resulted in 130512 tokens. Please reduce the length of the "
                "messages."
            ),
            {"error": {"code": "context_length_exceeded"}},
            Overflow(128000, 130512),
        ),
        (
            (
                "This model's maximum context length is 2048 tokens. However, your "
                "request has 3000 input tokens. Please reduce the length of the input "
                "messages."
            ),
            {"object": "error", "type": "BadRequestError", "code": 400},
            Overflow(2048, 3000),
        ),
        (
            (
                "'max_tokens' or 'max_completion_tokens' is too large: 4096. This "
                "model's maximum context length is 4096 tokens and your request has "
                "100 input tokens (4096 > 4096 - 100)."
            ),
            None,
            Overflow(4096, 100),
        ),
        (
            (
                "request (9000 tokens) exceeds the available context size (8192 "
                "tokens), try increasing it"
            ),
            {"error": {"type": "exceed_context_size_error"}},
            Overflow(8192, 9000),
        ),
        (
            "the request exceeds the available context size, try increasing it",
            {
                "error": {
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 9000,
                    "n_ctx": 8192,
                }
            },
            Overflow(8192, 9000),
        ),
        (
            (
                "litellm.ContextWindowExceededError: litellm.BadRequestError: "
                "ContextWindowExceededError: OpenAIException - This model's maximum "
                "context length is 16384 tokens. However, your messages resulted in "
                "17000 tokens."
            ),
            None,
            Overflow(16384, 17000),
        ),
        (
            (
                "Trying to keep the first 5000 tokens when context the overflows. "
                "However, the model is loaded with context length of only 4096 "
                "tokens, which is not enough."
            ),
            None,
            Overflow(4096, 5000),
        ),
        (
            (
                "Prompt contains 40000 tokens and 0 draft tokens, too large for model "
                "with 32768 maximum context length"
            ),
            None,
            Overflow(32768, 40000),
        ),
        (
            (
                "The input token count (1200000) exceeds the maximum number of tokens "
                "allowed (1048576)."
            ),
            None,
            Overflow(1048576, 1200000),
        ),
        (
            "prompt is too long: 210000 tokens > 200000 maximum",
            None,
            Overflow(200000, 210000),
        ),
        (
            (
                "Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
                "4096. Given: 4000 `inputs` tokens and 1000 `max_new_tokens`"
            ),
            None,
            Overflow(4096, 4000),
        ),
        ("Bad request", {"error": {"code": "context_length_exceeded"}}, Overflow()),
        ("The input is too long for this model.", None, Overflow()),
    ],
)
def test_overflow_wordings(message: str, body: Any, expected: Overflow) -> None:
    """Each server's overflow error gives the window and prompt it names."""
    assert told(message, body) == expected


@pytest.mark.parametrize(
    ("message", "body"),
    [
        ("Invalid 'messages[1].content': string too long.", None),
        ("Rate limit reached: Limit 6000, Requested 7000 tokens per minute.", None),
        ("gemma does not support tools", {"error": {"n_ctx": "big", "code": None}}),
        ("Backend exploded", ["not", "a", "dict"]),
    ],
)
def test_other_errors_are_no_overflow(message: str, body: Any) -> None:
    """Errors that are not about the window are not taken for one."""
    assert told(message, body) is None


def test_a_figure_of_thousands_of_digits_is_no_figure() -> None:
    """A hostile figure too long for a token count is skipped, not read."""
    assert MAX_FIGURE_DIGITS == 9
    longest = "9" * MAX_FIGURE_DIGITS
    assert told(f"maximum context length is {longest}") == Overflow(int(longest))
    endless = f"maximum context length is {'9' * 5000}; prompt contains 12 tokens"
    assert told(endless) == Overflow(None, 12)


# --- the prompt form of either wire API --------------------------------------

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Lights?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "function": {"name": "GetLiveContext", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "all off"},
    {"role": "assistant", "content": "All off."},
]
RESPONSES = [
    {"type": "message", "role": "developer", "content": "Be brief."},
    {"type": "message", "role": "user", "content": "Lights?"},
    {
        "type": "reasoning",
        "summary": [{"text": "Look."}, "x"],
        "encrypted_content": "e",
    },
    {
        "type": "function_call",
        "call_id": "c1",
        "name": "GetLiveContext",
        "arguments": "{}",
    },
    {"type": "function_call_output", "call_id": "c1", "output": "all off"},
    {"type": "message", "role": "assistant", "content": "All off."},
]
KINDS = [ItemKind.INSTRUCTIONS, ItemKind.USER, ItemKind.REPLY, ItemKind.RESULT]


def test_both_wire_apis_read_as_the_same_conversation() -> None:
    """Instructions, a turn with a call and its result: the same turns either way."""
    for items in (chat_items(CHAT), responses_items(RESPONSES)):
        head, turns = split_turns(items)
        assert [item.kind for item in head] == [ItemKind.INSTRUCTIONS]
        assert len(turns) == 1
        assert {item.kind for item in turns[0]} == set(KINDS[1:])
        calls = [call for item in items for call in item.calls]
        assert calls == [CallRef("c1", "GetLiveContext", "{}")]
        (result,) = (item for item in items if item.kind is ItemKind.RESULT)
        assert (result.answers, result.text) == ("c1", "all off")


def test_a_reasoning_summary_is_read_and_the_rest_kept_as_sent() -> None:
    """Only the text parts of a summary count; the items go out as they came."""
    items = responses_items(RESPONSES)

    assert items[2].summary == ("Look.",)
    assert _wire(items) == RESPONSES


def test_a_result_with_other_text_keeps_its_field() -> None:
    """A cut result says its new text where its wire API holds it."""
    chat = chat_items(CHAT)[3].with_text("cut")
    responses = responses_items(RESPONSES)[4].with_text("cut")

    assert chat.wire == {**CHAT[3], "content": "cut"}
    assert responses.wire == {**RESPONSES[4], "output": "cut"}
    assert CHAT[3]["content"] == "all off"
