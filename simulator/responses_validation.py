"""Responses API requests, checked as OpenAI checks them (their input: responses_input.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .models import is_gpt5, is_reasoning_model
from .responses_as_chat import input_text
from .responses_input import validate_input
from .schema import strict_schema_problem
from .settings import HOSTED_TOOLS
from .wire import APIError, invalid_type, invalid_value, missing, unknown_parameter

if TYPE_CHECKING:
    from .settings import SimulatorSettings

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
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_MIN_OUTPUT_TOKENS = 16
_SUMMARY_REFUSED = (
    "Your organization must be verified to generate reasoning summaries. Please go "
    "to: https://platform.openai.com/settings/organization/general and click on "
    "Verify Organization. If you just verified, it can take up to 15 minutes for "
    "access to propagate."
)


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
    validate_input(body["input"], stored=bool(body.get("store", True)))


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
        if verbosity != "medium" and not is_gpt5(model):
            raise APIError(
                f"Unsupported value: '{verbosity}' is not supported with the "
                f"'{model}' model. Supported values are: 'medium'.",
                param="text.verbosity",
                code="unsupported_value",
            )
    if (text_format := text.get("format")) is not None:
        _validate_format(text_format, request_input, settings)


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
