"""The structured-output ladder: how to ask a server for JSON of a schema.

Servers differ: some take a strict `json_schema`, some only a plain one, some
only `json_object`, some nothing. Each rung is tried only when the server
rejects the one above it, and the entry remembers the rung that worked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from .api import RequestRejectedError, ServerQuirks
from .const import LOGGER
from .schema import schema_instructions

RUNG_STRICT: Final = 0
RUNG_SCHEMA: Final = 1
RUNG_JSON_OBJECT: Final = 2
RUNG_INSTRUCTIONS: Final = 3
RUNG_NAMES: Final = ("json_schema strict", "json_schema", "json_object", "prompt")


@dataclass(frozen=True, slots=True)
class StructuredRequest:
    """How one rung asks for JSON: a response format and extra instructions."""

    rung: int
    response_format: dict[str, Any] | None
    instructions: str | None


def structured_request(
    rung: int, name: str, schema: dict[str, Any], strict: dict[str, Any] | None
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
    response_format = {"type": "json_object"} if rung == RUNG_JSON_OBJECT else None
    return StructuredRequest(rung, response_format, schema_instructions(schema))


async def async_climb[T](
    quirks: ServerQuirks,
    name: str,
    schema: dict[str, Any],
    strict: dict[str, Any] | None,
    attempt: Callable[[StructuredRequest], Awaitable[T]],
    on_rejected: Callable[[StructuredRequest, RequestRejectedError], None]
    | None = None,
) -> tuple[StructuredRequest, T]:
    """Run `attempt` from the remembered rung down until the server accepts.

    A schema without a strict form starts below strict mode without teaching
    the entry anything; a request that fails even as plain text is not about
    the format and is raised.
    """
    start = min(quirks.structured_output_rung, RUNG_INSTRUCTIONS)
    if strict is None:
        start = max(start, RUNG_SCHEMA)
    rung = start
    while True:
        request = structured_request(rung, name, schema, strict)
        try:
            result = await attempt(request)
        except RequestRejectedError as err:
            if rung == RUNG_INSTRUCTIONS:
                raise
            LOGGER.debug(
                "Structured output as %s rejected: %s",
                RUNG_NAMES[rung],
                err.server_message,
            )
            if on_rejected is not None:
                on_rejected(request, err)
            rung += 1
            continue
        if rung > start and rung > quirks.structured_output_rung:
            LOGGER.debug("The server takes structured output as %s", RUNG_NAMES[rung])
            quirks.structured_output_rung = rung
        return request, result
