"""Tool calls in an answer: assembled from fragments, named, answered if they cannot run.

A call that cannot run (arguments no JSON or lacking a required key, a tool not
offered) goes into the chat log as `external`, with a result saying what was wrong
for the model to call again; the user hears of it only when the rounds run out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
import difflib
from functools import lru_cache
import json
import re
from typing import Any, Final

from homeassistant.components import conversation
from homeassistant.helpers import llm
from homeassistant.helpers.json import json_dumps
from homeassistant.util.json import json_loads

from ..const import LOGGER
from ..errors import MalformedAnswerError, ModelError
from ..net.readers import read_object, read_object_or_empty, read_optional_string
from ..net.shapes import JsonObject
from ..net.transport import OwnCalls, ToolSet

type Answer = conversation.ToolResultContentDeltaDict

MAX_TOOL_CALLS = 32

# The errors our own tool results name, and what the model is asked to do.
_HINTS: Final = {
    "invalid_tool_arguments": "Call the tool again with arguments that are one "
    "JSON object matching its parameters.",
    "unknown_tool": "Call one of the offered tools, by its exact name.",
}
# The call Home Assistant's default agent adds for a sentence trigger it answered;
# the model reads it as its own.
_TRIGGER: Final = "trigger_sentence"
# Home Assistant's intents for what a name's verb asks (its prompt says to
# lock with HassTurnOn and unlock with HassTurnOff).
_VERBS: Final = dict.fromkeys(("open", "lock", "switchon"), "turnon") | dict.fromkeys(
    ("close", "unlock", "switchoff"), "turnoff"
)
# The shortest name that counts as part of another.
_LEAST_PART: Final = 6
# How alike a misspelt tool name must be to an offered one, and the next one less.
_NEAR: Final = 0.8
_MARGIN: Final = 0.1
# Where a word starts inside a name written in code style.
_WORD_BREAK: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[_\-.\s]+")


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
        """Tell whether the arguments form a whole JSON value (rechecked once doubled)."""
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
                try:
                    value = json_loads(value)
                except ValueError as err:
                    try:  # raw control characters taken
                        value = json.loads(value, strict=False)
                    except ValueError, RecursionError:
                        raise ModelError(
                            "invalid_tool_arguments",
                            name=str(self.name),
                            message=str(err),
                        ) from err
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


class ToolCallAssembler:
    """The tool calls of one answer, assembled from stream fragments."""

    def __init__(self) -> None:
        """Start without calls."""
        self.calls: list[PendingCall] = []
        self._by_index: dict[int, PendingCall] = {}

    def add(self, value: object) -> None:
        """Merge one `tool_calls` fragment into its call; empty strings mean absent."""
        fragment = read_object(value, "tool_calls")
        function = read_object_or_empty(fragment.get("function"), "tool_calls.function")
        call_id = read_optional_string(fragment.get("id"), "tool_calls.id") or None
        name = function.get("name")
        name = read_optional_string(name, "tool_calls.function.name") or None
        # A piece of the JSON text, or (from some servers) the decoded object.
        arguments = function.get("arguments")
        if not isinstance(arguments, (str, dict, type(None))):
            raise MalformedAnswerError(part="tool_calls.function.arguments")
        index = fragment.get("index")
        if not isinstance(index, int):
            index = len(self.calls)
        current = self._by_index.get(index)
        if current is None or _starts_new(current, call_id, name, arguments):
            if len(self.calls) >= MAX_TOOL_CALLS:
                raise too_many_calls()
            current = PendingCall(call_id, name)
            self.calls.append(current)
            self._by_index[index] = current
        else:
            current.call_id = current.call_id or call_id
            current.name = current.name or name
        if isinstance(arguments, dict):
            current.decoded = arguments
        elif arguments:
            current.add_arguments(arguments)

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


def _starts_new(
    current: PendingCall,
    call_id: str | None,
    name: str | None,
    arguments: str | JsonObject | None,
) -> bool:
    """Tell whether a fragment under a used index starts a call of its own.

    Some servers put several calls under one index: a new id tells, and so
    does a new name with fresh arguments after complete ones.
    """
    if call_id is not None:
        return current.call_id not in (None, call_id)
    return (
        name is not None
        and current.name is not None
        and (isinstance(arguments, dict) or (arguments or "").lstrip()[:1] == "{")
        and current.arguments_complete()
    )


@dataclass(frozen=True, slots=True)
class AnsweredCalls:
    """The native value of a message whose calls were answered here, by id."""

    ids: frozenset[str]


def call_input(
    call: PendingCall,
    call_id: str,
    tool_names: Mapping[str, str],
    own_calls: OwnCalls | None = None,
) -> tuple[llm.ToolInput, Answer | None]:
    """Return the input of a call, and the answer to the model if it is not run."""
    wire_name = offered_name(call.name, tool_names)
    if wire_name is None:
        offered = ", ".join(tool_names) or "none"
        tool_input = llm.ToolInput(str(call.name), {}, id=call_id)
        problem = f"No tool is named {call.name}; the tools are: {offered}"
        result: llm.ToolResult | None = _error_result("unknown_tool", problem)
    else:
        try:
            arguments = call.arguments()
        except ModelError as err:
            tool_input = llm.ToolInput(tool_names[wire_name], {}, id=call_id)
            problem = (err.translation_placeholders or {}).get("message", "")
            result = _error_result("invalid_tool_arguments", problem)
        else:
            tool_input = llm.ToolInput(tool_names[wire_name], arguments, id=call_id)
            result = own_calls(tool_input) if own_calls is not None else None
    if result is None:
        return tool_input, None
    answer: Answer = {
        "role": "tool_result",
        "tool_call_id": call_id,
        "tool_name": tool_input.tool_name,
        "result": result,
    }
    return llm.ToolInput(
        tool_input.tool_name, tool_input.tool_args, id=call_id, external=True
    ), answer


def checked_calls(tool_set: ToolSet) -> OwnCalls:
    """Return the set's own calls, first answering calls that lack a required key.

    Home Assistant does not check a tool's arguments; only required keys are
    held to, as tools coerce the rest (an intent takes one domain for a list).
    """
    required = {
        tool_set.from_wire[tool["function"]["name"]]: required_keys(
            tool["function"].get("parameters")
        )
        for tool in tool_set.tools
    }

    def answer(call: llm.ToolInput) -> llm.ToolResult | None:
        if missing := [
            key
            for key in sorted(required.get(call.tool_name, ()))
            if call.tool_args.get(key) is None
        ]:
            names = ", ".join(repr(key) for key in missing)
            return _error_result(
                "invalid_tool_arguments", f"required keys missing or null: {names}"
            )
        return tool_set.own_calls(call) if tool_set.own_calls else None

    return answer


def required_keys(parameters: object) -> frozenset[str]:
    """Return the keys a tool's parameters require."""
    keys = parameters.get("required") if isinstance(parameters, Mapping) else None
    return frozenset(map(str, keys)) if isinstance(keys, list) else frozenset()


@dataclass(slots=True)
class ToolParameters:
    """What a tool's parameters say of its arguments."""

    required: frozenset[str]
    # Arguments given as text or lists of text (names, areas, domains).
    words: set[str]
    # The values an argument takes, where its schema lists them.
    choices: dict[str, frozenset[str]]
    keys: set[str]
    # Arguments that are numbers, also as one of all a schema must be.
    numbers: set[str]

    @classmethod
    def of(cls, function: Mapping[str, Any]) -> ToolParameters:
        """Read a tool's parameters schema."""
        schema = function.get("parameters")
        given = schema.get("properties") if isinstance(schema, Mapping) else None
        read = cls(required_keys(schema), set(), {}, set(), set())
        for key, value in given.items() if isinstance(given, Mapping) else ():
            if not isinstance(value, Mapping):
                continue
            read.keys.add(key)
            if value.get("type") in ("string", "array"):
                read.words.add(key)
            items = value.get("items")
            listed = items if isinstance(items, Mapping) and items else value
            if isinstance(enum := listed.get("enum"), list):
                read.choices[key] = frozenset(map(str, enum))
            all_of = [p for p in value.get("allOf") or () if isinstance(p, Mapping)]
            if any(p.get("type") in ("integer", "number") for p in (value, *all_of)):
                read.numbers.add(key)
        return read


def _error_result(error: str, problem: str) -> llm.ToolResult:
    return llm.ToolResult(
        {"error": error, "error_text": problem, "hint": _HINTS[error]}, error=True
    )


def model_calls(content: conversation.AssistantContent) -> list[llm.ToolInput]:
    """Return the calls of a message that go to the server as calls, not a provider's."""
    native = content.native
    answered = native.ids if isinstance(native, AnsweredCalls) else frozenset()
    return [
        call
        for call in content.tool_calls or ()
        if not call.external or call.id in answered or call.tool_name == _TRIGGER
    ]


def unanswerable_error(chat_log: conversation.ChatLog) -> ModelError | None:
    """Return the error of the last round's call that could not run, if any."""
    for content in reversed(chat_log.content):
        if not isinstance(content, conversation.ToolResultContent):
            return None
        data = content.result.data
        if content.result.error and data.get("error") in _HINTS:
            return ModelError(
                str(data["error"]),
                name=content.tool_name,
                message=str(data.get("error_text", "")),
            )
    return None


def offered_name(name: object, tool_names: Mapping[str, str]) -> str | None:
    """Return the offered tool a name the model gave means, if only one fits.

    Tried in turn: the name; its part after `__` without `Hass`, in any case;
    that part within one offered name or holding it whole; a verb Home Assistant
    does with one intent (`HassCloseEntity`: HassTurnOff); a spelling near one alone.
    """
    if not isinstance(name, str) or len(name) > 128:
        return None
    if name in tool_names:
        return name
    key = _key(name)
    keys = {wire: _key(wire) for wire in tool_names}
    verb = next((_VERBS[v] for v in _VERBS if key.startswith(v)), None)
    for fits in (
        [wire for wire, offered in keys.items() if offered == key],
        [wire for wire, offered in keys.items() if _within(key, offered)],
        [wire for wire, offered in keys.items() if offered == verb],
    ):
        if fits:
            return fits[0] if len(fits) == 1 else None
    if verb is not None:
        return None
    scores = sorted(
        (
            (difflib.SequenceMatcher(None, key, offered).ratio(), wire)
            for wire, offered in keys.items()
        ),
        reverse=True,
    )
    (best, wire), (second, _) = [*scores, (0.0, None), (0.0, None)][:2]
    return wire if best >= _NEAR and second <= best - _MARGIN else None


# Bounded: a turn asks for the words of every exposed name, again each turn.
@lru_cache(maxsize=8192)
def words(name: str) -> str:
    """Return a name as lower-case words: `garageDoor`, `garage_door`: `garage door`."""
    return " ".join(part for part in _WORD_BREAK.split(name) if part).casefold()


def _key(name: str) -> str:
    return name.rpartition("__")[2].casefold().removeprefix("hass")


def _within(given: str, offered: str) -> bool:
    """Tell whether one name holds the other whole (`additem`, `listadditem`)."""
    shorter = min(given, offered, key=len)
    return len(shorter) >= _LEAST_PART and (given in offered or offered in given)
