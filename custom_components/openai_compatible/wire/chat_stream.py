"""Chat Completions answers read into chat log deltas; either API's answer read.

Every part of a chunk is checked where it is read: an unexpected shape gets a
translated error, never a traceback. An answer cut off runs no tool.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Final
from uuid import uuid4

from homeassistant.components import conversation
from homeassistant.components.conversation import trace
from homeassistant.helpers.translation import async_get_exception_message
from homeassistant.util.json import json_loads
import httpx2

from ..const import DOMAIN, LOGGER
from ..errors import MalformedAnswerError, ModelError, ServerError, TranslatedError
from ..net.readers import (
    EventStream,
    JSONObject,
    async_read_body,
    error_message,
    read_list,
    read_object,
    read_object_or_empty,
    read_optional_string,
    read_usage,
    string_or_none,
)
from ..net.transport import OwnCalls
from ..server_errors.answers import answer_error
from .tool_calls import AnsweredCalls, PendingCall, ToolCallAssembler, call_input
from .written_calls import WrittenCallWatch

if TYPE_CHECKING:
    from .responses_stream import ResponsesStreamParser

type Delta = (
    conversation.AssistantContentDeltaDict | conversation.ToolResultContentDeltaDict
)

# Finish reasons of an answer that stopped before the model was done.
_CUT_ERRORS = {
    "length": "answer_cut_at_token_limit",
    "content_filter": "answer_cut_by_content_filter",
}
# The `native` of an answer its token limit cut (its words may stand).
ANSWER_CUT: Final = object()


class ThinkTagSplitter:
    """Separate `<think>` blocks from spoken text; only a cut tag is held back."""

    def __init__(self) -> None:
        """Start outside a think block."""
        self._held = ""
        self._thinking = False
        self._after_close = False

    def feed(self, text: str) -> tuple[str, str]:
        """Return the (thinking, spoken) text that is certain so far."""
        if self._held or self._after_close or "<" in text:
            return self._split(self._held + text)
        return (text, "") if self._thinking else ("", text)

    def flush(self) -> tuple[str, str]:
        """Return what is left at the end of the stream."""
        return self._split(self._held, end_of_stream=True)

    def _split(self, buffer: str, *, end_of_stream: bool = False) -> tuple[str, str]:
        thinking: list[str] = []
        spoken: list[str] = []
        position = 0
        while True:
            tag = "</think>" if self._thinking else "<think>"
            found = buffer.find(tag, position)
            if found < 0:
                break
            self._emit(thinking, spoken, buffer[position:found])
            position = found + len(tag)
            self._after_close = self._thinking
            self._thinking = not self._thinking
        end = len(buffer)
        if not end_of_stream:
            reach = min(len(tag) - 1, end - position)
            end -= next((n for n in range(reach, 0, -1) if buffer.endswith(tag[:n])), 0)
        self._emit(thinking, spoken, buffer[position:end])
        self._held = buffer[end:]
        return "".join(thinking), "".join(spoken)

    def _emit(self, thinking: list[str], spoken: list[str], text: str) -> None:
        # Spoken text right after a think block loses its indent.
        if self._thinking:
            thinking.append(text)
            return
        if self._after_close:
            text = text.lstrip()
            self._after_close = not text
        spoken.append(text)


class ChatStreamParser:
    """Turn the chunks of one answer into chat log deltas.

    `tool_names`: the offered tools' wire names to Home Assistant's names.
    """

    def __init__(
        self,
        tool_names: Mapping[str, str],
        *,
        own_calls: OwnCalls | None = None,
        short_call_ids: bool = False,
        structured: bool = False,
    ) -> None:
        """Prepare for one answer; a `structured` one is whole or none."""
        self._tool_names = tool_names
        self._own_calls = own_calls
        self._structured = structured
        self._short_ids = short_call_ids
        self._calls = ToolCallAssembler()
        self._think = ThinkTagSplitter()
        self._finished = False
        # Why the answer stopped short, if it did: a finish reason or "unended".
        self._cut: str | None = None
        # A tool call (native, or written as text) was under way when cut.
        self._cut_call = False
        # Calls were handed over: words cut after them need not be said.
        self._handed = False
        # While tools are offered, the start of the answer is held back for as
        # long as it can be a tool call written as text.
        self._watch = WrittenCallWatch(tool_names) if tool_names else None
        self._said = False
        self.usage: JSONObject | None = None

    def feed(self, chunk: JSONObject) -> list[Delta]:
        """Return the deltas one chunk adds; only its first choice (index 0) speaks."""
        if error := chunk.get("error"):
            raise answer_error(
                error_message(error), chunk, tools=bool(self._tool_names)
            )
        if (usage := chunk.get("usage")) is not None:
            self.usage = read_usage(read_object(usage, "usage"))
        deltas: list[Delta] = []
        if not (choices := chunk.get("choices")):
            return deltas
        if not isinstance(choices, list) or not all(
            isinstance(c, dict) for c in choices
        ):
            raise MalformedAnswerError(part="choices")
        for choice in choices:
            if choice.get("index", 0) == 0:
                self._choice(choice, deltas)
        return deltas

    def feed_whole(self, raw: bytes) -> list[Delta]:
        """Return the deltas of a whole answer, read as the one chunk of a stream."""
        try:
            answer = read_object(json_loads(raw), "the answer")
        except ValueError as err:
            raise ServerError("answer_not_json") from err
        choices = (
            read_object(choice, "choices")
            for choice in read_list(answer.get("choices"), "choices")
        )
        chunk: JSONObject = {
            "choices": [
                {
                    "index": choice.get("index", 0),
                    "delta": choice.get("message"),
                    "finish_reason": choice.get("finish_reason"),
                }
                for choice in choices
            ],
            "usage": answer.get("usage"),
        }
        if error := answer.get("error"):
            chunk["error"] = error
        return self.feed(chunk)

    def close(self, *, ended: bool) -> list[Delta]:
        """Return what remains; `ended`: the server said the answer was whole."""
        thinking, spoken = self._think.flush()
        deltas: list[Delta] = []
        self._text(thinking, spoken, deltas)
        if not self._finished and not ended:
            self._cut = "unended"
        deltas.extend(self._finish(None))
        return deltas

    def raise_if_cut(self) -> None:
        """Raise why the answer stopped short, unless text cut at its limit stands.

        (A local model that does not stop is cut there on every turn.)
        """
        if self._cut == "unended":
            raise ServerError("answer_cut_short")
        if self._cut is not None and not self.cut_at_limit():
            raise ModelError(_CUT_ERRORS[self._cut])

    def cut_at_limit(self) -> bool:
        """Tell whether the answer cut at its token limit stands: words, or calls."""
        return (
            self._cut == "length"
            and (self._said or self._handed)
            and not (self._cut_call or self._structured)
        )

    def _choice(self, choice: JSONObject, deltas: list[Delta]) -> None:
        # Read for every streamed token, in few calls; empty strings mean absent.
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = read_object_or_empty(delta, "choices.delta")
        calls = delta.get("tool_calls")
        calls = read_list(calls, "tool_calls") if calls else ()
        reason = choice.get("finish_reason")
        reason = read_optional_string(reason, "choices.finish_reason")
        text = delta.get("content")
        if not isinstance(text, str):
            text = string_or_none(delta.get("refusal"))
        thinking, spoken = self._think.feed(text) if text is not None else ("", "")
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str):
            thinking = reasoning + thinking
        self._text(thinking, spoken, deltas)
        for fragment in calls:
            self._calls.add(fragment)
        if reason:
            deltas.extend(self._finish(reason))

    def _text(self, thinking: str, spoken: str, deltas: list[Delta]) -> None:
        if thinking:
            deltas.append({"thinking_content": thinking})
        if spoken and self._watch is not None:
            spoken = self._watch.feed(spoken)
        self._say(spoken, deltas)

    def _say(self, text: str, deltas: list[Delta]) -> None:
        if text:
            self._said = self._said or not text.isspace()
            deltas.append({"content": text})

    def _finish(self, reason: str | None) -> list[Delta]:
        # Held text and the assembled calls, once, unless cut off.
        if self._finished:
            return []
        self._finished = True
        if reason in _CUT_ERRORS:
            self._cut = reason
        deltas: list[Delta] = []
        watch = self._watch
        written: list[PendingCall] = []
        if self._cut is not None:
            holding = bool(watch and watch.holding)
            said, written = watch.cut() if watch else ("", [])
            self._say(said, deltas)
            if self._cut != "length" or self._calls.calls or not written:
                self._cut_call = holding or bool(self._calls.calls)
                if self._cut == "length":
                    deltas.append({"native": ANSWER_CUT})
                return deltas
            # Calls written whole before the model rambled on: they run.
        elif watch is not None:
            said, written = watch.finish(called=bool(self._calls.calls))
            self._say(said, deltas)
        if not self._calls.calls:
            # With native calls too, written ones only repeat them.
            self._calls.calls.extend(written)
        pairs = [
            call_input(
                call,
                call.call_id or self._new_call_id(),
                self._tool_names,
                self._own_calls,
            )
            for call in self._calls.named_calls()
        ]
        answers = [answer for _, answer in pairs if answer is not None]
        if pairs:
            self._handed = True
            handed: conversation.AssistantContentDeltaDict = {
                "tool_calls": [tool_input for tool_input, _ in pairs]
            }
            if answers:
                ids = frozenset(answer["tool_call_id"] for answer in answers)
                handed["native"] = AnsweredCalls(ids)
            elif self._cut == "length":
                # The words before the calls were cut: a sentence may stand for them.
                handed["native"] = ANSWER_CUT
            deltas += [handed, *answers]
        elif reason == "stop" and not self._said:
            # The model chose to say nothing: a silent answer.
            deltas.append({"content": ""})
        return deltas

    def _new_call_id(self) -> str:
        if self._short_ids:
            return uuid4().hex[:9]
        return f"call_{uuid4().hex[:24]}"


async def async_read_answer(
    parser: ChatStreamParser | ResponsesStreamParser,
    body: AsyncIterable[bytes],
    *,
    streamed: bool,
) -> AsyncIterator[Delta]:
    """Yield the deltas of an answer of either wire API, read within bounds.

    On an error a new message starts first, so the chat log keeps the words
    already streamed.
    """
    try:
        if streamed:
            stream = EventStream(body)
            async for events in stream:
                for event in events:
                    for delta in parser.feed(event):
                        yield delta
            ended = stream.done
        else:
            for delta in parser.feed_whole(await async_read_body(body)):
                yield delta
            ended = True
        for delta in parser.close(ended=ended):
            yield delta
        if parser.cut_at_limit():
            # The text stands, but the user sees and hears that it is not all.
            LOGGER.debug("The answer reached its token limit; its text so far stands")
            trace.async_conversation_trace_append(
                trace.ConversationTraceEventType.AGENT_DETAIL,
                {"answer_cut": "token_limit"},
            )
            note = async_get_exception_message(DOMAIN, "answer_cut")
            yield {"content": f"… ({note})"}
        parser.raise_if_cut()
    except TranslatedError, httpx2.HTTPError:
        yield {"role": "assistant"}
        raise
