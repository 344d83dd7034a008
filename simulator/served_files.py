"""Files under /files/: generated images in URL mode, and files tests set up."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiohttp import web

# Seconds between the bytes of a trickled file.
_TRICKLE_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class ServedFile:
    """A file under /files/: its bytes, status and headers, sent at once or slowly."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    # True: the body goes out a byte at a time, every _TRICKLE_SECONDS.
    trickle: bool = False


async def send_file(request: web.Request, served: ServedFile) -> web.StreamResponse:
    """Send a file as a PNG, unless its headers say otherwise; slowly if it trickles."""
    headers = {"Content-Type": "image/png", **served.headers}
    if not served.trickle:
        return web.Response(body=served.body, status=served.status, headers=headers)
    response = web.StreamResponse(status=served.status, headers=headers)
    await response.prepare(request)
    for byte in served.body:
        await response.write(bytes((byte,)))
        await asyncio.sleep(_TRICKLE_SECONDS)
    await response.write_eof()
    return response
