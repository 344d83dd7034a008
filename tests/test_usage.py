"""The usage tracker: counts per subentry, from OpenAI's usage blocks."""

from __future__ import annotations

from typing import Any

import pytest

from custom_components.openai_compatible import UsageTracker


def test_counts_add_up_per_subentry() -> None:
    """Usage blocks, requests and errors add up, each subentry on its own."""
    tracker = UsageTracker()
    tracker.record_request("agent")
    tracker.record_usage(
        "agent",
        {
            "prompt_tokens": 1200,
            "completion_tokens": 30,
            "total_tokens": 1230,
            "prompt_tokens_details": {"cached_tokens": 1024},
        },
    )
    tracker.record_request("agent")
    tracker.record_usage("agent", {"prompt_tokens": 1300, "completion_tokens": 12})
    tracker.record_request("task")
    tracker.record_error("task")
    assert +tracker.counts["agent"] == {
        "prompt_tokens": 2500,
        "completion_tokens": 42,
        "cached_tokens": 1024,
        "requests": 2,
    }
    assert +tracker.counts["task"] == {"requests": 1, "errors": 1}
    assert not +tracker.counts["unseen"]


@pytest.mark.parametrize(
    "usage",
    [
        {},
        {"prompt_tokens": None, "completion_tokens": "12"},
        {"prompt_tokens": -5, "completion_tokens": 2.5},
        {"prompt_tokens": True, "prompt_tokens_details": None},
        {"prompt_tokens_details": {"cached_tokens": "all"}},
        {"prompt_tokens_details": ["cached_tokens", 3]},
    ],
)
def test_odd_usage_blocks_count_nothing(usage: dict[str, Any]) -> None:
    """Missing, negative or non-integer figures from a server are not counted."""
    tracker = UsageTracker()
    tracker.record_usage("agent", usage)
    assert not +tracker.counts["agent"]


def test_listeners_hear_their_subentry_until_removed() -> None:
    """A listener is called on each change of its subentry only."""
    tracker = UsageTracker()
    heard: list[str] = []
    remove = tracker.async_add_listener("agent", lambda: heard.append("agent"))
    tracker.async_add_listener("task", lambda: heard.append("task"))
    tracker.record_request("agent")
    tracker.record_usage("agent", {"prompt_tokens": 1})
    tracker.record_error("task")
    remove()
    tracker.record_request("agent")
    assert heard == ["agent", "agent", "task"]
