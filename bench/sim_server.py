"""The simulator in a process of its own, with two routes for the benchmarks.

`python -m bench.sim_server [--host H] [--port N]` serves `simulator` (the
same server as `python -m simulator`) and prints its base URL as the first
line of stdout. Its CPU time is then not part of the benchmark process.

- `GET /bench/requests?since=N`: the requests recorded from index N on (the
  benchmark's own `/bench/` requests left out), as
  `{"next": M, "requests": [{"method", "path", "body": <base64>, "peer"}]}`;
  `peer` is the client's port, which tells the TCP connections apart. (The
  benchmark sends one request at a time, so requests and ports line up.)
- `POST /bench/enqueue` with `{"path": ..., "sse": [...]}`: queue a scripted
  streamed answer, like `OpenAISimulator.enqueue`.
- `POST /bench/clear`: drop the queued answers no request used.
- `POST /bench/settings` with fields of `SimulatorSettings`, such as
  `{"context_window": 16384}`: change them.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
from collections.abc import Awaitable, Callable
import contextlib
import signal
from typing import Any

from aiohttp import web

from simulator import AUDIO_MODELS, DEFAULT_MODELS, OpenAISimulator, SimulatorSettings

CONTROL_PREFIX = "/bench/"

type Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def add_control_routes(sim: OpenAISimulator) -> None:
    """Add the benchmark's routes to a simulator that is not started yet."""
    peers: dict[int, int] = {}

    @web.middleware
    async def note_peer(request: web.Request, handler: Handler) -> web.StreamResponse:
        peer = (
            request.transport.get_extra_info("peername") if request.transport else None
        )
        peers[len(sim.requests)] = int(peer[1]) if peer else 0
        return await handler(request)

    sim.app.middlewares.insert(0, note_peer)

    async def requests(request: web.Request) -> web.Response:
        since = int(request.query.get("since", "0"))
        recorded = sim.requests[since:]
        return web.json_response(
            {
                "next": since + len(recorded),
                "requests": [
                    {
                        "method": item.method,
                        "path": item.path,
                        "body": base64.b64encode(item.body).decode(),
                        "peer": peers.get(index, 0),
                    }
                    for index, item in enumerate(recorded, start=since)
                    if not item.path.startswith(CONTROL_PREFIX)
                ],
            }
        )

    async def enqueue(request: web.Request) -> web.Response:
        payload: dict[str, Any] = await request.json()
        sim.enqueue(str(payload["path"]), sse=payload["sse"])
        return web.json_response({"queued": True})

    async def settings(request: web.Request) -> web.Response:
        payload: dict[str, Any] = await request.json()
        for name, value in payload.items():
            if name not in SimulatorSettings.__dataclass_fields__:
                raise web.HTTPBadRequest(text=f"no setting {name}")
            setattr(sim.settings, name, value)
        return web.json_response({"settings": payload})

    sim.app.router.add_get(f"{CONTROL_PREFIX}requests", requests)

    async def clear(request: web.Request) -> web.Response:
        sim.clear_queue()
        return web.json_response({"cleared": True})

    sim.app.router.add_post(f"{CONTROL_PREFIX}settings", settings)
    sim.app.router.add_post(f"{CONTROL_PREFIX}clear", clear)
    sim.app.router.add_post(f"{CONTROL_PREFIX}enqueue", enqueue)


async def _serve(host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT."""
    # The audio models too, for bench/voice.py.
    sim = OpenAISimulator(models=[*DEFAULT_MODELS, *AUDIO_MODELS])
    add_control_routes(sim)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    print(await sim.start(host=host, port=port), flush=True)
    try:
        await stop.wait()
    finally:
        await sim.stop()


def main() -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(prog="python -m bench.sim_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    args = parser.parse_args()
    asyncio.run(_serve(args.host, args.port))


if __name__ == "__main__":
    main()
