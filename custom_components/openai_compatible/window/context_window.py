"""The context window of each agent and task, and what a model cannot take.

`ContextWindow`, one per subentry: the estimate calibrated by the server's
counts, what each conversation left out, and a repair issue while the prompt
alone is too large. `RequestFit`, one per run of rounds: each request fitted
with its answer's limit, again once after an overflow. Tools, images or files
a model is known to refuse are refused before any request.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigEntryState, ConfigSubentry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir

from ..const import (
    CONF_CHAT_MODEL,
    CONF_CONTEXT_WINDOW,
    CONF_HISTORY_TURNS,
    DOMAIN,
    LOGGER,
    Feature,
)
from ..errors import (
    ContextOverflowError,
    ContextWindowError,
    InputError,
    ModelError,
    RequestRejectedError,
)
from ..media.attachments import normalise_mime_type
from ..models.server_info import ServerKind
from ..net.readers import read_count, read_window
from ..net.shapes import JsonObject
from .prompt_fit import (
    DEFAULT_ANSWER_TOKENS,
    ConversationCut,
    Limits,
    Message,
    PromptItem,
    TokenEstimate,
    Tools,
    fit,
    raw_message,
    split_turns,
)

if TYPE_CHECKING:
    from ..models.capabilities import Capabilities, ModelCapabilities
    from ..net.transport import RequestSettings

# A request's messages as sent, and the answer's limit; None: no limit.
type Fit = tuple[list[Message], int | None]

# Conversations whose cuts are remembered, the most recent ones.
MAX_CONVERSATIONS = 32
# A local server's answer limit is at most this share of the window.
LOCAL_ANSWER_SHARE = 4
# A server that counts a request as fewer tokens than this share of the raw
# estimate of its system messages alone left them out: no tokenizer counts
# text that short (the calibration's lowest ratio).
DROPPED_SYSTEM_SHARE = 0.25
# Tools estimated at fewer tokens than this say nothing about a prompt's size.
MIN_TOOL_TOKENS = 500
# A prompt counted below this share of its tools' estimate cannot hold them.
DROPPED_TOOLS_SHARE = 0.8

_REFUSED_KEYS: Final = {
    Feature.TOOLS: "model_takes_no_tools",
    Feature.IMAGE_INPUT: "model_takes_no_images",
    Feature.FILE_INPUT: "model_takes_no_files",
}


def chat_log_attachments(
    chat_log: conversation.ChatLog,
) -> Iterator[conversation.Attachment]:
    """Yield every attachment of the chat log: each is sent again with it."""
    for content in chat_log.content:
        if isinstance(content, conversation.UserContent):
            yield from content.attachments or ()


def check_model_takes(
    capabilities: ModelCapabilities,
    *,
    tools: bool,
    attachments: Iterable[conversation.Attachment],
) -> None:
    """Raise InputError when the model is known to refuse what the request holds."""
    wanted = {
        Feature.IMAGE_INPUT
        if normalise_mime_type(attachment.mime_type).startswith("image/")
        else Feature.FILE_INPUT
        for attachment in attachments
    }
    if tools:
        wanted.add(Feature.TOOLS)
    for feature, key in _REFUSED_KEYS.items():
        if feature in wanted and capabilities.refuses(feature):
            raise InputError(key, model=capabilities.model)


@contextmanager
def learning_refusals(capabilities: ModelCapabilities) -> Iterator[None]:
    """Remember a general refusal of tools, images or files raised in the block."""
    try:
        yield
    except RequestRejectedError as err:
        if err.general and err.feature in _REFUSED_KEYS:
            capabilities.learn_refused(err.feature, err.lesson_source)
        raise


def known_window(
    options: Mapping[str, Any], capabilities: ModelCapabilities
) -> int | None:
    """Return the window requests must fit: the least of the setting and the server's."""
    windows = (options.get(CONF_CONTEXT_WINDOW), capabilities.context_window)
    return min(filter(None, windows), default=None)


def default_answer_limit(
    server: Capabilities, options: Mapping[str, Any]
) -> int | None:
    """Return the answer limit of a subentry whose settings set none."""
    # Only a local server's, so a model that does not stop ends there, not at
    # the end of its window.
    if not server.local:
        return None
    window = known_window(options, server.model(str(options.get(CONF_CHAT_MODEL))))
    if window is None:
        return DEFAULT_ANSWER_TOKENS
    return max(1, min(DEFAULT_ANSWER_TOKENS, window // LOCAL_ANSWER_SHARE))


class ContextWindow:
    """One subentry's window, calibrated estimate and conversation cuts."""

    def __init__(self, entry_id: str, subentry: ConfigSubentry) -> None:
        """Start uncalibrated, with no conversation cut yet."""
        self._entry_id = entry_id
        self.subentry = subentry
        self.estimate = TokenEstimate()
        self._cuts: OrderedDict[str, ConversationCut] = OrderedDict()
        self.issue_id = f"prompt_too_large_{subentry.subentry_id}"

    def cut(self, conversation_id: str) -> ConversationCut:
        """Return what was left out of a conversation so far."""
        cut = self._cuts.pop(conversation_id, None) or ConversationCut()
        self._cuts[conversation_id] = cut
        while len(self._cuts) > MAX_CONVERSATIONS:
            self._cuts.popitem(last=False)
        return cut

    def report(self, chat_log: conversation.ChatLog, err: ContextWindowError) -> None:
        """Open the repair issue when the prompt alone does not fit, while loaded."""
        entry = chat_log.hass.config_entries.async_get_entry(self._entry_id)
        loaded = entry is not None and entry.state is ConfigEntryState.LOADED
        if err.translation_key != "prompt_too_large" or not loaded:
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
                "name": self.subentry.title,
                **(err.translation_placeholders or {}),
            },
        )

    def resolve(self, hass: HomeAssistant) -> None:
        """Close the repair issue: a request fitted, or the agent is removed."""
        ir.async_delete_issue(hass, DOMAIN, self.issue_id)


@dataclass(eq=False)
class RequestFit:
    """Fitting for the requests of one run of rounds, bound to one chat log."""

    _owner: ContextWindow
    _chat_log: conversation.ChatLog
    _capabilities: ModelCapabilities
    _settings: RequestSettings
    _cut: ConversationCut = field(init=False)
    # The request last asked for, before fitting; the raw estimate of it as
    # sent; whether it was sent again after an overflow.
    _asked: tuple[list[PromptItem], Tools] = field(
        init=False, default_factory=lambda: ([], [])
    )
    _sent_raw: float = field(init=False, default=0.0)
    _retried: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        """Take the window's cut of this conversation."""
        self._cut = self._owner.cut(self._chat_log.conversation_id)

    def fitted(self, items: list[PromptItem], tools: Tools) -> Fit:
        """Return a new request's messages fitted into the window, and its limit."""
        self._retried = False
        self._asked = (items, tools)
        return self._fitted(items, tools)

    def after_overflow(self, err: ContextOverflowError) -> Fit:
        """Return the last request fitted to what the error taught; raise if it cannot help."""
        LOGGER.debug(
            "The request overflowed the context (window %s, prompt %s tokens)",
            err.window,
            err.prompt_tokens,
        )
        named = self._capabilities.believed_window(read_window(err.window))
        if self._retried:
            raise self._unfixable(err, named)
        self._retried = True
        before = self._owner.estimate.ratio
        self._owner.estimate.calibrate(
            self._sent_raw, read_count(err.prompt_tokens), claimed=True
        )
        window = self._limits().window
        if named and (window is None or named < window):
            self._capabilities.learn_context_window(named)
        elif window is None or self._owner.estimate.ratio == before:
            # Nothing new to fit by: trimming again would send the same.
            raise self._unfixable(err, named)
        return self._fitted(*self._asked)

    def observe(self, usage: JsonObject) -> None:
        """Calibrate the estimate with the tokens the server counted.

        A count too small for the system messages teaches that the chat
        template drops them (not on Ollama, some versions of which count only
        uncached tokens); one too small for the tools, twice in a row (one count
        may be wrong), that it drops them and the model claims actions it never
        did, unless the server says the model takes tools (a template may render
        them far shorter than their schemas).
        """
        estimate, capabilities = self._owner.estimate, self._capabilities
        counted = usage.get("prompt_tokens")
        count = counted if isinstance(counted, int) else 0
        items, tools = self._asked
        tool_tokens = estimate.tokens(estimate.raw_tools(tools))
        system = sum(map(raw_message, split_turns(items)[0]))
        capabilities.accepted_prompt(count)
        if (
            0 < count < system * DROPPED_SYSTEM_SHARE
            and capabilities.kind is not ServerKind.OLLAMA
            and not capabilities.refuses(Feature.SYSTEM_MESSAGES)
        ):
            LOGGER.info(
                "%s counted %s prompt tokens for a system prompt of about %d: its "
                "chat template drops system messages, so the system prompt now "
                "goes at the start of the first user message",
                capabilities.model,
                count,
                estimate.tokens(system),
            )
            capabilities.learn_refused(
                Feature.SYSTEM_MESSAGES,
                f"{count} prompt tokens counted for a longer system prompt",
            )
        else:
            estimate.calibrate(self._sent_raw, counted)
        dropped = (
            capabilities.report.tools is not True
            and tool_tokens >= MIN_TOOL_TOKENS
            and 0 < count < tool_tokens * DROPPED_TOOLS_SHARE
        )
        if dropped and capabilities.lessons.tools_doubted:
            capabilities.learn_refused(
                Feature.TOOLS,
                f"{count} prompt tokens counted for about {tool_tokens} of tools",
            )
            raise ModelError("template_drops_tools", model=capabilities.model)
        capabilities.lessons.tools_doubted = dropped

    def _limits(self) -> Limits:
        options = self._owner.subentry.data
        return Limits(
            window=known_window(options, self._capabilities),
            answer_tokens=self._settings.max_tokens or DEFAULT_ANSWER_TOKENS,
            history_turns=options.get(CONF_HISTORY_TURNS),
        )

    def _fitted(self, messages: list[PromptItem], tools: Tools) -> Fit:
        limits, estimate = self._limits(), self._owner.estimate
        try:
            fitted = fit(messages, tools, limits, estimate, self._cut)
        except ContextWindowError as err:
            self._owner.report(self._chat_log, err)
            raise
        self._owner.resolve(self._chat_log.hass)
        self._sent_raw = estimate.raw_request(fitted.items, tools)
        context = {
            "window": limits.window,
            "estimated_tokens": fitted.tokens,
            "answer_tokens": fitted.answer_tokens,
            "kept_turns": fitted.kept_turns,
            "dropped_turns": fitted.dropped_turns,
            "system_folded": self._capabilities.refuses(Feature.SYSTEM_MESSAGES),
        }
        self._chat_log.async_trace({"context": context})
        # The settings' limit, or less where the window leaves less room.
        less = fitted.answer_tokens < limits.answer_tokens and fitted.answer_tokens
        return fitted.messages, less or self._settings.max_tokens

    def _unfixable(self, err: ContextOverflowError, named: int | None) -> Exception:
        """Return the error for an overflow trimming cannot fix; `named`: its window."""
        limits = self._limits()
        window = named or limits.window
        if window is None:
            return err
        counted = read_count(err.prompt_tokens) or 0
        estimated = self._owner.estimate.tokens(self._sent_raw)
        needed = max(counted, estimated) + limits.least_answer_tokens
        error = ContextWindowError(
            "prompt_too_large", needed=f"{needed:,}", window=f"{window:,}"
        )
        self._owner.report(self._chat_log, error)
        return error


def observe_usage(
    chat_log: conversation.ChatLog,
    usage: JsonObject | None,
    on_usage: Callable[[JsonObject], None],
    fit: RequestFit | None,
) -> None:
    """Trace the tokens an answer reports, and calibrate the fitting by them."""
    if not usage:
        return
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    stats = {  # as Home Assistant's trace view shows them
        "input_tokens": usage.get("prompt_tokens"),
        "cached_input_tokens": cached or 0,
        "output_tokens": usage.get("completion_tokens"),
    }
    chat_log.async_trace({"stats": stats, "usage": usage})
    on_usage(usage)
    if fit is not None:
        fit.observe(usage)
