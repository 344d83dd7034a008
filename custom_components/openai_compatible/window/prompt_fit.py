"""Fit each request into the model's context window, measured in tokens.

Pure functions over prompt items: messages or input items tagged by their
dialect, so fitting never guesses a shape. The system prompt, tools and
current turn stay whole; old turns go from the start several at a time, so
the prompt's start then stays the same for the server's cache; a tool result
over its budget is cut (result_cut.py), with a note on how to ask narrower.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
import math
from typing import Any, cast

from homeassistant.helpers.json import json_dumps

from ..errors import ContextWindowError
from ..net.shapes import WireItem
from .result_cut import cut_result, request_words

# A message or input item as it is sent.
type Message = WireItem
# The tools of a request as sent.
type Tools = Sequence[Mapping[str, object]]

# Characters per token before calibration: low, so the estimate errs high.
CHARS_PER_TOKEN = 3.5
# What a chat template adds around each message.
MESSAGE_TOKENS = 4
# An image or file part, whose data URL says nothing about its tokens.
ATTACHMENT_TOKENS = 768
# A JSON escape (`\n`, `\"`), which tokenizers split off, on top of its characters.
ESCAPE_TOKENS = 0.5
# Room kept for the answer when the max tokens setting is not set.
DEFAULT_ANSWER_TOKENS = 1024
# The least room left for an answer; a request that cannot leave it is refused.
MIN_ANSWER_TOKENS = 256
# Share of the window kept free for the error of the estimate.
SAFETY_SHARE = 0.05
# Most of the free room (window less prompt, tools and answer) one tool result may take.
RESULT_SHARE = 0.4
# Share of the free room left empty when old turns go, so the next ones fit.
HEADROOM_SHARE = 0.25
# A cut tool result keeps at least this much.
MIN_RESULT_TOKENS = 64
# At most this many turns go at once when "history to keep" is exceeded.
HISTORY_STEP = 4
# Ratios not learned from: a server that cut the prompt, or counts part of it.
_RATIO_RANGE = (0.25, 4.0)


class ItemKind(StrEnum):
    """What a message or input item is to fitting; a user message starts a turn."""

    INSTRUCTIONS = "instructions"
    USER = "user"
    REPLY = "reply"  # what the model said or did: text, calls, reasoning
    RESULT = "result"  # answers a tool call

    @classmethod
    def of_role(cls, role: object) -> ItemKind:
        """Return the kind of a message by its role."""
        if role in ("system", "developer"):
            return cls.INSTRUCTIONS
        return cls.USER if role == "user" else cls.REPLY


@dataclass(frozen=True, slots=True)
class CallRef:
    """A tool call an item makes."""

    call_id: str | None
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class PromptItem:
    """One message or input item of a request as sent, tagged with what it is."""

    kind: ItemKind
    wire: Message
    text_field: str = "content"  # the field of its text, or its parts
    calls: tuple[CallRef, ...] = ()
    answers: str = ""  # the id of the call a result answers
    summary: tuple[str, ...] = ()  # text besides the text field: a reasoning summary

    @property
    def text(self) -> object:
        """Return the item's text: a string, a list of parts, or none."""
        return self.wire.get(self.text_field)

    def with_text(self, text: str) -> PromptItem:
        """Return the item with other text, such as a tool result cut short."""
        return replace(self, wire=cast("Message", {**self.wire, self.text_field: text}))


type Turn = list[PromptItem]


class TokenEstimate:
    """A token estimate, calibrated by what the server counted before."""

    def __init__(self) -> None:
        """Start uncalibrated."""
        self.ratio = 1.0  # server tokens per raw estimated token
        self.calibrated = False
        self._claimed = False  # the ratio rests on a count only an error claimed
        self._tools: tuple[Tools, float] | None = None

    def tokens(self, raw: float) -> int:
        """Return the calibrated token count of a raw estimate."""
        return math.ceil(raw * self.ratio)

    def chars(self, tokens: int) -> int:
        """Return about how many characters make this many tokens."""
        return int(tokens / self.ratio * CHARS_PER_TOKEN)

    def raw_tools(self, tools: Tools) -> float:
        """Return the raw estimate of the tools, computed once per tool list."""
        if self._tools is None or self._tools[0] is not tools:
            raw = len(json_dumps(tools)) / CHARS_PER_TOKEN if tools else 0.0
            self._tools = (tools, raw)
        return self._tools[1]

    def raw_request(self, items: Iterable[PromptItem], tools: Tools) -> float:
        """Return the raw estimate of a whole request."""
        return sum(map(raw_message, items)) + self.raw_tools(tools)

    def calibrate(
        self, raw: float, prompt_tokens: Any, *, claimed: bool = False
    ) -> None:
        """Correct the estimate by a count; one an error `claimed` is not averaged."""
        if not isinstance(prompt_tokens, int) or raw <= 0 or prompt_tokens <= 0:
            return
        ratio = prompt_tokens / raw
        if not _RATIO_RANGE[0] <= ratio <= _RATIO_RANGE[1]:
            return
        smoothed = self.calibrated and not self._claimed
        self.ratio = (self.ratio + ratio) / 2 if smoothed else ratio
        self.calibrated = True
        self._claimed = claimed


def raw_message(item: PromptItem) -> float:
    """Return the raw token estimate of one message or input item."""
    chars = sum(map(len, item.summary))  # a reasoning summary, not its encryption
    fixed: float = MESSAGE_TOKENS
    content = item.text
    if isinstance(content, str):
        chars += len(content)
        fixed += content.count("\\") * ESCAPE_TOKENS
    elif isinstance(content, list):
        for part in content:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                chars += len(text)
            else:
                fixed += ATTACHMENT_TOKENS
    for call in item.calls:
        chars += len(call.name) + len(call.arguments)
        fixed += MESSAGE_TOKENS
    return fixed + chars / CHARS_PER_TOKEN


@dataclass(frozen=True, slots=True)
class Limits:
    """What a request must fit in."""

    window: int | None  # None: unknown, nothing is trimmed
    answer_tokens: int = DEFAULT_ANSWER_TOKENS  # as far as the window leaves it
    history_turns: int | None = None  # None: as many as fit

    @property
    def least_answer_tokens(self) -> int:
        """Return the least room the answer may be left."""
        return min(self.answer_tokens, MIN_ANSWER_TOKENS)


@dataclass(slots=True)
class ConversationCut:
    """What was left out of a conversation, so later requests repeat it."""

    dropped_turns: int = 0
    # Characters kept of each cut tool result, by tool call id.
    result_chars: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fitted:
    """A request's conversation as sent, and what fitting did."""

    items: list[PromptItem]
    tokens: int  # calibrated estimate of messages and tools
    kept_turns: int
    dropped_turns: int
    answer_tokens: int  # room the window leaves the answer, at most the limits'

    @property
    def messages(self) -> list[Message]:
        """Return the messages or input items as they are sent."""
        return [item.wire for item in self.items]


def split_turns(items: list[PromptItem]) -> tuple[list[PromptItem], list[Turn]]:
    """Return the leading instructions and the turns (from each user message) after them."""
    start = 0
    while start < len(items) and items[start].kind is ItemKind.INSTRUCTIONS:
        start += 1
    turns: list[Turn] = []
    for item in items[start:]:
        if not turns or item.kind is ItemKind.USER:
            turns.append([])
        turns[-1].append(item)
    return items[:start], turns


def fit(
    messages: list[PromptItem],
    tools: Tools,
    limits: Limits,
    estimate: TokenEstimate,
    cut: ConversationCut,
) -> Fitted:
    """Return the messages that fit the window, and remember what was cut.

    Raises ContextWindowError when the system prompt and tools, or the current
    turn, cannot fit however much history is dropped.
    """
    head, turns = split_turns(messages)
    history, current = turns[:-1], turns[-1:]
    if limits.history_turns is not None:
        cut.dropped_turns = _dropped_by_count(
            len(history), limits.history_turns, cut.dropped_turns
        )
    cut.dropped_turns = dropped = min(cut.dropped_turns, len(history))
    if (window := limits.window) is None:
        kept = [*head, *_join(history[dropped:]), *_join(current)]
        tokens = estimate.tokens(estimate.raw_request(kept, tools))
        return Fitted(
            kept, tokens, len(history) - dropped, dropped, limits.answer_tokens
        )
    fixed = estimate.tokens(estimate.raw_request(head, tools))
    # Room for the turns and the answer together.
    free = window - math.ceil(window * SAFETY_SHARE) - fixed
    least = limits.least_answer_tokens
    if free <= least:
        raise ContextWindowError(
            "prompt_too_large", needed=f"{fixed + least:,}", window=f"{window:,}"
        )
    # What the limits ask for the answer, but at most half: a small window
    # keeps some history too. The current turn may take more, down to the least.
    room = free - min(limits.answer_tokens, max(least, free // 2))
    cutter = _ResultCutter(messages, tools, estimate, cut, (room, free - least))
    history = [cutter.apply(turn) for turn in history]
    current_turn = cutter.fit_current(current[0] if current else [], window)
    used = estimate.tokens(sum(map(raw_message, current_turn)))
    sizes = [estimate.tokens(sum(map(raw_message, turn))) for turn in history]
    cut.dropped_turns = dropped = _dropped_by_tokens(
        sizes, room - used, math.floor(room * HEADROOM_SHARE), dropped
    )
    sent_turns = used + sum(sizes[dropped:])
    return Fitted(
        [*head, *_join(history[dropped:]), *current_turn],
        fixed + sent_turns,
        len(history) - dropped,
        dropped,
        min(limits.answer_tokens, free - sent_turns),
    )


def _join(turns: Iterable[Turn]) -> list[PromptItem]:
    """Return the messages of the turns, in order."""
    return [message for turn in turns for message in turn]


def _dropped_by_count(turns: int, keep: int, dropped: int) -> int:
    """Return how many old turns to leave out to keep at most `keep`.

    Past the limit several go at once, so the next turns find the same start.
    """
    if turns - dropped <= keep:
        return dropped
    step = max(1, min(HISTORY_STEP, (keep + 1) // 2))
    return turns - max(0, keep - step + 1)


def _dropped_by_tokens(
    sizes: list[int], budget: int, headroom: int, dropped: int
) -> int:
    """Return how many old turns to leave out for the rest to fit the budget.

    Turns left out stay out; when more must go, enough go to leave `headroom`.
    """
    kept = sum(sizes[dropped:])
    if kept <= budget:
        return dropped
    while dropped < len(sizes) and kept > budget - headroom:
        kept -= sizes[dropped]
        dropped += 1
    return dropped


class _ResultCutter:
    """Cut tool results over their budget, the same way in every request."""

    def __init__(
        self,
        messages: list[PromptItem],
        tools: Tools,
        estimate: TokenEstimate,
        cut: ConversationCut,
        rooms: tuple[int, int],
    ) -> None:
        """Learn each call's tool; `rooms`: with the answer's usual, and least, room kept."""
        self._estimate = estimate
        self._cut = cut
        self._rooms = rooms
        self._budget = max(MIN_RESULT_TOKENS, int(rooms[0] * RESULT_SHARE))
        self._names = {
            call.call_id: call.name for item in messages for call in item.calls
        }
        self._tools = tools

    def apply(self, turn: Turn) -> Turn:
        """Return the turn with its tool results cut to their budget."""
        words = _words(turn)
        return [self._result(message, self._budget, words) for message in turn]

    def fit_current(self, turn: Turn, window: int) -> Turn:
        """Return the current turn cut to fit the room on its own.

        Where results cut to their budget still do not fit, they share the
        room equally; only what they cannot give is taken from the answer's.
        """
        fitted = self.apply(turn)
        used = self._estimate.tokens(sum(map(raw_message, fitted)))
        results = [item for item in turn if item.kind is ItemKind.RESULT]
        others = [item for item in turn if item.kind is not ItemKind.RESULT]
        rest = self._estimate.tokens(sum(map(raw_message, others)))
        for room in self._rooms:
            if used <= room:
                return fitted
            share = (room - rest) // len(results) if results else 0
            if share >= MIN_RESULT_TOKENS:
                for message in results:
                    self._cut.result_chars.pop(message.answers, None)
                return [
                    self._result(message, share - MESSAGE_TOKENS, _words(turn))
                    for message in turn
                ]
        raise ContextWindowError(
            "message_too_large",
            needed=f"{used + window - self._rooms[1]:,}",
            window=f"{window:,}",
        )

    def _result(
        self, item: PromptItem, budget: int, words: frozenset[str]
    ) -> PromptItem:
        """Return a tool result cut to the budget, or the item as it is."""
        content = item.text
        if item.kind is not ItemKind.RESULT or not isinstance(content, str):
            return item
        keep = self._cut.result_chars.get(item.answers)
        if keep is None:
            if self._estimate.tokens(raw_message(item)) <= budget:
                return item
            keep = self._estimate.chars(budget - MESSAGE_TOKENS)
            self._cut.result_chars[item.answers] = keep
        if len(content) <= keep:
            return item
        name = self._names.get(item.answers) or "the tool"
        narrower = ""
        if parameters := _parameter_names(self._tools, name):
            narrower = f" For the rest, call {name} again with narrower arguments ({', '.join(parameters)})."
        return item.with_text(cut_result(content, keep, words, narrower))


def _words(turn: Turn) -> frozenset[str]:
    """Return the words of the request that starts a turn."""
    asked = turn[0] if turn and turn[0].kind is ItemKind.USER else None
    return request_words(asked.text) if asked else frozenset()


def _parameter_names(tools: Tools, name: str) -> list[str]:
    """Return the parameters of the function offered under the name.

    A Chat Completions tool nests its function; a Responses one does not.
    """
    for tool in tools:
        function = tool.get("function", tool)
        if isinstance(function, Mapping) and function.get("name") == name:
            parameters = function.get("parameters")
            return list((parameters.get("properties") if parameters else None) or ())
    return []
