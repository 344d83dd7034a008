"""The context window of each agent and task, and fitting each request into it.

`ContextWindow`, one per subentry, knows the window (the subentry's setting,
and what the server reports or named in an overflow error: the smallest of
them), keeps the token estimate calibrated by the server's own counts,
remembers per conversation what was left out, and keeps a repair issue open
while the prompt alone is too large. `RequestFit` is what the wire adapter asks
for one run of rounds, over either wire API: fit each request's messages or
input items, and after an overflow error, fit the same request again to what
the error taught, once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir

from .chat_stream import usage_stats
from .const import CONF_CONTEXT_WINDOW, CONF_HISTORY_TURNS, DOMAIN, LOGGER
from .context import (
    DEFAULT_ANSWER_TOKENS,
    ConversationCut,
    Limits,
    Message,
    TokenEstimate,
    fit,
)
from .errors import ContextOverflowError, ContextWindowError
from .model_fit import check_tools_kept

if TYPE_CHECKING:
    from .capabilities import ModelCapabilities
    from .chat_completions import RequestSettings

# Conversations whose cuts are remembered, the most recent ones.
MAX_CONVERSATIONS = 32
# Where a request body holds the conversation: Chat Completions, Responses.
CONVERSATION_KEYS = ("messages", "input")


class ContextWindow:
    """One subentry's window, calibrated estimate and conversation cuts."""

    def __init__(self, entry_id: str, subentry: ConfigSubentry) -> None:
        """Start uncalibrated, with no conversation cut yet."""
        self._entry_id = entry_id
        self._subentry = subentry
        self.estimate = TokenEstimate()
        self._cuts: OrderedDict[str, ConversationCut] = OrderedDict()

    @property
    def issue_id(self) -> str:
        """Return the id of the subentry's "prompt too large" repair issue."""
        return f"prompt_too_large_{self._subentry.subentry_id}"

    def request(
        self,
        chat_log: conversation.ChatLog,
        capabilities: ModelCapabilities,
        settings: RequestSettings,
    ) -> RequestFit:
        """Return the fitting for a run of rounds on this chat log."""
        return RequestFit(self, chat_log, capabilities, settings)

    def limits(
        self, capabilities: ModelCapabilities, settings: RequestSettings
    ) -> Limits:
        """Return what requests must fit in now."""
        options = self._subentry.data
        known = [
            window
            for window in (
                options.get(CONF_CONTEXT_WINDOW),
                capabilities.context_window,
            )
            if window
        ]
        return Limits(
            window=min(known) if known else None,
            answer_tokens=settings.max_tokens or DEFAULT_ANSWER_TOKENS,
            history_turns=options.get(CONF_HISTORY_TURNS),
        )

    def cut(self, conversation_id: str) -> ConversationCut:
        """Return what was left out of a conversation so far."""
        cut = self._cuts.pop(conversation_id, None) or ConversationCut()
        self._cuts[conversation_id] = cut
        while len(self._cuts) > MAX_CONVERSATIONS:
            self._cuts.popitem(last=False)
        return cut

    def report(self, chat_log: conversation.ChatLog, err: ContextWindowError) -> None:
        """Open the repair issue when the prompt alone does not fit."""
        if err.translation_key != "prompt_too_large":
            return
        ir.async_create_issue(
            chat_log.hass,
            DOMAIN,
            self.issue_id,
            config_entry_id=self._entry_id,
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="prompt_too_large",
            translation_placeholders={
                "name": self._subentry.title,
                **(err.translation_placeholders or {}),
            },
        )

    def resolve(self, hass: HomeAssistant) -> None:
        """Close the repair issue: a request fitted, or the agent is removed."""
        ir.async_delete_issue(hass, DOMAIN, self.issue_id)


class RequestFit:
    """Fitting for the requests of one run of rounds."""

    def __init__(
        self,
        owner: ContextWindow,
        chat_log: conversation.ChatLog,
        capabilities: ModelCapabilities,
        settings: RequestSettings,
    ) -> None:
        """Bind the subentry's window to one chat log."""
        self._owner = owner
        self._chat_log = chat_log
        self._capabilities = capabilities
        self._settings = settings
        self._cut = owner.cut(chat_log.conversation_id)
        # The raw estimate of the request last sent, and whether it was sent
        # again after an overflow.
        self._sent_raw = 0.0
        self._sent_tools: list[dict[str, Any]] = []
        self._retried = False

    def messages(
        self, messages: list[Message], tools: list[dict[str, Any]]
    ) -> list[Message]:
        """Return the messages of a new request, fitted into the window."""
        self._retried = False
        return self._fitted(messages, tools)

    def after_overflow(
        self, body: dict[str, Any], err: ContextOverflowError
    ) -> dict[str, Any]:
        """Return the body to send again, fitted to what the error taught.

        Raises the translated error when trimming cannot help, or when the
        request was already sent again once.
        """
        LOGGER.debug(
            "The request overflowed the context (window %s, prompt %s tokens)",
            err.window,
            err.prompt_tokens,
        )
        if self._retried:
            raise self._unfixable(err)
        self._retried = True
        before = self._owner.estimate.ratio
        self._owner.estimate.calibrate(self._sent_raw, err.prompt_tokens)
        window = self._owner.limits(self._capabilities, self._settings).window
        if err.window and (window is None or err.window < window):
            self._capabilities.learn_context_window(err.window)
        elif window is None or self._owner.estimate.ratio == before:
            # Nothing new to fit by: trimming again would send the same.
            raise self._unfixable(err)
        key = next(key for key in CONVERSATION_KEYS if key in body)
        return {**body, key: self._fitted(body[key], body.get("tools") or [])}

    def observe(self, usage: dict[str, Any]) -> None:
        """Calibrate the estimate with the tokens the server counted.

        A count too small for the tools sent tells of tools left out (raised).
        """
        estimate = self._owner.estimate
        tool_tokens = estimate.tokens(estimate.raw_tools(self._sent_tools))
        check_tools_kept(self._capabilities, tool_tokens, usage.get("prompt_tokens"))
        estimate.calibrate(self._sent_raw, usage.get("prompt_tokens"))

    def _fitted(
        self, messages: list[Message], tools: list[dict[str, Any]]
    ) -> list[Message]:
        """Fit the messages, trace what was done, and keep the repair current."""
        limits = self._owner.limits(self._capabilities, self._settings)
        estimate = self._owner.estimate
        try:
            fitted = fit(messages, tools, limits, estimate, self._cut)
        except ContextWindowError as err:
            self._owner.report(self._chat_log, err)
            raise
        self._owner.resolve(self._chat_log.hass)
        self._sent_raw = estimate.raw_request(fitted.messages, tools)
        self._sent_tools = tools
        self._chat_log.async_trace(
            {
                "context": {
                    "window": limits.window,
                    "estimated_tokens": fitted.tokens,
                    "kept_turns": fitted.kept_turns,
                    "dropped_turns": fitted.dropped_turns,
                }
            }
        )
        return fitted.messages

    def _unfixable(self, err: ContextOverflowError) -> Exception:
        """Return the translated error for an overflow that trimming cannot fix."""
        window = (
            err.window or self._owner.limits(self._capabilities, self._settings).window
        )
        if window is None:
            return err
        needed = max(
            err.prompt_tokens or 0, self._owner.estimate.tokens(self._sent_raw)
        ) + (self._settings.max_tokens or DEFAULT_ANSWER_TOKENS)
        error = ContextWindowError(
            "prompt_too_large", needed=f"{needed:,}", window=f"{window:,}"
        )
        self._owner.report(self._chat_log, error)
        return error


def observe_usage(
    chat_log: conversation.ChatLog,
    usage: dict[str, Any] | None,
    on_usage: Callable[[dict[str, Any]], None],
    fit: RequestFit | None,
) -> None:
    """Trace the tokens an answer reports, and calibrate the fitting by them."""
    if not usage:
        return
    chat_log.async_trace({"stats": usage_stats(usage), "usage": usage})
    on_usage(usage)
    if fit is not None:
        fit.observe(usage)
