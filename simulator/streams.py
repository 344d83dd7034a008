"""Streamed answers as a server writes them: chat chunks, named events, recordings."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
import json
import time
from typing import Any

from aiohttp import web

from .ids import new_id
from .profiles import Replay


@dataclass(frozen=True, slots=True)
class Pause:
    """An item of a scripted stream that waits: a server that trickles."""

    seconds: float


type SSEItem = dict[str, Any] | str | bytes | Pause


class HungUp(web.StreamResponse):
    """What goes to a client that hung up mid-answer: nothing more."""

    async def prepare(self, request: web.BaseRequest) -> None:
        """Send no second head on a closed connection."""

    async def write_eof(self, data: bytes = b"") -> None:
        """Send no end on a closed connection."""


async def _open(
    request: web.Request, status: int, headers: dict[str, str] | None
) -> web.StreamResponse:
    """Start an event stream."""
    response = web.StreamResponse(status=status, headers=headers)
    response.headers.setdefault("Content-Type", "text/event-stream; charset=utf-8")
    response.headers.setdefault("Cache-Control", "no-cache")
    await response.prepare(request)
    return response


async def send_chunks(
    request: web.Request,
    items: Sequence[SSEItem],
    *,
    model: str,
    delay: float = 0.0,
    status: int = 200,
    headers: dict[str, str] | None = None,
    done: bool = True,
) -> web.StreamResponse:
    """Stream chat chunks `delay` seconds apart, then `data: [DONE]` if `done`."""
    response = await _open(request, status, headers)
    defaults = {
        "id": new_id("chatcmpl-", 29),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    for index, item in enumerate(items):
        if index and delay:
            await asyncio.sleep(delay)
        if isinstance(item, Pause):
            await asyncio.sleep(item.seconds)
            continue
        if isinstance(item, (str, bytes)):
            await response.write(item if isinstance(item, bytes) else item.encode())
            continue
        event = item if "error" in item else {**defaults, **item}
        await response.write(f"data: {json.dumps(event)}\n\n".encode())
    if done:
        await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


async def send_events(
    request: web.Request,
    items: Sequence[SSEItem],
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> web.StreamResponse:
    """Stream Responses API events, each named; no `[DONE]` follows."""
    response = await _open(request, status, headers)
    for item in items:
        if isinstance(item, Pause):
            await asyncio.sleep(item.seconds)
        else:
            await response.write(_event_bytes(item))
    await response.write_eof()
    return response


def _event_bytes(event: dict[str, Any] | str | bytes) -> bytes:
    """Return one event as the server writes it: named, then its data."""
    if isinstance(event, bytes):
        return event
    if isinstance(event, str):
        return event.encode()
    name = event.get("type", "message")
    return f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()


async def send_replay(request: web.Request, replay: Replay) -> web.StreamResponse:
    """Send a recorded answer as the real server sent it."""
    response = web.StreamResponse(
        status=replay.status, headers={"Content-Type": replay.content_type}
    )
    await response.prepare(request)
    await response.write(replay.body.encode())
    await response.write_eof()
    return response
