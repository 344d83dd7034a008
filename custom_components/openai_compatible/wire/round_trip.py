"""The one round trip over either wire API: send, drop what is refused, refit.

A `Dialect` (chat_completions.py, responses.py) renders the chat log, tells a
body's features and how each can go, and parses the answer. `RoundTrip` sends
again without a refused feature or field, refitted after a context overflow,
or over Chat Completions where Responses is refused, within one deadline and
a count of tries. Also the fields a user adds to every request of an agent or
task, beside the thinking (the form refuses those the integration owns).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
import re
from typing import TYPE_CHECKING, Any, Final, TypedDict, Unpack, cast

from homeassistant.components import conversation

from ..const import CONF_EXTRA_FIELDS, CONF_THINKING, LOGGER, Feature
from ..errors import (
    ContextOverflowError,
    MalformedAnswerError,
    RequestRejectedError,
    ServerError,
)
from ..models.capabilities import ModelCapabilities
from ..models.names import thinking_fields
from ..net.readers import async_read_body, read_usage
from ..net.shapes import JsonObject, ResponseFormat, WireBody, WireItem
from ..net.transport import Budget, Transport, parse_json, without_keys
from ..window.context_window import observe_usage
from .chat_completions import Dialect, Instructions
from .chat_stream import Delta, async_read_answer

if TYPE_CHECKING:
    from ..window.context_window import RequestFit

# Requests one round trip may send: one per feature it may drop, a few more.
MAX_TRIES: Final = 4 + len(Feature)
# Where a body holds the answer's limit: Chat Completions (either name), Responses.
LIMIT_KEYS: Final = ("max_tokens", "max_completion_tokens", "max_output_tokens")
_WORD: Final = r"(?<![a-z0-9_]){}(?![a-z0-9_])"
# What the integration sets itself, over either wire API.
OWNED_FIELDS: Final = frozenset(
    {
        "model",
        "messages",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "stream",
        "stream_options",
        "response_format",
        # The Responses API's answer format, and what keeps it stateless.
        "text",
        "include",
        "store",
        "previous_response_id",
    }
)


class BodyAsk(TypedDict, total=False):
    """How a request body is asked for, beyond the chat log."""

    response_format: ResponseFormat | None
    instructions: Instructions | None
    # A small model's last round: words, no calls.
    last_round: bool


def owned_fields(fields: Mapping[str, Any]) -> list[str]:
    """Return the fields of an object that the integration owns, in order."""
    return sorted(key for key in fields if key in OWNED_FIELDS)


def request_fields(
    data: Mapping[str, Any], capabilities: ModelCapabilities
) -> dict[str, object]:
    """Return a subentry's extra fields with its thinking switch merged in.

    An object in both is merged one deep: the switch's keys over the user's.
    """
    saved = data.get(CONF_EXTRA_FIELDS)
    fields = without_keys(saved, tuple(OWNED_FIELDS)) if isinstance(saved, dict) else {}
    switch = thinking_fields(
        data.get(CONF_THINKING), capabilities.kind, capabilities.model
    )
    for key, value in switch.items():
        old = fields.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            value = {**old, **value}
        fields[key] = value
    return fields


@dataclass(slots=True)
class _Tries:
    """The requests of one round trip: one deadline, a count, what was dropped."""

    budget: Budget
    deadline_at: float
    left: int
    dropped: set[Feature] = field(default_factory=set)

    def next_budget(self) -> Budget:
        remaining = max(self.deadline_at - asyncio.get_running_loop().time(), 0.0)
        return Budget(remaining, min(self.budget.retry_wait, remaining))

    def again(self, err: ServerError) -> None:
        self.left -= 1
        if self.left <= 0:
            raise err


def says_something(delta: Delta) -> bool:
    """Tell whether a delta holds more than its role: words, thinking, calls."""
    return any(value for key, value in delta.items() if key != "role")


class RoundTrip:
    """Round trips over one wire API, streamed or whole."""

    def __init__(
        self,
        transport: Transport,
        capabilities: ModelCapabilities,
        dialect: Dialect[Any, Any, Any],
        budget: Budget,
        *,
        on_request: Callable[[], None],
        on_usage: Callable[[JsonObject], None],
        fit: RequestFit | None = None,
    ) -> None:
        """Prepare a run of rounds; with `fit`, each request fits the window."""
        self._transport = transport
        self._capabilities = capabilities
        self._dialect: Dialect[WireItem, Any, WireBody] = dialect
        self._budget = budget
        self._on_request = on_request
        self._on_usage = on_usage
        self._fit = fit
        self.tool_set = dialect.tool_set
        # Chat Completions' dialect, where the Responses route may be refused.
        self.fallback: Callable[[], Dialect[Any, Any, Any]] | None = None

    async def async_build_body(
        self, chat_log: conversation.ChatLog, **ask: Unpack[BodyAsk]
    ) -> WireBody:
        """Return the request body for the chat log as it is now, with its limit."""
        dialect = self._dialect
        messages = await dialect.async_render(chat_log.content, ask.get("instructions"))
        limit = dialect.settings.max_tokens
        if self._fit is not None:
            items = dialect.prompt_items(messages)
            messages, limit = self._fit.fitted(items, dialect.tools)
        body = self._limited(dialect.body(messages, ask.get("response_format")), limit)
        if ask.get("last_round") and body.get("tools"):
            return cast("WireBody", {**body, "tool_choice": "none"})
        return body

    async def async_stream(
        self, chat_log: conversation.ChatLog, **ask: Unpack[BodyAsk]
    ) -> AsyncIterator[Delta]:
        """Build the request, send it and yield the answer as chat log deltas.

        A refused Responses route goes over the fallback's from then on. An
        empty stream next to tools (a server that cannot stream when it may
        choose a tool) is asked again unstreamed, where the dialect says so.
        """
        try:
            async for delta in self._async_stream(chat_log, **ask):
                yield delta
        except RequestRejectedError as err:
            if self.fallback is None or err.feature is not Feature.RESPONSES_API:
                raise
            LOGGER.debug(
                "%s has no Responses API (%s); using Chat Completions",
                self._capabilities.model,
                err.server_message,
            )
            self._capabilities.learn_refused(err.feature, err.lesson_source)
            self._dialect, self.fallback = self.fallback(), None
        else:
            return
        async for delta in self._async_stream(chat_log, **ask):
            yield delta

    async def _async_stream(
        self, chat_log: conversation.ChatLog, **ask: Unpack[BodyAsk]
    ) -> AsyncIterator[Delta]:
        body = await self.async_build_body(chat_log, **ask)
        yield {"role": "assistant"}
        body = self._shaped(body, self._dialect.settings.stream)
        tries = self._tries()
        said, learn = False, True
        try:
            async for delta in self._async_answer(chat_log, body, tries):
                said = said or says_something(delta)
                yield delta
        except RequestRejectedError as err:
            refused = err.feature is Feature.STREAM_WITH_TOOLS and body.get("stream")
            if said or not (refused and self._dialect.retries_unstreamed):
                raise
            learn = False  # a refusal while reading is not learned
        # An empty answer to tool results is the model's own.
        if said or chat_log.unresponded_tool_results:
            return
        if not self._streams_with_tools(body):
            return
        LOGGER.debug("Empty streamed answer next to tools; asking unstreamed")
        unstreamed = self._dialect.without_feature(body, Feature.STREAM_WITH_TOOLS)
        async for delta in self._async_answer(chat_log, unstreamed or body, tries):
            if says_something(delta) and not said:
                said = True
                if learn:
                    self._capabilities.learn_refused(
                        Feature.STREAM_WITH_TOOLS,
                        "an empty stream, answered unstreamed",
                    )
            yield delta

    async def async_complete(self, body: WireBody) -> JsonObject:
        """Send a whole request of the dialect's form; return its whole answer."""
        answer = parse_json(await self._async_whole(body))
        if not isinstance(answer, dict):
            raise MalformedAnswerError(part="the answer")
        if isinstance(usage := answer.get("usage"), dict):
            self._on_usage(read_usage(usage))
        return answer

    async def async_warm(self, body: WireBody) -> None:
        """Send a request for its prompt alone, so that the server caches it."""
        await self._async_whole(self._limited(body, 0))  # the least limit

    async def _async_whole(self, body: WireBody) -> bytes:
        shaped = self._shaped(body, stream=False)
        async with self._async_open(shaped, self._tries()) as (chunks, _):
            return await async_read_body(chunks)

    def _tries(self) -> _Tries:
        loop = asyncio.get_running_loop()
        return _Tries(self._budget, loop.time() + self._budget.deadline, MAX_TRIES)

    def _streams_with_tools(self, body: WireBody) -> bool:
        return self._dialect.retries_unstreamed and bool(
            body.get("stream") and body.get("tools")
        )

    def _shaped(self, body: WireBody, stream: bool) -> WireBody:
        dialect = self._dialect
        if stream:
            body = cast("WireBody", {**body, **dialect.stream_fields})
        for feature in dialect.body_features(body):
            if self._capabilities.refuses(feature) and (
                changed := dialect.without_feature(body, feature)
            ):
                body = changed
        refused = self._capabilities.refused_fields() & set(dialect.settings.extra)
        return without_keys(body, tuple(refused)) if refused else body

    def _refitted(
        self, body: WireBody, err: ContextOverflowError, tries: _Tries
    ) -> WireBody:
        if self._fit is None:
            raise err
        tries.again(err)
        messages, limit = self._fit.after_overflow(err)
        # The refitted messages as they were asked: _shaped reshapes them.
        key = "messages" if "messages" in body else "input"
        refitted = cast("WireBody", {**body, key: messages})
        return self._shaped(self._limited(refitted, limit), stream=False)

    def _limited(self, body: WireBody, limit: int | None) -> WireBody:
        body = without_keys(body, LIMIT_KEYS)
        if limit is None:
            return body
        least = self._dialect.least_limit
        return cast("WireBody", {**body, self._dialect.limit_key: max(limit, least)})

    async def _async_answer(
        self, chat_log: conversation.ChatLog, body: WireBody, tries: _Tries
    ) -> AsyncIterator[Delta]:
        # One request's answer (refitted once after an overflow); usage traced.
        while True:
            parser = self._dialect.parser(body)
            said = False
            try:
                async with self._async_open(body, tries) as (chunks, streamed):
                    async for delta in async_read_answer(
                        parser, chunks, streamed=streamed
                    ):
                        said = said or says_something(delta)
                        yield delta
            except ContextOverflowError as err:
                if said:
                    raise
                body = self._refitted(body, err, tries)
            else:
                return
            finally:
                observe_usage(chat_log, parser.usage, self._on_usage, self._fit)

    @asynccontextmanager
    async def _async_open(
        self, body: WireBody, tries: _Tries
    ) -> AsyncIterator[tuple[AsyncIterator[bytes], bool]]:
        async with AsyncExitStack() as stack:
            while True:
                self._on_request()
                try:
                    chunks = await self._async_attempt(stack, body, tries.next_budget())
                    break
                except RequestRejectedError as err:
                    tries.again(err)
                    body = self._without_refused(body, err, tries.dropped)
                except ContextOverflowError as err:
                    body = self._refitted(body, err, tries)
            yield chunks, bool(body.get("stream"))

    async def _async_attempt(
        self, stack: AsyncExitStack, body: WireBody, budget: Budget
    ) -> AsyncIterator[bytes]:
        # The answer's body, whose closing `stack` takes on. A stream next to
        # tools that ends before its first byte (llama-cpp-python may choose a
        # tool) is a refusal of streaming with tools.
        dialect = self._dialect
        async with AsyncExitStack() as attempt:
            opened = await attempt.enter_async_context(
                self._transport.async_open(
                    "POST",
                    dialect.route,
                    budget=budget,
                    body=body,
                    sent=dialect.body_features(body),
                )
            )
            if dialect.proves is not None:
                self._capabilities.learn_proven(dialect.proves)
            chunks = opened.aiter_bytes()
            first = await anext(chunks, None)
            if first is None and self._streams_with_tools(body):
                raise RequestRejectedError(
                    "the stream ended before it began",
                    Feature.STREAM_WITH_TOOLS,
                    general=True,
                )
            stack.push_async_exit(attempt.pop_all())
        return _prepended(first, chunks)

    def _without_refused(
        self, body: WireBody, err: RequestRejectedError, dropped: set[Feature]
    ) -> WireBody:
        # Extra fields it names (each as a whole word) go first, learned at
        # once. A feature in `dropped` is not sent again (an answer naming
        # both limits would swap them for ever).
        message = err.server_message.casefold()
        named = tuple(
            key
            for key in self._dialect.settings.extra
            if key in body
            and re.search(_WORD.format(re.escape(key.casefold())), message)
        )
        if named:
            LOGGER.debug("Sending again without %s: %s", named, err.server_message)
            self._capabilities.learn_refused_fields(named, err.lesson_source)
            return without_keys(body, named)
        feature = err.feature
        changed = self._dialect.without_feature(body, feature) if feature else None
        if not feature or not changed or changed == body:
            raise err
        if dropped & self._dialect.body_features(changed):
            raise err
        dropped.add(feature)
        LOGGER.debug("Sending again without %s: %s", feature, err.server_message)
        if err.general:
            self._capabilities.learn_refused(feature, err.lesson_source)
        return changed


async def _prepended(
    first: bytes | None, rest: AsyncIterator[bytes]
) -> AsyncIterator[bytes]:
    if first is not None:
        yield first
    async for chunk in rest:
        yield chunk
