"""Chat Completions requests, checked as OpenAI checks them."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .chat_messages import message_text, tool_names
from .models import is_reasoning_model
from .schema import strict_schema_problem
from .wire import (
    APIError,
    decode_data_url,
    empty_array,
    invalid_type,
    invalid_value,
    missing,
)

if TYPE_CHECKING:
    from .settings import SimulatorSettings

ROLES = ("system", "assistant", "user", "function", "tool", "developer")
_PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
_TEXT_ONLY = ("text",)
_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


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
    if name not in tool_names(tools):
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
        "json" in message_text(message.get("content")).lower() for message in messages
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
