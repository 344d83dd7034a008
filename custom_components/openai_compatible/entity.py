"""The base entity that owns the round trip between a chat log and the model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import aclosing, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Final, override

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import callback
from homeassistant.helpers import device_registry as dr, llm
from homeassistant.helpers.dispatcher import async_dispatcher_send
from homeassistant.helpers.update_coordinator import CoordinatorEntity

from .const import (
    CONF_API,
    CONF_AUDIO_MODEL,
    CONF_CALL_EXAMPLES,
    CONF_CHAT_MODEL,
    CONF_FALLBACK,
    CONF_MAX_TOKENS,
    CONF_ONE_ROUND,
    CONF_PROVIDER,
    CONF_RECOMMENDED,
    CONF_STREAMING,
    CONF_TEMPERATURE,
    CONF_TIMEOUT,
    CONF_TOP_P,
    DEFAULT_TIMEOUT_SECONDS,
    DOMAIN,
    LOGGER,
    MAX_TOOL_ROUNDS_CONVERSATION,
    SUBENTRY_CONVERSATION,
    Feature,
)
from .coordinator import ServerCoordinator
from .errors import AuthError, ConnectError, ModelError, RateLimitedError, ServerError
from .models.capabilities import ModelCapabilities, WireApi, api_setting
from .models.providers import provider_for, responses_options
from .net.shapes import JsonObject, ResponseFormat
from .net.transport import Budget, RequestSettings, ToolSet, build_tool_set
from .tool_offer import ToolOffer
from .window.context_window import (
    ContextWindow,
    RequestFit,
    chat_log_attachments,
    check_model_takes,
    default_answer_limit,
    learning_refusals,
)
from .wire.chat_completions import ChatCompletionsDialect, Dialect
from .wire.rescue import TurnRescue
from .wire.responses import ResponsesDialect
from .wire.round_trip import RoundTrip, request_fields
from .wire.tool_calls import unanswerable_error

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry

# The agents and tasks handing a turn over in this task: a chain ends, a loop too.
_handing_over: ContextVar[frozenset[str]] = ContextVar(
    "openai_compatible_handing_over", default=frozenset()
)
# Failures another server might not have: ours is gone, slow, busy or failing.
_SERVER_FAILURES: Final = frozenset(
    {
        "api_error",
        "answer_cut_short",
        "gateway_failed",
        "server_failed",
        "server_unavailable",
    }
)


def usage_signal(subentry_id: str) -> str:
    """Return the signal of a change of a subentry's usage counts."""
    return f"{DOMAIN}_usage_{subentry_id}"


def usage_counts(usage: JsonObject) -> dict[str, int]:
    """Return the counts of a usage block in OpenAI's shape; an odd figure counts 0."""
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    figures = {**usage, "cached_tokens": cached}
    return {
        key: value if type(value := figures.get(key)) is int and value > 0 else 0
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens")
    }


@dataclass(frozen=True, slots=True)
class Handover:
    """One agent or task, the fallback it names, and the chat log of its turn."""

    source: str
    target: str
    chat_log: conversation.ChatLog

    async def async_run[T](
        self,
        available: bool,
        own: Callable[[], Awaitable[T]],
        other: Callable[[str], Awaitable[T]],
    ) -> T:
        """Answer with `own`, or `other` if our server fails leaving nothing after the user."""
        reason = "unavailable"
        if available:
            try:
                return await own()
            except ServerError as err:
                failed = isinstance(err, ConnectError | RateLimitedError) or (
                    type(err) is ServerError and err.translation_key in _SERVER_FAILURES
                )
                last = self.chat_log.content[-1]
                if not failed or not isinstance(last, conversation.UserContent):
                    raise
                reason = str(err.translation_key)
        LOGGER.info(
            "%s cannot answer (%s); %s answers instead",
            self.source,
            reason,
            self.target,
        )
        self.chat_log.async_trace(
            {"fallback": {"from": self.source, "to": self.target, "reason": reason}}
        )
        token = _handing_over.set(_handing_over.get() | {self.source})
        try:
            return await other(self.target)
        finally:
            _handing_over.reset(token)


def handover(
    source: str, subentry: ConfigSubentry, chat_log: conversation.ChatLog
) -> Handover | None:
    """Return the subentry's handover, or None: no fallback, or one in the chain."""
    target = subentry.data.get(CONF_FALLBACK)
    chain = _handing_over.get()
    if not target or source in chain or target in chain:
        return None
    return Handover(source, str(target), chat_log)


def subentry_device_info(
    entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry
) -> dr.DeviceInfo:
    """Return the service device of a subentry, shared by all its entities."""
    return dr.DeviceInfo(
        identifiers={(DOMAIN, subentry.subentry_id)},
        name=subentry.title,
        manufacturer=provider_for(entry.data.get(CONF_PROVIDER)).name,
        model=subentry.data.get(CONF_CHAT_MODEL) or subentry.data.get(CONF_AUDIO_MODEL),
        entry_type=dr.DeviceEntryType.SERVICE,
    )


class OpenAICompatibleSubentryEntity(CoordinatorEntity[ServerCoordinator]):
    """The entity of one subentry; a request under way keeps the runtime it began on."""

    _attr_has_entity_name = True
    _attr_name: str | None = None
    model_key: ClassVar[str] = CONF_CHAT_MODEL
    # Seconds a 429 or 503 may be waited out; a voice turn cannot wait long.
    retry_wait: float = 5.0

    def __init__(
        self, entry: OpenAICompatibleConfigEntry, subentry: ConfigSubentry
    ) -> None:
        """Describe the entity and its service device."""
        super().__init__(entry.runtime_data.coordinator)
        self.entry = entry
        self.subentry = subentry
        self.runtime = entry.runtime_data
        self._attr_unique_id = subentry.subentry_id
        self.context_window = ContextWindow(entry.entry_id, subentry)
        self._attr_device_info = subentry_device_info(entry, subentry)

    @property
    def model(self) -> str:
        """Return the model of the subentry."""
        return str(self.subentry.data.get(self.model_key, ""))

    @callback
    @override
    def _handle_coordinator_update(self) -> None:
        """Write the state, and the subentry's title and model on its device."""
        if self.device_entry is not None:
            info = subentry_device_info(self.entry, self.subentry)
            dr.async_get(self.hass).async_update_device(
                self.device_entry.id, name=info.get("name"), model=info.get("model")
            )
        super()._handle_coordinator_update()

    @override
    async def async_added_to_hass(self) -> None:
        """Follow the coordinator; close the repair issue on removal."""
        await super().async_added_to_hass()
        self.async_on_remove(partial(self.context_window.resolve, self.hass))

    def budget(self) -> Budget:
        """Return the time one round trip may take, and may wait to retry."""
        timeout = float(self.entry.options.get(CONF_TIMEOUT, DEFAULT_TIMEOUT_SECONDS))
        return Budget(timeout, min(self.retry_wait, timeout))

    @callback
    def count(self, **counts: int) -> None:
        """Add to the subentry's usage counts (`sensor.USAGE_KEYS`); tell its sensors."""
        self.runtime.usage[self.subentry.subentry_id].update(counts)
        async_dispatcher_send(self.hass, usage_signal(self.subentry.subentry_id))

    @contextmanager
    def _server_errors(self) -> Iterator[None]:
        """Count failures; start reauthentication when the server refuses our key."""
        try:
            yield
        except ServerError as err:
            self.count(errors=1)
            if not isinstance(err, AuthError):
                LOGGER.debug("Model server error: %s", err.translation_key)
                raise
            LOGGER.warning("The server refused the API key; starting reauth")
            self.entry.async_start_reauth(self.hass)
            raise AuthError("reauth_started") from err


class OpenAICompatibleEntity(OpenAICompatibleSubentryEntity):
    """An entity of a chat subentry, running chat logs on the entry's server."""

    _tool_set_cache: tuple[llm.APIInstance | None, ToolSet] | None = None

    @property
    def capabilities(self) -> ModelCapabilities:
        """Return what is known about the subentry's model."""
        return self.runtime.capabilities.model(self.model)

    def request_settings(self) -> RequestSettings:
        """Return the request parameters; a local server gets an answer limit anyway."""
        options = self.subentry.data
        tuned = not options.get(CONF_RECOMMENDED, True)
        capabilities = self.capabilities
        return RequestSettings(
            model=self.model,
            max_tokens=(options.get(CONF_MAX_TOKENS) if tuned else None)
            or default_answer_limit(self.runtime.capabilities, options),
            temperature=options.get(CONF_TEMPERATURE) if tuned else None,
            top_p=options.get(CONF_TOP_P) if tuned else None,
            reasoning_model=capabilities.reasoning,
            prompt_cache_key=(
                None
                if capabilities.refuses(Feature.PROMPT_CACHE_KEY)
                else self.subentry.subentry_id
            ),
            short_tool_call_ids=capabilities.provider.short_tool_call_ids,
            stream=bool(options.get(CONF_STREAMING, True)),
            extra=request_fields(options, capabilities) if tuned else {},
        )

    def adapter(
        self,
        tool_set: ToolSet,
        chat_log: conversation.ChatLog | None,
        *,
        chat: bool = False,
    ) -> RoundTrip:
        """Return the wire adapter for a run of rounds (`chat`: the API all servers have)."""
        settings, capabilities = self.request_settings(), self.capabilities
        setting = api_setting(self.entry.options.get(CONF_API))
        chat_dialect = partial(ChatCompletionsDialect, self.hass, settings, tool_set)
        dialect: Callable[[], Dialect[Any, Any, Any]] = chat_dialect
        if not chat and capabilities.api(setting) is not WireApi.CHAT_COMPLETIONS:
            options = responses_options(self.hass, self.subentry.data)
            dialect = partial(
                ResponsesDialect,
                self.hass,
                capabilities,
                settings,
                options,
                tool_set,
                self.entity_id,
            )
        round_trip = RoundTrip(
            self.runtime.transport,
            capabilities,
            dialect(),
            self.budget(),
            on_request=partial(self.count, requests=1),
            on_usage=lambda usage: self.count(**usage_counts(usage)),
            fit=None
            if chat_log is None
            else RequestFit(self.context_window, chat_log, capabilities, settings),
        )
        if dialect is not chat_dialect and setting is WireApi.AUTOMATIC:
            round_trip.fallback = chat_dialect
        return round_trip

    def _offer(self, chat_log: conversation.ChatLog) -> ToolOffer:
        """Return the tools a turn offers; an agent on a local server shows examples."""
        data = self.subentry.data
        examples = self.subentry.subentry_type == SUBENTRY_CONVERSATION and data.get(
            CONF_CALL_EXAMPLES, self.runtime.capabilities.local
        )
        # The tools in wire form, once per API instance (kept between turns).
        cached, api = self._tool_set_cache, chat_log.llm_api
        if cached is None or cached[0] is not api:
            cached = self._tool_set_cache = (api, build_tool_set(api))
        return ToolOffer(cached[1], data, chat_log, examples=bool(examples))

    async def _async_handle_chat_log(
        self,
        chat_log: conversation.ChatLog,
        *,
        max_rounds: int = MAX_TOOL_ROUNDS_CONVERSATION,
        slots: asyncio.Semaphore | None = None,
        response_format: ResponseFormat | None = None,
        instructions: tuple[conversation.UserContent, str] | None = None,
    ) -> None:
        """Run the model on the chat log until no tool result is unanswered."""
        offer = self._offer(chat_log)
        adapter = self.adapter(offer.tool_set(), chat_log)
        local = self.runtime.capabilities.local
        # The watch over the turn; an agent's answers are spoken sentences.
        rescue = TurnRescue(
            self.hass,
            chat_log,
            offer.tool_set(),
            self.entity_id,
            speaks=response_format is None
            and self.subentry.subentry_type == SUBENTRY_CONVERSATION,
            one_round=bool(self.subentry.data.get(CONF_ONE_ROUND, local)),
        )
        capabilities = self.capabilities
        check_model_takes(
            capabilities,
            tools=bool(adapter.tool_set.tools),
            attachments=chat_log_attachments(chat_log),
        )
        with self._server_errors(), learning_refusals(capabilities):
            for _ in range(max_rounds):
                if adapter.tool_set is not offer.tool_set():
                    # A lookup found tools: they go at the end of the list.
                    adapter = self.adapter(offer.tool_set(), chat_log)
                stream = adapter.async_stream(
                    chat_log,
                    response_format=response_format,
                    instructions=rescue.instructions or instructions,
                    last_round=rescue.last_round,
                )
                deltas = rescue.watched(_holding(slots, stream))
                async with aclosing(deltas):
                    async for _content in chat_log.async_add_delta_content_stream(
                        self.entity_id, deltas
                    ):
                        pass
                if await rescue.async_ended():
                    return
        # A call the model kept getting wrong says more than the round count.
        raise unanswerable_error(chat_log) or ModelError(
            "max_tool_rounds", rounds=str(max_rounds)
        )


async def _holding[T](
    slots: asyncio.Semaphore | None, stream: AsyncIterator[T]
) -> AsyncGenerator[T]:
    """Yield a stream's items while holding one of the slots, if there are any."""
    async with slots or nullcontext():
        async for item in stream:
            yield item
