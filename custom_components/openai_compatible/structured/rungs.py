"""JSON of a structure: asked for down a ladder of ways, found in the answer, checked once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import islice
import json
import math
import re
import sys
from typing import Any, Final

import probatio
from probatio.error import render_path

from ..const import LOGGER, RESPONSE_FORMATS
from ..errors import RequestRejectedError
from ..models.capabilities import ModelCapabilities
from ..net.readers import read_number
from ..net.shapes import JsonSchema, JsonSchemaFormat, ResponseFormat
from .selector_schema import StrictUnsupported, json_types, strict_json_schema

# The most fenced blocks, and the most places in prose, where JSON is tried.
JSON_TRIES: Final = 1000
MAX_PROBLEMS: Final = 5
# C0 and C1 control characters, and DEL; tabs and line breaks are text.
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

_INSTRUCTIONS: Final = "Answer with only a JSON object that matches this JSON schema: "
_JSON_START: Final = re.compile(r"[{\[]")
_FENCED: Final = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


class StructureMismatch(Exception):
    """The model's answer does not fit the task's structure: the short problem."""


def checked_answer(data: Any, structure: probatio.Schema, schema: JsonSchema) -> Any:
    """Return an answer as data of the task's structure; raise StructureMismatch.

    Strict mode's nulls go, and what the selectors would coerce or let by is refused:
    text for a boolean (any text is true to them), numbers no float holds, controls.
    """
    problems: list[str] = []
    data = _walk(data, schema, [], problems)
    if problems:
        raise StructureMismatch("; ".join(problems[:MAX_PROBLEMS]))
    try:
        return structure(data)
    except probatio.Invalid as err:
        errors = err.errors if isinstance(err, probatio.MultipleInvalid) else [err]
        raise StructureMismatch("; ".join(map(_problem, errors))) from err
    except TypeError as err:
        # A selector's validator tripped over a value of a type it did not expect.
        raise StructureMismatch(f"the answer does not fit: {err}") from err


def _walk(value: Any, schema: Any, path: list[Any], problems: list[str]) -> Any:
    # The value without strict mode's nulls; what breaks its types goes to `problems`.
    if not isinstance(schema, dict):
        return value
    if isinstance(branches := schema.get("anyOf"), list) and branches:
        schema = next((b for b in branches if _fits(value, b)), branches[0])
    if not _fits(value, schema):
        kinds = " or ".join(_KINDS[k][0] for k in json_types(schema) if k in _KINDS)
        problems.append(_at(f"the value must be {kinds}", path))
    elif isinstance(value, str) and _CONTROL.search(value):
        problems.append(_at("the text holds control characters", path))
    elif isinstance(value, dict):
        properties = schema.get("properties") or {}
        required = schema.get("required") or ()
        return {
            key: _walk(item, properties.get(key), [*path, key], problems)
            for key, item in value.items()
            if item is not None or key in required or key not in properties
        }
    elif isinstance(value, list):
        items = schema.get("items")
        return [
            _walk(item, items, [*path, i], problems) for i, item in enumerate(value)
        ]
    return value


def _fits(value: Any, schema: Any) -> bool:
    kinds = [kind for kind in json_types(schema) if kind in _KINDS]
    return not kinds or any(_KINDS[kind][1](value) for kind in kinds)


# Each JSON type: how a problem names it, and whether a value is of it.
_KINDS: Final[dict[str, tuple[str, Callable[[Any], bool]]]] = {
    "string": ("a text", lambda value: isinstance(value, str)),
    "boolean": ("true or false", lambda value: isinstance(value, bool)),
    "number": ("a finite number", lambda value: read_number(value) is not None),
    "integer": (
        "a whole number",
        lambda value: (
            (number := read_number(value)) is not None and number.is_integer()
        ),
    ),
    "array": ("a list", lambda value: isinstance(value, list)),
    "object": ("an object", lambda value: isinstance(value, dict)),
    "null": ("null", lambda value: value is None),
}

# Past this many digits an integer is no float (and past 4,300 Python refuses it).
_MAX_INT_DIGITS: Final = 309


def _integer(text: str) -> int | float:
    # One too large for a float reads as infinity.
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        return -math.inf if text.startswith("-") else math.inf
    value = int(text)
    return value if abs(value) <= sys.float_info.max else math.copysign(math.inf, value)


# Models write raw line breaks and tabs inside strings: read them as text.
_DECODER: Final = json.JSONDecoder(strict=False, parse_int=_integer)


def parse_json_answer(text: str) -> Any:
    """Return the JSON value in a model's answer: whole, fenced or in prose (linear).

    In prose: the first value starting at a `{` or `[`, decoding no text twice.
    """
    answer = text.rsplit("</think>", 1)[-1].split("<think>", 1)[0]
    try:
        try:
            return _DECODER.decode(answer)
        except json.JSONDecodeError as err:
            problem = err
        for fence in islice(_FENCED.finditer(answer), JSON_TRIES):
            try:
                return _DECODER.decode(fence[1])
            except json.JSONDecodeError:
                continue
        position = 0
        for _ in range(JSON_TRIES):
            if (start := _JSON_START.search(answer, position)) is None:
                break
            try:
                return _DECODER.raw_decode(answer, start.start())[0]
            except json.JSONDecodeError as err:
                position = max(err.pos, start.start() + 1)
    except RecursionError as err:
        raise StructureMismatch("the answer's JSON is nested too deep") from err
    raise StructureMismatch(f"the answer is not valid JSON: {problem}")


def _problem(error: probatio.Invalid) -> str:
    path = list(error.path)
    if isinstance(error, probatio.RequiredFieldInvalid) and path:
        return _at(f"required key {path[-1]!r} is missing", path[:-1])
    if isinstance(error, probatio.ExtraKeysInvalid) and path:
        return _at(f"key {path[-1]!r} is not allowed", path[:-1])
    return str(error)


def _at(message: str, path: list[Any]) -> str:
    return f"{message} at '{render_path(path)}'" if path else message


# The rungs of the ladder, strongest first.
RUNG_STRICT: Final = 0
RUNG_SCHEMA: Final = 1
RUNG_JSON_OBJECT: Final = 2
RUNG_INSTRUCTIONS: Final = 3
RUNG_NAMES: Final = ("json_schema strict", "json_schema", "json_object", "prompt")


@dataclass(frozen=True, slots=True)
class StructuredRequest:
    """How one rung asks for JSON: a response format and extra instructions."""

    rung: int
    response_format: ResponseFormat | None
    instructions: str | None = None


def structured_request(
    rung: int, name: str, schema: JsonSchema, strict: JsonSchema | None
) -> StructuredRequest:
    """Return the request of a rung of the ladder for a schema."""
    if rung <= RUNG_SCHEMA:
        named: JsonSchemaFormat = {"name": name, "schema": schema}
        if rung == RUNG_STRICT and strict is not None:
            named["schema"] = strict
            named["strict"] = True
        else:
            rung = RUNG_SCHEMA
        return StructuredRequest(rung, {"type": "json_schema", "json_schema": named})
    # llama.cpp holds the answer to a schema beside json_object; a refusal drops it.
    response_format: ResponseFormat | None = (
        {"type": "json_object", "schema": schema} if rung == RUNG_JSON_OBJECT else None
    )
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    return StructuredRequest(rung, response_format, _INSTRUCTIONS + text)


def start_rung(capabilities: ModelCapabilities) -> int:
    """Return the strongest rung the model is not known to refuse."""
    start = capabilities.structured_output_start()
    return RUNG_INSTRUCTIONS if start is None else RESPONSE_FORMATS.index(start)


async def async_climb[T](
    capabilities: ModelCapabilities,
    name: str,
    schema: JsonSchema,
    attempt: Callable[[StructuredRequest], Awaitable[T]],
    *,
    learn: bool = True,
) -> tuple[StructuredRequest, T]:
    """Run `attempt` from the strongest rung not known refused, down until one works."""
    try:
        strict: JsonSchema | None = strict_json_schema(schema)
    except StrictUnsupported as err:
        LOGGER.debug("No strict form of the structure (%s)", err)
        strict = None
    rung = start_rung(capabilities)
    while True:
        request = structured_request(rung, name, schema, strict)
        rung = request.rung  # without a strict form, the plain schema's
        try:
            return request, await attempt(request)
        except RequestRejectedError as err:
            if rung == RUNG_INSTRUCTIONS or (
                err.feature is not None and err.feature not in RESPONSE_FORMATS
            ):
                raise
            LOGGER.debug(
                "Structured output as %s refused: %s",
                RUNG_NAMES[rung],
                err.server_message,
            )
            if err.feature is not None:  # a response format: step below it
                if learn and err.general:
                    capabilities.learn_refused(err.feature, err.lesson_source)
                rung = max(rung, RESPONSE_FORMATS.index(err.feature))
            rung += 1
