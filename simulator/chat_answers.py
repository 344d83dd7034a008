"""The built-in answers to Chat Completions requests."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from . import home, logprobs, small_talk
from .answer import Answer
from .chat_messages import message_text, tool_names
from .ids import new_id
from .lookup import ends_with_lookup, lookup_call
from .schema import fill_schema, schema_in_text

if TYPE_CHECKING:
    from .settings import SimulatorSettings

_COMMAND = re.compile(
    r"^\s*(?:please\s+)?(?:turn|switch)\s+"
    r"(?:(?P<state>on|off)\s+(?:the\s+)?(?P<name>.+?)"
    r"|(?:the\s+)?(?P<name2>.+?)\s+(?P<state2>on|off))"
    r"\s*(?:,?\s*please)?[.!?]*\s*$",
    re.IGNORECASE,
)


def answer(body: dict[str, Any], settings: SimulatorSettings) -> Answer:
    """Return the built-in answer to a valid request.

    In order of precedence: a tool call for an on/off command (or a forced
    tool_choice), JSON for a response_format, a summary of trailing tool
    results, a label token when logprobs are asked for, else small talk
    (small_talk.py).
    """
    messages: list[dict[str, Any]] = body["messages"]
    user_text = next(
        (
            message_text(m.get("content"))
            for m in reversed(messages)
            if m["role"] == "user"
        ),
        "",
    )
    ignored = tool_choice_kind(body.get("tool_choice")) in settings.ignore_tools_when
    top = body.get("top_logprobs") or 0
    enum = logprobs.label_enum(body.get("response_format"))
    if enum and settings.logprobs and body.get("logprobs"):
        return logprobs.enum_label_answer(
            enum,
            top,
            post_sampling=bool(body.get("post_sampling_probs")),
            before_grammar=settings.logprobs_before_grammar,
        )
    result = None if ignored else _tool_answer(body, messages)
    if result is None:
        result = _structured_answer(
            body.get("response_format"), messages, settings.unbounded_number
        )
    if result is None and messages[-1]["role"] == "tool":
        result = Answer(_summarise_tool_results(messages))
    if result is None and settings.logprobs and body.get("logprobs"):
        if not settings.labels_in_top:
            return logprobs.filler_answer(top)
        return logprobs.logprob_answer(messages, small_talk.reply(user_text), top)
    if result is None:
        result = Answer(
            small_talk.reply(user_text) if user_text else _describe(messages[-1])
        )
    if settings.reasoning:
        words = len(user_text.split())
        result.reasoning = f"The user wrote {words} words. I will answer briefly."
    return result


def tool_choice_kind(choice: Any) -> str:
    """Name a tool_choice: absent, auto, none, required, or forced (one tool)."""
    if choice is None:
        return "absent"
    return choice if isinstance(choice, str) else "forced"


def _describe(message: dict[str, Any]) -> str:
    """Describe a message that has no text, such as a lone image."""
    content = message.get("content")
    parts = len(content) if isinstance(content, list) else 0
    return f"You sent {parts} attachment{'s' if parts != 1 else ''}."


def _tool_answer(body: dict[str, Any], messages: list[dict[str, Any]]) -> Answer | None:
    """Call a tool for a simple home command or question, or when tool_choice demands one.

    Where only a lookup tool fits, it is called first (see lookup.py).
    """
    tools = body.get("tools") or []
    choice = body.get("tool_choice", "auto")
    asked = messages[-1]["role"] == "user"
    if not tools or choice == "none" or not (asked or ends_with_lookup(messages)):
        return None
    names = tool_names(tools)
    # The command is the message's last paragraph: instructions may come first
    # (the agent's varying ones, or a system prompt a chat template folded).
    text = next(
        message_text(m.get("content"))
        for m in reversed(messages)
        if m["role"] == "user"
    ).rsplit("\n\n", 1)[-1]
    if call := _command_call(text, names):
        return call
    if not asked:
        return None
    if call := lookup_call(text, names):
        return call
    if choice == "auto":
        return None
    forced = choice["function"]["name"] if isinstance(choice, dict) else names[0]
    schema = next(
        tool["function"].get("parameters", {})
        for tool in tools
        if tool["function"]["name"] == forced
    )
    return Answer(
        tool_calls=[(new_id("call_"), forced, json.dumps(fill_schema(schema)))]
    )


def _command_call(text: str, names: list[str]) -> Answer | None:
    """Return the call of an on/off command, a thermostat command or a question."""
    if match := _COMMAND.match(text):
        state = (match["state"] or match["state2"]).lower()
        intent = "HassTurnOn" if state == "on" else "HassTurnOff"
        tool = next(
            (n for n in names if n == intent or n.endswith(f"__{intent}")), None
        )
        if tool is not None:
            target = match["name"] or match["name2"]
            return Answer(
                tool_calls=[(new_id("call_"), tool, json.dumps({"name": target}))]
            )
    if call := home.tool_for(text, names):
        return Answer(tool_calls=[call])
    return None


def _structured_answer(
    response_format: Any, messages: list[dict[str, Any]], number: str | None
) -> Answer | None:
    """Answer with JSON when response_format asks for it; numbers as `number`."""
    if not isinstance(response_format, dict):
        return None
    if response_format["type"] == "json_schema":
        value = fill_schema(response_format["json_schema"]["schema"])
    elif isinstance(given := response_format.get("schema"), dict):
        # json_object with a schema next to it, held to it as llama.cpp does.
        value = fill_schema(given)
    elif response_format["type"] == "json_object":
        schema = next(
            (
                found
                for message in messages
                if (found := schema_in_text(message_text(message.get("content"))))
            ),
            None,
        )
        value = fill_schema(schema) if schema else {"result": "ok"}
    else:
        return None
    if number is None:
        return Answer(json.dumps(value))
    text = json.dumps(_numbers_marked(value), ensure_ascii=False)
    return Answer(text.replace(f'"{_NUMBER_MARK}"', number))


# Stands for each number in an answer whose numbers are written as given.
_NUMBER_MARK = "\u2063number\u2063"


def _numbers_marked(value: Any) -> Any:
    """Return the value with each number replaced by the mark's string."""
    if isinstance(value, dict):
        return {key: _numbers_marked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_marked(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _NUMBER_MARK
    return value


def _summarise_tool_results(messages: list[dict[str, Any]]) -> str:
    """Summarise the tool results that end the conversation."""
    calls: dict[str, tuple[str, Any]] = {}
    sentences: list[str] = []
    question = ""
    for message in messages:
        if message["role"] == "user":
            question = message_text(message.get("content"))
        if message["role"] == "assistant":
            calls = {}
            sentences = []
            for call in message.get("tool_calls") or ():
                try:
                    arguments = json.loads(call["function"]["arguments"])
                except ValueError:
                    arguments = {}
                calls[call["id"]] = (call["function"]["name"], arguments)
        elif message["role"] == "tool":
            name, arguments = calls.get(message["tool_call_id"], ("tool", {}))
            try:
                result = json.loads(message_text(message.get("content")))
            except ValueError:
                result = message_text(message.get("content"))
            sentence = home.sentence(
                name, arguments, result, question
            ) or _tool_sentence(name, arguments, result)
            if sentence not in sentences:
                sentences.append(sentence)
    return " ".join(sentences) or "Done."


def _tool_sentence(name: str, arguments: Any, result: Any) -> str:
    """Return one sentence about one tool result."""
    if isinstance(result, dict) and (
        result.get("error") or result.get("response_type") == "error"
    ):
        detail = result.get("error_text") or result.get("message")
        if not detail and isinstance(result.get("error"), str):
            detail = result["error"]
        return (
            f"Sorry, {name} failed: {detail}." if detail else f"Sorry, {name} failed."
        )
    verb = next(
        (
            text
            for intent, text in (
                ("HassTurnOn", "Turned on"),
                ("HassTurnOff", "Turned off"),
            )
            if name == intent or name.endswith(f"__{intent}")
        ),
        None,
    )
    if verb is None:
        return "Done."
    targets: list[str] = []
    if isinstance(result, dict) and isinstance(result.get("data"), dict):
        targets = [
            str(item["name"])
            for item in result["data"].get("success") or ()
            if isinstance(item, dict) and item.get("name")
        ]
    if not targets and isinstance(arguments, dict) and arguments.get("name"):
        targets = [str(arguments["name"])]
    return f"{verb} {' and '.join(targets)}." if targets else "Done."
