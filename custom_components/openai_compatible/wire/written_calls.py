"""Tool calls a model wrote as text instead of calling: found, read and named.

Small models write calls as JSON (alone, listed, in a row, fenced, in Qwen's
`<tool_call>` tags) or as code, with words or a made-up result around them;
text whose blocks hold calls is calls. Each step is linear in the text.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
import json
import re
from typing import Any, Final

from homeassistant.util.json import json_loads

from .tool_calls import MAX_TOOL_CALLS, PendingCall, offered_name, too_many_calls

# Blocks that hold calls: Qwen's tags and fences, either cut short at the end.
_BLOCK: Final = re.compile(
    r"<tool_call>(.*?)(?:</tool_call>|\Z)|```[\w+.-]*\n?(.*?)(?:```|\Z)", re.DOTALL
)
# Where a call begins in the middle of an answer: a tag, a fence, an object.
_MARKER: Final = re.compile(r'<tool_call>|```|(?:\[\s{0,8})?\{\s{0,8}"')
# The start of a marker, cut at the end of a chunk.
_MARKER_START: Final = re.compile(
    "(?:"
    + "|".join(re.escape("<tool_call>"[:length]) for length in range(10, 0, -1))
    + r"|`{1,2}|\[\s{0,8}(?:\{\s{0,8})?|\{\s{0,8})\Z"
)
_MARKER_REACH: Final = 24
# Where JSON outside blocks starts: an object, or a list of them.
_JSON_START: Final = re.compile(r"\[?\{")
# A call written as code starts with a name and its parenthesis.
_CODE_NAME: Final = re.compile(r"[A-Za-z_][\w.]{0,63}")
# A call labelled `functions.Name:`, its JSON after, as chatml-function-calling writes.
_LABEL: Final = re.compile(r"([A-Za-z_][\w.]{0,63}):\s*")
# How much of an answer's start is read to tell whether it is a call.
_START_REACH: Final = 80
# The longest call written as code that is parsed.
_MAX_CODE: Final = 4000
# The keys a written call gives its arguments under.
_ARGUMENT_KEYS: Final = ("arguments", "parameters", "args")


class WrittenCallWatch:
    """An answer's text, let through until it starts like a call or shows a call's marker."""

    def __init__(self, tool_names: Mapping[str, str]) -> None:
        """Watch for calls of the offered tools (wire name to Home Assistant's)."""
        self._names = tool_names
        # The answer's start while it may still be a call; None once told.
        self._start: str | None = ""
        self._lead = ""
        # Words held back because they may begin a marker.
        self._tail = ""
        # The text from a call's start on, held to the end.
        self._held: list[str] | None = None

    @property
    def holding(self) -> bool:
        """Tell whether a written call is under way."""
        return self._held is not None

    def feed(self, text: str) -> str:
        """Return the part of the text that can be said now."""
        if self._held is not None:
            self._held.append(text)
            return ""
        if self._start is not None:
            if not self._start:
                start = text.lstrip()
                self._lead += text[: len(text) - len(start)]
                text = start
            self._start += text
            verdict = call_start(self._start, self._names) if text else None
            if verdict is None:
                return ""
            text, self._start = self._lead + self._start, None
            if verdict:
                self._held = [text]
                return ""
        # The words before any marker go; from one on, the rest is held.
        buffer = self._tail + text
        if (found := _MARKER.search(buffer)) is not None:
            self._held, self._tail = [buffer[found.start() :]], ""
            return buffer[: found.start()]
        partial = _MARKER_START.search(buffer, max(0, len(buffer) - _MARKER_REACH))
        end = len(buffer) if partial is None else partial.start()
        self._tail = buffer[end:]
        return buffer[:end]

    def finish(self, *, called: bool = False) -> tuple[str, list[PendingCall]]:
        """Return the words still to say and the calls written, at the end.

        `called`: the server sent calls of its own; held text that starts
        like a call is a piece of them (llama-server streams a `{` first).
        """
        said, self._tail = self._tail, ""
        if self._held is not None:
            held = "".join(self._held)
        else:
            held = self._lead + self._start if self._start is not None else ""
        self._held, self._start = None, None
        if held and (calls := _calls_closed(held, self._names)):
            return said, calls
        if called and held.lstrip()[:1] in ("<", "`", "[", "{"):
            return said, []
        return said + held, []

    def cut(self) -> tuple[str, list[PendingCall]]:
        """Return the words and the calls written whole before the answer was cut."""
        held = "".join(self._held) if self._held is not None else ""
        said = self._tail + (self._lead + self._start if self._start else "")
        self._tail, self._held, self._start = "", None, None
        return said, (calls_in_text(held, self._names) or []) if held else []


def call_start(text: str, tool_names: Mapping[str, str]) -> bool | None:
    """Tell whether an answer starting with this text (no space first) is a call; None: not yet."""
    start = text[:_START_REACH]
    rest = "".join(start.split()).lstrip("[")
    if rest[:1] == "{":
        return None if len(rest) == 1 else rest[1] == '"'
    for tag in ("<tool_call>", "```"):
        if rest.startswith(tag):
            return True
        if tag.startswith(rest):
            return None if len(text) < _START_REACH else True
    if (name := _CODE_NAME.match(start)) is None:
        return False
    if name.end() == len(start):
        return None if len(text) < _START_REACH else False
    return (
        start[name.end()] in "(:"
        and offered_name(name.group().rpartition(".")[2], tool_names) is not None
    )


def calls_in_text(text: str, tool_names: Mapping[str, str]) -> list[PendingCall] | None:
    """Return the calls a model wrote in the text, if its blocks are calls.

    A JSON call may name a tool not offered (the model is then told the offered
    names); code must name an offered one. A block cut short gives the calls before it.
    """
    calls: list[PendingCall] = []
    for items in _blocks(text, tool_names):
        if items is None:
            return None
        for item in items:
            if (call := _written_call(item, tool_names)) is None:
                continue  # data beside calls: a result the model made up
            if len(calls) == MAX_TOOL_CALLS:
                raise too_many_calls()
            calls.append(call)
    return calls or None


def _calls_closed(text: str, tool_names: Mapping[str, str]) -> list[PendingCall] | None:
    """Return the calls written, also where the model stopped before its last `}`."""
    if calls := calls_in_text(text, tool_names):
        return calls
    closers: list[str] = []
    quoted = escaped = False
    for character in text:
        if quoted:
            quoted, escaped = (
                (True, False) if escaped else (character != '"', character == "\\")
            )
        elif character == '"':
            quoted = True
        elif character in "{[":
            closers.append("}" if character == "{" else "]")
        elif character in "}]" and (not closers or closers.pop() != character):
            return None
    if quoted or not closers:
        return None
    return calls_in_text(text.rstrip() + "".join(reversed(closers)), tool_names)


def _blocks(text: str, tool_names: Mapping[str, str]) -> Iterator[list[object] | None]:
    """Yield the items of each block in the text; None for a block of no call."""
    position = 0
    for block in _BLOCK.finditer(text):
        yield from _loose(text[position : block.start()], tool_names)
        body = block.group(1) if block.group(1) is not None else block.group(2)
        yield _json_values(body.strip()) or _code_calls(body, tool_names)
        position = block.end()
    yield from _loose(text[position:], tool_names)


def _loose(text: str, tool_names: Mapping[str, str]) -> Iterator[list[object] | None]:
    """Yield the calls written outside blocks: code or a labelled call, else JSON values."""
    stripped = text.strip()
    if code := _code_calls(stripped, tool_names):
        yield code
        return
    if (label := _LABEL.match(stripped)) is not None:
        name = label.group(1).rpartition(".")[2]
        rest = stripped[label.end() :]
        values = _json_values(rest) if rest else [{}]
        if offered_name(name, tool_names) is not None and values:
            yield [{"name": name, "arguments": values[0]}]
            return
    if (found := _JSON_START.search(stripped)) is not None:
        yield _json_values(stripped[found.start() :]) or None


def _json_values(text: str) -> list[object]:
    """Return the JSON values at the start of the text (a list as its items), read once."""
    decoder = json.JSONDecoder(strict=False)
    values: list[object] = []
    position = 0
    while position < len(text) and text[position] in "{[":
        try:
            value, position = decoder.raw_decode(text, position)
        except ValueError, RecursionError:
            break
        values.extend(value if isinstance(value, list) else [value])
        while position < len(text) and text[position] in " \t\r\n,;":
            position += 1
    return values


def _code_calls(text: str, tool_names: Mapping[str, str]) -> list[object] | None:
    """Return calls written as code (`Name(key="value")`) of offered tools."""
    stripped = text.strip()
    if len(stripped) > _MAX_CODE or not _CODE_NAME.match(stripped):
        return None
    try:
        tree = ast.parse(stripped)
    except SyntaxError, ValueError, RecursionError, MemoryError:
        return None
    items: list[object] = []
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call):
            return None
        name = ast.unparse(call.func).rpartition(".")[2]
        try:
            arguments = {
                keyword.arg: ast.literal_eval(keyword.value)
                for keyword in call.keywords
                if keyword.arg is not None
            }
            if call.args:
                only = ast.literal_eval(call.args[0])
                if len(call.args) > 1 or arguments or not isinstance(only, dict):
                    return None
                arguments = only
        except ValueError, TypeError, SyntaxError, RecursionError, MemoryError:
            return None
        if offered_name(name, tool_names) is None:
            return None
        items.append({"name": name, "arguments": arguments})
    return items or None


def _written_call(item: object, tool_names: Mapping[str, str]) -> PendingCall | None:
    if not isinstance(item, dict):
        return None
    function = item.get("function")
    call: dict[str, Any] = function if isinstance(function, dict) else item
    name = call.get("name")
    key = next((key for key in _ARGUMENT_KEYS if key in call), None)
    if not isinstance(name, str) or not name:
        return None
    if key is None and (len(call) > 1 or offered_name(name, tool_names) is None):
        return None  # only a name: a call with no arguments, of an offered tool
    arguments = call[key] if key is not None else {}
    if isinstance(arguments, str):
        try:
            arguments = json_loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return PendingCall(None, name, decoded=arguments)
