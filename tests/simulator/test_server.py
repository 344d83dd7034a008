"""Server plumbing: models, auth, scripted responses, switches, routing."""

from __future__ import annotations

import asyncio
import sys
import time

import aiohttp
import openai
import pytest

from simulator import DEFAULT_MODELS, OpenAISimulator, chunk, sse_text
from tests.conftest import served

USER_HI = [{"role": "user", "content": "hi"}]


async def test_list_and_retrieve_models(client: openai.AsyncOpenAI) -> None:
    """The model list is OpenAI-shaped; one model can be fetched by id."""
    page = await client.models.list()

    assert [model.id for model in page.data] == list(DEFAULT_MODELS)
    assert {model.object for model in page.data} == {"model"}
    assert page.data[-1].owned_by == "library"
    model = await client.models.retrieve("gpt-4o-mini")
    assert model.id == "gpt-4o-mini"
    with pytest.raises(openai.NotFoundError) as err:
        await client.models.retrieve("gpt-unknown")
    assert err.value.code == "model_not_found"


async def test_custom_models_and_switched_off_endpoint(socket_enabled: None) -> None:
    """Models come from the constructor; the endpoint can be switched off."""
    sim = OpenAISimulator(models=["only-one"])
    base_url = await sim.start()
    try:
        assert sim.base_url == base_url
        assert base_url.startswith("http://127.0.0.1:")
        assert base_url.endswith("/v1")
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key="x", max_retries=0
        ) as client:
            assert [m.id for m in (await client.models.list()).data] == ["only-one"]
            sim.settings.models_endpoint = False
            with pytest.raises(openai.NotFoundError):
                await client.models.list()
    finally:
        await sim.stop()
    with pytest.raises(RuntimeError):
        assert sim.base_url


async def test_api_key(socket_enabled: None) -> None:
    """With a key set, a wrong bearer gets OpenAI's 401 body."""
    async with (
        served(OpenAISimulator(api_key="sk-right")) as sim,
        openai.AsyncOpenAI(
            base_url=sim.base_url, api_key="sk-wrong", max_retries=0
        ) as client,
    ):
        with pytest.raises(openai.AuthenticationError) as err:
            await client.models.list()
        assert err.value.body == {
            "message": "Incorrect API key provided",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
        answer = await client.with_options(api_key="sk-right").chat.completions.create(
            model="gpt-4o-mini", messages=USER_HI
        )
    assert answer.choices[0].message.content == "You said: hi"


async def test_requests_are_recorded(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Every request is kept with method, path, headers and body."""
    await client.chat.completions.create(model="gpt-4o-mini", messages=USER_HI)
    await client.models.list()

    post, get = sim.requests
    assert (post.method, post.path) == ("POST", "/v1/chat/completions")
    assert post.headers["Authorization"] == "Bearer sk-test"
    assert post.headers.get("authorization") == "Bearer sk-test"
    assert "Content-Type" in post.headers
    assert post.json == {"model": "gpt-4o-mini", "messages": USER_HI}
    assert post.body.startswith(b"{")
    assert (get.method, get.path, get.json) == ("GET", "/v1/models", None)
    assert sim.chat_requests() == [post.json]


async def test_enqueue_is_fifo_then_builtin(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Queued responses go first, in order, then the built-in behaviour."""
    sim.enqueue("/chat/completions", json={})
    sim.enqueue("/models", json={"object": "list", "data": []})
    sim.enqueue("v1/models", json={"object": "list", "data": [{"id": "a"}]})

    assert (await client.models.list()).data == []
    assert [m.id for m in (await client.models.list()).data] == ["a"]
    assert len((await client.models.list()).data) == len(DEFAULT_MODELS)
    assert (
        await client.chat.completions.create(model="m", messages=USER_HI)
    ).id is None


async def test_enqueue_status_headers_and_raw(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Status and headers apply to any body; an error status gets a body."""
    sim.enqueue("/chat/completions", status=429, headers={"retry-after": "7"})
    sim.enqueue("/chat/completions", status=502, raw="<html>Bad gateway</html>")

    with pytest.raises(openai.RateLimitError) as limited:
        await client.chat.completions.create(model="gpt-4o-mini", messages=USER_HI)
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.body["message"] == "Too Many Requests"
    with pytest.raises(openai.InternalServerError) as broken:
        await client.chat.completions.create(model="gpt-4o-mini", messages=USER_HI)
    assert broken.value.body == "<html>Bad gateway</html>"


async def test_enqueued_stream_gets_ids_filled(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Chunk dicts get id, object, created and the request's model."""
    sim.enqueue(
        "/chat/completions",
        sse=[
            ": keep-alive\n\n",
            chunk({"role": "assistant", "content": "Hi"}),
            chunk({}, finish_reason="stop"),
        ],
    )

    stream = await client.chat.completions.create(
        model="llama3.2:3b", messages=USER_HI, stream=True
    )
    chunks = [part async for part in stream]

    assert [c.choices[0].delta.content for c in chunks] == ["Hi", None]
    assert {c.model for c in chunks} == {"llama3.2:3b"}
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].object == "chat.completion.chunk"
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_enqueued_stream_error_event(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """An error event mid-stream is sent untouched; the client raises it."""
    sim.enqueue(
        "/chat/completions",
        sse=[*sse_text("Hel")[:2], {"error": {"message": "model crashed"}}],
    )

    stream = await client.chat.completions.create(
        model="gpt-4o-mini", messages=USER_HI, stream=True
    )
    with pytest.raises(openai.APIError, match="model crashed"):
        async for _ in stream:
            pass


async def test_enqueued_stream_of_bytes_without_done(sim: OpenAISimulator) -> None:
    """Bytes items go out as they are; `done=False` leaves out `[DONE]`."""
    sim.enqueue(
        "/chat/completions",
        sse=[b"data: \xf0\x9f", b"\x8f\xa0\r\n\r\n", "data: x\n\n"],
        done=False,
    )
    sim.enqueue("/chat/completions", raw=b"\x00\xff", headers={"X-A": "b"})

    async with aiohttp.ClientSession() as session:
        url = f"{sim.base_url}/chat/completions"
        async with session.post(url, json={"model": "m"}) as response:
            assert await response.read() == "data: 🏠\r\n\r\ndata: x\n\n".encode()
        async with session.post(url, json={"model": "m"}) as response:
            assert await response.read() == b"\x00\xff"
            assert response.headers["X-A"] == "b"


async def test_enqueue_rejects_two_bodies(sim: OpenAISimulator) -> None:
    """A queued response has at most one body."""
    with pytest.raises(ValueError):
        sim.enqueue("/models", json={}, raw="x")


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
        (429, openai.RateLimitError),
    ],
)
async def test_fault_switch(
    sim: OpenAISimulator,
    client: openai.AsyncOpenAI,
    status: int,
    error: type[openai.APIStatusError],
) -> None:
    """Every API route answers the fault status until it is cleared."""
    sim.settings.fail_status = status
    sim.settings.fail_message = "Overloaded"

    with pytest.raises(error) as err:
        await client.chat.completions.create(model="gpt-4o-mini", messages=USER_HI)
    assert err.value.status_code == status
    assert err.value.body["message"] == "Overloaded"
    with pytest.raises(error):
        await client.models.list()
    sim.settings.fail_status = None
    assert (await client.models.list()).data


async def test_unknown_route_and_request_id(sim: OpenAISimulator) -> None:
    """Unknown routes get OpenAI's 404 body; API answers carry a request id."""
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{sim.base_url}/assistants", json={}) as response:
            assert response.status == 404
            assert await response.json() == {
                "error": {
                    "message": "Invalid URL (POST /v1/assistants)",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
            assert response.headers["x-request-id"].startswith("req_")
        async with session.get(f"{sim.base_url}/chat/completions") as response:
            assert response.status == 405
            assert "error" in await response.json()


async def test_latency(sim: OpenAISimulator, client: openai.AsyncOpenAI) -> None:
    """The latency switch delays each answer."""
    sim.settings.latency = 0.05
    start = time.monotonic()
    await client.models.list()
    assert time.monotonic() - start >= 0.05


async def test_standalone_command(socket_enabled: None) -> None:
    """`python -m simulator` serves and says it is not a model."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "simulator",
        "--port",
        "0",
        "--api-key",
        "sk-cli",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        first = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        second = (await process.stdout.readline()).decode()
        base_url = first.split()[-1]
        assert base_url.startswith("http://127.0.0.1:")
        assert "this is a simulator, not a model" in second
        async with openai.AsyncOpenAI(
            base_url=base_url, api_key="sk-cli", max_retries=0
        ) as client:
            assert (await client.models.list()).data
    finally:
        process.terminate()
        assert await process.wait() == 0


async def test_restart_on_the_same_port(socket_enabled: None) -> None:
    """A stopped simulator refuses connections and can come back on its port."""
    sim = OpenAISimulator()
    base_url = await sim.start()
    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    async with openai.AsyncOpenAI(
        base_url=base_url, api_key="x", max_retries=0
    ) as client:
        await sim.stop()
        with pytest.raises(openai.APIConnectionError):
            await client.models.list()
        assert await sim.start(port=port) == base_url
        try:
            assert (await client.models.list()).data
        finally:
            await sim.stop()


async def test_clear_queue(sim: OpenAISimulator, client: openai.AsyncOpenAI) -> None:
    """Queued answers that no request used can be dropped."""
    sim.enqueue("/chat/completions", json={"choices": []})
    sim.clear_queue()

    answer = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )

    assert answer.choices[0].message.content == "You said: hi"


async def test_peak_in_flight(sim: OpenAISimulator, client: openai.AsyncOpenAI) -> None:
    """The simulator counts the requests it answers at once."""
    sim.settings.latency = 0.05
    await asyncio.gather(*(client.models.list() for _ in range(3)))
    assert sim.peak_in_flight == 3
    assert sim.in_flight == 0


async def _queue_two_use_one() -> None:
    """Serve a simulator, queue two answers and take only the chat one."""
    async with served(OpenAISimulator()) as sim:
        sim.enqueue("/models", json={"data": []})
        sim.enqueue("/chat/completions", json={"choices": []})
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{sim.base_url}/chat/completions", json={}) as answer,
        ):
            assert answer.status == 200


async def test_unused_answers_fail_the_test(socket_enabled: None) -> None:
    """A simulator served for a test fails it when queued answers went unused."""
    with pytest.raises(AssertionError, match=r"never used: \['/models'\]"):
        await _queue_two_use_one()


async def test_client_hanging_up_mid_stream_is_no_server_error(
    sim: OpenAISimulator,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write to a client that just hung up is no server error.

    The handler is usually cancelled when the client goes; when the write comes
    first (a busy machine), it fails with a reset: that too is a quiet end.
    """
    written = aiohttp.web.StreamResponse.write

    async def write_then_reset(self: aiohttp.web.StreamResponse, data: bytes) -> None:
        if b"second" in data:
            raise aiohttp.ClientConnectionResetError(
                "Cannot write to closing transport"
            )
        await written(self, data)

    monkeypatch.setattr(aiohttp.web.StreamResponse, "write", write_then_reset)
    sim.enqueue("/chat/completions", sse=["data: first\n\n", "data: second\n\n"])

    async with aiohttp.ClientSession() as session:
        url = f"{sim.base_url}/chat/completions"
        async with session.post(url, json={"model": "m"}) as response:
            assert await response.content.readline() == b"data: first\n"

    assert sim.in_flight == 0
    assert not [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
