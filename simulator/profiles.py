"""Server profiles: the simulator answering as real server software did.

The conformance lane (scripts/conformance) records what real servers answer to
each request shape in conformance/recordings/<name>.json. A profile is read
from such a recording:

- every probe the server refused, and every stream it cut before its first
  event, becomes a `Replay`: a request with the probe's distinguishing
  features (those the plain probe lacks) gets the recorded status, content
  type and body, byte for byte;
- what the server's accepted answers lacked becomes a switch of
  `SimulatorSettings`: no log-probabilities, no usage chunk in streams, tools
  ignored under some kinds of tool_choice.

    sim = OpenAISimulator(profile="llama_cpp_python_chatml_function_calling")
"""

from __future__ import annotations

from dataclasses import dataclass
import functools
import json
from pathlib import Path
from typing import Any

from .features import chat_features, route_feature

RECORDINGS = Path(__file__).resolve().parents[1] / "conformance" / "recordings"
# Features of the plain probe: what every chat probe has.
_BASELINE = frozenset({"chat", "max_tokens"})


@dataclass(frozen=True, slots=True)
class Replay:
    """A recorded answer: the request features that draw it, and the answer."""

    probe: str
    route: str
    features: frozenset[str]
    status: int
    content_type: str
    body: str

    def matches(self, route: str, features: frozenset[str]) -> bool:
        """Tell whether a request with these features draws this answer."""
        return route == self.route and self.features <= features


@dataclass(frozen=True, slots=True)
class ServerProfile:
    """What one server configuration refused, and what its answers lacked."""

    name: str
    software: str
    version: str
    configuration: str
    replays: tuple[Replay, ...]
    logprobs: bool
    stream_usage: bool
    # Kinds of tool_choice under which the server answered text, not calls.
    ignore_tools_when: frozenset[str]

    def replay_for(self, path: str, body: Any) -> Replay | None:
        """Return the recorded answer to such a request, if it was no success."""
        # Routes without a feature name (native info routes) go by their path.
        route = route_feature(path) or path
        features = chat_features(body) if route == "chat" else frozenset()
        return next(
            (replay for replay in self.replays if replay.matches(route, features)),
            None,
        )


def profile_names() -> list[str]:
    """Return the names of the recorded profiles."""
    return sorted(path.stem for path in RECORDINGS.glob("*.json"))


@functools.cache
def load_profile(name: str) -> ServerProfile:
    """Read a profile from its recording; raise KeyError for an unknown name."""
    path = RECORDINGS / f"{name}.json"
    if not path.is_file():
        raise KeyError(f"No recording {name!r}; known: {profile_names()}")
    recording = json.loads(path.read_text(encoding="utf-8"))
    probes = {
        probe["label"].removeprefix("probe:"): probe for probe in recording["probes"]
    }
    replays = sorted(
        (
            replay
            for probe_name, probe in probes.items()
            if probe["status"] >= 400 or _cut_stream(probe)
            if _told_apart(replay := _replay(probe_name, probe))
        ),
        key=lambda replay: -len(replay.features),
    )
    return ServerProfile(
        name=recording["name"],
        software=recording["software"],
        version=recording["version"],
        configuration=recording["configuration"],
        replays=tuple(replays),
        logprobs=_answered_logprobs(probes.get("logprobs")),
        stream_usage=_streamed_usage(probes.get("stream_usage")),
        ignore_tools_when=frozenset(
            kind
            for kind, probe in (
                ("absent", "tools"),
                ("auto", "tool_choice_auto"),
                ("forced", "tool_choice_forced"),
            )
            if _ignored_tools(probes.get(probe))
        ),
    )


def _told_apart(replay: Replay) -> bool:
    """Tell whether a refusal can be replayed: a chat one needs a feature of its own.

    A chat probe refused for what no feature names (no messages at all) would
    otherwise be drawn by every chat request.
    """
    return replay.route != "chat" or bool(replay.features)


def _cut_stream(probe: dict[str, Any]) -> bool:
    """Tell whether a stream was accepted but ended before its first event."""
    streamed = "text/event-stream" in probe["headers"].get("content-type", "")
    return streamed and not probe.get("event_count") and not probe.get("body")


def _replay(name: str, probe: dict[str, Any]) -> Replay:
    """Return the recorded answer of one probe, keyed by what sets it apart."""
    route = route_feature(probe["path"]) or probe["path"]
    return Replay(
        probe=name,
        route=route,
        # A chat request is told by its features; any other by its route.
        features=frozenset(probe["features"]) - _BASELINE - {route}
        if route == "chat"
        else frozenset(),
        status=probe["status"],
        content_type=probe["headers"].get("content-type", "application/json"),
        body=probe.get("body") or "",
    )


def _json_body(probe: dict[str, Any] | None) -> dict[str, Any]:
    """Return the JSON body of an accepted answer, or {}."""
    if probe is None or probe["status"] >= 400 or not probe.get("body"):
        return {}
    body = json.loads(probe["body"])
    return body if isinstance(body, dict) else {}


def _answered_logprobs(probe: dict[str, Any] | None) -> bool:
    """Tell whether the logprobs probe got log-probabilities back."""
    choices = _json_body(probe).get("choices") or [{}]
    return bool((choices[0].get("logprobs") or {}).get("content"))


def _ignored_tools(probe: dict[str, Any] | None) -> bool:
    """Tell whether a probe with tools was answered with text, no tool call."""
    choices: list[dict[str, Any]] = _json_body(probe).get("choices") or []
    return bool(choices) and not choices[0].get("message", {}).get("tool_calls")


def _streamed_usage(probe: dict[str, Any] | None) -> bool:
    """Tell whether a stream asked for usage ended with a usage chunk."""
    if probe is None or probe["status"] >= 400:
        return False
    return any(
        isinstance(event, dict) and event.get("usage")
        for event in probe.get("events", [])
    )
