"""JSON answers: asked for in words, found in the model's text, checked.

Servers that take no response format get the schema as an instruction; the
answer is then read from the model's text (past reasoning, fences and prose)
and validated against the task's structure.
"""

from __future__ import annotations

from itertools import islice
import json
import math
import re
import sys
from typing import Any, Final

import probatio
from probatio.error import render_path

from ..net.shapes import JsonSchema

# The most fenced blocks, and the most places in prose, where JSON is tried.
JSON_TRIES: Final = 1000

_INSTRUCTIONS: Final = "Answer with only a JSON object that matches this JSON schema: "
_JSON_START: Final = re.compile(r"[{\[]")
_FENCED: Final = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


class StructureMismatch(Exception):
    """The model's answer does not fit the task's structure."""

    def __init__(self, problem: str) -> None:
        """Keep the short description of what is wrong."""
        super().__init__(problem)
        self.problem = problem


def validate_result(structure: probatio.Schema, data: Any) -> Any:
    """Validate an answer against the task's structure and return the result.

    Raises StructureMismatch naming each problem and where it is.
    """
    try:
        return structure(data)
    except probatio.Invalid as err:
        errors = err.errors if isinstance(err, probatio.MultipleInvalid) else [err]
        raise StructureMismatch("; ".join(map(_problem, errors))) from err
    except TypeError as err:
        # A selector's validator tripped over a value of a type it did not expect.
        raise StructureMismatch(f"the answer does not fit: {err}") from err


# Past this many digits an integer is no float (and past 4,300 Python refuses it).
_MAX_INT_DIGITS: Final = 309


def _integer(text: str) -> int | float:
    """Return a JSON integer; one too large for a float reads as infinity.

    Like a number with a huge exponent (which reads as infinity too), it is
    then no finite number, and the answer's check says so.
    """
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        return -math.inf if text.startswith("-") else math.inf
    value = int(text)
    return value if abs(value) <= sys.float_info.max else math.copysign(math.inf, value)


# Models write raw line breaks and tabs inside strings: read them as text.
_DECODER: Final = json.JSONDecoder(strict=False, parse_int=_integer)


def schema_instructions(schema: JsonSchema) -> str:
    """Return the instruction that asks for JSON matching the schema."""
    return _INSTRUCTIONS + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def parse_json_answer(text: str) -> Any:
    """Return the JSON value in a model's answer, in time linear in its length.

    Reasoning is dropped: all up to the last ``</think>``, and all after a
    ``<think>`` left open. Then the answer is read whole, else from the first
    fenced block that parses, else from the first ``{`` or ``[`` where a JSON
    value starts, so prose around it does not matter. Raises StructureMismatch
    when there is none, or when the JSON is nested too deep to read.
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
        return _embedded_value(answer, problem)
    except RecursionError as err:
        raise StructureMismatch("the answer's JSON is nested too deep") from err


def _embedded_value(answer: str, problem: json.JSONDecodeError) -> Any:
    """Return the first JSON value that starts at a ``{`` or ``[`` in prose.

    A start that fails is skipped with all it read, up to where it failed, so
    no text is decoded twice; after JSON_TRIES starts the search ends.
    """
    decoder = _DECODER
    position = 0
    for _ in range(JSON_TRIES):
        if (start := _JSON_START.search(answer, position)) is None:
            break
        try:
            return decoder.raw_decode(answer, start.start())[0]
        except json.JSONDecodeError as err:
            position = max(err.pos, start.start() + 1)
    raise StructureMismatch(f"the answer is not valid JSON: {problem}")


def _problem(error: probatio.Invalid) -> str:
    """Return one validation error as a short sentence naming where it is."""
    path = list(error.path)
    if isinstance(error, probatio.RequiredFieldInvalid) and path:
        return _at(f"required key {path[-1]!r} is missing", path[:-1])
    if isinstance(error, probatio.ExtraKeysInvalid) and path:
        return _at(f"key {path[-1]!r} is not allowed", path[:-1])
    return str(error)


def _at(message: str, path: list[Any]) -> str:
    """Return the message with the path it is about, if any."""
    return f"{message} at '{render_path(path)}'" if path else message
