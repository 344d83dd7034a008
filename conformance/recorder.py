"""A recording reverse proxy: what a real server answers to each request.

One runs in front of each server of the lane, on its own event loop in a
thread. Home Assistant and the lane's probes talk to the proxy; it forwards
every request unchanged, passes the answer back as it arrives (streams too)
and keeps an `Exchange` for each: the request's features and compact body,
the status, the headers that matter, the error body's text, and a stream's
events.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
import json
import re
import threading
import time
from typing import Any

import aiohttp
from aiohttp import web

from simulator.features import chat_features, route_feature

# Headers worth keeping from an answer.
KEPT_HEADERS = ("content-type", "server", "x-litellm-version", "retry-after")
# Request headers the proxy sets itself.
_HOP_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
)
_ANSWER_HOP_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "content-encoding"}
)
MAX_TEXT = 300
MAX_ITEMS = 12
MAX_BODY = 16_000
STREAM_HEAD = 6
STREAM_TAIL = 3


def compact(value: Any) -> Any:
    """Return a JSON value with long strings and lists shortened, for the record."""
    if isinstance(value, str):
        if len(value) <= MAX_TEXT:
            return value
        return f"{value[:MAX_TEXT]}…({len(value)} characters)"
    if isinstance(value, list):
        items = [compact(item) for item in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"…({len(value)} items)")
        return items
    if isinstance(value, dict):
        return {key: compact(item) for key, item in value.items()}
    return value


@dataclass
class Exchange:
    """One request and the answer the server gave."""

    label: str
    method: str
    path: str
    features: list[str]
    request: Any
    status: int
    headers: dict[str, str]
    seconds: float
    # The whole body of an answer that is not a stream (cut at MAX_BODY).
    body: str | None = None
    # A stream: its first and last events, and how many there were.
    events: list[Any] = field(default_factory=list)
    event_count: int = 0
    done_marker: bool = False
    # Set when the answer did not end normally: who broke it off.
    broken: str | None = None
    # Seconds from the request to the first piece of the answer that holds a
    # token (text, reasoning or a tool call), and llama-server's `timings`.
    first_token_seconds: float | None = None
    timings: dict[str, Any] | None = None
    # When the proxy received the request (time.monotonic()).
    started: float = 0.0

    @property
    def rejected(self) -> bool:
        """Tell whether the server refused the request."""
        return self.status >= 400

    def as_json(self) -> dict[str, Any]:
        """Return the exchange as it goes into a recording file."""
        data = asdict(self)
        for key in ("first_token_seconds", "timings", "started"):  # every run differs
            del data[key]
        if self.body is None:
            del data["body"]
        if self.broken is None:
            del data["broken"]
        if not self.event_count:
            for key in ("events", "event_count", "done_marker"):
                del data[key]
        return data


def features_of(method: str, path: str, body: Any) -> list[str]:
    """Return the sorted feature names of a request."""
    route = route_feature(path)
    found = {route} if route else {f"route:{method} {path}"}
    if route == "chat":
        found |= chat_features(body)
    return sorted(found)


# A piece of an answer that holds a token the model produced.
_TOKEN = re.compile(rb'"(?:content|reasoning_content|arguments)":\s*"[^"]|"tool_calls"')


def last_timings(text: str) -> dict[str, Any] | None:
    """Return the last `timings` object of an answer or stream, if any."""
    for line in reversed(text.splitlines()):
        if '"timings"' not in line:
            continue
        try:
            value = json.loads(line.removeprefix("data:").strip())
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("timings"), dict):
            return value["timings"]  # type: ignore[no-any-return]
    return None


def stream_events(text: str) -> tuple[list[Any], int, bool]:
    """Split a server-sent event stream into its data events, compacted.

    Return the first and last events, how many there were, and whether it
    ended with `data: [DONE]`.
    """
    events: list[Any] = []
    done = False
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")
        )
        if not data:
            if block.strip():
                events.append({"raw": compact(block.strip())})
            continue
        if data == "[DONE]":
            done = True
            continue
        try:
            events.append(compact(json.loads(data)))
        except ValueError:
            events.append({"raw": compact(data)})
    count = len(events)
    if count > STREAM_HEAD + STREAM_TAIL:
        events = [*events[:STREAM_HEAD], "…", *events[-STREAM_TAIL:]]
    return events, count, done


class RecordingProxy:
    """Forward requests to `upstream` and record each exchange."""

    def __init__(self, name: str, upstream: str) -> None:
        """Proxy to `upstream` (such as http://127.0.0.1:8000); call `start`."""
        self.name = name
        self.upstream = upstream.rstrip("/")
        self.label = ""
        # Off: requests are kept whole (a benchmark reads them), not compacted.
        self.compact_requests = True
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"proxy {name}", daemon=True
        )
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""

    def start(self) -> str:
        """Serve on a free port of 127.0.0.1; return the proxy's root URL."""
        self._thread.start()
        self.url = self._call(self._start())
        return self.url

    def stop(self) -> None:
        """Stop serving and end the thread."""
        if self._thread.is_alive():
            self._call(self._stop())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def since(self, count: int) -> list[Exchange]:
        """Return the exchanges recorded after the first `count`."""
        with self._lock:
            return list(self.exchanges[count:])

    def _call(self, coroutine: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(60)

    async def _start(self) -> str:
        # A fresh connection per request: a server that broke off one answer
        # must not make the next request fail on a dead pooled connection.
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(force_close=True),
            timeout=aiohttp.ClientTimeout(total=900),
            auto_decompress=True,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        """Send the request upstream, pass the answer back, record both."""
        assert self._session is not None
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {
            name: value
            for name, value in request.headers.items()
            if name.lower() not in _HOP_HEADERS
        }
        began = time.monotonic()
        label = self.label
        try:
            async with self._session.request(
                request.method,
                self.upstream + request.path_qs,
                headers=headers,
                data=raw,
            ) as upstream:
                return await self._pass_on(request, body, upstream, label, began)
        except aiohttp.ClientError as err:
            # No answer at all: the proxy says so, and records it.
            self._keep(
                self._exchange(request, body, 502, {}, label, began),
                f"no answer: {err}",
            )
            return web.Response(status=502, text=f"No answer from the server: {err}")

    async def _pass_on(
        self,
        request: web.Request,
        body: Any,
        upstream: aiohttp.ClientResponse,
        label: str,
        began: float,
    ) -> web.StreamResponse:
        """Pass the server's answer on as it arrives; record it once it ends."""
        answer_headers = {
            name: value
            for name, value in upstream.headers.items()
            if name.lower() not in _ANSWER_HOP_HEADERS
        }
        response = web.StreamResponse(
            status=upstream.status, reason=upstream.reason, headers=answer_headers
        )
        received = bytearray()
        broken = None
        first_token = None
        try:
            await response.prepare(request)
            async for piece in upstream.content.iter_any():
                if first_token is None and _TOKEN.search(piece):
                    first_token = round(time.monotonic() - began, 3)
                received.extend(piece)
                await response.write(piece)
            await response.write_eof()
        except ConnectionResetError:
            broken = "the client closed the connection"  # a cancelled request
        except aiohttp.ClientError as err:
            broken = f"the server broke off the answer: {err}"
        exchange = self._exchange(
            request,
            body,
            upstream.status,
            {
                name: upstream.headers[name]
                for name in KEPT_HEADERS
                if name in upstream.headers
            },
            label,
            began,
        )
        text = bytes(received).decode("utf-8", errors="replace")
        exchange.first_token_seconds = first_token
        exchange.timings = last_timings(text)
        if "text/event-stream" in upstream.headers.get("content-type", ""):
            exchange.events, exchange.event_count, exchange.done_marker = stream_events(
                text
            )
        else:
            exchange.body = _body_text(text, upstream.status)
        self._keep(exchange, broken)
        if broken is not None and not response.prepared:
            return web.Response(status=502, text=broken)
        return response

    def _exchange(
        self,
        request: web.Request,
        body: Any,
        status: int,
        headers: dict[str, str],
        label: str,
        began: float,
    ) -> Exchange:
        return Exchange(
            label=label,
            method=request.method,
            path=request.path,
            features=features_of(request.method, request.path, body),
            request=compact(body) if self.compact_requests else body,
            status=status,
            headers=headers,
            seconds=round(time.monotonic() - began, 3),
            started=began,
        )

    def _keep(self, exchange: Exchange, broken: str | None) -> None:
        exchange.broken = broken
        with self._lock:
            self.exchanges.append(exchange)


def _body_text(text: str, status: int) -> str:
    """Return an answer's body for the record: whole for errors, compact for others."""
    if status >= 400:
        return text[:MAX_BODY]
    try:
        return json.dumps(compact(json.loads(text)), ensure_ascii=False)
    except ValueError:
        return compact(text)  # type: ignore[no-any-return]
