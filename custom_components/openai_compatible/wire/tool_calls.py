"""Tool calls in an answer, assembled from stream fragments (written ones: written_calls.py).

Every step takes time linear in the answer, so no server can block the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
import json
from typing import Any

from homeassistant.helpers.json import json_dumps
from homeassistant.util.json import json_loads

from ..const import LOGGER
from ..errors import ModelError
from ..net.readers import CallFragment, read_call_fragment
from ..net.shapes import JsonObject

# The most tool calls one answer may ask for.
MAX_TOOL_CALLS = 32


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

        A failed check is repeated only once the arguments have doubled: linear time.
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
        """Return the JSON value of the text, raw control characters taken; else raise."""
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
            if len(self.calls) >= MAX_TOOL_CALLS:
                raise too_many_calls()
            current = PendingCall(fragment.call_id, fragment.name)
            self.calls.append(current)
            self._by_index[index] = current
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
