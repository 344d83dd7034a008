"""Chat Completions: request validation, scripted answers and their wire form."""

from __future__ import annotations

from dataclasses import dataclass, field
import json
import math
import random
import re
import string
import time
from typing import TYPE_CHECKING, Any

from . import home
from .schema import fill_schema, schema_in_text, strict_schema_problem
from .window import prompt_tokens
from .wire import (
    APIError,
    decode_data_url,
    empty_array,
    invalid_type,
    invalid_value,
    missing,
)

if TYPE_CHECKING:
    from .server import SimulatorSettings

type Chunk = dict[str, Any]
type ToolCall = tuple[str, str, str]

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
_PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
_TEXT_ONLY = ("text",)
_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
_COMMAND = re.compile(
    r"^\s*(?:please\s+)?(?:turn|switch)\s+"
    r"(?:(?P<state>on|off)\s+(?:the\s+)?(?P<name>.+?)"
    r"|(?:the\s+)?(?P<name2>.+?)\s+(?P<state2>on|off))"
    r"\s*(?:,?\s*please)?[.!?]*\s*$",
    re.IGNORECASE,
)
# What Home Assistant takes for a question mark at the end of an answer
# (ChatLog.continue_conversation): Latin, Greek (its question mark is a
# semicolon once normalised) and full-width.
_QUESTION_MARKS = ("?", ";", "？")
_ALPHANUMERIC = string.ascii_letters + string.digits
_FILLER_TOKENS = ("\n", ".", " ", "The", "I", "It", "**", "Answer", "Sure", ":", '"')


def is_reasoning_model(model: str) -> bool:
    """Tell whether the model id names one of OpenAI's reasoning models."""
    return model.lower().rsplit("/", 1)[-1].startswith(("o1", "o3", "o4", "gpt-5"))


def new_id(prefix: str, length: int = 24) -> str:
    """Return an id such as `call_` followed by random letters and digits."""
    return prefix + "".join(random.choices(_ALPHANUMERIC, k=length))


def count_tokens(text: str) -> int:
    """Estimate tokens the usual way: four characters each."""
    return math.ceil(len(text) / 4)


# --- validation -------------------------------------------------------------


def validate(body: Any, settings: SimulatorSettings) -> None:
    """Raise APIError for what a real server would reject."""
    if not isinstance(body, dict):
        raise APIError(
            "We could not parse the JSON body of your request. (HINT: This likely "
            "means you aren't using your HTTP library correctly.)"
        )
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise APIError("you must provide a model parameter", param="model")
    if "messages" not in body:
        raise missing("messages")
    if "prompt_cache_key" in body and not settings.prompt_cache_key:
        raise APIError(
            "Unrecognized request argument supplied: prompt_cache_key",
            param="prompt_cache_key",
        )
    if is_reasoning_model(model):
        _validate_reasoning_params(body)
    if "stream" in body and not isinstance(body["stream"], bool):
        raise invalid_type("stream", "a boolean", body["stream"])
    if body.get("stream_options") is not None and not body.get("stream"):
        raise APIError(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            param="stream_options",
        )
    _validate_messages(body["messages"])
    tools = body.get("tools")
    if tools is not None:
        _validate_tools(tools)
        if tools and not settings.supports_tools:
            raise APIError("registry.ollama.ai/library/gemma:2b does not support tools")
    _validate_tool_choice(body.get("tool_choice"), tools)
    if (response_format := body.get("response_format")) is not None:
        _validate_response_format(response_format, body["messages"], settings)
    if settings.logprobs:
        _validate_logprobs(body)


def _validate_reasoning_params(body: dict[str, Any]) -> None:
    """Reject the sampling parameters reasoning models refuse."""
    for name in ("temperature", "top_p"):
        if name in body:
            raise APIError(
                f"Unsupported parameter: '{name}' is not supported with this model.",
                param=name,
                code="unsupported_parameter",
            )
    if "max_tokens" in body:
        raise APIError(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            param="max_tokens",
            code="unsupported_parameter",
        )


def _validate_messages(messages: Any) -> None:
    """Check roles, content parts and the pairing of tool calls with results."""
    if not isinstance(messages, list):
        raise invalid_type("messages", "an array", messages)
    if not messages:
        raise empty_array("messages")
    pending: list[str] = []
    pending_index = 0
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        if not isinstance(message, dict):
            raise invalid_type(param, "an object", message)
        role = message.get("role")
        if role not in ROLES:
            raise invalid_value(f"{param}.role", role, ROLES)
        if pending and role != "tool":
            raise _unanswered(pending, pending_index)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise missing(f"{param}.tool_call_id")
            if call_id not in pending:
                raise APIError(
                    "Invalid parameter: messages with role 'tool' must be a response "
                    "to a preceeding message with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                )
            pending.remove(call_id)
        if role == "function":
            continue
        _validate_content(message, role, param)
        if role == "assistant" and message.get("tool_calls") is not None:
            pending = _validate_tool_calls(message["tool_calls"], param)
            pending_index = index
    if pending:
        raise _unanswered(pending, pending_index)


def _unanswered(pending: list[str], index: int) -> APIError:
    """Return the error for tool calls that got no tool message."""
    return APIError(
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not "
        f"have response messages: {', '.join(pending)}",
        param=f"messages.[{index}].role",
    )


def _validate_content(message: dict[str, Any], role: str, param: str) -> None:
    """Check a message's content: a string or a list of allowed parts."""
    content = message.get("content")
    if content is None:
        if role == "assistant" and (
            message.get("tool_calls") or message.get("function_call")
        ):
            return
        if "content" in message:
            raise invalid_type(f"{param}.content", "a string", content)
        raise missing(f"{param}.content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise invalid_type(
            f"{param}.content", "one of a string or array of objects", content
        )
    if not content:
        raise empty_array(f"{param}.content")
    allowed = _PART_TYPES.get(role, _TEXT_ONLY)
    for index, part in enumerate(content):
        _validate_part(part, allowed, f"{param}.content[{index}]")


def _validate_part(part: Any, allowed: tuple[str, ...], param: str) -> None:
    """Check one content part, including that data URLs decode."""
    if not isinstance(part, dict):
        raise invalid_type(param, "an object", part)
    kind = part.get("type")
    if kind not in allowed:
        raise invalid_value(f"{param}.type", kind, allowed)
    body = part.get(kind)
    if kind in ("text", "refusal"):
        if not isinstance(body, str):
            raise missing(f"{param}.{kind}")
        return
    if not isinstance(body, dict):
        raise missing(f"{param}.{kind}")
    if kind == "image_url":
        url = body.get("url")
        if not isinstance(url, str):
            raise missing(f"{param}.image_url.url")
        if not url.startswith(("http://", "https://")):
            decode_data_url(url, f"{param}.image_url.url", image=True)
        if body.get("detail", "auto") not in ("auto", "low", "high"):
            raise invalid_value(
                f"{param}.image_url.detail", body["detail"], ("auto", "low", "high")
            )
    elif kind == "file":
        if isinstance(body.get("file_data"), str):
            decode_data_url(body["file_data"], f"{param}.file.file_data", image=False)
        elif not isinstance(body.get("file_id"), str):
            raise missing(f"{param}.file.file_data")
    elif kind == "input_audio":
        if body.get("format") not in ("wav", "mp3"):
            raise invalid_value(
                f"{param}.input_audio.format", body.get("format"), ("wav", "mp3")
            )
        if not isinstance(body.get("data"), str):
            raise missing(f"{param}.input_audio.data")


def _validate_tool_calls(calls: Any, param: str) -> list[str]:
    """Check an assistant message's tool calls; return their ids."""
    if not isinstance(calls, list):
        raise invalid_type(f"{param}.tool_calls", "an array", calls)
    if not calls:
        raise empty_array(f"{param}.tool_calls")
    ids: list[str] = []
    for index, call in enumerate(calls):
        where = f"{param}.tool_calls[{index}]"
        if not isinstance(call, dict):
            raise invalid_type(where, "an object", call)
        if not isinstance(call.get("id"), str):
            raise missing(f"{where}.id")
        if call.get("type") != "function":
            raise invalid_value(f"{where}.type", call.get("type"), ("function",))
        function = call.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise missing(f"{where}.function.name")
        if not isinstance(function.get("arguments"), str):
            raise invalid_type(
                f"{where}.function.arguments", "a string", function.get("arguments")
            )
        ids.append(call["id"])
    return ids


def _validate_name(name: Any, param: str) -> None:
    """Check a function or schema name against OpenAI's pattern."""
    if not isinstance(name, str):
        raise missing(param)
    if len(name) > 64:
        raise APIError(
            f"Invalid '{param}': string too long. Expected a string with maximum "
            f"length 64, but got a string with length {len(name)} instead.",
            param=param,
            code="string_above_max_length",
        )
    if not _NAME.match(name):
        raise APIError(
            f"Invalid '{param}': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            param=param,
            code="invalid_value",
        )


def _validate_tools(tools: Any) -> None:
    """Check function tool definitions."""
    if not isinstance(tools, list):
        raise invalid_type("tools", "an array", tools)
    if not tools:
        raise empty_array("tools")
    for index, tool in enumerate(tools):
        param = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise invalid_type(param, "an object", tool)
        if "type" not in tool:
            raise missing(f"{param}.type")
        if tool["type"] != "function":
            raise invalid_value(f"{param}.type", tool["type"], ("function",))
        function = tool.get("function")
        if not isinstance(function, dict):
            raise missing(f"{param}.function")
        name = function.get("name")
        _validate_name(name, f"{param}.function.name")
        if "parameters" not in function:
            continue
        parameters = function["parameters"]
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            got = parameters.get("type") if isinstance(parameters, dict) else None
            raise APIError(
                f"Invalid schema for function '{name}': schema must be a JSON Schema "
                f"of 'type: \"object\"', got 'type: \"{got}\"'.",
                param=f"{param}.function.parameters",
                code="invalid_function_parameters",
            )
        if function.get("strict") is True and (
            problem := strict_schema_problem(parameters)
        ):
            raise APIError(
                f"Invalid schema for function '{name}': {problem}",
                param=f"{param}.function.parameters",
                code="invalid_function_parameters",
            )


def _validate_tool_choice(choice: Any, tools: Any) -> None:
    """Check tool_choice, which needs tools and must name an offered one."""
    if choice is None:
        return
    if not tools:
        raise APIError(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
            "'tools' are specified.",
            param="tool_choice",
        )
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise invalid_value("tool_choice", choice, ("none", "auto", "required"))
        return
    name = (
        (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
    )
    if name not in _tool_names(tools):
        raise APIError(
            f"Invalid value for 'tool_choice': function '{name}' is not in 'tools'.",
            param="tool_choice",
        )


def _validate_response_format(
    response_format: Any, messages: list[dict[str, Any]], settings: SimulatorSettings
) -> None:
    """Check response_format against the server's structured-output support."""
    if settings.json_schema == "none":
        raise APIError(
            "Unrecognized request argument supplied: response_format",
            param="response_format",
        )
    if not isinstance(response_format, dict):
        raise invalid_type("response_format", "an object", response_format)
    kind = response_format.get("type")
    kinds = ("text", "json_object", "json_schema")
    if kind not in kinds:
        raise invalid_value("response_format.type", kind, kinds)
    if kind == "json_object" and not any(
        "json" in _text(message.get("content")).lower() for message in messages
    ):
        raise APIError(
            "'messages' must contain the word 'json' in some form, to use "
            "'response_format' of type 'json_object'.",
            param="messages",
        )
    if kind != "json_schema":
        return
    if settings.json_schema == "json_object":
        raise APIError(
            "This response_format type is unavailable now",
            param="response_format.type",
            code="invalid_value",
        )
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict):
        raise missing("response_format.json_schema")
    name = spec.get("name")
    _validate_name(name, "response_format.json_schema.name")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise invalid_type("response_format.json_schema.schema", "an object", schema)
    if spec.get("strict") is not True:
        return
    if settings.json_schema == "non_strict":
        raise APIError(
            "Invalid 'response_format.json_schema.strict': strict structured "
            "outputs are not supported by this server.",
            param="response_format.json_schema.strict",
            code="invalid_value",
        )
    if problem := strict_schema_problem(schema):
        raise APIError(
            f"Invalid schema for response_format '{name}': {problem}",
            param="response_format",
        )


def _validate_logprobs(body: dict[str, Any]) -> None:
    """Check top_logprobs: 0 to 20, and only with logprobs."""
    top = body.get("top_logprobs")
    if top is None:
        return
    if not body.get("logprobs"):
        raise APIError(
            "Error: 'logprobs' must be set to true in order to use top_logprobs",
            param="top_logprobs",
        )
    if not isinstance(top, int) or isinstance(top, bool):
        raise invalid_type("top_logprobs", "an integer", top)
    if not 0 <= top <= 20:
        raise APIError(
            f"Invalid 'top_logprobs': integer out of range. Expected a value between "
            f"0 and 20, but got {top} instead.",
            param="top_logprobs",
            code="integer_out_of_range",
        )


# --- answers ----------------------------------------------------------------


@dataclass(slots=True)
class Answer:
    """What the simulated assistant says, before it is put on the wire."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    # Per-token logprob entries; when set, the text is their concatenation.
    tokens: list[dict[str, Any]] | None = None

    @property
    def finish_reason(self) -> str:
        """Return the finish reason the answer ends with."""
        return "tool_calls" if self.tool_calls else "stop"


def answer(body: dict[str, Any], settings: SimulatorSettings) -> Answer:
    """Return the built-in answer to a valid request.

    In order of precedence: a tool call for an on/off command (or a forced
    tool_choice), JSON for a response_format, a summary of trailing tool
    results, a label token when logprobs are asked for, else an echo.
    """
    messages: list[dict[str, Any]] = body["messages"]
    user_text = next(
        (_text(m.get("content")) for m in reversed(messages) if m["role"] == "user"), ""
    )
    ignored = tool_choice_kind(body.get("tool_choice")) in settings.ignore_tools_when
    top = body.get("top_logprobs") or 0
    enum = _label_enum(body.get("response_format"))
    if enum and settings.logprobs and body.get("logprobs"):
        answer = _enum_answer(enum, top)
        if body.get("post_sampling_probs"):
            return _after_sampling(answer)
        return _before_grammar(answer) if settings.logprobs_before_grammar else answer
    result = None if ignored else _tool_answer(body, messages)
    if result is None:
        result = _structured_answer(
            body.get("response_format"), messages, settings.unbounded_number
        )
    if result is None and messages[-1]["role"] == "tool":
        result = Answer(_summarise_tool_results(messages))
    if result is None and settings.logprobs and body.get("logprobs"):
        if not settings.labels_in_top:
            return Answer("The", tokens=[_token_entry("The", [], top)])
        return _logprob_answer(messages, user_text, top)
    if result is None:
        result = Answer(_echo(user_text) if user_text else _describe(messages[-1]))
    if settings.reasoning:
        words = len(user_text.split())
        result.reasoning = f"The user wrote {words} words. I will answer briefly."
    return result


def tool_choice_kind(choice: Any) -> str:
    """Name a tool_choice: absent, auto, none, required, or forced (one tool)."""
    if choice is None:
        return "absent"
    return choice if isinstance(choice, str) else "forced"


def _text(content: Any) -> str:
    """Return the text of string or list-of-parts content."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _echo(user_text: str) -> str:
    """Repeat the user's words, never ending with a question mark.

    Home Assistant keeps the conversation open (continue_conversation) after
    an answer that ends with one, so an echoed question would make every
    question look like the assistant asking back. A test that wants that
    scripts such an answer.
    """
    if user_text.rstrip().endswith(_QUESTION_MARKS):
        return f"You asked: {user_text.rstrip()} The simulator has no answer."
    return f"You said: {user_text}"


def _describe(message: dict[str, Any]) -> str:
    """Describe a message that has no text, such as a lone image."""
    content = message.get("content")
    parts = len(content) if isinstance(content, list) else 0
    return f"You sent {parts} attachment{'s' if parts != 1 else ''}."


def _tool_names(tools: Any) -> list[str]:
    """Return the names of the offered function tools."""
    return [
        tool["function"]["name"]
        for tool in tools or ()
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
    ]


def _tool_answer(body: dict[str, Any], messages: list[dict[str, Any]]) -> Answer | None:
    """Call a tool for a simple home command or question, or when tool_choice demands one."""
    tools = body.get("tools") or []
    choice = body.get("tool_choice", "auto")
    if not tools or choice == "none" or messages[-1]["role"] != "user":
        return None
    names = _tool_names(tools)
    if match := _COMMAND.match(_text(messages[-1].get("content"))):
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
    if call := home.tool_for(_text(messages[-1].get("content")), names):
        return Answer(tool_calls=[call])
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
                if (found := schema_in_text(_text(message.get("content"))))
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
            question = _text(message.get("content"))
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
                result = json.loads(_text(message.get("content")))
            except ValueError:
                result = _text(message.get("content"))
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


# --- logprobs ---------------------------------------------------------------


def _labels(text: str) -> list[str]:
    """Guess the answer labels a classification prompt offers."""
    yes = re.search(r"\byes\b", text, re.IGNORECASE)
    if yes and re.search(r"\bno\b", text, re.IGNORECASE):
        first = yes[0]
        return [first, "No" if first[0].isupper() else "no"]
    quoted = list(dict.fromkeys(re.findall(r"[\"'“‘]([\w -]{1,24})[\"'”’]", text)))
    if len(quoted) >= 2:
        return quoted
    letters = list(dict.fromkeys(re.findall(r"(?m)^\s*\(?([A-H])[).:]", text)))
    if len(letters) >= 2:
        return letters
    if span := re.search(r"\b(\d)\s*(?:-|–|to)\s*(\d{1,2})\b", text):
        low, high = int(span[1]), int(span[2])
        if low < high <= 10:
            return [str(value) for value in range(low, high + 1)]
    return []


def _token_entry(token: str, others: list[str], top: int) -> dict[str, Any]:
    """Return a logprobs content entry for a token and its likely alternatives."""
    candidates = [token, f" {token}", token.upper(), token.lower(), token.capitalize()]
    candidates += others + [f" {other}" for other in others] + list(_FILLER_TOKENS)
    top_list = [
        {
            "token": candidate,
            "logprob": -0.05 if rank == 0 else round(-2.0 - 0.75 * rank, 4),
            "bytes": list(candidate.encode()),
        }
        for rank, candidate in enumerate(dict.fromkeys(candidates))
    ][:top]
    return {
        "token": token,
        "logprob": -0.05,
        "bytes": list(token.encode()),
        "top_logprobs": top_list,
    }


def _label_enum(response_format: Any) -> list[str] | None:
    """Return the labels a json_schema of one string among them allows, if so."""
    if not isinstance(response_format, dict):
        return None
    schema = (response_format.get("json_schema") or {}).get("schema") or {}
    enum = schema.get("enum") if schema.get("type") == "string" else None
    return [str(label) for label in enum] if enum else None


def _enum_answer(labels: list[str], top: int) -> Answer:
    """Answer a label held to an enum as a grammar holds it.

    Its opening quote, then the labels alone, then the closing quote.
    """
    quote = _token_entry('"', [], 1)
    tokens = [quote, _token_entry(labels[0], labels[1:], top), quote]
    for entry in tokens[1]["top_logprobs"]:
        if entry["token"] not in labels:
            entry["logprob"] = -30.0
    return Answer("".join(t["token"] for t in tokens), tokens=tokens)


def _before_grammar(answer: Answer) -> Answer:
    """Give the label's alternatives as the model ranked them before the grammar.

    The label chosen under the grammar is far down, and no other label is near.
    """
    _quote, label, _end = answer.tokens or ()
    label["logprob"] = -12.0
    label["top_logprobs"] = _token_entry("The", [], len(label["top_logprobs"]))[
        "top_logprobs"
    ]
    return answer


def _after_sampling(answer: Answer) -> Answer:
    """Give an answer's token alternatives as llama.cpp does after sampling."""
    for entry in answer.tokens or ():
        if "prob" in entry:  # a token that comes twice (the quotes) is one entry
            continue
        entry["prob"] = math.exp(entry.pop("logprob"))
        entry["top_probs"] = [
            {"token": other["token"], "prob": math.exp(other["logprob"])}
            for other in entry.pop("top_logprobs")
        ]
    return answer


def _logprob_answer(messages: list[dict[str, Any]], user_text: str, top: int) -> Answer:
    """Answer with one label token, or echo, with logprobs for every token."""
    prompt = "\n".join(
        _text(m.get("content"))
        for m in messages
        if m["role"] in ("system", "developer", "user")
    )
    if labels := _labels(prompt):
        tokens = [_token_entry(labels[0], labels[1:], top)]
    else:
        words = re.findall(r"\s*\S+", _echo(user_text))
        tokens = [_token_entry(word, [], top) for word in words]
    return Answer("".join(t["token"] for t in tokens), tokens=tokens)


# --- wire form --------------------------------------------------------------


def usage(body: dict[str, Any], result: Answer) -> dict[str, Any]:
    """Return the usage block of an answer."""
    prompt = prompt_tokens(body)
    reasoning = count_tokens(result.reasoning or "")
    completion = (
        count_tokens(result.text)
        + sum(count_tokens(name + args) for _, name, args in result.tool_calls)
        + reasoning
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _spoken(result: Answer, reasoning_mode: str | None) -> str:
    """Return the content text, with reasoning inlined for think-tag servers."""
    if reasoning_mode == "think_tags" and result.reasoning:
        return f"<think>\n{result.reasoning}\n</think>\n\n{result.text}"
    return result.text


def completion(
    result: Answer, *, model: str, reasoning_mode: str | None, usage: dict[str, Any]
) -> dict[str, Any]:
    """Return the non-streamed `chat.completion` body."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": _spoken(result, reasoning_mode) or None,
        "refusal": None,
        "annotations": [],
    }
    if result.reasoning and reasoning_mode not in (None, "think_tags"):
        message[str(reasoning_mode)] = result.reasoning
    if result.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
            for call_id, name, args in result.tool_calls
        ]
    logprobs = {"content": result.tokens, "refusal": None} if result.tokens else None
    return {
        "id": new_id("chatcmpl-", 29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": logprobs,
                "finish_reason": result.finish_reason,
            }
        ],
        "usage": usage,
        "system_fingerprint": "fp_simulator",
    }


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    index: int = 0,
    usage: dict[str, Any] | None = None,
    logprobs: dict[str, Any] | None = None,
) -> Chunk:
    """Return one `chat.completion.chunk`; without a delta it has no choices.

    The server fills in id, object, created and model when it sends the chunk.
    """
    result: Chunk = {"choices": []}
    if delta is not None:
        result["choices"].append(
            {
                "index": index,
                "delta": delta,
                "logprobs": logprobs,
                "finish_reason": finish_reason,
            }
        )
    if usage is not None:
        result["usage"] = usage
    return result


def _pieces(text: str, size: int) -> list[str]:
    """Cut text into pieces of `size` characters."""
    size = max(1, size)
    return [text[start : start + size] for start in range(0, len(text), size)]


def stream_chunks(
    result: Answer,
    *,
    reasoning_mode: str | None,
    usage: dict[str, Any] | None,
    split: int = 4,
) -> list[Chunk]:
    """Return the chunks of a streamed answer, from role to usage."""
    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if result.reasoning and reasoning_mode not in (None, "think_tags"):
        chunks += [
            chunk({str(reasoning_mode): piece})
            for piece in _pieces(result.reasoning, split)
        ]
    if result.tokens:
        chunks += [
            chunk({"content": t["token"]}, logprobs={"content": [t], "refusal": None})
            for t in result.tokens
        ]
    else:
        chunks += [
            chunk({"content": piece})
            for piece in _pieces(_spoken(result, reasoning_mode), split)
        ]
    for position, (call_id, name, arguments) in enumerate(result.tool_calls):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": position,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        chunks += [
            chunk(
                {"tool_calls": [{"index": position, "function": {"arguments": piece}}]}
            )
            for piece in _pieces(arguments, math.ceil(len(arguments) / 4))
        ]
    chunks.append(chunk({}, finish_reason=result.finish_reason))
    if usage is not None:
        chunks.append(chunk(None, usage=usage))
    return chunks


def sse_text(
    text: str,
    *,
    split: int = 4,
    reasoning: str | None = None,
    reasoning_field: str = "reasoning_content",
    usage: dict[str, Any] | None = None,
) -> list[Chunk]:
    """Return a complete streamed text answer, for `enqueue(..., sse=...)`."""
    return stream_chunks(
        Answer(text, reasoning=reasoning),
        reasoning_mode=reasoning_field,
        usage=usage,
        split=split,
    )


def sse_tool_calls(
    calls: list[tuple[str, str, dict[str, Any] | str | None]],
    *,
    text: str | None = None,
) -> list[Chunk]:
    """Return a streamed tool-call answer; each call's arguments arrive in fragments.

    Arguments given as a dict are sent as JSON, a string as is, None as nothing.
    """
    wire_calls = [
        (call_id, name, json.dumps(args) if isinstance(args, dict) else args or "")
        for call_id, name, args in calls
    ]
    return stream_chunks(
        Answer(text or "", tool_calls=wire_calls), reasoning_mode=None, usage=None
    )
