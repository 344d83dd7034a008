"""The fall back from the Responses API to Chat Completions.

With the automatic setting, a server that refuses `/responses` is answered
over Chat Completions, and the refusal learned so later requests go there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Unpack

from homeassistant.components import conversation

from ..const import LOGGER
from ..errors import RequestRejectedError
from ..features import Feature
from ..models.capabilities import ModelCapabilities
from ..net.shapes import WireBody
from ..net.transport import ToolSet
from .chat_stream import Delta
from .round_trip import BodyAsk, RoundTrip


@dataclass(eq=False)
class FallbackAdapter:
    """The Responses API, or Chat Completions (`_chat`) once the server refused it."""

    _current: RoundTrip
    _chat: Callable[[], RoundTrip]
    _capabilities: ModelCapabilities
    _asked: BodyAsk = field(init=False, default_factory=BodyAsk)

    @property
    def tool_set(self) -> ToolSet:
        """Return the tools of the round trip in use (both offer the same)."""
        return self._current.tool_set

    async def async_build_body(
        self, chat_log: conversation.ChatLog, **asked: Unpack[BodyAsk]
    ) -> WireBody:
        """Return the request body of the round trip in use."""
        self._asked = asked
        return await self._current.async_build_body(chat_log, **asked)

    async def async_stream(
        self, chat_log: conversation.ChatLog, body: WireBody
    ) -> AsyncIterator[Delta]:
        """Stream the answer; over Chat Completions if the route is refused."""
        try:
            async for delta in self._current.async_stream(chat_log, body):
                yield delta
        except RequestRejectedError as err:
            if err.feature is not Feature.RESPONSES_API:
                raise
            LOGGER.debug(
                "%s has no Responses API (%s); using Chat Completions",
                self._capabilities.model,
                err.server_message,
            )
            self._capabilities.learn_refused(Feature.RESPONSES_API, err.lesson_source)
            self._current = self._chat()
        else:
            return
        body = await self._current.async_build_body(chat_log, **self._asked)
        async for delta in self._current.async_stream(chat_log, body):
            yield delta


# What the entities run their requests through.
type Adapter = RoundTrip | FallbackAdapter
