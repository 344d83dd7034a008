"""Readers: bounded bytes, events by the SSE spec, typed values or a named error."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
import logging
from typing import Any

import pytest

from custom_components.openai_compatible.errors import ServerError
from custom_components.openai_compatible.net.readers import (
    MAX_ANSWER_BYTES,
    MAX_EVENT_LINES,
    MAX_LINE_BYTES,
    MAX_TOKENS,
    MIN_WINDOW,
    EventStream,
    SSEDecoder,
    async_read_body,
    error_message,
    mebibytes,
    read_count,
    read_index,
    read_list,
    read_number,
    read_object,
    read_object_or_empty,
    read_optional_string,
    read_string,
    read_usage,
    read_window,
    string_or_none,
)


@pytest.mark.parametrize(
    ("reader", "value", "expected"),
    [
        (read_object, {"a": 1}, {"a": 1}),
        (read_object_or_empty, None, {}),
        (read_object_or_empty, {"a": 1}, {"a": 1}),
        (read_list, None, []),
        (read_list, [1, "a"], [1, "a"]),
        (read_string, None, ""),
        (read_string, "text", "text"),
        (read_optional_string, None, None),
        (read_optional_string, "", ""),
        (read_index, 3, 3),
    ],
)
def test_parts_of_the_right_shape_are_read(
    reader: Callable[[object, str], Any], value: object, expected: object
) -> None:
    """A part in the API's form is given back; null is an empty part where allowed."""
    assert reader(value, "part") == expected


@pytest.mark.parametrize(
    ("reader", "value"),
    [
        (read_object, None),
        (read_object, [1]),
        (read_object_or_empty, "a"),
        (read_list, {"a": 1}),
        (read_list, "abc"),
        (read_string, 5),
        (read_optional_string, ["a"]),
        (read_index, "0"),
        (read_index, True),
        (read_index, 1.0),
    ],
)
def test_parts_of_the_wrong_shape_are_named(
    reader: Callable[[object, str], Any], value: object
) -> None:
    """A part of the wrong shape is an unreadable answer, naming the part."""
    with pytest.raises(ServerError) as err:
        reader(value, "choices.delta")
    assert err.value.translation_key == "answer_malformed"
    assert err.value.translation_placeholders == {"part": "choices.delta"}


def test_lenient_strings_and_error_messages() -> None:
    """Where a wrong shape is ignored, it reads as nothing; errors say their message."""
    assert string_or_none("a") == "a"
    assert string_or_none(3) is None
    assert error_message({"message": "model crashed"}) == "model crashed"
    assert error_message("overloaded") == "overloaded"
    assert error_message({"code": 5}) == "None"
    assert error_message("<p>Down &amp; out</p>") == "Down & out"


@pytest.mark.parametrize(
    ("value", "count", "window", "number"),
    [
        (4096, 4096, 4096, 4096.0),
        (10**400, MAX_TOKENS, MAX_TOKENS, None),
        (1, 1, MIN_WINDOW, 1.0),
        (0, 0, None, 0.0),
        (-5, None, None, -5.0),
        (0.5, None, None, 0.5),
        (float("inf"), None, None, None),
        (True, None, None, None),
        ("4096", None, None, None),
    ],
)
def test_numbers_are_read_within_bounds(
    value: object, count: int | None, window: int | None, number: float | None
) -> None:
    """Counts up to MAX_TOKENS, windows from MIN_WINDOW; floats that hold them."""
    assert read_count(value) == count
    assert read_window(value) == window
    assert read_number(value) == number


def test_usage_keeps_its_counts_only() -> None:
    """Counts clamped, details read where given, anything else left out."""
    usage = read_usage(
        {
            "prompt_tokens": 10**400,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 3, "audio": [1]},
            "cost": {"usd": 1},
        }
    )
    assert usage == {
        "prompt_tokens": MAX_TOKENS,
        "completion_tokens": 7,
        "total_tokens": None,
        "prompt_tokens_details": {"cached_tokens": 3},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def decode(*chunks: bytes, max_line_bytes: int = MAX_LINE_BYTES) -> list[bytes]:
    """Feed the chunks to a decoder; return the data of every event."""
    decoder = SSEDecoder(max_line_bytes)
    events = [data for chunk in chunks for data in decoder.feed(chunk)]
    return [*events, *decoder.close()]


async def body(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    """Yield the chunks as a response body would."""
    for chunk in chunks:
        yield chunk


async def read_events(
    *chunks: bytes, **limits: int
) -> tuple[list[dict[str, Any]], bool]:
    """Return the events of a stream and whether it said [DONE]."""
    stream = EventStream(body(chunks), **limits)
    return [event async for events in stream for event in events], stream.done


def test_the_bounds() -> None:
    """One line may take 1 MiB, one answer 16 MiB."""
    assert MAX_LINE_BYTES == 1024 * 1024
    assert MAX_ANSWER_BYTES == 16 * 1024 * 1024
    assert mebibytes(MAX_ANSWER_BYTES) == "16 MiB"
    assert mebibytes(512 * 1024) == "0.5 MiB"


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"])
def test_lines_end_at_cr_lf_or_crlf(end: bytes) -> None:
    """Each of the three line ends ends a line; two of them end an event."""
    stream = b"data: a" + end + b"data: b" + end + end + b"data: c" + end + end
    assert decode(stream) == [b"a\nb", b"c"]


def test_unicode_line_separators_do_not_end_lines() -> None:
    """U+2028, U+2029 and U+0085 are text, not line ends."""
    text = "Hello\u2028world\u2029and\x85more"
    assert decode(f"data: {text}\n\n".encode()) == [text.encode()]


def test_every_split_point_gives_the_same_events() -> None:
    """However the bytes are cut, even inside CRLF or a character, events agree."""
    stream = "data: Grüße\r\n\r\ndata: 🏠\rdata: x\r\r: note\r\ndata:y\n\n".encode()
    expected = ["Grüße".encode(), "🏠\nx".encode(), b"y"]
    for cut in range(len(stream) + 1):
        assert decode(stream[:cut], stream[cut:]) == expected, cut
    assert decode(*(stream[i : i + 1] for i in range(len(stream)))) == expected


def test_fields_comments_and_the_last_event() -> None:
    """Other fields and comments are ignored; an open last event still counts."""
    stream = b"\xef\xbb\xbf: keep-alive\nevent: x\nid: 1\nretry: 5\ndata\ndata:z\n\ndata: end"
    assert decode(stream) == [b"\nz", b"end"]
    assert decode(b"", b"data: a\n", b"") == [b"a"]
    assert decode(b"event: only\n\n") == []


def test_a_line_longer_than_the_limit_fails() -> None:
    """A line past the limit fails as soon as it is seen, whole or in pieces."""
    with pytest.raises(ServerError) as err:
        decode(b"data: " + b"x" * 10 + b"\n", max_line_bytes=10)
    assert err.value.translation_key == "answer_line_too_long"
    assert err.value.translation_placeholders == {"limit": mebibytes(10)}
    decoder = SSEDecoder(10)
    decoder.feed(b"data: 1234")
    with pytest.raises(ServerError):
        decoder.feed(b"5")
    assert decode(b"data: 1234\n", b"data: 5678\n", max_line_bytes=10) == [
        b"1234\n5678"
    ]


async def test_read_body_within_the_limit() -> None:
    """A body is joined up to the limit and refused past it."""
    assert await async_read_body(body([b"ab", b"cd"]), limit=4) == b"abcd"
    with pytest.raises(ServerError) as err:
        await async_read_body(body([b"ab", b"cde"]), limit=4)
    assert err.value.translation_key == "answer_too_large"


async def test_event_stream_objects_and_done() -> None:
    """Objects are parsed; [DONE] is noted and everything after it skipped."""
    events, done = await read_events(
        b'data: {"a": 1}\n\ndata: {"b":\ndata: 2}\n\n',
        b'data: [DONE]\n\ndata: {"late": 1}\n\n',
    )
    assert events == [{"a": 1}, {"b": 2}]
    assert done
    events, done = await read_events(b'data: {"a": 1}')
    assert (events, done) == ([{"a": 1}], False)


async def test_event_stream_is_lenient_where_nothing_is_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Events ended by one LF, invalid UTF-8 and a final [DONE] all read."""
    caplog.set_level(logging.DEBUG)
    events, done = await read_events(
        b'data: {"a": 1}\ndata: {"b": 2}\ndata: [DONE]\n',
        b'data: {"c": "\xff"}\n\ndata: not json\n\ndata:\n\n',
    )
    assert events == [{"a": 1}, {"b": 2}]
    assert done
    events, _ = await read_events(b'data: {"c": "\xff"}\n\ndata: not json\n\n')
    assert events == [{"c": "\ufffd"}]
    assert "not JSON: 'not json'" in caplog.text


async def test_an_event_of_many_lines_is_read_in_batches(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Data lines go out in events of at most MAX_EVENT_LINES; one log line."""
    caplog.set_level(logging.DEBUG)
    lines = 3 * MAX_EVENT_LINES
    assert {len(data.split(b"\n")) for data in decode(b"data: x\n" * lines)} == {
        MAX_EVENT_LINES
    }
    events, _ = await read_events(b'data: {"a": 1}\ndata: x\n' * lines)
    assert events == [{"a": 1}] * lines
    assert caplog.text.count("not JSON") == 1


async def test_skipped_stream_data_is_logged_without_keys(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Data that is not JSON is logged, but never the bearer token it quotes."""
    caplog.set_level(logging.DEBUG)
    events, _ = await read_events(b"data: Bearer abcdefghijklmnop rejected\n\n")
    assert events == []
    assert "not JSON: 'Bearer *** rejected'" in caplog.text


async def test_event_stream_refuses_what_is_not_an_object() -> None:
    """An event whose JSON is not an object cannot be read."""
    with pytest.raises(ServerError) as err:
        await read_events(b"data: [1, 2]\n\n")
    assert err.value.translation_key == "answer_malformed"


async def test_event_stream_bounds() -> None:
    """The stream's total size and its line length are both capped."""
    with pytest.raises(ServerError) as err:
        await read_events(b'data: {"a": 1}\n\n' * 10, max_bytes=100)
    assert err.value.translation_key == "answer_too_large"
    with pytest.raises(ServerError) as err:
        await read_events(b"data: " + b"x" * MAX_LINE_BYTES)
    assert err.value.translation_key == "answer_line_too_long"
