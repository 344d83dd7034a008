"""A turn of a small model, its near misses turned into what was meant.

One `TurnRescue` watches the rounds of one turn (entity.py):
- each call's arguments are cleaned before it runs (call_arguments.py);
- a call made again with the same arguments is not run again: the turn ends
  with what the first one said;
- once an intent said what it did, the model's words are held until they are
  whole, and JSON, markup, nothing, or words cut at the answer's limit give
  way to Home Assistant's own sentence for that intent;
- with one-round answers, a round whose only act was one intent call that did
  what was asked ends the turn with that sentence, without asking the model
  again, and the third round is the last: asked for words, it runs no call;
  without them, the third round is the last once an intent did something;
- words that describe a call instead of making it ("you can use the
  `intent__HassTurnOn` function…") are not spoken: the model is told, once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass, field
from itertools import takewhile
import json
import re
from typing import Any, Final, cast

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from ..errors import ModelError
from ..net.transport import ToolSet
from .call_arguments import ArgumentCleaner
from .chat_stream import ANSWER_CUT
from .done_sentence import async_done_sentence
from .tool_answers import unanswerable_error

type Delta = (
    conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict
)

# The last round of a turn in which an intent did what was asked.
_LAST_ROUND: Final = 3
# What an answer that is no sentence starts with or holds.
_NOT_SPOKEN: Final = ("{", "[", "<")
_MARKUP: Final = ("```", "<tool_call>", '{"', "<|")
# A tool's name, as no one says a word: `HassTurnOn`, `good_night`.
_TOOL_WORD: Final = re.compile(r"\w*(?:[a-z][A-Z]|_)\w*")
# Where the opening of an answer ends: a sentence (a colon leads to a name), or this far.
_OPENING_END: Final = re.compile(r"[.!?]\s")
_OPENING_REACH: Final = 160
# Told to a model that described a call, with the user's words.
_CALL_IT: Final = (
    "(Do not describe a tool call or name a tool in your answer: "
    "call the tool, or answer in plain words.)"
)


@dataclass(slots=True)
class _Message:
    """The words of one answer, held while a sentence is ready or they look like data."""

    sentence: str | None
    # A tool's result came before: data now is the result echoed, never spoken.
    after_result: bool = False
    # Tools named in the opening of the words, where a call may be described.
    tools: frozenset[str] = frozenset()
    words: list[str] = field(default_factory=list)
    calls: bool = False
    cut: bool = False
    said: bool = False
    described: bool = False

    def hold(self, delta: dict[str, Any]) -> None:
        """Take the words out of a delta, while a sentence stands ready or data starts."""
        if "content" not in delta:
            return
        text = delta["content"] or ""
        if (
            self.sentence is not None
            or self.words
            or self.tools
            or (
                self.after_result
                and not self.said
                and text.lstrip().startswith(_NOT_SPOKEN)
            )
        ):
            self.words.append(delta.pop("content") or "")
        self.said = self.said or bool(text.strip())
        if self.tools:
            self._read_opening(delta)

    def _read_opening(self, delta: dict[str, Any]) -> None:
        """Hold words naming a tool; let the opening go once it names none."""
        held = "".join(self.words)
        if self.names_tool(held):
            self.tools, self.described = frozenset(), True
        elif _speaks(held) and (
            _OPENING_END.search(held) or len(held) > _OPENING_REACH
        ):
            self.tools = frozenset()
            delta["content"] = held
            self.words.clear()

    def names_tool(self, text: str) -> bool:
        """Tell whether words name one of the tools."""
        return not self.tools.isdisjoint(re.findall(r"\w+", text))

    def end(self) -> conversation.AssistantContentDeltaDict | None:
        """Return the words held, or the sentence where they say nothing.

        Raise where the model answered a tool's result with data and no
        sentence can stand for it (a tool's JSON is never spoken), or
        described a call it did not make.
        """
        said = "".join(self.words)
        if self.described or self.names_tool(said):
            if self.calls:
                return None
            raise ModelError("call_described")
        if self.sentence is None:
            if said and self.after_result and not self.calls and not _speaks(said):
                raise ModelError("answer_not_speech")
            return {"content": said} if said else None
        if not self.calls and (self.cut or not _speaks(said)):
            return {"content": self.sentence}
        return {"content": said} if said else None


class TurnRescue:
    """The rounds of one turn, watched for what small models get wrong.

    `speaks`: the turn is a conversation, answered in sentences (an AI task's
    answer is left as the model gave it). `one_round`: a successful intent
    call is answered without a second round.
    """

    def __init__(
        self,
        hass: HomeAssistant,
        chat_log: conversation.ChatLog,
        tool_set: ToolSet,
        agent_id: str,
        *,
        speaks: bool,
        one_round: bool,
    ) -> None:
        """Watch a turn that starts now."""
        self._hass = hass
        self._chat_log = chat_log
        self._agent_id = agent_id
        self._intents = _intent_names(chat_log)
        self._asked = next(
            (
                content
                for content in reversed(chat_log.content)
                if isinstance(content, conversation.UserContent)
            ),
            None,
        )
        self._cleaner = ArgumentCleaner(
            hass,
            tool_set,
            asked=self._asked.content if self._asked else "",
            intents=self._intents,
        )
        self._speaks = speaks
        self._tool_words = _tool_words(tool_set) if speaks else frozenset()
        # Text added to the user's message once the model described a call.
        self.instructions: tuple[conversation.UserContent, str] | None = None
        self._described = False
        self._one_round = one_round and speaks
        self._rounds = 0
        # This round is the last and runs no call; whether it made one.
        self._last = False
        self._dropped = False
        self._round_start = 0
        # The id of the first call of each call made this turn, by its key;
        # the answers given here to calls that could not run.
        self._seen: dict[str, str] = {}
        self._answers: set[str] = set()
        # The name of a call the round made again, and whether it was answered.
        self._repeated: str | None = None
        self._repeated_answered = False

    async def watched(self, stream: AsyncIterator[Delta]) -> AsyncGenerator[Delta]:
        """Yield a round's deltas: calls cleaned, repeats dropped, words checked."""
        self._last = self.last_round
        self._rounds += 1
        self._round_start = len(self._chat_log.content)
        sentence = await self._async_done_sentence() if self._speaks else None
        # Data the model writes now would echo a tool's result.
        echoes = self._speaks and self._rounds > 1
        # Words after a call may name it; before any, they describe one.
        called = any(
            isinstance(content, conversation.ToolResultContent)
            for content in self._this_turn()
        )
        tools = frozenset() if called else self._tool_words
        message: _Message | None = None
        given = False
        try:
            async for delta in stream:
                if "role" in delta:
                    if message is not None and (said := self._end(message)):
                        given = given or said.get("content") == sentence
                        yield said
                    assistant = delta["role"] == "assistant"
                    message = _Message(sentence, echoes, tools) if assistant else None
                if checked := self._checked(delta, message):
                    yield cast("Delta", checked)
        except ModelError as err:
            if sentence is None or err.translation_key != "answer_cut_at_token_limit":
                raise
            # The cut words were said, or gave way to the sentence already.
            message = None if given else _Message(sentence, echoes, cut=True)
        if message is not None and (said := self._end(message)):
            yield said

    def _end(self, message: _Message) -> conversation.AssistantContentDeltaDict | None:
        """Return a message's words; a call described in them is asked for once."""
        try:
            return message.end()
        except ModelError as err:
            described = err.translation_key == "call_described"
            if not described or self.instructions or self._asked is None or self._last:
                raise
        self.instructions = (self._asked, _CALL_IT)
        self._described = True
        return None

    @property
    def last_round(self) -> bool:
        """Tell whether the next round is a small model's last: words, no calls."""
        return self._one_round and self._rounds + 1 >= _LAST_ROUND

    def _this_turn(self) -> Iterator[conversation.Content]:
        """Yield the contents since the user's words, the latest first."""
        return takewhile(
            lambda content: not isinstance(content, conversation.UserContent),
            reversed(self._chat_log.content),
        )

    async def async_ended(self) -> bool:
        """Tell whether the turn is over after a round; answer it where it is.

        Raise when the model repeated a call that said nothing to say.
        """
        if self._described:
            self._described = False
            return False
        repeated, self._repeated = self._repeated, None
        answered, self._repeated_answered = self._repeated_answered, False
        added = self._chat_log.content[self._round_start :]
        if repeated is not None and (answered or not _has_answer(added)):
            raise unanswerable_error(self._chat_log) or ModelError("tool_call_repeated")
        if self._last:
            if self._dropped and not _has_answer(added):
                raise unanswerable_error(self._chat_log) or ModelError(
                    "max_tool_rounds", rounds=str(_LAST_ROUND)
                )
            return True
        if not self._chat_log.unresponded_tool_results:
            return True
        sentence = await self._async_one_round_sentence()
        if sentence is None and self._speaks and self._rounds >= _LAST_ROUND:
            sentence = await self._async_done_sentence()
        if sentence is None:
            return False

        async def answer() -> AsyncIterator[Delta]:
            yield {"role": "assistant", "content": sentence}

        # Added as streamed words are.
        async for _content in self._chat_log.async_add_delta_content_stream(
            self._agent_id, answer()
        ):
            pass
        return True

    def _checked(self, delta: Delta, message: _Message | None) -> dict[str, Any] | None:
        """Return a delta with its calls cleaned and repeats dropped, words held."""
        checked: dict[str, Any] = dict(delta)
        if calls := checked.pop("tool_calls", None):
            self._dropped = self._dropped or self._last
            if kept := [] if self._last else self._new_calls(calls):
                checked["tool_calls"] = kept
            if message is not None:
                message.calls = message.calls or bool(kept)
        if message is not None:
            message.cut = message.cut or checked.get("native") is ANSWER_CUT
            message.hold(checked)
        if checked.get("role") == "tool_result" and checked["result"].error:
            # An answer given here; the same one again is a repeat.
            key = _key(checked["tool_name"], checked["result"].data)
            if key in self._answers:
                self._repeated = checked["tool_name"]
                self._repeated_answered = True
            self._answers.add(key)
        return checked or None

    def _new_calls(self, calls: list[llm.ToolInput]) -> list[llm.ToolInput]:
        """Return the calls cleaned, without those already made this turn.

        A call answered here (a tool not offered) stays: its answer follows.
        """
        kept: list[llm.ToolInput] = []
        for call in map(self._cleaner.clean, calls):
            key = _key(call.tool_name, call.tool_args)
            if call.external or self._seen.setdefault(key, call.id) == call.id:
                kept.append(call)
            else:
                self._repeated = call.tool_name
        return kept

    async def _async_done_sentence(self) -> str | None:
        """Return the sentence of the last intent this turn that did what was asked."""
        for content in self._this_turn():
            if isinstance(content, conversation.ToolResultContent) and (
                sentence := await async_done_sentence(self._hass, content.result)
            ):
                return sentence
        return None

    async def _async_one_round_sentence(self) -> str | None:
        """Return the sentence that answers a round of one intent call, if it did.

        Words before the call (a small model's "To turn on the lights, call
        ...") are no act of their own.
        """
        contents = self._chat_log.content
        if (
            not self._one_round
            or len(contents) < 2
            or not isinstance(result := contents[-1], conversation.ToolResultContent)
            or not isinstance(asked := contents[-2], conversation.AssistantContent)
            or len(asked.tool_calls or ()) != 1
            or result.tool_name not in self._intents
        ):
            return None
        return await async_done_sentence(self._hass, result.result)


def _key(name: str, value: Any) -> str:
    """Return what tells two calls or two answers apart."""
    return json.dumps([name, value], sort_keys=True, default=str)


def _speaks(text: str) -> bool:
    """Tell whether an answer is words to say, not JSON, markup or nothing."""
    stripped = text.strip()
    return bool(stripped) and not (
        stripped.startswith(_NOT_SPOKEN) or any(mark in stripped for mark in _MARKUP)
    )


def _has_answer(added: list[conversation.Content]) -> bool:
    """Tell whether a round gave words, or ran a call (it may answer next round)."""
    return any(
        isinstance(content, conversation.ToolResultContent)
        or (isinstance(content, conversation.AssistantContent) and content.content)
        for content in added
    )


def _tool_words(tool_set: ToolSet) -> frozenset[str]:
    """Return the offered tools' names, whole and after their prefix, as no word is."""
    return frozenset(
        part
        for name in tool_set.from_wire
        for part in (name, name.rpartition("__")[2])
        if _TOOL_WORD.fullmatch(part)
    )


def _intent_names(chat_log: conversation.ChatLog) -> frozenset[str]:
    """Return the names of the offered tools that are Home Assistant's intents."""
    names = set()
    for tool in chat_log.llm_api.tools if chat_log.llm_api else ():
        inner = tool
        while isinstance(inner, llm.NamespacedTool):
            inner = inner.tool
        if isinstance(inner, llm.IntentTool):
            names.add(tool.name)
    return frozenset(names)
