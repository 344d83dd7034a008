"""Error answers read into our errors, whatever a server's status and body.

Their human part is read without markup. A context overflow is read for the
window a server names and the prompt it counted, so the request can be fitted
and sent again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
import html
from http.client import responses
import json
import math
import re
from typing import Any, Final

from ..const import LOGGER, Feature
from ..errors import (
    AuthError,
    ContextOverflowError,
    RateLimitedError,
    RequestRejectedError,
    ServerError,
    redact,
    shown,
)
from .routes import FEATURE_ROUTES, error_details, model_statuses, names_unknown_model

MAX_ERROR_BYTES: Final = 64 * 1024

# Linear time: an error page of many unclosed tags must not block the event loop.
_BLOCK_OPEN: Final = re.compile(r"<(script|style)\b", re.IGNORECASE)
_BLOCK_CLOSE: Final = {
    kind: re.compile(rf"</{kind}\s*>", re.IGNORECASE) for kind in ("script", "style")
}
_TAG: Final = re.compile(r"<[^<>]*>")
_SPACES: Final = re.compile(r"\s+")

# A text-only chat template given content parts, as said and as JSON escapes it.
_LIST_REFUSED: Final = ('(not "list")', '(not \\"list\\")')
# Words of an answer that refuses what it was sent, whatever it was.
_GENERAL: Final = re.compile(
    r"not (?:support|allowed|permitted|implemented|available)|unsupported|unavailable"
    r"|must alternate|extra_forbidden|unknown (?:parameter|field|argument)"
    r"|unrecogni[zs]ed|unexpected keyword|literal_error|input should be|is not one of"
    r"|invalid[ _]value|cannot be used|only the default|requires"
    # An organization that is not verified gets no reasoning summaries.
    r"|must be verified|" + "|".join(map(re.escape, _LIST_REFUSED))
)
# Words of an answer about one schema, not about strict mode or JSON output.
_ONE_SCHEMA: Final = re.compile(
    r"invalid (?:json )?schema|schema is invalid|in context=|nesting|too many|exceeds"
    r"|additionalproperties|is required to be supplied"
)
# llama-server could not parse the model's tool calls: this answer failed, not the request.
_UNPARSED_ANSWER: Final = re.compile(
    r"failed to parse|does not match the expected|peg-native"
)
# A 429 saying the service tier has no room now, not that we asked too often;
# the headers that may say when to ask again, the first found told.
_TIER_BUSY: Final = "resource unavailable"
_RESETS: Final = ("retry-after", "x-ratelimit-reset-requests", "x-ratelimit-reset")
_NO_ROUTE: Final = frozenset({404, 405, 501})
_ROUTE_NOT_FOUND: Final = re.compile(
    r"^(?:\d{3}\W*)?(?:page |file |resource )?"
    r"(?:not found|method not allowed|not implemented)\b"
    r"|^(?:unexpected|unknown) endpoint|^cannot post\b"
)
# A route the server behind a gateway lacks, as LiteLLM quotes it: FastAPI's
# answer, or llama-server's "File Not Found".
_QUOTED_ROUTE_NOT_FOUND: Final = re.compile(
    r"""['"]detail['"]\s*:\s*['"]not found['"]|exception - (?:file )?not found\b"""
)
# 502 and 504: a proxy or gateway answered for the server behind it.
_FAILED: Final = {
    502: "gateway_failed",
    503: "server_unavailable",
    504: "gateway_failed",
}
_FORMAT: Final = ("response_format", "response format", "text.format")
# Where each feature may appear in an answer; checked in this order.
_NAMES: Final[tuple[tuple[Feature, tuple[str, ...]], ...]] = (
    (Feature.STREAM_OPTIONS, ("stream_options", "include_usage")),
    (Feature.PROMPT_CACHE_KEY, ("prompt_cache_key",)),
    (Feature.SERVICE_TIER, ("service_tier", "service tier")),
    (Feature.LOGPROBS, ("logprobs", "log_probs", "log probabilities")),
    # Before reasoning: "not supported with minimal reasoning effort".
    (Feature.WEB_SEARCH, ("web_search",)),
    (Feature.CODE_INTERPRETER, ("code_interpreter", "container")),
    (Feature.IMAGE_GENERATION, ("image_generation",)),
    (Feature.REASONING_CONTENT, ("reasoning_content",)),
    (Feature.REASONING_SUMMARY, ("reasoning.summary", "reasoning summar")),
    (Feature.REASONING, ("reasoning",)),
    (Feature.VERBOSITY, ("verbosity",)),
    (Feature.MAX_COMPLETION_TOKENS, ("max_completion_tokens",)),
    (Feature.MAX_TOKENS, ("max_tokens",)),
    (Feature.SAMPLING, ("temperature", "top_p")),
    (Feature.STRICT_SCHEMA, ("strict",)),
    (Feature.JSON_SCHEMA, ("json_schema", *_FORMAT, "schema", "guided")),
    (Feature.JSON_OBJECT_SCHEMA, ("schema",)),
    (Feature.JSON_OBJECT, ("json_object", *_FORMAT, "json mode")),
    (
        Feature.IMAGE_INPUT,
        ("image_url", "image", "vision", "multimodal", *_LIST_REFUSED),
    ),
    (Feature.FILE_INPUT, ("file_data", "file", "pdf", "document", *_LIST_REFUSED)),
    (Feature.TOOL_CHOICE, ("tool_choice", "tool choice")),
    (Feature.STREAM_WITH_TOOLS, ("stream",)),
    (Feature.TRANSCRIPT_STREAM, ("stream",)),
    (Feature.SPEECH_SPEED, ("speed",)),
    (Feature.SPEECH_INSTRUCTIONS, ("instructions",)),
    # A chat template that takes one system message, and only first (Gemma's).
    (Feature.SYSTEM_MESSAGES, ("system message", "system role", "roles must alt")),
    (Feature.TOOLS, ("tool", "function")),
)
# Each name counts where a word starts with it: "stream" is in "streaming", not
# in the "upstream" of a proxy's outage page, "vision" not in "revision".
_NAMED: Final = tuple(
    (
        feature,
        re.compile("|".join(rf"(?<![a-z0-9]){re.escape(name)}" for name in names)),
    )
    for feature, names in _NAMES
)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused request feature, and whether the refusal holds for any request."""

    feature: Feature
    general: bool


def classify_rejection(
    status: int, text: str, sent: frozenset[Feature]
) -> Rejection | None:
    """Return the feature an error answer refuses among those sent (a 429: a full tier)."""
    lowered = text.casefold()
    if status == 429:
        busy = Feature.SERVICE_TIER in sent and _TIER_BUSY in lowered
        return Rejection(Feature.SERVICE_TIER, general=False) if busy else None
    if status in (401, 403, 408) or status < 400:
        return None
    if Feature.TOOLS in sent and _UNPARSED_ANSWER.search(lowered):
        # Asked again unstreamed; the next answer may parse. Never learned.
        return Rejection(Feature.STREAM_WITH_TOOLS, general=False)
    for feature, route in FEATURE_ROUTES.items():
        if feature in sent and _missing_route(status, lowered, route):
            return Rejection(feature, general=True)
    for feature, pattern in _NAMED:
        if feature in sent and pattern.search(lowered):
            # Whether it holds for the feature itself, not this one use (of one
            # schema); a route or method the server lacks refuses everything sent.
            schema = feature in (Feature.STRICT_SCHEMA, Feature.JSON_SCHEMA)
            one_use = schema and bool(_ONE_SCHEMA.search(lowered))
            general = status in _NO_ROUTE or bool(_GENERAL.search(lowered))
            return Rejection(feature, general and not one_use)
    return None


def _missing_route(status: int, lowered: str, route: str) -> bool:
    """Tell whether an answer says the route itself is missing, not an item or a model."""
    return status in _NO_ROUTE and (
        route in lowered
        or bool(_ROUTE_NOT_FOUND.match(error_text(lowered.encode())))
        or bool(_QUOTED_ROUTE_NOT_FOUND.search(lowered))
    )


def answer_error(message: str, body: Any = None, *, tools: bool = False) -> ServerError:
    """Return the error an answer's body tells (a stream's error event); overflows apart."""
    if (overflow := parse_overflow(message, body)) is not None:
        return overflow
    sent = frozenset({Feature.TOOLS, Feature.STREAM_WITH_TOOLS} if tools else ())
    rejection = classify_rejection(500, message, sent)
    if rejection is not None and rejection.feature is Feature.STREAM_WITH_TOOLS:
        return RequestRejectedError(shown(message), rejection.feature, status=500)
    return ServerError("api_error", message=message)


# Words of a 401/403 that is about one model or feature, not about the key.
_PERMISSION: Final = re.compile(
    r"missing(?: scopes|_scope)|insufficient permissions|must be verified"
    r"|not allowed to access|does not have access to"
)


def error_for_status(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    sent: frozenset[Feature] = frozenset(),
    path: str = "",
) -> ServerError:
    """Return our translated error for an error answer; an HTML page by its status."""
    body = body[:MAX_ERROR_BYTES]
    raw = redact(body.decode("utf-8", errors="replace"))
    text = redact(error_text(body))
    # A web page rather than an API error is told by its status (`HTTP 404 Not Found`).
    page = (
        "html" in headers.get("content-type", "").casefold() or raw.lstrip()[:1] == "<"
    )
    logged = shown(text) if page else text
    LOGGER.debug("%s answered %s: %s", path or "The server", status, logged)
    status_line = f"HTTP {status} {responses.get(status, '')}".rstrip()
    message = shown(text) if text and not page else status_line
    lowered = raw.casefold()
    if status in (401, 403):
        if _PERMISSION.search(lowered):
            # The key is fine; a new one would not help.
            return ServerError("permission_denied", message=message)
        return AuthError("invalid_auth")
    data = json_or_none(raw)
    if status != 429 and (overflow := parse_overflow(text, data)) is not None:
        return overflow
    if (rejection := classify_rejection(status, raw, sent)) is not None:
        return RequestRejectedError(
            message, rejection.feature, general=rejection.general, status=status
        )
    if status == 429:
        if "insufficient_quota" in lowered:
            return ServerError("insufficient_quota", message=message)
        for name in _RESETS:
            if hint := headers.get(name):
                return RateLimitedError("rate_limited_retry", retry_after=shown(hint))
        return RateLimitedError("rate_limited")
    if status in model_statuses(path) and names_unknown_model(text, data):
        return ServerError("model_not_found", message=message)
    if 400 <= status < 500 or status == 501:
        # 501: the server does not implement what was asked, it is not down.
        return RequestRejectedError(message, status=status)
    if page or not text:
        key = _FAILED.get(status, "server_failed")
        return ServerError(key, status=str(status))
    return ServerError("api_error", message=message)


def retry_after(value: str | None) -> float | None:
    """Return the seconds a Retry-After header asks to wait, if it says."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except TypeError, ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if math.isnan(seconds):
        return None
    return max(seconds, 0.0)


MAX_FIGURE_DIGITS = 9


def _patterns(*texts: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(text, re.IGNORECASE) for text in texts)


_WINDOW = _patterns(
    # OpenAI, vLLM, DeepSeek, Groq; llama.cpp; LM Studio; Mistral; Gemini; Anthropic; TGI.
    r"maximum context length is (\d+)",
    r"available context size \((\d+) tokens?\)",
    r"context length of only (\d+)",
    r"with (\d+) maximum context length",
    r"maximum number of tokens allowed \((\d+)\)",
    r"tokens > (\d+) maximum",
    r"max_new_tokens` must be <= (\d+)",
)
_PROMPT = _patterns(
    r"your messages resulted in (\d+) tokens",
    r"\((\d+) in the messages",
    r"your request has (\d+) input tokens",
    r"request \((\d+) tokens\) exceeds",
    r"keep the first (\d+) tokens",
    r"prompt contains (\d+) tokens",
    r"input token count \((\d+)\)",
    r"prompt is too long: (\d+) tokens",
    r"given: (\d+) `inputs` tokens",
)
_OVERFLOW_WORDS = re.compile(
    r"context_length_exceeded|exceed_context_size|context (?:length|window|size)"
    r"|(?:prompt|input) is too long|too many tokens|reduce the length of the messages"
)


def parse_overflow(message: str, body: Any = None) -> ContextOverflowError | None:
    """Return a context overflow with what its error says of it; None for any other."""
    details = error_details(body)
    window = _first_number(_WINDOW, message) or _positive(details.get("n_ctx"))
    prompt = _first_number(_PROMPT, message) or _positive(
        details.get("n_prompt_tokens")
    )
    if window is None and prompt is None:
        words = f"{message} {details.get('code')} {details.get('type')}".lower()
        if not _OVERFLOW_WORDS.search(words):
            return None
    return ContextOverflowError(window, prompt)


def _first_number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    """Return the first matching pattern's number; a figure longer than a count is none."""
    for pattern in patterns:
        if (match := pattern.search(text)) and len(match[1]) <= MAX_FIGURE_DIGITS:
            return int(match[1])
    return None


def _positive(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def error_text(body: bytes) -> str:
    """Return the human part of an error body: OpenAI's, FastAPI's, or the text itself."""
    text = body.decode("utf-8", errors="replace")
    return plain(_message_in(json_or_none(text)) or text)


def json_or_none(text: str | bytes) -> Any:
    """Return the JSON a text holds, or None."""
    try:
        return json.loads(text)
    except ValueError, RecursionError:
        return None


def _message_in(data: Any) -> str | None:
    if not isinstance(data, dict):
        return data if isinstance(data, str) else None
    inner = data.get("error", data)
    if isinstance(inner, str):
        return inner
    if isinstance(inner, dict) and isinstance(inner.get("message"), str):
        return str(inner["message"])
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str):
            return value
        if key == "detail" and isinstance(value, list):
            return "; ".join(_problem(item) for item in value)
    return None


def _problem(item: Any) -> str:
    """Return one FastAPI validation problem as 'where: what'."""
    if not isinstance(item, dict):
        return str(item)
    where = ".".join(str(part) for part in item.get("loc") or ())
    message = str(item.get("msg", ""))
    return f"{where}: {message}" if where else message


def plain(text: str) -> str:
    """Return text without markup, on one line."""
    return _SPACES.sub(" ", html.unescape(_TAG.sub(" ", _without_blocks(text)))).strip()


def _without_blocks(text: str) -> str:
    """Return text without its script and style blocks, in linear time."""
    kept: list[str] = []
    position = 0
    unclosed: set[str] = set()
    for opening in _BLOCK_OPEN.finditer(text):
        kind = opening[1].lower()
        if opening.start() < position or kind in unclosed:
            continue
        closing = _BLOCK_CLOSE[kind].search(text, opening.end())
        if closing is None:
            unclosed.add(kind)
            continue
        kept.append(text[position : opening.start()])
        position = closing.end()
    kept.append(text[position:])
    return " ".join(kept)
