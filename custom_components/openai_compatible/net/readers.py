"""Answers read within bounds: untrusted bytes and JSON in, typed values out.

Server-sent events by the spec: lines end only at CR, LF or CRLF (servers send
U+2028 raw inside JSON strings), split on bytes so that a character cut
between chunks is decoded whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import KW_ONLY, dataclass, field
import logging
import math
import re
from typing import Final

from homeassistant.util.json import json_loads

from ..const import LOGGER
from ..errors import MalformedAnswerError, ServerError, redact
from ..server_errors.answers import plain
from .shapes import JsonObject

type JSONObject = JsonObject

# Token counts are believed up to this many; a context window from this many.
MAX_TOKENS: Final = 10**9
MIN_WINDOW: Final = 256
# A stream's line; an answer, streamed or not, after decompression.
MAX_LINE_BYTES = 1024 * 1024
MAX_ANSWER_BYTES = 16 * 1024 * 1024
# OpenAI-style servers send one; one ending events with one LF, many.
MAX_EVENT_LINES = 256

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_DONE = b"[DONE]"
_EVENT = "a stream event"
_LOGGED_BYTES = 200


def mebibytes(size: int) -> str:
    """Return a byte count as users read it, such as "16 MiB"."""
    return f"{size / (1024 * 1024):g} MiB"


async def async_capped(
    chunks: AsyncIterable[bytes], limit: int = MAX_ANSWER_BYTES
) -> AsyncIterator[bytes]:
    """Yield the chunks of a body; raise once it grows past the limit."""
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise ServerError("answer_too_large", limit=mebibytes(limit))
        yield chunk


async def async_read_body(
    chunks: AsyncIterable[bytes], limit: int = MAX_ANSWER_BYTES
) -> bytes:
    """Return a whole body; raise once it grows past the limit."""
    return b"".join([chunk async for chunk in async_capped(chunks, limit)])


class SSEDecoder:
    """Turn an event stream's bytes into its events' data; an unclosed last one counts."""

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        """Start at the beginning of a stream."""
        self._max_line = max_line_bytes
        self._partial = bytearray()
        self._data: list[bytes] = []
        # The last chunk ended with CR: an LF starting the next one ends nothing.
        self._after_cr = False
        self._first_line = True

    def feed(self, chunk: bytes) -> list[bytes]:
        """Return the data of the events that this chunk completes."""
        if not chunk:
            return []
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._after_cr = chunk[-1:] == b"\r"
        lines = _LINE_END.split(chunk) if b"\r" in chunk else chunk.split(b"\n")
        rest = lines.pop()
        events: list[bytes] = []
        if lines:
            if self._partial:
                lines[0] = bytes(self._partial + lines[0])
                self._partial.clear()
            for line in lines:
                self._line(line, events)
        if rest:
            self._check_size(len(self._partial) + len(rest))
            self._partial += rest
        return events

    def close(self) -> list[bytes]:
        """Return the data of the event left open when the stream ends."""
        # A line left open ends as if a line break followed it.
        events = self.feed(b"\n") if self._partial else []
        self._line(b"", events)
        return events

    def _check_size(self, size: int) -> None:
        if size > self._max_line:
            raise ServerError("answer_line_too_long", limit=mebibytes(self._max_line))

    def _line(self, line: bytes, events: list[bytes]) -> None:
        """Interpret one line: a data field, a blank line ending an event, or else."""
        self._check_size(len(line))
        if line.startswith(b"data:"):
            self._data.append(line[6:] if line[5:6] == b" " else line[5:])
            if len(self._data) >= MAX_EVENT_LINES:
                self._line(b"", events)
        elif not line:
            if self._data:
                events.append(b"\n".join(self._data))
                self._data = []
        elif self._first_line and line.startswith(_BOM):
            self._first_line = False
            self._line(line[len(_BOM) :], events)
        elif line == b"data":
            self._data.append(b"")
        self._first_line = False


@dataclass(slots=True)
class EventStream:
    """An event stream's JSON objects, a list per chunk, read to its end past `[DONE]`."""

    chunks: AsyncIterable[bytes]
    _: KW_ONLY
    max_bytes: int = MAX_ANSWER_BYTES
    done: bool = field(default=False, init=False)
    _skipped: bool = field(default=False, init=False)

    async def __aiter__(self) -> AsyncIterator[list[JSONObject]]:
        """Yield the JSON objects of the events each network chunk completes."""
        decoder = SSEDecoder()
        async for chunk in async_capped(self.chunks, self.max_bytes):
            yield [
                event for data in decoder.feed(chunk) for event in self._events(data)
            ]
        yield [event for data in decoder.close() for event in self._events(data)]

    def _events(self, data: bytes) -> list[JSONObject]:
        """Return the objects in one event's data; note `[DONE]`."""
        if self.done:
            return []
        if data.strip() == _DONE:
            self.done = True
            return []
        if (event := _object(data)) is not None:
            return [event]
        if b"\n" in data:
            # A server that ends events with one LF instead of two.
            return [event for line in data.split(b"\n") for event in self._events(line)]
        if not self._skipped and LOGGER.isEnabledFor(logging.DEBUG):
            LOGGER.debug(
                "Skipping stream data that is not JSON: %r (and any more, unlogged)",
                redact(data[:_LOGGED_BYTES].decode("utf-8", "replace")),
            )
        self._skipped = True
        return []


def _object(data: bytes) -> JSONObject | None:
    """Return the JSON object of an event's data (bad UTF-8 replaced), None if no JSON."""
    try:
        return read_object(json_loads(data), _EVENT)
    except ValueError:
        if data.isascii():
            return None
    try:
        return read_object(json_loads(data.decode("utf-8", "replace")), _EVENT)
    except ValueError:
        return None


def read_object(value: object, part: str) -> JSONObject:
    """Return an object of the answer."""
    if not isinstance(value, dict):
        raise MalformedAnswerError(part=part)
    return value


def read_object_or_empty(value: object, part: str) -> JSONObject:
    """Return an object of the answer; null means an empty one."""
    return {} if value is None else read_object(value, part)


def read_list(value: object, part: str) -> list[object]:
    """Return a list of the answer; null means an empty one."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedAnswerError(part=part)
    return value


def read_optional_string(value: object, part: str) -> str | None:
    """Return a string of the answer, or None when it is null."""
    if value is None or isinstance(value, str):
        return value
    raise MalformedAnswerError(part=part)


def read_string(value: object, part: str) -> str:
    """Return a string of the answer; null means an empty one."""
    return read_optional_string(value, part) or ""


def read_index(value: object, part: str) -> int:
    """Return an index of the answer: an integer, never a boolean."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedAnswerError(part=part)
    return value


def string_or_none(value: object) -> str | None:
    """Return a value that may be a string, where any other is ignored."""
    return value if isinstance(value, str) else None


def read_number(value: object) -> float | None:
    """Return a finite number a server sent (a float may not hold it); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def read_count(value: object) -> int | None:
    """Return a count of tokens a server sent, at most MAX_TOKENS; None for none."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return min(value, MAX_TOKENS)


def read_window(value: object) -> int | None:
    """Return a context window a server named, at least MIN_WINDOW; None for none."""
    count = read_count(value)
    return max(count, MIN_WINDOW) if count else None


def read_usage(usage: Mapping[str, object]) -> JSONObject:
    """Return only the token counts of a Chat Completions `usage`, however large."""
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    cached = prompt.get("cached_tokens") if isinstance(prompt, dict) else None
    reasoning = (
        completion.get("reasoning_tokens") if isinstance(completion, dict) else None
    )
    return {
        "prompt_tokens": read_count(usage.get("prompt_tokens")),
        "completion_tokens": read_count(usage.get("completion_tokens")),
        "total_tokens": read_count(usage.get("total_tokens")),
        "prompt_tokens_details": {"cached_tokens": read_count(cached) or 0},
        "completion_tokens_details": {"reasoning_tokens": read_count(reasoning) or 0},
    }


def error_message(error: object) -> str:
    """Return the message of an error a server sent (its `message`), without markup."""
    return plain(str(error.get("message") if isinstance(error, dict) else error))
