"""Responses a test queued: what they hold and how they are sent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
import json
from typing import Any

from aiohttp import web

from .streams import SSEItem, send_chunks, send_events
from .wire import error_body


@dataclass(frozen=True, slots=True)
class Scripted:
    """A queued response."""

    status: int
    json: Any
    sse: Sequence[SSEItem] | None
    raw: str | bytes | None
    headers: dict[str, str] = field(default_factory=dict)
    # False: the stream ends without `data: [DONE]`.
    done: bool = True


async def send_scripted(
    request: web.Request, scripted: Scripted, *, delay: float
) -> web.StreamResponse:
    """Send a queued response; chat chunks go `delay` seconds apart."""
    if scripted.sse is not None and request.path.endswith("/responses"):
        return await send_events(
            request, scripted.sse, status=scripted.status, headers=scripted.headers
        )
    if scripted.sse is not None:
        body = request["json"] if isinstance(request["json"], dict) else {}
        return await send_chunks(
            request,
            scripted.sse,
            model=str(body.get("model") or "simulator"),
            delay=delay,
            status=scripted.status,
            headers=scripted.headers,
            done=scripted.done,
        )
    payload, content_type = _payload(scripted)
    response = web.Response(
        body=payload if isinstance(payload, bytes) else payload.encode(),
        status=scripted.status,
        headers=scripted.headers,
    )
    if "Content-Type" not in response.headers:
        response.headers["Content-Type"] = content_type
    return response


def _payload(scripted: Scripted) -> tuple[str | bytes, str]:
    """Return the body of a queued response that is not streamed, and its type.

    Without one, an error status gets an OpenAI-style error body.
    """
    if scripted.json is not None:
        return json.dumps(scripted.json), "application/json"
    if isinstance(scripted.raw, bytes):
        return scripted.raw, "application/octet-stream"
    if scripted.raw is not None:
        return scripted.raw, "text/plain; charset=utf-8"
    if scripted.status < 400:
        return "", "text/plain; charset=utf-8"
    phrase = (
        HTTPStatus(scripted.status).phrase if scripted.status in HTTPStatus else "Error"
    )
    kind = "server_error" if scripted.status >= 500 else "invalid_request_error"
    return json.dumps(error_body(phrase, type_=kind)), "application/json"
