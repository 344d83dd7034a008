"""What the simulated assistant says, before it is put on the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A tool call: its id, the function's name and its arguments as JSON text.
type ToolCall = tuple[str, str, str]


@dataclass(slots=True)
class Answer:
    """An answer: text, tool calls, reasoning and per-token logprobs."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    # Per-token logprob entries; when set, the text is their concatenation.
    tokens: list[dict[str, Any]] | None = None

    @property
    def finish_reason(self) -> str:
        """Return the finish reason the answer ends with."""
        return "tool_calls" if self.tool_calls else "stop"
