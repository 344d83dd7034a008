"""Tool calls that cannot run, answered to the model instead of ending the turn.

A call whose arguments are no JSON or lack a key the tool requires, or that
names a tool that was not offered, goes into the chat log as a call Home
Assistant does not run (`external`), followed by a result that says what was
wrong: the model reads it in the next round and can call again. The user
hears of it only when the rounds run out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from homeassistant.components import conversation
from homeassistant.helpers import llm

from ..errors import ModelError
from ..net.transport import OwnCalls, ToolSet
from .tool_calls import PendingCall
from .written_calls import offered_name

type Answer = conversation.ToolResultContentDeltaDict

# The errors our own tool results name, and what the model is asked to do.
_HINTS: Final = {
    "invalid_tool_arguments": "Call the tool again with arguments that are one "
    "JSON object matching its parameters.",
    "unknown_tool": "Call one of the offered tools, by its exact name.",
}
# The call Home Assistant's default agent adds for a sentence trigger it
# answered; its result holds what the trigger said.
_TRIGGER: Final = "trigger_sentence"


@dataclass(frozen=True, slots=True)
class AnsweredCalls:
    """The native value of a message whose calls were answered here, by id."""

    ids: frozenset[str]


def tool_inputs(
    calls: Iterable[PendingCall],
    tool_names: Mapping[str, str],
    new_id: Callable[[], str],
    own_calls: OwnCalls | None = None,
) -> tuple[list[llm.ToolInput], list[Answer]]:
    """Return the inputs of the calls, and the answers to those not run here."""
    pairs = [
        call_input(call, call.call_id or new_id(), tool_names, own_calls)
        for call in calls
    ]
    answers = [answer for _, answer in pairs if answer is not None]
    return [tool_input for tool_input, _ in pairs], answers


def call_input(
    call: PendingCall,
    call_id: str,
    tool_names: Mapping[str, str],
    own_calls: OwnCalls | None = None,
) -> tuple[llm.ToolInput, Answer | None]:
    """Return the input of a call, and the answer to the model if it is not run.

    `own_calls` may answer a call that could run (a lookup, a call past the cap).
    """
    wire_name = offered_name(call.name, tool_names)
    if wire_name is None:
        offered = ", ".join(tool_names) or "none"
        problem = f"No tool is named {call.name}; the tools are: {offered}"
        return _answered(call_id, str(call.name), "unknown_tool", problem)
    name = tool_names[wire_name]
    try:
        arguments = call.arguments()
    except ModelError as err:
        problem = (err.translation_placeholders or {}).get("message", "")
        return _answered(call_id, name, "invalid_tool_arguments", problem)
    tool_input = llm.ToolInput(name, arguments, id=call_id)
    if own_calls is not None and (result := own_calls(tool_input)) is not None:
        return _answered_with(tool_input, result)
    return tool_input, None


def checked_calls(tool_set: ToolSet) -> OwnCalls:
    """Return the set's own calls, first answering calls that lack a required key.

    Home Assistant runs a tool without checking its arguments. Only required
    keys are held to: tools coerce the rest (Home Assistant's intents take
    one domain where their parameters say a list).
    """
    required = {
        tool_set.from_wire[tool["function"]["name"]]: required_keys(
            tool["function"].get("parameters")
        )
        for tool in tool_set.tools
    }

    def answer(call: llm.ToolInput) -> llm.ToolResult | None:
        if missing := [
            key
            for key in sorted(required.get(call.tool_name, ()))
            if call.tool_args.get(key) is None
        ]:
            names = ", ".join(repr(key) for key in missing)
            return _error_result(
                "invalid_tool_arguments", f"required keys missing or null: {names}"
            )
        return tool_set.own_calls(call) if tool_set.own_calls else None

    return answer


def required_keys(parameters: object) -> frozenset[str]:
    """Return the keys a tool's parameters require."""
    keys = parameters.get("required") if isinstance(parameters, Mapping) else None
    return frozenset(map(str, keys)) if isinstance(keys, list) else frozenset()


def _answered(
    call_id: str, name: str, error: str, problem: str
) -> tuple[llm.ToolInput, Answer]:
    """Return a call Home Assistant does not run, and the result that answers it."""
    result = _error_result(error, problem)
    return _answered_with(llm.ToolInput(name, {}, id=call_id), result)


def _error_result(error: str, problem: str) -> llm.ToolResult:
    """Return a result telling the model what was wrong with its call."""
    return llm.ToolResult(
        {"error": error, "error_text": problem, "hint": _HINTS[error]}, error=True
    )


def _answered_with(
    call: llm.ToolInput, result: llm.ToolResult
) -> tuple[llm.ToolInput, Answer]:
    """Return a call as one Home Assistant does not run, and its given result."""
    answer: Answer = {
        "role": "tool_result",
        "tool_call_id": call.id,
        "tool_name": call.tool_name,
        "result": result,
    }
    external = llm.ToolInput(call.tool_name, call.tool_args, id=call.id, external=True)
    return external, answer


def answered_calls(answers: list[Answer]) -> AnsweredCalls:
    """Return the `native` of a message whose calls include these answered ones."""
    return AnsweredCalls(frozenset(answer["tool_call_id"] for answer in answers))


def model_calls(content: conversation.AssistantContent) -> list[llm.ToolInput]:
    """Return the calls of a message that go to the server as calls.

    Those the model made, and the sentence triggers Home Assistant answered
    earlier in the conversation (the model reads them as its own, as Home
    Assistant means them); not the calls a provider ran itself.
    """
    native = content.native
    answered = native.ids if isinstance(native, AnsweredCalls) else frozenset()
    return [
        call
        for call in content.tool_calls or ()
        if not call.external or call.id in answered or call.tool_name == _TRIGGER
    ]


def unanswerable_error(chat_log: conversation.ChatLog) -> ModelError | None:
    """Return the error of the last round's call that could not run, if any."""
    for content in reversed(chat_log.content):
        if not isinstance(content, conversation.ToolResultContent):
            return None
        data = content.result.data
        if content.result.error and data.get("error") in _HINTS:
            return ModelError(
                str(data["error"]),
                name=content.tool_name,
                message=str(data.get("error_text", "")),
            )
    return None
