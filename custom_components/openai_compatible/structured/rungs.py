"""The structured-output ladder: how to ask a server for JSON of a schema."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from ..const import LOGGER
from ..errors import RequestRejectedError
from ..features import RESPONSE_FORMATS
from ..models.capabilities import ModelCapabilities
from ..net.shapes import JsonSchema, ResponseFormat
from .json_answer import schema_instructions
from .selector_schema import StrictUnsupported, strict_json_schema

RUNG_STRICT: Final = 0
RUNG_SCHEMA: Final = 1
RUNG_JSON_OBJECT: Final = 2
RUNG_INSTRUCTIONS: Final = 3
RUNG_NAMES: Final = ("json_schema strict", "json_schema", "json_object", "prompt")


@dataclass(frozen=True, slots=True)
class StructuredRequest:
    """How one rung asks for JSON: a response format and extra instructions."""

    rung: int
    response_format: ResponseFormat | None
    instructions: str | None


def structured_request(
    rung: int, name: str, schema: JsonSchema, strict: JsonSchema | None
) -> StructuredRequest:
    """Return the request of a rung of the ladder for a schema."""
    if rung == RUNG_STRICT and strict is not None:
        return StructuredRequest(
            rung,
            {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": strict, "strict": True},
            },
            None,
        )
    if rung <= RUNG_SCHEMA:
        return StructuredRequest(
            RUNG_SCHEMA,
            {"type": "json_schema", "json_schema": {"name": name, "schema": schema}},
            None,
        )
    # llama.cpp holds the answer to a schema beside json_object; a refusal drops it.
    response_format: ResponseFormat | None = (
        {"type": "json_object", "schema": schema} if rung == RUNG_JSON_OBJECT else None
    )
    return StructuredRequest(rung, response_format, schema_instructions(schema))


def start_rung(capabilities: ModelCapabilities) -> int:
    """Return the strongest rung the model is not known to refuse."""
    start = capabilities.structured_output_start()
    return RUNG_INSTRUCTIONS if start is None else RESPONSE_FORMATS.index(start)


async def async_climb[T](
    capabilities: ModelCapabilities,
    name: str,
    schema: JsonSchema,
    attempt: Callable[[StructuredRequest], Awaitable[T]],
    on_rejected: Callable[[StructuredRequest, RequestRejectedError], None]
    | None = None,
    *,
    learn: bool = True,
) -> tuple[StructuredRequest, T]:
    """Run `attempt` from the strongest rung not known refused, down until one works."""
    try:
        strict: JsonSchema | None = strict_json_schema(schema)
    except StrictUnsupported as err:
        LOGGER.debug("No strict form of the structure (%s)", err)
        strict = None
    rung = start_rung(capabilities)
    if strict is None:
        rung = max(rung, RUNG_SCHEMA)
    while True:
        request = structured_request(rung, name, schema, strict)
        try:
            return request, await attempt(request)
        except RequestRejectedError as err:
            if rung == RUNG_INSTRUCTIONS or (
                err.feature is not None and err.feature not in RESPONSE_FORMATS
            ):
                raise
            LOGGER.debug(
                "Structured output as %s refused: %s",
                RUNG_NAMES[rung],
                err.server_message,
            )
            if on_rejected is not None:
                on_rejected(request, err)
            if err.feature is not None:  # a response format: step below it
                if learn and err.general:
                    capabilities.learn_refused(err.feature, err.lesson_source)
                rung = max(rung, RESPONSE_FORMATS.index(err.feature))
            rung += 1
