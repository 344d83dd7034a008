"""The structured-output ladder: how to ask a server for JSON of a schema.

Servers differ: some take a strict `json_schema`, some only a plain one, some
only `json_object`, some nothing. Each rung is tried only when the server
rejects the one above it. The rung that worked is remembered for the model
only when the rejections named the format and the request had no tools: a
schema past a strict-mode limit, or a server that takes no JSON mode next to
tools, says nothing about the next request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from .api import ServerQuirks
from .const import LOGGER
from .errors import RequestRejectedError
from .json_answer import schema_instructions

RUNG_STRICT: Final = 0
RUNG_SCHEMA: Final = 1
RUNG_JSON_OBJECT: Final = 2
RUNG_INSTRUCTIONS: Final = 3
RUNG_NAMES: Final = ("json_schema strict", "json_schema", "json_object", "prompt")
# Words of a rejection that is about the response format, not the request.
_FORMAT_WORDS: Final = ("response_format", "json_object", "schema", "strict")


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
    *,
    learn: bool = True,
) -> tuple[StructuredRequest, T]:
    """Run `attempt` from the remembered rung down until the server accepts.

    Any rejection moves this request down a rung. The rung that worked is
    remembered in `quirks` only when `learn` (the request has no tools) and
    every rejection on the way named the format. A schema without a strict
    form starts below strict mode without teaching anything; a request that
    fails even as plain text is not about the format and is raised.
    """
    start = min(quirks.structured_output_rung, RUNG_INSTRUCTIONS)
    if strict is None:
        start = max(start, RUNG_SCHEMA)
    rung = start
    about_format = True
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
            about_format = about_format and rejects_format(err)
            rung += 1
            continue
        if (
            learn
            and about_format
            and rung > start
            and rung > quirks.structured_output_rung
        ):
            LOGGER.debug("The server takes structured output as %s", RUNG_NAMES[rung])
            quirks.structured_output_rung = rung
        return request, result


def rejects_format(err: RequestRejectedError) -> bool:
    """Return whether a rejection names the response format (or its schema)."""
    message = err.server_message.casefold()
    return any(word in message for word in _FORMAT_WORDS)
