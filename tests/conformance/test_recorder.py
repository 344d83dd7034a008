"""The recording proxy, in front of the simulator."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
import json

import httpx2
import pytest

from conformance.recorder import (
    MAX_ITEMS,
    MAX_TEXT,
    RecordingProxy,
    compact,
    features_of,
    last_timings,
    stream_events,
)
from simulator import OpenAISimulator


def test_compact_shortens_long_strings_and_lists() -> None:
    """Long strings keep their start and length; long lists their length."""
    value = compact({"text": "x" * (MAX_TEXT + 5), "items": list(range(MAX_ITEMS + 3))})
    assert value["text"] == "x" * MAX_TEXT + f"…({MAX_TEXT + 5} characters)"
    assert value["items"] == [*range(MAX_ITEMS), f"…({MAX_ITEMS + 3} items)"]
    assert compact([1, "a", None]) == [1, "a", None]


def test_stream_events_keep_head_and_tail() -> None:
    """A long stream keeps its first and last events, the count and [DONE]."""
    text = "".join(f"data: {json.dumps({'n': n})}\n\n" for n in range(20))
    events, count, done = stream_events(text + ": comment\n\ndata: [DONE]\n\n")
    assert count == 21
    assert done
    assert events[:2] == [{"n": 0}, {"n": 1}]
    assert "…" in events
    assert events[-1] == {"raw": ": comment"}


def test_stream_events_of_text_that_is_not_json() -> None:
    """A data line that is not JSON is kept raw; no [DONE] is reported as such."""
    events, count, done = stream_events("data: hello\r\n\r\n")
    assert events == [{"raw": "hello"}]
    assert count == 1
    assert not done


def test_last_timings_of_a_stream_and_of_a_body() -> None:
    """llama-server's timings come from the last event or the body that has them."""
    events = [
        {"choices": [{"delta": {"content": "Hi"}}]},
        {"choices": [], "timings": {"prompt_n": 3, "cache_n": 90}},
        {"choices": [], "timings": {"prompt_n": 5, "cache_n": 100}},
    ]
    stream = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    assert last_timings(stream + "data: [DONE]\n\n") == {"prompt_n": 5, "cache_n": 100}
    assert last_timings(json.dumps({"timings": {"prompt_n": 1}})) == {"prompt_n": 1}
    assert last_timings('data: {"timings": broken}\n\n') is None
    assert last_timings('{"choices": []}') is None


def test_features_of_names_routes() -> None:
    """A chat request has the chat features; an unknown route is named by path."""
    assert features_of("POST", "/v1/chat/completions", {"stream": True}) == [
        "chat",
        "stream",
    ]
    assert features_of("GET", "/v1/props", None) == ["route:GET /v1/props"]


@pytest.fixture
async def proxy(simulator: OpenAISimulator) -> AsyncGenerator[RecordingProxy]:
    """Return a started proxy in front of the simulator, stopped afterwards."""
    recorder = RecordingProxy("sim", simulator.base_url.removesuffix("/v1"))
    await asyncio.to_thread(recorder.start)
    yield recorder
    await asyncio.to_thread(recorder.stop)


async def test_proxy_passes_answers_and_records_them(
    proxy: RecordingProxy, simulator: OpenAISimulator
) -> None:
    """Answers pass through unchanged; rejections and streams are recorded."""
    simulator.enqueue(
        "/chat/completions", status=500, raw="Internal Server Error: literal_error"
    )
    proxy.label = "probe:json_schema"
    async with httpx2.AsyncClient(base_url=proxy.url, timeout=30) as client:
        refused = await client.post(
            "/v1/chat/completions",
            json={
                "model": "gpt-4o-mini",
                "messages": [],
                "response_format": {"type": "json_object"},
            },
        )
        proxy.label = "probe:stream"
        streamed = await client.post(
            "/v1/chat/completions",
            json={
                "model": "gpt-4o-mini",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": True,
            },
        )
    assert refused.status_code == 500
    assert refused.text == "Internal Server Error: literal_error"
    assert streamed.text.endswith("data: [DONE]\n\n")
    first, second = proxy.since(0)
    assert first.label == "probe:json_schema"
    assert first.rejected
    assert first.body == "Internal Server Error: literal_error"
    assert "json_object" in first.features
    assert second.label == "probe:stream"
    assert not second.rejected
    assert second.done_marker
    assert second.event_count >= 2
    assert second.as_json()["events"]
    assert "body" not in second.as_json()
    # The time to the stream's first token, which the recording leaves out.
    assert second.first_token_seconds is not None
    assert 0 <= second.first_token_seconds <= second.seconds
    assert first.first_token_seconds is None
    assert "first_token_seconds" not in second.as_json()
    assert "events" not in first.as_json()
