"""Calls answered to the model: a key the tool requires is asked for first."""

from __future__ import annotations

from typing import Any

from homeassistant.helpers import llm
import pytest

from custom_components.openai_compatible.net.transport import ToolSet
from custom_components.openai_compatible.wire.tool_answers import checked_calls

TOOL_SET = ToolSet(
    [
        {
            "type": "function",
            "function": {
                "name": "wire_count",
                "parameters": {
                    "type": "object",
                    "properties": {"label": {"type": "string"}},
                    "required": ["label"],
                },
            },
        },
        {"type": "function", "function": {"name": "free"}},
    ],
    {"count": "wire_count", "free": "free"},
    {"wire_count": "count", "free": "free"},
)


@pytest.mark.parametrize("arguments", [{"labels": 1}, {"label": None}])
def test_a_call_without_a_required_key_is_answered(arguments: dict[str, Any]) -> None:
    """A call without a required key (or with it null) gets an error naming it."""
    result = checked_calls(TOOL_SET)(llm.ToolInput("count", arguments))

    assert result is not None
    assert result.error
    assert result.data["error"] == "invalid_tool_arguments"
    assert "'label'" in str(result.data["error_text"])


def test_fitting_calls_go_to_the_set_own_calls() -> None:
    """Calls with the required keys reach the set's own answer, whatever their types.

    Tools coerce what they take (Home Assistant's intents take one domain for
    a list of domains), so only a missing key is answered here.
    """
    seen: list[str] = []

    def own(call: llm.ToolInput) -> llm.ToolResult | None:
        seen.append(call.tool_name)
        return None

    checked = checked_calls(
        ToolSet(TOOL_SET.tools, TOOL_SET.to_wire, TOOL_SET.from_wire, own)
    )

    assert checked(llm.ToolInput("count", {"label": "a\x01"})) is None
    assert checked(llm.ToolInput("count", {"label": 5, "extra": True})) is None
    assert checked(llm.ToolInput("free", {"any": 1})) is None
    assert seen == ["count", "count", "free"]
    assert checked_calls(TOOL_SET)(llm.ToolInput("count", {"label": "a"})) is None
