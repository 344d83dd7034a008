"""Tool calls in an answer: assembled from stream fragments, or written as text.

Every step takes time linear in the answer: a hostile or looping server cannot
make assembly or detection block the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
import json
import re
from typing import Any

from homeassistant.helpers.json import json_dumps
from homeassistant.util.json import json_loads

from ..const import LOGGER
from ..errors import ModelError
from ..net.readers import CallFragment, read_call_fragment
from ..net.shapes import JsonObject

# The most tool calls one answer may ask for.
MAX_TOOL_CALLS = 32
# How an answer starts when a model writes its tool call as text.
TEXT_CALL_TAGS = ("<tool_call>", "```")
LONGEST_MARKER = max(len(tag) for tag in TEXT_CALL_TAGS)
_TAG_OPEN = "<tool_call>"
_TAG_CLOSE = "</tool_call>"
_FENCE = "```"
_NON_SPACE = re.compile(r"\S")


@dataclass(slots=True)
class PendingCall:
    """A tool call being assembled: its fragments, or arguments already decoded."""

    call_id: str | None
    name: str | None
    fragments: list[str] = field(default_factory=list)
    decoded: JsonObject | None = None
    _size: int = field(default=0, init=False, repr=False)
    _next_check: int = field(default=0, init=False, repr=False)

    def add_arguments(self, text: str) -> None:
        """Add a fragment of the arguments."""
        self.fragments.append(text)
        self._size += len(text)

    def arguments_complete(self) -> bool:
        """Tell whether the arguments so far form a whole JSON value.

        A failed check is repeated only once the arguments have doubled, so all
        checks of one call together take time linear in its length.
        """
        if self.decoded is not None:
            return True
        if self._size < self._next_check:
            return False
        try:
            json_loads("".join(self.fragments))
        except ValueError:
            self._next_check = 2 * self._size + 1
            return False
        return True

    def arguments(self) -> JsonObject:
        """Return the decoded arguments; empty, null or not an object means none."""
        value: Any = self.decoded
        if value is None:
            value = "".join(self.fragments)
            # A few servers encode the arguments twice.
            for _ in range(2):
                if not isinstance(value, str):
                    break
                if not value.strip():
                    return {}
                value = self._decode(value)
        if not isinstance(value, dict):
            return {}
        try:
            # Home Assistant writes the arguments back out with a depth limit.
            json_dumps(value)
        except TypeError as err:
            raise ModelError(
                "invalid_tool_arguments", name=str(self.name), message=str(err)
            ) from err
        return value

    def _decode(self, text: str) -> Any:
        """Return the JSON value of the text; raise ModelError if it is none.

        Control characters inside strings, which small models write raw, are
        taken as they are.
        """
        try:
            return json_loads(text)
        except ValueError as err:
            try:
                return json.loads(text, strict=False)
            except ValueError, RecursionError:
                raise ModelError(
                    "invalid_tool_arguments", name=str(self.name), message=str(err)
                ) from err


class ToolCallAssembler:
    """The tool calls of one answer, assembled from stream fragments."""

    def __init__(self) -> None:
        """Start without calls."""
        self.calls: list[PendingCall] = []
        self._by_index: dict[int, PendingCall] = {}

    def add(self, value: object) -> None:
        """Merge one `tool_calls` fragment into the call it belongs to."""
        fragment = read_call_fragment(value)
        index = len(self.calls) if fragment.index is None else fragment.index
        current = self._by_index.get(index)
        if current is None or _starts_new(current, fragment):
            current = self._start(index, PendingCall(fragment.call_id, fragment.name))
        else:
            current.call_id = current.call_id or fragment.call_id
            current.name = current.name or fragment.name
        if isinstance(fragment.arguments, dict):
            current.decoded = fragment.arguments
        elif fragment.arguments:
            current.add_arguments(fragment.arguments)

    def adopt(self, calls: list[PendingCall]) -> None:
        """Take calls written as text, unless the server sent calls of its own."""
        if not self.calls:
            self.calls.extend(calls)

    def named_calls(self) -> Iterator[PendingCall]:
        """Yield the calls that name a tool, each call id once."""
        seen: set[str] = set()
        for call in self.calls:
            if not call.name:
                continue
            if call.call_id is not None:
                if call.call_id in seen:
                    LOGGER.debug("Dropping a repeated tool call id: %s", call.call_id)
                    continue
                seen.add(call.call_id)
            yield call

    def _start(self, index: int, call: PendingCall) -> PendingCall:
        """Add a new call under the index, within the limit."""
        if len(self.calls) >= MAX_TOOL_CALLS:
            raise too_many_calls()
        self.calls.append(call)
        self._by_index[index] = call
        return call


def too_many_calls() -> ModelError:
    """Return the error for an answer with more calls than MAX_TOOL_CALLS."""
    return ModelError("too_many_tool_calls", limit=str(MAX_TOOL_CALLS))


def _starts_new(current: PendingCall, fragment: CallFragment) -> bool:
    """Tell whether a fragment under a used index starts a call of its own.

    Some servers put several calls under one index: a new id tells, and so
    does a new name with fresh arguments after complete ones.
    """
    if fragment.call_id is not None:
        return current.call_id not in (None, fragment.call_id)
    arguments = fragment.arguments
    return (
        fragment.name is not None
        and current.name is not None
        and (isinstance(arguments, dict) or (arguments or "").lstrip()[:1] == "{")
        and current.arguments_complete()
    )


def may_be_call(start: str) -> bool:
    """Tell whether an answer that starts like this can be a call written out.

    `start` is the start of the answer with all whitespace removed.
    """
    rest = start.lstrip("[")
    if rest[:1] == "{":
        return rest[1:2] in ("", '"')
    return any(rest.startswith(tag) or tag.startswith(rest) for tag in TEXT_CALL_TAGS)


def calls_in_text(text: str, tool_names: Mapping[str, str]) -> list[PendingCall] | None:
    """Return the tool calls a model wrote as text, if that is all it wrote.

    Takes a JSON object or array (or a fenced one) or Hermes-style
    `<tool_call>` blocks that name an offered tool and give its arguments.
    """
    stripped = text.strip()
    if stripped.startswith(_TAG_OPEN):
        bodies = _tagged_bodies(stripped)
    elif (
        stripped.startswith(_FENCE) and stripped.endswith(_FENCE) and len(stripped) >= 6
    ):
        bodies = [stripped[3:-3].removeprefix("json")]
    else:
        bodies = [stripped]
    if bodies is None:
        return None
    calls: list[PendingCall] = []
    for body in bodies:
        try:
            value = json_loads(body)
        except ValueError:
            return None
        for item in value if isinstance(value, list) else [value]:
            call = _written_call(item, tool_names)
            if call is None:
                return None
            if len(calls) == MAX_TOOL_CALLS:
                raise too_many_calls()
            calls.append(call)
    return calls or None


def _tagged_bodies(text: str) -> list[str] | None:
    """Return the bodies of `<tool_call>` blocks, if the text is only such blocks."""
    bodies: list[str] = []
    position = 0
    while position < len(text):
        if not text.startswith(_TAG_OPEN, position):
            return None  # words besides the calls
        start = position + len(_TAG_OPEN)
        end = text.find(_TAG_CLOSE, start)
        if end < 0:
            return None  # a call cut short
        bodies.append(text[start:end])
        following = _NON_SPACE.search(text, end + len(_TAG_CLOSE))
        position = following.start() if following else len(text)
    return bodies


def _written_call(item: object, tool_names: Mapping[str, str]) -> PendingCall | None:
    """Return the call one written object stands for, if it is one."""
    if not isinstance(item, dict):
        return None
    name = offered_name(item.get("name"), tool_names)
    arguments = item.get("arguments", item.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = json_loads(arguments)
        except ValueError:
            return None
    if name is None or not isinstance(arguments, dict):
        return None
    return PendingCall(None, name, decoded=arguments)


def offered_name(name: object, tool_names: Mapping[str, str]) -> str | None:
    """Return the offered tool a name the model gave means, also without its prefix."""
    if not isinstance(name, str):
        return None
    if name in tool_names:
        return name
    matches = [wire for wire in tool_names if wire.endswith(f"__{name}")]
    return matches[0] if len(matches) == 1 else None
