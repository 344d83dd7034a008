"""Fit each request into the model's context window, measured in tokens.

Pure functions over prompt items: messages or input items tagged by their
dialect, so fitting never guesses a shape. The system prompt, tools and
current turn stay whole; old turns go from the start several at a time; a tool
result over its budget is cut, with a note on how to ask narrower: a listing
(Home Assistant's live context is a YAML list, one device per entry) keeps the
entries that name most words of the user's request, each in its place, any
other result its start. The same input always gives the same cut, so the
prompt's start stays the same for the server's cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import chain, takewhile
import math
import re
from typing import Any, cast

from homeassistant.helpers.json import json_dumps

from ..errors import ContextWindowError
from ..net.shapes import WireItem

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
# Where an entry of a YAML list starts, in the result or in its JSON.
_ENTRY = re.compile(r"(?=(?:\\n|\n)- )")
_WORD = re.compile(r"\w{3,}")
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


@dataclass(eq=False)
class TokenEstimate:
    """A token estimate, calibrated by what the server counted before."""

    ratio: float = 1.0  # server tokens per raw estimated token
    calibrated: bool = False
    _claimed: bool = False  # the ratio rests on a count only an error claimed
    _tools: tuple[Tools, float] | None = None

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
        ratio = prompt_tokens / raw if isinstance(prompt_tokens, int) and raw > 0 else 0
        if not _RATIO_RANGE[0] <= ratio <= _RATIO_RANGE[1]:
            return
        smoothed = self.calibrated and not self._claimed
        self.ratio = (self.ratio + ratio) / 2 if smoothed else ratio
        self.calibrated = True
        self._claimed = claimed


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
    head = list(takewhile(lambda item: item.kind is ItemKind.INSTRUCTIONS, items))
    turns: list[Turn] = []
    for item in items[len(head) :]:
        if not turns or item.kind is ItemKind.USER:
            turns.append([])
        turns[-1].append(item)
    return head, turns


def fit(
    messages: list[PromptItem],
    tools: Tools,
    limits: Limits,
    estimate: TokenEstimate,
    cut: ConversationCut,
) -> Fitted:
    """Return the messages that fit the window, and remember what was cut."""
    head, turns = split_turns(messages)
    history, current = turns[:-1], turns[-1:]
    keep = limits.history_turns
    if keep is not None and len(history) - cut.dropped_turns > keep:
        # Several go at once, so the next turns find the same start.
        step = max(1, min(HISTORY_STEP, (keep + 1) // 2))
        cut.dropped_turns = len(history) - max(0, keep - step + 1)
    cut.dropped_turns = dropped = min(cut.dropped_turns, len(history))
    if (window := limits.window) is None:
        kept = [*head, *chain.from_iterable(turns[dropped:])]
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
    budget, sent_turns = room, used + sum(sizes[dropped:])
    # Turns left out stay out; when more must go, enough go to leave headroom.
    while sent_turns > budget and dropped < len(sizes):
        budget = room - math.floor(room * HEADROOM_SHARE)
        sent_turns -= sizes[dropped]
        dropped += 1
    cut.dropped_turns = dropped
    return Fitted(
        [*head, *chain.from_iterable(history[dropped:]), *current_turn],
        fixed + sent_turns,
        len(history) - dropped,
        dropped,
        min(limits.answer_tokens, free - sent_turns),
    )


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
        for tool in self._tools:
            # A Chat Completions tool nests its function; a Responses one does not.
            function = tool.get("function", tool)
            if isinstance(function, Mapping) and function.get("name") == name:
                parameters = function.get("parameters") or {}
                if names := list(parameters.get("properties") or ()):
                    narrower = f" For the rest, call {name} again with narrower arguments ({', '.join(names)})."
                break
        return item.with_text(cut_result(content, keep, words, narrower))


def _words(turn: Turn) -> frozenset[str]:
    """Return the words that may name what the request that starts a turn is about."""
    asked = turn[0].text if turn and turn[0].kind is ItemKind.USER else None
    return frozenset(_WORD.findall(asked.lower() if isinstance(asked, str) else ""))


def cut_result(content: str, keep: int, words: frozenset[str], narrower: str) -> str:
    """Return the result in `keep` characters and a note; `narrower`: how to ask for the rest."""
    note = f"[Cut to fit the context window: {keep:,} of {len(content):,} characters shown.{narrower}]"
    room = max(0, keep - len(note) - 1)
    head, *entries = _ENTRY.split(content)
    if (
        entries
        and len(head) < room
        and (chosen := _chosen(entries, words, room - len(head)))
    ):
        return f"{head}{''.join(chosen)}\n{note}"
    text = content[:room]
    # End at a line break where one is near, not in the middle of a line.
    line_end = max(text.rfind("\n"), text.rfind("\\n"))
    if line_end > len(text) * 3 // 4:
        text = text[:line_end]
    return f"{text}\n{note}"


def _chosen(entries: list[str], words: frozenset[str], room: int) -> list[str]:
    """Return the entries that fit the room, those naming most words first, in order."""
    named = [words.intersection(_WORD.findall(entry.lower())) for entry in entries]
    # A word most entries hold tells none apart ("room", a domain asked for).
    common = {word for word in words if 2 * sum(word in n for n in named) > len(named)}
    ranked = sorted(range(len(entries)), key=lambda index: -len(named[index] - common))
    kept: set[int] = set()
    for index in ranked:
        if len(entries[index]) <= room:
            kept.add(index)
            room -= len(entries[index])
    return [entries[index] for index in sorted(kept)]
