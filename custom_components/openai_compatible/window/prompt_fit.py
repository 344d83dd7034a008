"""Fit each request into the model's context window, measured in tokens.

Pure functions over a request's conversation, as either wire API renders it
(Chat Completions messages, or Responses API input items), read as the prompt
items of prompt_items.py:

- a cheap token estimate (characters, with a few fixed costs), corrected by
  the server's own `usage.prompt_tokens` of earlier requests;
- fitting: the system prompt, the tools and the current turn stay whole, with
  room for the answer; whole old turns are dropped from the start, several at
  a time, so that the start of the prompt changes once and then stays the
  same for the following turns (what lets servers reuse their prompt cache);
  a tool result over its budget is cut, with a note on how to ask narrower;
  the answer's room is what the window leaves, down to a floor, and a request
  is refused only when not even the floor is left;
- folding the system prompt into the first user message, for servers whose
  chat template drops system messages.

Reading a server's context-overflow error is overflow.py's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
import math
from typing import Any

from homeassistant.helpers.json import json_dumps

from ..errors import ContextWindowError
from ..net.shapes import ChatMessage, ChatPart
from .prompt_items import ItemKind, Message, PromptItem, chat_items, wire_messages

type Turn = list[PromptItem]
# The tools of a request as sent.
type Tools = Sequence[Mapping[str, object]]

# Characters per token of the raw estimate, before calibration; on the low
# side of real tokenizers, so an uncalibrated estimate tends to be too high.
CHARS_PER_TOKEN = 3.5
# What a chat template adds around each message.
MESSAGE_TOKENS = 4
# An image or file part, whose data URL says nothing about its tokens.
ATTACHMENT_TOKENS = 768
# An escape in JSON text (`\n`, `\"`): tool results are JSON, and tokenizers
# split escapes off; counted on top of its characters.
ESCAPE_TOKENS = 0.5
# Room kept for the answer when the max tokens setting is not set.
DEFAULT_ANSWER_TOKENS = 1024
# The least room an answer is left where the window leaves less than the
# setting asks; a request that cannot leave it is refused.
MIN_ANSWER_TOKENS = 256
# Share of the window kept free for the error of the estimate.
SAFETY_SHARE = 0.05
# Most of the free room (window less prompt, tools and answer) that one tool
# result may take.
RESULT_SHARE = 0.4
# Share of the free room left empty after old turns are dropped, so that the
# next turns fit without dropping again.
HEADROOM_SHARE = 0.25
# A cut tool result keeps at least this much.
MIN_RESULT_TOKENS = 64
# At most this many turns go at once when "history to keep" is exceeded.
HISTORY_STEP = 4
# Calibration ignores ratios outside this range (a server that truncated the
# prompt, or counts only part of it).
_RATIO_RANGE = (0.25, 4.0)


class TokenEstimate:
    """A token estimate, calibrated by what the server counted before."""

    def __init__(self) -> None:
        """Start uncalibrated."""
        # Server tokens per raw estimated token.
        self.ratio = 1.0
        self.calibrated = False
        # Whether the ratio rests on a count only an error claimed.
        self._claimed = False
        self._tools: tuple[Tools, float] | None = None

    def tokens(self, raw: float) -> int:
        """Return the calibrated token count of a raw estimate."""
        return math.ceil(raw * self.ratio)

    def chars(self, tokens: int) -> int:
        """Return about how many characters make this many tokens."""
        return int(tokens / self.ratio * CHARS_PER_TOKEN)

    def raw_tools(self, tools: Tools) -> float:
        """Return the raw estimate of the tools, computed once per tool list."""
        cached = self._tools
        if cached is None or cached[0] is not tools:
            cached = (tools, len(json_dumps(tools)) / CHARS_PER_TOKEN if tools else 0.0)
            self._tools = cached
        return cached[1]

    def raw_request(self, items: Iterable[PromptItem], tools: Tools) -> float:
        """Return the raw estimate of a whole request."""
        return sum(map(raw_message, items)) + self.raw_tools(tools)

    def calibrate(
        self, raw: float, prompt_tokens: Any, *, claimed: bool = False
    ) -> None:
        """Correct the estimate by the tokens the server counted for it.

        A count an error `claimed` fits the request sent again; the next count
        of an answer replaces it rather than being averaged with it.
        """
        if not isinstance(prompt_tokens, int) or raw <= 0 or prompt_tokens <= 0:
            return
        ratio = prompt_tokens / raw
        if not _RATIO_RANGE[0] <= ratio <= _RATIO_RANGE[1]:
            return
        # Lean on the latest figure, smoothed over the previous ones.
        smoothed = self.calibrated and not self._claimed
        self.ratio = (self.ratio + ratio) / 2 if smoothed else ratio
        self.calibrated = True
        self._claimed = claimed


def raw_message(item: PromptItem) -> float:
    """Return the raw token estimate of one rendered message or input item."""
    chars = 0
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
    # A Responses reasoning item's summary; its encrypted content is not
    # read again as tokens.
    chars += sum(map(len, item.summary))
    return fixed + chars / CHARS_PER_TOKEN


@dataclass(frozen=True, slots=True)
class Limits:
    """What a request must fit in."""

    # The context window in tokens; None: unknown, nothing is trimmed.
    window: int | None
    # Room kept for the answer, as far as the window leaves it.
    answer_tokens: int = DEFAULT_ANSWER_TOKENS
    # Earlier turns to keep at most; None: as many as fit.
    history_turns: int | None = None

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
    # Calibrated estimate of messages and tools.
    tokens: int
    kept_turns: int
    dropped_turns: int
    # Room the window leaves the answer, at most what the limits ask.
    answer_tokens: int

    @property
    def messages(self) -> list[Message]:
        """Return the messages or input items as they are sent."""
        return wire_messages(self.items)


def split_turns(items: list[PromptItem]) -> tuple[list[PromptItem], list[Turn]]:
    """Return the leading system messages and the turns after them.

    A turn starts with a user message and holds everything up to the next
    one, so a tool call and its result are always in the same turn.
    """
    start = 0
    while start < len(items) and items[start].kind is ItemKind.INSTRUCTIONS:
        start += 1
    turns: list[Turn] = []
    for item in items[start:]:
        if not turns or item.kind is ItemKind.USER:
            turns.append([])
        turns[-1].append(item)
    return items[:start], turns


def fold_system(messages: list[ChatMessage]) -> list[ChatMessage]:
    """Return the messages with the leading system messages in the first user one.

    As Gemma's own chat template does it: their text, a blank line, then the
    user's. The same messages always fold the same, so the start of one
    request still repeats the previous one's.
    """
    head, _turns = split_turns(chat_items(messages))
    if not head:
        return messages
    text = "\n\n".join(str(item.text or "") for item in head)
    rest = messages[len(head) :]
    if not rest or rest[0].get("role") != "user":
        return [{"role": "user", "content": text}, *rest]
    first = rest[0]
    content = first.get("content")
    if isinstance(content, list):
        folded: str | list[ChatPart] = [
            {"type": "text", "text": f"{text}\n\n"},
            *content,
        ]
    else:
        folded = f"{text}\n\n{content or ''}"
    return [{**first, "content": folded}, *rest[1:]]


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
    cut.dropped_turns = min(cut.dropped_turns, len(history))
    if limits.window is None:
        kept = [*head, *_join(history[cut.dropped_turns :]), *_join(current)]
        return Fitted(
            kept,
            estimate.tokens(estimate.raw_request(kept, tools)),
            len(history) - cut.dropped_turns,
            cut.dropped_turns,
            limits.answer_tokens,
        )
    window = limits.window
    fixed = estimate.tokens(sum(map(raw_message, head)) + estimate.raw_tools(tools))
    # Room for the turns and the answer together.
    free = window - math.ceil(window * SAFETY_SHARE) - fixed
    least = limits.least_answer_tokens
    if free <= least:
        raise ContextWindowError(
            "prompt_too_large", needed=f"{fixed + least:,}", window=f"{window:,}"
        )
    room = free - _answer_room(free, limits)
    cutter = _ResultCutter(messages, tools, estimate, cut, (room, free - least))
    history = [cutter.apply(turn) for turn in history]
    current_turn = cutter.fit_current(current[0] if current else [], window)
    used = estimate.tokens(sum(map(raw_message, current_turn)))
    sizes = [estimate.tokens(sum(map(raw_message, turn))) for turn in history]
    cut.dropped_turns = _dropped_by_tokens(
        sizes, room - used, math.floor(room * HEADROOM_SHARE), cut.dropped_turns
    )
    kept = [*head, *_join(history[cut.dropped_turns :]), *current_turn]
    sent_turns = used + sum(sizes[cut.dropped_turns :])
    return Fitted(
        kept,
        fixed + sent_turns,
        len(history) - cut.dropped_turns,
        cut.dropped_turns,
        min(limits.answer_tokens, free - sent_turns),
    )


def _parameter_names(tools: Tools) -> dict[str, list[str]]:
    """Return the parameter names of each function offered, by its name.

    A Chat Completions tool nests its function; a Responses one does not, and
    a provider-run one has no parameters at all.
    """
    names: dict[str, list[str]] = {}
    for tool in tools:
        function = tool.get("function", tool)
        if not isinstance(function, Mapping) or "name" not in function:
            continue
        parameters = function.get("parameters")
        properties = parameters.get("properties") if parameters else None
        names[str(function["name"])] = list(properties or ())
    return names


def _answer_room(free: int, limits: Limits) -> int:
    """Return the room old turns leave the answer, of what the prompt leaves free.

    What the limits ask, but never more than half of it: a small window keeps
    some history too. The current turn may take more of it, down to the least.
    """
    return min(limits.answer_tokens, max(limits.least_answer_tokens, free // 2))


def _join(turns: Iterable[Turn]) -> list[PromptItem]:
    """Return the messages of the turns, in order."""
    return [message for turn in turns for message in turn]


def _dropped_by_count(turns: int, keep: int, dropped: int) -> int:
    """Return how many old turns to leave out to keep at most `keep`.

    Past the limit, several turns go at once, so the next turns find the
    same start.
    """
    if turns - dropped <= keep:
        return dropped
    step = max(1, min(HISTORY_STEP, (keep + 1) // 2))
    return turns - max(0, keep - step + 1)


def _dropped_by_tokens(
    sizes: list[int], budget: int, headroom: int, dropped: int
) -> int:
    """Return how many old turns to leave out for the rest to fit the budget.

    Turns left out before stay out. When more must go, enough go to leave
    `headroom` tokens free as well.
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
        """Learn which tool each call id belongs to, and the budget.

        `rooms`: the room for the turns with the answer's usual room kept, and
        with only its least room kept.
        """
        self._estimate = estimate
        self._cut = cut
        self._rooms = rooms
        self._budget = max(MIN_RESULT_TOKENS, int(rooms[0] * RESULT_SHARE))
        self._names = {
            call.call_id: call.name for item in messages for call in item.calls
        }
        self._parameters = _parameter_names(tools)

    def apply(self, turn: Turn) -> Turn:
        """Return the turn with its tool results cut to their budget."""
        return [self._result(message, self._budget) for message in turn]

    def fit_current(self, turn: Turn, window: int) -> Turn:
        """Return the current turn cut to fit the room on its own.

        Its results share the room equally when, cut to their usual budget,
        they still do not fit. Only what results cannot give is taken from the
        answer's room, down to its least.
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
                    self._result(message, share - MESSAGE_TOKENS) for message in turn
                ]
        raise ContextWindowError(
            "message_too_large",
            needed=f"{used + window - self._rooms[1]:,}",
            window=f"{window:,}",
        )

    def _result(self, item: PromptItem, budget: int) -> PromptItem:
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
        return item.with_text(self._shortened(item.answers, content, keep))

    def _shortened(self, call_id: str, content: str, keep: int) -> str:
        """Return the start of a result and a note on how to ask narrower."""
        name = self._names.get(call_id) or "the tool"
        parameters = self._parameters.get(name) or []
        note = (
            f"[Cut to fit the context window: {keep:,} of {len(content):,} "
            "characters shown."
        )
        if parameters:
            note += (
                f" For the rest, call {name} again with narrower arguments "
                f"({', '.join(parameters)})."
            )
        note += "]"
        text = content[: max(0, keep - len(note) - 1)]
        # End at a line break where one is near, not in the middle of a line.
        line_end = max(text.rfind("\n"), text.rfind("\\n"))
        if line_end > len(text) * 3 // 4:
            text = text[:line_end]
        return f"{text}\n{note}"
