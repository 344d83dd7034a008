"""Benchmark hostile answers: each 1 MiB kind must take under 50 ms of CPU.

Run it as a script (never as part of the test suite):

    .venv/bin/python bench/adversarial.py [--repeat 5] [--size-kib 1024]

Each case is an answer a broken or hostile server (or a looping model) can
send. Stream cases are read the way the integration reads them: the response
body in 64 KiB network chunks, through the SSE decoder and the chunk parser
(with tools offered, so that text is held while it may be a tool call) to chat
log deltas; error answers are read into our translated error. The CPU time
is `time.process_time()` around one whole answer, the best of the repeats.
The target is linear time: a quadratic step shows as seconds at this size.
See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator, Callable
import contextlib
from dataclasses import dataclass
import json
from pathlib import Path
import sys
import time
from typing import Any

# This checkout's code, whatever else the environment's path points at.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from custom_components.openai_compatible.errors import TranslatedError  # noqa: E402
from custom_components.openai_compatible.server_errors.answers import error_for_status  # noqa: E402
from custom_components.openai_compatible.structured.rungs import (  # noqa: E402
    StructureMismatch,
    parse_json_answer,
)
from custom_components.openai_compatible.wire.chat_stream import (  # noqa: E402
    ChatStreamParser,
    async_read_answer,
)

TARGET_MS = 50.0
NETWORK_CHUNK = 64 * 1024
TOOLS = {"HassTurnOn": "HassTurnOn"}


@dataclass(frozen=True, slots=True)
class Case:
    """One hostile answer and how it is read."""

    name: str
    run: Callable[[], None]
    size: int


def event(data: dict[str, Any]) -> bytes:
    """Return one SSE event with its JSON written raw."""
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def content(text: str) -> bytes:
    """Return an event carrying spoken text."""
    return event({"choices": [{"index": 0, "delta": {"content": text}}]})


def arguments(text: str, name: str | None = None) -> bytes:
    """Return an event carrying a fragment of tool call 0."""
    function: dict[str, Any] = {"arguments": text}
    if name is not None:
        function["name"] = name
    return event(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": function}]},
                }
            ]
        }
    )


def repeated(start: bytes, piece: bytes, end: bytes, size: int) -> bytes:
    """Return start, then the piece repeated to about `size` bytes, then end."""
    return start + piece * max(1, (size - len(start) - len(end)) // len(piece)) + end


async def body(stream: bytes) -> AsyncIterator[bytes]:
    """Yield the stream in network chunks."""
    for start in range(0, len(stream), NETWORK_CHUNK):
        yield stream[start : start + NETWORK_CHUNK]


def stream_case(name: str, stream: bytes) -> Case:
    """Return a case that reads the stream to deltas."""

    async def read() -> None:
        parser = ChatStreamParser(TOOLS)
        # A clear error is a fine outcome; only the time counts.
        with contextlib.suppress(TranslatedError):
            async for _delta in async_read_answer(parser, body(stream), streamed=True):
                pass

    return Case(name, lambda: asyncio.run(read()), len(stream))


def parse_case(name: str, text: str) -> Case:
    """Return a case that looks for the JSON value in a model's answer."""

    def parse() -> None:
        with contextlib.suppress(StructureMismatch):
            parse_json_answer(text)

    return Case(name, parse, len(text.encode()))


def error_case(name: str, status: int, page: bytes) -> Case:
    """Return a case that reads an error answer into our translated error."""
    return Case(name, lambda: error_for_status(status, {}, page), len(page))


def cases(size: int) -> list[Case]:
    """Return every hostile answer, each about `size` bytes."""
    done = b"data: [DONE]\n\n"
    finish = event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    line = "x" * (size - 200)
    return [
        parse_case("parse_json_answer: '[' repeated", "[" * size),
        parse_case("parse_json_answer: '{' repeated", "{" * size),
        parse_case("parse_json_answer: '[1,' repeated", "[1," * (size // 3)),
        parse_case("parse_json_answer: '{\"a\":' repeated", '{"a":' * (size // 5)),
        parse_case(
            "parse_json_answer: brackets in prose", "see [x] or {y} " * (size // 15)
        ),
        parse_case(
            "parse_json_answer: fenced blocks repeated",
            "```\n[1,\n```\n" * (size // 12),
        ),
        stream_case(
            "text-call detector: leading '['",
            repeated(b"", content("[" * 512), finish + done, size),
        ),
        stream_case(
            "text-call detector: '<tool_call>' never closed",
            repeated(b"", content("<tool_call>" * 40), finish + done, size),
        ),
        stream_case(
            "held whitespace (tools offered)",
            repeated(b"", content(" \n" * 16), content("Hi") + finish + done, size),
        ),
        stream_case("one SSE line of 1 MiB", content(line) + finish + done),
        error_case("error page: unclosed '<script>'", 502, b"<script " * (size // 8)),
        error_case("error page: '<' repeated", 502, b"<" * size),
        error_case("error text: 'model' repeated (404)", 404, b"model " * (size // 6)),
        stream_case(
            "U+2028-heavy text",
            repeated(b"", content("a\u2028" * 64), finish + done, size),
        ),
        stream_case(
            "think tags in one chunk",
            content("<think>a</think>b" * (size // 20)) + finish + done,
        ),
        stream_case(
            "many tool-call fragments",
            repeated(
                arguments('{"k": "', "HassTurnOn"),
                arguments("y"),
                arguments('"}') + finish + done,
                size,
            ),
        ),
        stream_case(
            "tool-call fragments that look like new calls",
            repeated(
                arguments('{"k": "}', "HassTurnOn"),
                arguments("{", "HassTurnOn") + arguments("}"),
                arguments('"}') + finish + done,
                size,
            ),
        ),
    ]


def cpu_ms(case: Case, repeat: int) -> float:
    """Return the best CPU time of the case over the repeats, in ms."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        case.run()
        best = min(best, time.process_time() - start)
    return best * 1000


def main() -> int:
    """Run every case and print its figure against the target."""
    parser = argparse.ArgumentParser(
        prog="bench/adversarial.py", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per case; the best counts"
    )
    parser.add_argument(
        "--size-kib", type=int, default=1024, help="size of each answer (1024)"
    )
    args = parser.parse_args()
    size = args.size_kib * 1024
    print(
        f"Hostile answers of about {args.size_kib} KiB, best CPU time of "
        f"{args.repeat} runs; target < {TARGET_MS:g} ms each"
    )
    print(f"{'case':48} {'bytes':>9} {'CPU ms':>8}  verdict")
    missed = 0
    for case in cases(size):
        figure = cpu_ms(case, max(1, args.repeat))
        met = figure < TARGET_MS
        missed += not met
        print(
            f"{case.name:48} {case.size:9d} {figure:8.1f}  "
            f"{'met' if met else 'NOT met'}"
        )
    print(
        f"Target: every case < {TARGET_MS:g} ms: {'met' if not missed else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
