"""Tools on demand as a model uses them: look the tools up, then call one.

Where a command's tool is not offered but a lookup tool is, the scripted model
calls the lookup with the user's words; once its result is back, the command
is matched again against the tools the request now offers.
"""

from __future__ import annotations

import json
from typing import Any

from .answer import Answer
from .ids import new_id

LOOKUP_TOOL = "find_tools"


def lookup_call(text: str, names: list[str]) -> Answer | None:
    """Return a call of the lookup tool with the user's words, if it is offered."""
    if LOOKUP_TOOL not in names:
        return None
    return Answer(
        tool_calls=[(new_id("call_"), LOOKUP_TOOL, json.dumps({"query": text}))]
    )


def ends_with_lookup(messages: list[dict[str, Any]]) -> bool:
    """Whether the conversation ends with the results of the lookup's calls."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or ()
            names = {call["function"]["name"] for call in calls}
            return names == {LOOKUP_TOOL}
        if message["role"] != "tool":
            return False
    return False
