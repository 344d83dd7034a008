"""Calls answered to the model: arguments held to the tool's parameters first."""

from __future__ import annotations

from homeassistant.helpers import llm

from custom_components.openai_compatible.tool_answers import checked_calls
from custom_components.openai_compatible.wire.request import ToolSet

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


def test_arguments_breaking_the_parameters_are_answered() -> None:
    """A call without a required key gets an error naming it, by its tool's name."""
    result = checked_calls(TOOL_SET)(llm.ToolInput("count", {"labels": 1}))

    assert result is not None
    assert result.error
    assert result.data["error"] == "invalid_tool_arguments"
    assert "'label'" in str(result.data["error_text"])


def test_fitting_calls_go_to_the_set_own_calls() -> None:
    """Fitting arguments, and a tool without parameters, reach the set's own answer."""
    seen: list[str] = []

    def own(call: llm.ToolInput) -> llm.ToolResult | None:
        seen.append(call.tool_name)
        return None

    checked = checked_calls(
        ToolSet(TOOL_SET.tools, TOOL_SET.to_wire, TOOL_SET.from_wire, own)
    )

    assert checked(llm.ToolInput("count", {"label": "a\x01"})) is None
    assert checked(llm.ToolInput("free", {"any": 1})) is None
    assert seen == ["count", "free"]
    assert checked_calls(TOOL_SET)(llm.ToolInput("count", {"label": "a"})) is None
