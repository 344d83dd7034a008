"""The Responses API: request validation, checked like OpenAI checks it.

A request is also translated to the Chat Completions form (`chat_body`), so
that the built-in answers of chat.py answer it too (see responses_output.py).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any

from .chat import is_reasoning_model
from .schema import strict_schema_problem
from .wire import (
    APIError,
    decode_data_url,
    empty_array,
    invalid_type,
    invalid_value,
    missing,
    unknown_parameter,
)

if TYPE_CHECKING:
    from .server import SimulatorSettings

# Items a response gives back, which a request may send again as input.
OUTPUT_ITEMS = (
    "message",
    "function_call",
    "reasoning",
    "web_search_call",
    "code_interpreter_call",
    "image_generation_call",
)
ITEM_TYPES = (*OUTPUT_ITEMS, "function_call_output")
HOSTED_TOOLS = (
    "web_search",
    "web_search_preview",
    "code_interpreter",
    "image_generation",
)
INCLUDES = (
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
    "web_search_call.results",
)
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
SUMMARIES = ("auto", "concise", "detailed")
VERBOSITIES = ("low", "medium", "high")
CONTEXT_SIZES = ("low", "medium", "high")
SERVICE_TIERS = ("auto", "default", "flex", "scale", "priority")
_INPUT_ROLES = ("user", "system", "developer", "assistant")
_PARTS = {
    "assistant": ("output_text", "refusal", "input_text"),
    "user": ("input_text", "input_image", "input_file"),
}
_TEXT_PARTS = ("input_text",)
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_ENCRYPTED_PREFIX = "gAAAAsim"
_MIN_OUTPUT_TOKENS = 16
_SUMMARY_REFUSED = (
    "Your organization must be verified to generate reasoning summaries. Please go "
    "to: https://platform.openai.com/settings/organization/general and click on "
    "Verify Organization. If you just verified, it can take up to 15 minutes for "
    "access to propagate."
)


def encrypt_reasoning(item_id: str, summary: str) -> str:
    """Return the opaque content of a reasoning item, as this server issues it."""
    return (
        _ENCRYPTED_PREFIX + base64.b64encode(f"{item_id}\n{summary}".encode()).decode()
    )


def decrypt_reasoning(item_id: str, encrypted: str) -> str | None:
    """Return the summary hidden in a reasoning item's content; None if not ours."""
    if not encrypted.startswith(_ENCRYPTED_PREFIX):
        return None
    try:
        text = base64.b64decode(encrypted[len(_ENCRYPTED_PREFIX) :], validate=True)
    except binascii.Error:
        return None
    owner, _, summary = text.decode(errors="replace").partition("\n")
    return summary if owner == item_id else None


def validate(body: Any, settings: SimulatorSettings) -> None:
    """Raise APIError for what OpenAI's /v1/responses would refuse."""
    if not isinstance(body, dict):
        raise APIError("We could not parse the JSON body of your request.")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise missing("model")
    if "input" not in body:
        raise missing("input")
    if "messages" in body:
        raise unknown_parameter("messages")
    if body.get("previous_response_id") is not None:
        raise APIError(
            f"Previous response with id '{body['previous_response_id']}' not found.",
            status=404,
            param="previous_response_id",
        )
    if "prompt_cache_key" in body and not settings.prompt_cache_key:
        raise unknown_parameter("prompt_cache_key")
    for name in ("stream", "store"):
        if name in body and not isinstance(body[name], bool):
            raise invalid_type(name, "a boolean", body[name])
    _validate_sampling(body, model)
    _validate_service_tier(body, model, settings)
    _validate_reasoning(body.get("reasoning"), model, settings)
    _validate_text(body.get("text"), body["input"], model, settings)
    _validate_include(body.get("include"))
    _validate_tools(body.get("tools"), model, settings)
    _validate_tool_choice(body.get("tool_choice"), body.get("tools"))
    _validate_input(body["input"], stored=bool(body.get("store", True)))


def _validate_sampling(body: dict[str, Any], model: str) -> None:
    """Check the token limit, top_logprobs and the sampling parameters."""
    limit = body.get("max_output_tokens")
    if limit is not None:
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise invalid_type("max_output_tokens", "an integer", limit)
        if limit < _MIN_OUTPUT_TOKENS:
            raise APIError(
                "Invalid 'max_output_tokens': integer below minimum value. Expected "
                f"a value >= {_MIN_OUTPUT_TOKENS}, but got {limit} instead.",
                param="max_output_tokens",
                code="integer_below_min_value",
            )
    top = body.get("top_logprobs")
    if top is not None and (
        not isinstance(top, int) or isinstance(top, bool) or not 0 <= top <= 20
    ):
        raise APIError(
            "Invalid 'top_logprobs': integer out of range. Expected a value between "
            f"0 and 20, but got {top} instead.",
            param="top_logprobs",
            code="integer_out_of_range",
        )
    if is_reasoning_model(model):
        for name in ("temperature", "top_p"):
            if name in body:
                raise APIError(
                    f"Unsupported parameter: '{name}' is not supported with this model.",
                    param=name,
                    code="unsupported_parameter",
                )


def _validate_service_tier(
    body: dict[str, Any], model: str, settings: SimulatorSettings
) -> None:
    """Check `service_tier` against the tiers this server offers."""
    if "service_tier" not in body:
        return
    if not settings.service_tiers:
        raise unknown_parameter("service_tier")
    tier = body["service_tier"]
    if tier not in SERVICE_TIERS:
        raise invalid_value("service_tier", tier, SERVICE_TIERS)
    if tier not in settings.service_tiers:
        raise APIError(
            f"Unsupported value: 'service_tier' does not support '{tier}' with "
            f"the '{model}' model.",
            param="service_tier",
            code="unsupported_value",
        )
    if tier == "flex" and settings.flex_busy:
        raise APIError(
            "Resource unavailable: flex processing has no capacity right now. "
            "Try again later, or use the default service tier.",
            status=429,
            code="resource_unavailable",
            type_="rate_limit_error",
        )


def _validate_reasoning(
    reasoning: Any, model: str, settings: SimulatorSettings
) -> None:
    """Check `reasoning`: only reasoning models take it."""
    if reasoning is None:
        return
    if not isinstance(reasoning, dict):
        raise invalid_type("reasoning", "an object", reasoning)
    if not is_reasoning_model(model):
        raise APIError(
            "Unsupported parameter: 'reasoning.effort' is not supported with this "
            "model.",
            param="reasoning.effort",
            code="unsupported_parameter",
        )
    effort = reasoning.get("effort")
    if effort is not None and effort not in EFFORTS:
        raise invalid_value("reasoning.effort", effort, EFFORTS)
    summary = reasoning.get("summary")
    if summary is None:
        return
    if summary not in SUMMARIES:
        raise invalid_value("reasoning.summary", summary, SUMMARIES)
    if not settings.reasoning_summaries:
        raise APIError(
            _SUMMARY_REFUSED, param="reasoning.summary", code="unsupported_value"
        )


def _validate_text(
    text: Any, request_input: Any, model: str, settings: SimulatorSettings
) -> None:
    """Check `text`: its format (structured output) and verbosity."""
    if text is None:
        return
    if not isinstance(text, dict):
        raise invalid_type("text", "an object", text)
    verbosity = text.get("verbosity")
    if verbosity is not None:
        if verbosity not in VERBOSITIES:
            raise invalid_value("text.verbosity", verbosity, VERBOSITIES)
        if verbosity != "medium" and not _is_gpt5(model):
            raise APIError(
                f"Unsupported value: '{verbosity}' is not supported with the "
                f"'{model}' model. Supported values are: 'medium'.",
                param="text.verbosity",
                code="unsupported_value",
            )
    if (text_format := text.get("format")) is not None:
        _validate_format(text_format, request_input, settings)


def _is_gpt5(model: str) -> bool:
    """Tell whether the model is of the GPT-5 family, which takes a verbosity."""
    name = model.lower().rsplit("/", 1)[-1]
    return name.startswith("gpt-5") and not name.startswith("gpt-5-chat")


def _validate_format(
    text_format: Any, request_input: Any, settings: SimulatorSettings
) -> None:
    """Check `text.format` against the server's structured-output support."""
    if settings.json_schema == "none":
        raise unknown_parameter("text.format")
    if not isinstance(text_format, dict):
        raise invalid_type("text.format", "an object", text_format)
    kind = text_format.get("type")
    kinds = ("text", "json_object", "json_schema")
    if kind not in kinds:
        raise invalid_value("text.format.type", kind, kinds)
    if kind == "json_object" and "json" not in input_text(request_input).lower():
        raise APIError(
            "Response input messages must contain the word 'json' in some form to "
            "use 'text.format' of type 'json_object'.",
            param="input",
        )
    if kind != "json_schema":
        return
    if settings.json_schema == "json_object":
        raise APIError(
            "This text.format type is unavailable now",
            param="text.format.type",
            code="invalid_value",
        )
    name = text_format.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise missing("text.format.name")
    schema = text_format.get("schema")
    if not isinstance(schema, dict):
        raise invalid_type("text.format.schema", "an object", schema)
    if text_format.get("strict") is not True:
        return
    if settings.json_schema == "non_strict":
        raise APIError(
            "Invalid 'text.format.strict': strict structured outputs are not "
            "supported by this server.",
            param="text.format.strict",
            code="invalid_value",
        )
    if problem := strict_schema_problem(schema):
        raise APIError(
            f"Invalid schema for response_format '{name}': {problem}",
            param="text.format.schema",
            code="invalid_json_schema",
        )


def _validate_include(include: Any) -> None:
    """Check that `include` lists only what can be included."""
    if include is None:
        return
    if not isinstance(include, list):
        raise invalid_type("include", "an array", include)
    for index, value in enumerate(include):
        if value not in INCLUDES:
            raise invalid_value(f"include[{index}]", value, INCLUDES)


def _validate_tools(tools: Any, model: str, settings: SimulatorSettings) -> None:
    """Check function tools and the provider-run tools this server runs."""
    if tools is None:
        return
    if not isinstance(tools, list):
        raise invalid_type("tools", "an array", tools)
    for index, tool in enumerate(tools):
        param = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise invalid_type(param, "an object", tool)
        kind = tool.get("type")
        if kind == "function":
            _validate_function(tool, param, settings)
        elif kind in HOSTED_TOOLS:
            if kind not in settings.hosted_tools:
                raise APIError(
                    f"Hosted tool '{kind}' is not supported with {model}.",
                    param=f"{param}.type",
                    code="unsupported_value",
                )
            _validate_hosted(tool, kind, param)
        else:
            raise invalid_value(f"{param}.type", kind, ("function", *HOSTED_TOOLS))


def _validate_function(
    tool: dict[str, Any], param: str, settings: SimulatorSettings
) -> None:
    """Check one function tool: a name and an object schema."""
    if not settings.supports_tools:
        raise APIError("registry.ollama.ai/library/gemma:2b does not support tools")
    if "function" in tool:
        raise unknown_parameter(f"{param}.function")
    name = tool.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise missing(f"{param}.name")
    parameters = tool.get("parameters")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise APIError(
            f"Invalid schema for function '{name}': schema must be a JSON Schema of "
            "'type: \"object\"'.",
            param=f"{param}.parameters",
            code="invalid_function_parameters",
        )
    if tool.get("strict") is True and (problem := strict_schema_problem(parameters)):
        raise APIError(
            f"Invalid schema for function '{name}': {problem}",
            param=f"{param}.parameters",
            code="invalid_function_parameters",
        )


def _validate_hosted(tool: dict[str, Any], kind: str, param: str) -> None:
    """Check the settings of a provider-run tool."""
    if kind.startswith("web_search"):
        size = tool.get("search_context_size")
        if size is not None and size not in CONTEXT_SIZES:
            raise invalid_value(f"{param}.search_context_size", size, CONTEXT_SIZES)
        if (location := tool.get("user_location")) is not None:
            _validate_location(location, f"{param}.user_location")
    elif kind == "code_interpreter":
        container = tool.get("container")
        if container is None:
            raise missing(f"{param}.container")
        if not isinstance(container, (str, dict)):
            raise invalid_type(f"{param}.container", "an object", container)


def _validate_location(location: Any, param: str) -> None:
    """Check an approximate user location."""
    if not isinstance(location, dict):
        raise invalid_type(param, "an object", location)
    if location.get("type") != "approximate":
        raise invalid_value(f"{param}.type", location.get("type"), ("approximate",))
    country = location.get("country")
    if country is not None and not _COUNTRY.match(str(country)):
        raise APIError(
            f"Invalid '{param}.country': expected a two-letter ISO country code.",
            param=f"{param}.country",
            code="invalid_value",
        )


def _validate_tool_choice(choice: Any, tools: Any) -> None:
    """Check tool_choice: a mode, or a tool that is offered."""
    if choice is None or choice in ("none", "auto", "required"):
        return
    if not isinstance(choice, dict):
        raise invalid_value("tool_choice", choice, ("none", "auto", "required"))
    offered = [tool for tool in tools or () if isinstance(tool, dict)]
    kind = choice.get("type")
    if kind == "function":
        found = any(tool.get("name") == choice.get("name") for tool in offered)
    else:
        found = any(tool.get("type") == kind for tool in offered)
    if not found:
        raise APIError(
            f"Tool choice '{kind}' not found in 'tools' parameter.",
            param="tool_choice",
        )


def _validate_input(request_input: Any, *, stored: bool) -> None:
    """Check the input items, the pairing of calls and their outputs included."""
    if isinstance(request_input, str):
        return
    if not isinstance(request_input, list):
        raise invalid_type("input", "a string or an array", request_input)
    if not request_input:
        raise empty_array("input")
    calls: set[str] = set()
    for index, item in enumerate(request_input):
        param = f"input[{index}]"
        if not isinstance(item, dict):
            raise invalid_type(param, "an object", item)
        kind = item.get("type", "message")
        if kind not in ITEM_TYPES:
            raise invalid_value(f"{param}.type", kind, ITEM_TYPES)
        if kind == "message":
            _validate_message(item, param)
        elif kind == "function_call":
            calls.add(_validate_call(item, param))
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                raise APIError(
                    "No tool call found for function call output with call_id "
                    f"{item.get('call_id')}.",
                    param="input",
                )
            if not isinstance(item.get("output"), (str, list)):
                raise missing(f"{param}.output")
        elif kind == "reasoning":
            _validate_reasoning_item(request_input, index, stored=stored)
        elif not isinstance(item.get("id"), str):
            raise missing(f"{param}.id")


def _validate_message(item: dict[str, Any], param: str) -> None:
    """Check a message: its role and its content parts."""
    role = item.get("role")
    if role not in _INPUT_ROLES:
        raise invalid_value(f"{param}.role", role, _INPUT_ROLES)
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise invalid_type(f"{param}.content", "a string or an array", content)
    allowed = _PARTS.get(str(role), _TEXT_PARTS)
    for number, part in enumerate(content):
        _validate_part(part, allowed, f"{param}.content[{number}]")


def _validate_part(part: Any, allowed: tuple[str, ...], param: str) -> None:
    """Check one content part; data URLs must decode."""
    if not isinstance(part, dict):
        raise invalid_type(param, "an object", part)
    kind = part.get("type")
    if kind not in allowed:
        raise invalid_value(f"{param}.type", kind, allowed)
    if kind in ("input_text", "output_text"):
        if not isinstance(part.get("text"), str):
            raise missing(f"{param}.text")
    elif kind == "refusal":
        if not isinstance(part.get("refusal"), str):
            raise missing(f"{param}.refusal")
    elif kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) and not isinstance(part.get("file_id"), str):
            raise missing(f"{param}.image_url")
        if isinstance(url, str) and not url.startswith(("http://", "https://")):
            decode_data_url(url, f"{param}.image_url", image=True)
        if part.get("detail", "auto") not in ("auto", "low", "high"):
            raise invalid_value(
                f"{param}.detail", part.get("detail"), ("auto", "low", "high")
            )
    else:
        _validate_file(part, param)


def _validate_file(part: dict[str, Any], param: str) -> None:
    """Check an input file: its data with a name, or a file id or URL."""
    data = part.get("file_data")
    if isinstance(data, str):
        if not isinstance(part.get("filename"), str):
            raise missing(f"{param}.filename")
        decode_data_url(data, f"{param}.file_data", image=False)
    elif not isinstance(part.get("file_id"), str) and not isinstance(
        part.get("file_url"), str
    ):
        raise missing(f"{param}.file_data")


def _validate_call(item: dict[str, Any], param: str) -> str:
    """Check a function call given back; return its call id."""
    for name in ("call_id", "name", "arguments"):
        if not isinstance(item.get(name), str):
            raise missing(f"{param}.{name}")
    return str(item["call_id"])


def _validate_reasoning_item(
    request_input: list[Any], index: int, *, stored: bool
) -> None:
    """Check a reasoning item: ours, with its content, followed by its output."""
    item = request_input[index]
    item_id = item.get("id")
    if not isinstance(item_id, str):
        raise missing(f"input[{index}].id")
    if not isinstance(item.get("summary"), list):
        raise missing(f"input[{index}].summary")
    encrypted = item.get("encrypted_content")
    if encrypted is None and not stored:
        raise APIError(
            f"Item with id '{item_id}' not found. Items are not persisted when "
            "`store` is set to false. Try again with `store` set to true, or remove "
            "this item from your input.",
            status=404,
            param="input",
        )
    if encrypted is not None and (
        not isinstance(encrypted, str) or decrypt_reasoning(item_id, encrypted) is None
    ):
        raise APIError(
            f"The encrypted content for item {item_id} could not be verified.",
            param="input",
            code="invalid_encrypted_content",
        )
    following = request_input[index + 1] if index + 1 < len(request_input) else None
    if not _is_output(following):
        raise APIError(
            f"Item '{item_id}' of type 'reasoning' was provided without its required "
            "following item.",
            param="input",
        )


def _is_output(item: Any) -> bool:
    """Tell whether an input item is one a model gave (not reasoning)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in OUTPUT_ITEMS and kind != "reasoning"


# --- the Chat Completions form, for the built-in answers ----------------------


def input_text(request_input: Any) -> str:
    """Return all the text of the input's messages, joined."""
    if isinstance(request_input, str):
        return request_input
    return "\n".join(
        _text(item.get("content"))
        for item in request_input or ()
        if isinstance(item, dict) and item.get("type", "message") == "message"
    )


def _text(content: Any) -> str:
    """Return the text of a message's content."""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text"))
        for part in content or ()
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """Return the request in the Chat Completions form that chat.answer reads."""
    messages: list[dict[str, Any]] = []
    if isinstance(instructions := body.get("instructions"), str):
        messages.append({"role": "system", "content": instructions})
    request_input = body["input"]
    if isinstance(request_input, str):
        request_input = [{"role": "user", "content": request_input}]
    for item in request_input:
        _add_message(messages, item)
    if not messages:
        messages.append({"role": "user", "content": ""})
    chat: dict[str, Any] = {"model": body["model"], "messages": messages}
    if tools := [
        tool for tool in body.get("tools") or () if tool["type"] == "function"
    ]:
        chat["tools"] = [
            {
                "type": "function",
                "function": {
                    key: tool[key]
                    for key in ("name", "description", "parameters")
                    if key in tool
                },
            }
            for tool in tools
        ]
        chat["tool_choice"] = _chat_tool_choice(body.get("tool_choice"))
    if response_format := _response_format((body.get("text") or {}).get("format")):
        chat["response_format"] = response_format
    if "message.output_text.logprobs" in (body.get("include") or ()):
        chat["logprobs"] = True
        chat["top_logprobs"] = body.get("top_logprobs") or 0
    if (limit := body.get("max_output_tokens")) is not None:
        chat["max_tokens"] = limit
    return chat


def _add_message(messages: list[dict[str, Any]], item: dict[str, Any]) -> None:
    """Add the chat message an input item stands for, if any."""
    kind = item.get("type", "message")
    if kind == "message":
        role = "system" if item["role"] == "developer" else item["role"]
        messages.append({"role": role, "content": _chat_content(item["content"])})
    elif kind == "function_call":
        call = {
            "id": item["call_id"],
            "type": "function",
            "function": {"name": item["name"], "arguments": item["arguments"]},
        }
        last = messages[-1] if messages else None
        if last and last["role"] == "assistant" and "tool_calls" in last:
            last["tool_calls"].append(call)
        else:
            messages.append(
                {"role": "assistant", "content": None, "tool_calls": [call]}
            )
    elif kind == "function_call_output":
        output = item["output"]
        messages.append(
            {
                "role": "tool",
                "tool_call_id": item["call_id"],
                "content": output if isinstance(output, str) else _text(output),
            }
        )


def _chat_content(content: Any) -> Any:
    """Return message content with its parts in the Chat Completions form."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if part["type"] in ("input_text", "output_text"):
            parts.append({"type": "text", "text": part["text"]})
        elif part["type"] == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": "image"}})
    return parts or ""


def _chat_tool_choice(choice: Any) -> Any:
    """Return tool_choice in the Chat Completions form."""
    if isinstance(choice, dict):
        if choice.get("type") == "function":
            return {"type": "function", "function": {"name": choice["name"]}}
        return "auto"
    return choice or "auto"


def _response_format(text_format: Any) -> dict[str, Any] | None:
    """Return `text.format` as a Chat Completions response_format."""
    if not isinstance(text_format, dict) or text_format["type"] == "text":
        return None
    if text_format["type"] == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": text_format["name"],
            "schema": text_format["schema"],
            "strict": bool(text_format.get("strict")),
        },
    }
