"""Error answers of any shape, read by the transport, through the one error mapper."""

from __future__ import annotations

import asyncio
from typing import Any

from homeassistant.core import HomeAssistant
import httpx2
import pytest

from custom_components.openai_compatible.errors import (
    ConnectError,
    RequestRejectedError,
    ServerError,
)
from custom_components.openai_compatible.net import transport as transport_module
from custom_components.openai_compatible.net.readers import async_read_body
from custom_components.openai_compatible.net.transport import Budget, Transport
from simulator import OpenAISimulator, Pause


@pytest.mark.parametrize(
    ("status", "body", "key", "message"),
    [
        (400, {"error": "plain string error"}, "api_error", "plain string error"),
        (422, {"message": "top-level message"}, "api_error", "top-level message"),
        (404, {"detail": "Not Found"}, "api_error", "Not Found"),
        (503, None, "api_error", None),
        (429, {"error": {"message": "busy"}}, "rate_limited", None),
        (
            429,
            {
                "error": {
                    "message": "You exceeded your current quota.",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
            "insufficient_quota",
            "You exceeded your current quota.",
        ),
        (401, {"error": {"message": "Incorrect API key"}}, "invalid_auth", None),
        (
            401,
            {
                "error": {
                    "message": "You have insufficient permissions for this "
                    "operation. Missing scopes: api.responses.write.",
                    "code": None,
                }
            },
            "permission_denied",
            (
                "You have insufficient permissions for this operation. "
                "Missing scopes: api.responses.write."
            ),
        ),
        (403, {"error": {"message": "Forbidden"}}, "invalid_auth", None),
        (
            403,
            {"error": {"message": "Your organization must be verified to use it."}},
            "permission_denied",
            "Your organization must be verified to use it.",
        ),
        (
            401,
            {
                "error": {
                    "message": "Missing scopes: api.model.read",
                    "code": "missing_scope",
                }
            },
            "permission_denied",
            "Missing scopes: api.model.read",
        ),
    ],
)
async def test_error_bodies_of_any_shape(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    status: int,
    body: dict[str, Any] | None,
    key: str,
    message: str | None,
) -> None:
    """Whatever shape the error body has, the user reads the server's words."""
    transport = Transport(hass, simulator.base_url, None)
    if body is None:
        simulator.enqueue("/models", status=status, raw="upstream failed")
    else:
        simulator.enqueue("/models", status=status, json=body)

    with pytest.raises(ServerError) as err:
        async with transport.async_open("GET", "/models", budget=Budget(10)):
            pass

    assert err.value.translation_key == key
    if message is not None:
        assert err.value.translation_placeholders == {"message": message}
    if status in (400, 404, 422):
        assert isinstance(err.value, RequestRejectedError)


async def test_a_body_stalled_mid_stream_ends_at_the_deadline(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A server that sends part of an answer, then nothing, is given up at the deadline."""
    transport = Transport(hass, simulator.base_url, None)
    simulator.enqueue("/models", sse=['data: {"a": 1}\n\n', Pause(30)], done=False)
    loop = asyncio.get_running_loop()
    started = loop.time()

    async with transport.async_open("GET", "/models", budget=Budget(0.5)) as opened:
        chunks = opened.aiter_bytes()
        first = await anext(chunks)
        with pytest.raises(ConnectError) as err:
            await anext(chunks)

    assert first == b'data: {"a": 1}\n\n'  # what came before the stall
    assert err.value.translation_key == "timeout_answer"
    assert loop.time() - started < 5


async def test_a_body_cut_mid_stream_cannot_connect(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    """A server that closes the connection before its body's end is told as such."""

    async def answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport = Transport(hass, f"http://127.0.0.1:{port}/v1", None)
    try:
        with pytest.raises(ConnectError) as err:
            async with transport.async_open("GET", "/models", budget=Budget(5)) as got:
                await async_read_body(got.aiter_bytes())
    finally:
        server.close()
        await server.wait_closed()

    assert err.value.translation_key == "cannot_connect"


@pytest.mark.parametrize(
    ("location", "key", "placeholders"),
    [
        (
            "https://u:p@other.example/v1/x?k=1#f",
            "redirected",
            {"status": "301", "location": "https://other.example/v1/x"},
        ),
        ("::::", "redirected_nowhere", {"status": "301"}),
        (None, "redirected_nowhere", {"status": "301"}),
    ],
)
def test_a_redirect_names_where_it_leads_if_it_can(
    location: str | None, key: str, placeholders: dict[str, str]
) -> None:
    """Where a redirect leads is told bare, and only when it is an address."""
    response = httpx2.Response(
        301,
        headers={} if location is None else {"Location": location},
        request=httpx2.Request("POST", "http://server.example/v1/chat/completions"),
    )
    error = transport_module.redirected(response)
    assert (error.translation_key, error.translation_placeholders) == (
        key,
        placeholders,
    )


@pytest.mark.parametrize("body", [b'{"context": NaN}', b"[" * 100_000, b"not json"])
def test_an_answer_that_is_no_plain_json_reads_as_none(body: bytes) -> None:
    """NaN, nesting past the parser's depth or words: no JSON, so nothing is read."""
    answer = transport_module.Answer(200, httpx2.Headers(), body)
    assert answer.json() is None
