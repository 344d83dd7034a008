"""A small model's turn (entity.py), its near misses turned into what was meant.

Calls are cleaned (call_arguments.py) and not run twice; after a done intent,
words that say nothing give way to Home Assistant's sentence; with one-round
answers one intent call that did what was asked ends the turn, and the third
round is the last; a call described in words is asked for, once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from itertools import takewhile
import json
import re
from typing import Any, Final, cast

from homeassistant.components import conversation
from homeassistant.components.conversation.default_agent import DefaultAgent
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import TemplateError
from homeassistant.helpers import intent, llm, template, translation

from ..errors import ModelError
from ..net.transport import ToolSet
from .call_arguments import ArgumentCleaner
from .chat_stream import ANSWER_CUT
from .tool_calls import unanswerable_error

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
        echo = self.after_result and not self.said and text.lstrip()[:1] in _NOT_SPOKEN
        if self.sentence is not None or self.words or self.tools or echo:
            self.words.append(delta.pop("content") or "")
        self.said = self.said or bool(text.strip())
        if not self.tools:
            return
        # Words naming a tool are held; the opening goes once it names none.
        held = "".join(self.words)
        if not self.tools.isdisjoint(re.findall(r"\w+", held)):
            self.tools, self.described = frozenset(), True
        elif _speaks(held) and (
            _OPENING_END.search(held) or len(held) > _OPENING_REACH
        ):
            self.tools = frozenset()
            delta["content"] = held
            self.words.clear()

    def end(self) -> conversation.AssistantContentDeltaDict | None:
        """Return the words held, or the sentence where they say nothing."""
        said = "".join(self.words)
        if self.described or not self.tools.isdisjoint(re.findall(r"\w+", said)):
            if self.calls:
                return None
            raise ModelError("call_described")
        if self.sentence is None:
            if said and self.after_result and not self.calls and not _speaks(said):
                raise ModelError("answer_not_speech")
        elif not self.calls and (self.cut or not _speaks(said)):
            return {"content": self.sentence}
        return {"content": said} if said else None


class TurnRescue:
    """The rounds of one turn, watched for what small models get wrong."""

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
        """Watch a turn that starts now.

        `speaks`: a conversation's turn, answered in sentences (an AI task's
        answer is left as given). `one_round`: a done intent call ends the turn.
        """
        self._hass = hass
        self._chat_log = chat_log
        self._agent_id = agent_id
        self._intents = frozenset(
            tool.name
            for tool in (chat_log.llm_api.tools if chat_log.llm_api else ())
            if isinstance(
                tool.tool if isinstance(tool, llm.NamespacedTool) else tool,
                llm.IntentTool,
            )
        )
        asked = [c for c in chat_log.content if isinstance(c, conversation.UserContent)]
        self._asked = asked[-1] if asked else None
        words = self._asked.content if self._asked else ""
        self._cleaner = ArgumentCleaner(
            hass, tool_set, asked=words, intents=self._intents
        )
        self._speaks = speaks
        # The offered tools' names, whole and after their prefix, as no word is.
        self._tool_words = frozenset(
            part
            for name in tool_set.from_wire
            for part in (name, name.rpartition("__")[2])
            if speaks and _TOOL_WORD.fullmatch(part)
        )
        # Text added to the user's message once the model described a call.
        self.instructions: tuple[conversation.UserContent, str] | None = None
        self._described_in = 0
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
        # Whether the round made a call again (False) or gave an answer again (True).
        self._repeated: bool | None = None

    async def watched(self, stream: AsyncIterator[Delta]) -> AsyncGenerator[Delta]:
        """Yield a round's deltas: calls cleaned, repeats dropped, words checked."""
        self._last = self.last_round
        self._rounds += 1
        self._round_start = len(self._chat_log.content)
        sentence = await self._async_done_sentence() if self._speaks else None
        # Data the model writes now would echo a tool's result.
        echoes = self._speaks and self._rounds > 1
        # Words after a call may name it; before any, they describe one.
        tools = frozenset() if self._results() else self._tool_words
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
        self._described_in = self._rounds
        return None

    @property
    def last_round(self) -> bool:
        """Tell whether the next round is a small model's last: words, no calls."""
        return self._one_round and self._rounds + 1 >= _LAST_ROUND

    def _results(self) -> list[conversation.ToolResultContent]:
        """Return the tool results since the user's words, the latest first."""
        return [
            content
            for content in takewhile(
                lambda content: not isinstance(content, conversation.UserContent),
                reversed(self._chat_log.content),
            )
            if isinstance(content, conversation.ToolResultContent)
        ]

    async def async_ended(self) -> bool:
        """Tell whether the turn is over after a round; answer it where it is.

        Raise when the model repeated a call that said nothing to say.
        """
        if self._described_in == self._rounds:
            return False
        repeated, self._repeated = self._repeated, None
        # Whether the round gave words, or ran a call (it may answer next round).
        has_answer = any(
            isinstance(content, conversation.ToolResultContent)
            or (isinstance(content, conversation.AssistantContent) and content.content)
            for content in self._chat_log.content[self._round_start :]
        )
        if repeated is not None and (repeated or not has_answer):
            raise unanswerable_error(self._chat_log) or ModelError("tool_call_repeated")
        if self._last:
            if self._dropped and not has_answer:
                raise unanswerable_error(self._chat_log) or ModelError(
                    "max_tool_rounds", rounds=str(_LAST_ROUND)
                )
            return True
        if not self._chat_log.unresponded_tool_results:
            return True
        sentence = None
        result, asked = self._chat_log.content[-1], self._chat_log.content[-2]
        if (
            self._one_round
            and isinstance(result, conversation.ToolResultContent)
            and isinstance(asked, conversation.AssistantContent)
            and len(asked.tool_calls or ()) == 1
            and result.tool_name in self._intents
        ):
            # Words before the call ("To turn on the lights, call ...") are no act.
            sentence = await async_done_sentence(self._hass, result.result)
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
            kept: list[llm.ToolInput] = []
            for call in () if self._last else map(self._cleaner.clean, calls):
                key = _key(call.tool_name, call.tool_args)
                if call.external or self._seen.setdefault(key, call.id) == call.id:
                    kept.append(call)
                else:
                    self._repeated = bool(self._repeated)
            if kept:
                checked["tool_calls"] = kept
        if message is not None:
            message.calls = message.calls or bool(checked.get("tool_calls"))
            message.cut = message.cut or checked.get("native") is ANSWER_CUT
            message.hold(checked)
        if checked.get("role") == "tool_result" and checked["result"].error:
            # An answer given here; the same one again is a repeat.
            key = _key(checked["tool_name"], checked["result"].data)
            if key in self._answers:
                self._repeated = True
            self._answers.add(key)
        return checked or None

    async def _async_done_sentence(self) -> str | None:
        """Return the sentence of the last intent this turn that did what was asked."""
        for content in self._results():
            if sentence := await async_done_sentence(self._hass, content.result):
                return sentence
        return None


def _key(name: str, value: Any) -> str:
    """Return what tells two calls or two answers apart."""
    return json.dumps([name, value], sort_keys=True, default=str)


def _speaks(text: str) -> bool:
    """Tell whether an answer is words to say, not JSON, markup or nothing."""
    stripped = text.strip()
    return bool(stripped) and not (
        stripped.startswith(_NOT_SPOKEN) or any(mark in stripped for mark in _MARKUP)
    )


async def async_done_sentence(
    hass: HomeAssistant, result: llm.ToolResult
) -> str | None:
    """Return what Home Assistant says of an intent that did what was asked.

    Its own speech, else its default agent's sentence for that intent, else
    "Done", in the intent's language; None for any other result.
    """
    data = result.data
    if (
        result.error
        or not isinstance(data, dict)
        or data.get("response_type") != "action_done"
        or not isinstance(targets := data.get("data"), dict)
        or not targets.get("success")
        or targets.get("failed")
    ):
        return None
    speech = data.get("speech")
    plain = speech.get("plain") if isinstance(speech, dict) else None
    own = plain.get("speech") if isinstance(plain, dict) else None
    if isinstance(own, str) and own.strip():
        return own
    response = getattr(data, "original", None)
    if not isinstance(response, intent.IntentResponse):
        return None
    if sentence := await _async_intent_sentence(hass, response):
        return sentence
    texts = await translation.async_get_translations(
        hass, response.language, "conversation", [conversation.DOMAIN]
    )
    return texts.get("component.conversation.conversation.agent.done", "Done")


async def _async_intent_sentence(
    hass: HomeAssistant, response: intent.IntentResponse
) -> str | None:
    """Return the default agent's sentence for a done intent, if it has one."""
    agent = conversation.async_get_agent(hass)
    if response.intent is None or not isinstance(agent, DefaultAgent):
        return None
    intents = await agent.async_get_or_load_intents(response.language)
    if not intents or not isinstance(
        responses := intents.intent_responses.get(response.intent.intent_type), dict
    ):
        return None
    slots = {key: slot.get("value") for key, slot in response.intent.slots.items()}
    states = [template.TemplateState(hass, state) for state in response.matched_states]
    # The response the default agent would say: by domain, slot, default.
    domain = response.matched_states[0].domain if states else None
    key = next(
        (key for key in (domain, *slots, "default") if key in responses),
        next(iter(responses)) if len(responses) == 1 else None,
    )
    if key is None:
        return None
    try:
        rendered = template.Template(responses[key], hass).async_render(
            {
                "slots": slots | response.speech_slots,
                "state": states[0] if states else None,
                "query": {"matched": states, "unmatched": []},
            },
            parse_result=False,
        )
    except TemplateError:
        return None
    return " ".join(str(rendered).split()) or None
