"""Responses API answers read into chat log deltas.

One chat log message holds the output items up to a provider-run call (shown
as an external call and its result); its `native` keeps them as they go back
(`ResponsesReplay`), so reasoning models keep their chain across rounds.
Function calls are handed over only once the answer is complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import re
from typing import Any, Final

from homeassistant.helpers import llm
from homeassistant.helpers.json import json_dumps

from ..errors import MalformedAnswerError, ModelError, ServerError
from ..net.readers import (
    JSONObject,
    error_message,
    read_index,
    read_list,
    read_object,
    read_string,
    read_usage,
    string_or_none,
)
from ..net.transport import OwnCalls, parse_json
from ..server_errors.answers import answer_error
from .chat_stream import Delta, ThinkTagSplitter
from .tool_calls import MAX_TOOL_CALLS, PendingCall, call_input, too_many_calls

type Item = JSONObject

_INCOMPLETE: Final = {
    "max_output_tokens": "answer_cut_at_token_limit",
    "content_filter": "answer_cut_by_content_filter",
}
_TEXT_DELTAS: Final = ("response.output_text.delta", "response.refusal.delta")
_THINKING_DELTAS: Final = (
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
)
_REASONING_KEYS: Final = ("type", "id", "summary", "content", "encrypted_content")
# What of a provider-run call goes back besides its type, id and status, and
# the chat log's name of its tool, by the type of its call.
_REPLAYED_KEYS: Final = {
    "web_search_call": ("action",),
    "code_interpreter_call": ("code", "container_id", "outputs"),
    "image_generation_call": (),
}
PROVIDER_CALLS: Final = {kind: kind.removesuffix("_call") for kind in _REPLAYED_KEYS}
# The longest title and address of a citation; past them, text is not one.
_MAX_TITLE: Final = 300
_MAX_URL: Final = 2000
_CITATION: Final = re.compile(
    rf"\(\[[^\]\n]{{1,{_MAX_TITLE}}}\]\(https?://[^\s()]{{1,{_MAX_URL}}}\)\)"
)
# Every start of a citation, from its opening parenthesis on.
_CITATION_START: Final = re.compile(
    rf"\((?:\[(?:[^\]\n]{{0,{_MAX_TITLE}}}(?:\](?:\((?:h(?:t(?:t(?:p(?:s?(?::"
    rf"(?:/(?:/[^\s()]{{0,{_MAX_URL}}}(?:\)\)?)?)?)?)?)?)?)?)?)?)?)?)?)?"
)


class CitationFilter:
    """Remove inline citations (` ([example.com](https://...))`) from text in pieces."""

    def __init__(self) -> None:
        """Start with nothing held back."""
        self._held = ""

    def feed(self, text: str) -> str:
        """Return the text that is certain to be spoken, citations removed."""
        buffer = self._held + text
        self._held = ""
        spoken: list[str] = []
        position = 0
        while (found := buffer.find("(", position)) >= 0:
            # The space before a citation goes with it.
            start = found - 1 if buffer[found - 1 : found] == " " else found
            spoken.append(buffer[position:start])
            if match := _CITATION.match(buffer, found):
                position = match.end()
            elif _CITATION_START.fullmatch(buffer, found):
                self._held = buffer[start:]
                return "".join(spoken)
            else:
                spoken.append(buffer[start : found + 1])
                position = found + 1
        rest = buffer[position:]
        if rest.endswith(" "):
            # It may be the space before a citation.
            rest, self._held = rest[:-1], " "
        spoken.append(rest)
        return "".join(spoken)

    def flush(self) -> str:
        """Return what is held back when the text is over."""
        held, self._held = self._held, ""
        return held


@dataclass(frozen=True, slots=True)
class ResponsesReplay:
    """The output items of one chat log message, as they go back to the server."""

    items: tuple[Item, ...]


class ResponsesStreamParser:
    """Turn the events of one Responses API answer into chat log deltas."""

    def __init__(
        self,
        tool_names: Mapping[str, str],
        *,
        own_calls: OwnCalls | None = None,
        remove_citations: bool = False,
    ) -> None:
        """Prepare for one answer; `tool_names` maps wire names to Home Assistant's."""
        self._tool_names = tool_names
        self._own_calls = own_calls
        self._think = ThinkTagSplitter()
        self._citations = CitationFilter() if remove_citations else None
        self._deltas: list[Delta] = []  # not yet handed over
        # The current message's items to send back, its function calls and
        # the answers to those that cannot run.
        self._replay: list[Item] = []
        self._calls: list[llm.ToolInput] = []
        self._answers: list[Delta] = []
        self._call_count = 0
        self._spoken: list[str] = []  # of the message item being read
        # Output indexes whose deltas were read; the items read, by their ids.
        self._streamed: set[int] = set()
        self._seen: set[tuple[str, object]] = set()
        # (output index, summary index) of the last thinking delta.
        self._summary_at: tuple[object, object] | None = None
        # Why the answer stopped short (our error's key); None once it ended whole.
        self._cut: str | None = "answer_cut_short"
        # Nothing was said yet, or since the last provider-run call.
        self._silent = True
        self.usage: JSONObject | None = None  # in the Chat Completions form

    def feed(self, event: JSONObject) -> list[Delta]:
        """Return the deltas one event adds."""
        kind = event.get("type")
        if kind in _TEXT_DELTAS:
            self._streamed.add(_index(event))
            self._text(read_string(event.get("delta"), "delta"))
        elif kind in _THINKING_DELTAS:
            self._streamed.add(_index(event))
            text = read_string(event.get("delta"), "delta")
            # Each summary part, or item, starts a paragraph of its own.
            at = (event.get("output_index"), event.get("summary_index"))
            if self._summary_at is not None and at != self._summary_at:
                text = f"\n\n{text}"
            self._summary_at = at
            if text:
                self._deltas.append({"thinking_content": text})
        elif kind == "response.output_item.done":
            self._item_done(_index(event), read_object(event.get("item"), "item"))
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(read_object(event.get("response"), "response"))
        elif kind in ("response.failed", "error"):
            raise _failure(event)
        return self._take()

    def feed_whole(self, raw: bytes) -> list[Delta]:
        """Return the deltas of a whole answer that was not streamed."""
        self._finish(read_object(parse_json(raw), "the answer"))
        return self._take()

    def close(self, *, ended: bool = True) -> list[Delta]:
        """Return what remains when the body is over (the answer tells its end)."""
        self._text()
        return self._take()

    def cut_at_limit(self) -> bool:
        """Tell whether an answer cut at its token limit stands: never."""
        return False

    def raise_if_cut(self) -> None:
        """Raise the error that tells why the answer stopped short, if it did."""
        if self._cut == "answer_cut_short":
            raise ServerError(self._cut)
        if self._cut:
            raise ModelError(self._cut)

    def _take(self) -> list[Delta]:
        deltas, self._deltas = self._deltas, []
        return deltas

    def _text(self, text: str | None = None) -> None:
        """Add spoken text, think tags and citations split off; None: what was held."""
        thinking, spoken = (
            self._think.flush() if text is None else self._think.feed(text)
        )
        if thinking:
            self._deltas.append({"thinking_content": thinking})
        if self._citations is not None:
            spoken = self._citations.feed(spoken)
            spoken += self._citations.flush() if text is None else ""
        if spoken:
            self._silent = False
            self._spoken.append(spoken)
            self._deltas.append({"content": spoken})

    def _item_done(self, index: int, item: Item) -> None:
        # Once: the same item or call id is skipped.
        seen: set[tuple[str, object]] = {
            (key, value)
            for key in ("id", "call_id")
            if isinstance(value := item.get(key), str) and value
        } or {("output_index", index)}
        if seen & self._seen:
            return
        self._seen |= seen
        kind = item.get("type")
        streamed = index in self._streamed
        if kind == "message":
            self._message_done(item, streamed)
        elif kind == "reasoning":
            self._reasoning_done(item, streamed)
        elif kind == "function_call":
            self._call_done(item)
        elif kind in PROVIDER_CALLS:
            self._provider_call_done(item)

    def _message_done(self, item: Item, streamed: bool) -> None:
        if not streamed:
            for part in read_list(item.get("content"), "message.content"):
                part = read_object(part, "message.content")
                text = part.get("text", part.get("refusal"))
                if isinstance(text, str):
                    self._text(text)
        self._text()
        self._close_message()

    def _close_message(self) -> None:
        if self._spoken:
            text = "".join(self._spoken)
            self._replay.append(
                {"type": "message", "role": "assistant", "content": text}
            )
            self._spoken = []

    def _reasoning_done(self, item: Item, streamed: bool) -> None:
        if not streamed:
            texts = [
                part.get("text")
                for key in ("summary", "content")
                for part in read_list(item.get(key), f"reasoning.{key}")
                if isinstance(part, dict)
            ]
            if thinking := "\n\n".join(t for t in texts if isinstance(t, str) and t):
                self._deltas.append({"thinking_content": thinking})
        # Without its content (encrypted or plain), the server cannot take it back.
        if item.get("encrypted_content") or item.get("content"):
            self._replay.append(
                {key: item[key] for key in _REASONING_KEYS if item.get(key) is not None}
            )

    def _call_done(self, item: Item) -> None:
        name = read_string(item.get("name"), "function_call.name")
        call_id = read_string(item.get("call_id"), "function_call.call_id")
        arguments = item.get("arguments")
        if not name or not call_id:
            return
        if self._call_count >= MAX_TOOL_CALLS:
            raise too_many_calls()
        self._call_count += 1
        pending = PendingCall(call_id, name)
        if isinstance(arguments, dict):
            pending.decoded = arguments
        elif isinstance(arguments, str):
            pending.add_arguments(arguments)
        elif arguments is not None:
            raise MalformedAnswerError(part="function_call.arguments")
        tool_input, answer = call_input(
            pending, call_id, self._tool_names, self._own_calls
        )
        self._calls.append(tool_input)
        self._answers.extend([answer] if answer else [])
        self._replay.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": name,
                "arguments": arguments
                if isinstance(arguments, str)
                else json_dumps(tool_input.tool_args),
            }
        )

    def _provider_call_done(self, item: Item) -> None:
        kind = str(item["type"])
        call_id = read_string(item.get("id"), f"{kind}.id")
        if not call_id:
            return
        name = PROVIDER_CALLS[kind]
        arguments, result = _provider_view(kind, item)
        status = string_or_none(item.get("status"))
        keys = ("type", "id", "status", *_REPLAYED_KEYS[kind])
        replayed = {key: item[key] for key in keys if key in item}
        if kind == "image_generation_call":
            replayed["result"] = None  # the image goes back without its bytes
        self._replay.append(replayed)
        self._deltas.append(
            {"tool_calls": [llm.ToolInput(name, arguments, id=call_id, external=True)]}
        )
        self._end_message()
        self._deltas += [
            {
                "role": "tool_result",
                "tool_call_id": call_id,
                "tool_name": name,
                "result": llm.ToolResult(
                    {"status": status, **result}, error=status == "failed"
                ),
            },
            {"role": "assistant"},
        ]
        self._silent = True

    def _end_message(self) -> None:
        self._close_message()
        if self._calls:
            self._deltas.append({"tool_calls": self._calls})
        if self._replay:
            self._deltas.append({"native": ResponsesReplay(tuple(self._replay))})
        self._deltas.extend(self._answers)
        self._calls, self._replay, self._answers = [], [], []

    def _finish(self, response: JSONObject) -> None:
        output = response.get("output")
        if response.get("status") == "failed" or (response.get("error") and not output):
            raise _failure({"response": response})
        for index, item in enumerate(read_list(output, "response.output")):
            self._item_done(index, read_object(item, "response.output"))
        if (usage := response.get("usage")) is not None:
            # In the Chat Completions form the engine counts.
            usage = read_object(usage, "response.usage")
            self.usage = read_usage(
                {
                    "prompt_tokens": usage.get("input_tokens"),
                    "completion_tokens": usage.get("output_tokens"),
                    "total_tokens": usage.get("total_tokens"),
                    "prompt_tokens_details": usage.get("input_tokens_details"),
                    "completion_tokens_details": usage.get("output_tokens_details"),
                }
            )
        self._text()
        if response.get("status") == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            self._cut = _INCOMPLETE.get(str(reason), "answer_cut_short")
            return
        self._cut = None
        if self._silent and not self._calls:
            # The model chose to say nothing (after a provider-run call, or at all).
            self._deltas.append({"content": ""})
        self._end_message()


def _provider_view(kind: str, item: Item) -> tuple[dict[str, Any], dict[str, Any]]:
    # A call's arguments and result as the chat log shows them: a generated
    # image's prompt and size, never its bytes.
    if kind == "code_interpreter_call":
        outputs = item.get("outputs")
        return {"code": item.get("code")}, {
            "outputs": outputs if isinstance(outputs, list) else []
        }
    if kind == "image_generation_call":
        return {"prompt": item.get("revised_prompt")}, {
            key: item[key] for key in ("size", "output_format") if key in item
        }
    action = item.get("action")
    action = action if isinstance(action, dict) else {}
    sources = [
        source["url"]
        for source in action.get("sources") or ()
        if isinstance(source, dict) and isinstance(source.get("url"), str)
    ]
    arguments = {key: value for key, value in action.items() if key != "sources"}
    return arguments, {"sources": sources} if sources else {}


def _failure(event: JSONObject) -> ServerError:
    response = event.get("response")
    error = response.get("error") if isinstance(response, dict) else event
    details = error if isinstance(error, dict) else {}
    message = details.get("message") or "the server reported an error"
    return answer_error(error_message(message), details)


def _index(event: JSONObject) -> int:
    return read_index(event.get("output_index", 0), "output_index")
