"""Direct requests of each shape that matters, sent to every server of the lane.

The integration asks for JSON, log-probabilities, tools, streams and more in
ways a server may refuse. Each probe sends one such request, small and alone,
through the server's recording proxy (labelled `probe:<name>`), so that the
recordings hold each server's answer to each shape: the body of every
rejection, and the shape of every stream.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import httpx2

from simulator.imagegen import draw_png

from .recorder import RecordingProxy

PROBE_TIMEOUT = 300.0
_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "pet": {"enum": ["cat", "dog"]}},
    "required": ["name", "pet"],
    "additionalProperties": False,
}
_LIGHT_TOOL = {
    "type": "function",
    "function": {
        "name": "HassTurnOn",
        "description": "Turns on a device",
        "parameters": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    },
}
_FORCED = {"type": "function", "function": {"name": "HassTurnOn"}}
# The smallest PDF a server could read.
_PDF = b"%PDF-1.1\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"


@dataclass(frozen=True)
class Probe:
    """One request shape: its name, and the request."""

    name: str
    method: str
    path: str
    body: dict[str, Any] | None = None


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def probes(model: str) -> list[Probe]:
    """Return the probes for a model, in the order they are sent."""
    # The integration always sends a system message; llama-cpp-python's
    # chatml-function-calling lists the tools only inside one.
    system = {"role": "system", "content": "You are a voice assistant."}
    ask = [system, {"role": "user", "content": "Say hi."}]
    base: dict[str, Any] = {"model": model, "messages": ask, "max_tokens": 8}
    tool_turn = [
        system,
        {"role": "user", "content": "Turn on the kitchen light."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "HassTurnOn",
                        "arguments": '{"name": "kitchen light"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"success": true}'},
    ]

    def chat(name: str, **changes: Any) -> Probe:
        return Probe(name, "POST", "/v1/chat/completions", {**base, **changes})

    def parts(*extra: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Describe it."}, *extra],
            }
        ]

    json_schema = {"name": "person", "schema": _SCHEMA}
    return [
        Probe("models", "GET", "/v1/models"),
        chat("plain"),
        Probe(
            "no_messages",
            "POST",
            "/v1/chat/completions",
            # A limit all the same: a real model given no messages may write
            # until its window is full.
            {"model": model, "messages": [], "max_tokens": 8},
        ),
        chat(
            "json_schema_strict",
            response_format={
                "type": "json_schema",
                "json_schema": {**json_schema, "strict": True},
            },
            max_tokens=64,
        ),
        chat(
            "json_schema",
            response_format={"type": "json_schema", "json_schema": json_schema},
            max_tokens=64,
        ),
        chat(
            "json_object",
            messages=[system, {"role": "user", "content": "Say hi, in JSON."}],
            response_format={"type": "json_object"},
            max_tokens=64,
        ),
        chat("logprobs", logprobs=True, top_logprobs=5, max_tokens=1),
        chat("tools", tools=[_LIGHT_TOOL]),
        chat("tool_choice_auto", tools=[_LIGHT_TOOL], tool_choice="auto"),
        chat("tools_stream", tools=[_LIGHT_TOOL], tool_choice="auto", stream=True),
        chat("tool_choice_forced", tools=[_LIGHT_TOOL], tool_choice=_FORCED),
        chat(
            "tool_choice_forced_stream",
            tools=[_LIGHT_TOOL],
            tool_choice=_FORCED,
            stream=True,
        ),
        chat("parallel_tool_calls", tools=[_LIGHT_TOOL], parallel_tool_calls=False),
        chat("tool_result", messages=tool_turn, tools=[_LIGHT_TOOL]),
        chat(
            "tool_result_empty_content",
            messages=[*tool_turn[:2], {**tool_turn[2], "content": ""}, tool_turn[3]],
            tools=[_LIGHT_TOOL],
        ),
        chat("stream", stream=True),
        chat("stream_usage", stream=True, stream_options={"include_usage": True}),
        Probe(
            "max_completion_tokens",
            "POST",
            "/v1/chat/completions",
            # max_tokens too: llama-cpp-python ignores max_completion_tokens,
            # and a real model then writes until its window is full. A refusal
            # of the field is what the recording keeps.
            {
                "model": model,
                "messages": ask,
                "max_completion_tokens": 8,
                "max_tokens": 8,
            },
        ),
        chat("prompt_cache_key", prompt_cache_key="conformance"),
        chat(
            "image_url",
            messages=parts(
                {
                    "type": "image_url",
                    "image_url": {"url": _data_url("image/png", draw_png("a", 8, 8))},
                }
            ),
        ),
        chat(
            "file",
            messages=parts(
                {
                    "type": "file",
                    "file": {
                        "filename": "note.pdf",
                        "file_data": _data_url("application/pdf", _PDF),
                    },
                }
            ),
        ),
        Probe(
            "decisions",
            "POST",
            "/v1/decisions",
            {
                "model": model,
                "input": "The kitchen light is on at 23:30.",
                "questions": [
                    {
                        "type": "predicate",
                        "name": "left_on",
                        "instructions": "Was the light left on?",
                    }
                ],
            },
        ),
        Probe(
            "responses",
            "POST",
            "/v1/responses",
            {"model": model, "input": "Say hi.", "max_output_tokens": 16},
        ),
        # Native info routes some servers have beside the OpenAI ones.
        Probe("llama_cpp_props", "GET", "/props"),
        Probe("version", "GET", "/version"),
        Probe("ollama_version", "GET", "/api/version"),
        Probe("lm_studio_models", "GET", "/api/v0/models"),
        Probe(
            "images_generations",
            "POST",
            "/v1/images/generations",
            {"model": model, "prompt": "A kitchen light.", "n": 1, "size": "256x256"},
        ),
    ]


def run_probes(proxy: RecordingProxy, model: str) -> None:
    """Send every probe through the proxy, which records the answers."""
    with httpx2.Client(
        base_url=proxy.url,
        timeout=PROBE_TIMEOUT,
        headers={"Authorization": "Bearer no-key"},
    ) as client:
        for probe in probes(model):
            proxy.label = f"probe:{probe.name}"
            client.request(probe.method, probe.path, json=probe.body)
    proxy.label = ""
