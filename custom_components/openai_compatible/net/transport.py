"""Requests to the server: what they ask, and one way to send them.

The settings and tools every route shares, in wire form; one transport for
every path, bounded in time and size.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, Final, TypedDict, cast

from homeassistant.components.intent.const import DOMAIN as INTENT_DOMAIN
from homeassistant.components.intent.llm import TIMER_INTENTS
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm
from homeassistant.helpers.httpx_client import get_async_client
from homeassistant.helpers.json import json_bytes
from homeassistant.util.json import json_loads
import httpx2
import probatio

from ..const import LOGGER, Feature
from ..errors import ConnectError, ServerError, remember_key, shown
from ..server_errors.answers import MAX_ERROR_BYTES, error_for_status, retry_after
from .shapes import JsonObject

if TYPE_CHECKING:
    from openai.types.shared_params import FunctionDefinition

    from .shapes import ChatTool

# Local servers ignore the key, but some gateways insist on the header.
PLACEHOLDER_API_KEY: Final = "no-key"
_RETRY_STATUSES: Final = frozenset({429, 503})
# The least wait before each retry of a round trip, and so how many it gets.
RETRY_MIN_WAITS: Final = (0.5, 1.0)

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
# Timer tools go only to some devices: last, so the tools before are always the same.
_DEVICE_TOOLS: Final = frozenset(
    f"{INTENT_DOMAIN}__{intent}" for intent in TIMER_INTENTS
)


@dataclass(frozen=True, slots=True)
class RequestSettings:
    """Per-subentry request parameters, already adapted to the model."""

    model: str
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    reasoning_model: bool = False
    prompt_cache_key: str | None = None
    short_tool_call_ids: bool = False
    # Off for servers whose streaming breaks tool calls or structured output.
    stream: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def limit_key(self) -> str:
        """Return the name of the answer's limit for this model."""
        return "max_completion_tokens" if self.reasoning_model else "max_tokens"

    def body(self) -> JsonObject:
        """Return the parameters the user set, extra fields last; nothing otherwise."""
        limit = {} if self.max_tokens is None else {self.limit_key: self.max_tokens}
        return limit | self.sampling() | self.extra

    def sampling(self) -> JsonObject:
        """Return the sampling settings (a reasoning model takes none), the cache key."""
        params: JsonObject = {
            "temperature": None if self.reasoning_model else self.temperature,
            "top_p": None if self.reasoning_model else self.top_p,
            "prompt_cache_key": self.prompt_cache_key or None,
        }
        return {key: value for key, value in params.items() if value is not None}


# Answers a call itself (a tool lookup, a call past the cap), or None to run it.
type OwnCalls = Callable[[llm.ToolInput], llm.ToolResult | None]


@dataclass(frozen=True, slots=True)
class ToolSet:
    """The tools of the chat log's LLM API in wire form, and the name mapping."""

    tools: list[ChatTool]
    to_wire: dict[str, str]
    from_wire: dict[str, str]
    own_calls: OwnCalls | None = None
    # Examples of calls of these tools, shown after the instructions.
    examples: str = ""


def without_keys[B: Mapping[str, object]](body: B, keys: tuple[str, ...]) -> B:
    """Return a copy of a request's object without some of its keys."""
    return cast("B", {key: value for key, value in body.items() if key not in keys})


def build_tool_set(llm_api: llm.APIInstance | None) -> ToolSet:
    """Convert every tool of the API, by name; the tools only some devices get last."""
    if llm_api is None or not llm_api.tools:
        return ToolSet([], {}, {})
    serializer: Callable[[Any], Any] = (
        llm_api.custom_serializer or llm.selector_serializer
    )
    tools: list[ChatTool] = []
    to_wire: dict[str, str] = {}
    from_wire: dict[str, str] = {}
    for tool in sorted(
        llm_api.tools, key=lambda tool: (tool.name in _DEVICE_TOOLS, tool.name)
    ):
        # A name the server accepts, unique among those already given.
        name = tool.name
        if not _TOOL_NAME.match(name) or name in from_wire:
            name = _INVALID_NAME_CHARS.sub("_", name) or "tool"
            if len(name) > 64 or name in from_wire:
                digest = hashlib.sha256(tool.name.encode()).hexdigest()[:8]
                name = f"{name[:55]}_{digest}"
        to_wire[tool.name] = name
        from_wire[name] = tool.name
        function: FunctionDefinition = {"name": name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = probatio.to_openapi(
            tool.parameters, custom_serializer=serializer, openapi_version="3.1.0"
        )
        tools.append({"type": "function", "function": function})
    return ToolSet(tools, to_wire, from_wire)


# (field, (file name, content[, media type])); else the name's extension tells it.
type FormFiles = Sequence[tuple[str, tuple[str, bytes] | tuple[str, bytes, str]]]


class Payload(TypedDict, total=False):
    """What a request carries, as the HTTP client takes it."""

    content: bytes | None
    data: dict[str, str]
    files: list[tuple[str, tuple[str, bytes] | tuple[str, bytes, str]]]


@dataclass(frozen=True, slots=True)
class Budget:
    """How long one round trip may take, and may wait out a 429 or 503, in seconds."""

    deadline: float
    retry_wait: float = 0.0


@dataclass(frozen=True, slots=True)
class Opened:
    """An answer whose status was good, to be read by a loop time."""

    response: httpx2.Response
    deadline_at: float

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """Yield the body as it arrives; raise timeout_answer past the deadline."""
        async with aclosing(self.response.aiter_bytes()) as chunks:
            while True:
                try:
                    async with asyncio.timeout_at(self.deadline_at):
                        chunk = await anext(chunks, None)
                except TimeoutError as err:
                    raise ConnectError("timeout_answer") from err
                except httpx2.TimeoutException as err:
                    raise ConnectError("timeout_connect") from err
                except httpx2.HTTPError as err:
                    raise ConnectError("cannot_connect") from err
                if chunk is None:
                    return
                yield chunk

    async def aread_head(self, limit: int) -> bytes:
        """Return the body's first `limit` bytes; the rest is not read."""
        parts: list[bytes] = []
        size = 0
        async for chunk in self.aiter_bytes():
            parts.append(chunk[: limit - size])
            size += len(parts[-1])
            if size >= limit:
                break
        return b"".join(parts)


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole answer, whatever its status: for callers that read statuses."""

    status: int
    headers: httpx2.Headers
    body: bytes

    def json(self) -> Any:
        """Return the body as JSON; None when it is no JSON (NaN is none)."""
        try:
            return json_loads(self.body)
        except ValueError, RecursionError:
            return None


class Transport:
    """Requests to one server's API, with its key, for every request path."""

    def __init__(
        self,
        hass: HomeAssistant,
        base_url: str,
        api_key: str | None,
        *,
        on_reachable: Callable[[bool], None] | None = None,
    ) -> None:
        """Talk to `base_url` on Home Assistant's shared HTTP client."""
        self.hass = hass
        self._client = get_async_client(hass)
        self.base_url = base_url.rstrip("/")
        self._headers = {
            "Authorization": f"Bearer {api_key or PLACEHOLDER_API_KEY}",
            "Accept": "application/json",
        }
        # Whether the server answers, as last told; a change is told on_reachable.
        self.reachable = True
        self._on_reachable = on_reachable or (lambda reachable: None)
        remember_key(api_key)

    def _reached(self, reachable: bool) -> None:
        if reachable is not self.reachable:
            self.reachable = reachable
            self._on_reachable(reachable)

    def url(self, path: str) -> str:
        """Return the URL of a path under the base URL (or the server root: '//')."""
        if path.startswith("//"):
            root = httpx2.URL(self.base_url).copy_with(path="/", query=None)
            return str(root.join(path[2:]))
        return f"{self.base_url}/{path.lstrip('/')}"

    async def async_exchange(
        self,
        method: str,
        path: str,
        *,
        budget: Budget,
        body: Mapping[str, object] | None = None,
        limit: int = MAX_ERROR_BYTES,
    ) -> Answer:
        """Send a request; return the whole answer (up to `limit`), error statuses too."""
        loop = asyncio.get_running_loop()
        deadline_at = loop.time() + budget.deadline
        response = await self._async_send(
            method, path, _payload(body, None), deadline_at
        )
        try:
            data = await Opened(response, deadline_at).aread_head(limit)
        finally:
            await response.aclose()
        return Answer(response.status_code, response.headers, data)

    @asynccontextmanager
    async def async_open(
        self,
        method: str,
        path: str,
        *,
        budget: Budget,
        body: Mapping[str, object] | None = None,
        files: FormFiles | None = None,
        sent: frozenset[Feature] = frozenset(),
    ) -> AsyncIterator[Opened]:
        """Send a request; give its answer once the status is good, closed on exit."""
        loop = asyncio.get_running_loop()
        deadline_at = loop.time() + budget.deadline
        retry_left = budget.retry_wait
        payload = _payload(body, files)
        for least in (*RETRY_MIN_WAITS, None):
            response = await self._async_send(method, path, payload, deadline_at)
            if response.status_code < 400:
                break
            try:
                raw = await Opened(response, deadline_at).aread_head(MAX_ERROR_BYTES)
            except ConnectError:
                raw = b""  # a cut or endless error body: the status still tells
            finally:
                await response.aclose()
            status, headers = response.status_code, response.headers
            error = error_for_status(status, headers, raw, sent=sent, path=path)
            asked = None
            if status in _RETRY_STATUSES:
                asked = retry_after(headers.get("retry-after"))
            if asked is None or least is None:
                raise error
            wait = max(asked, least)
            if wait > retry_left or loop.time() + wait > deadline_at:
                raise error
            LOGGER.debug("%s answered %s; retrying in %s s", path, error, wait)
            retry_left -= wait
            await asyncio.sleep(wait)
        try:
            yield Opened(response, deadline_at)
        finally:
            await response.aclose()

    async def _async_send(
        self, method: str, path: str, payload: Payload, deadline_at: float
    ) -> httpx2.Response:
        remaining = max(deadline_at - asyncio.get_running_loop().time(), 0.001)
        headers = dict(self._headers)
        if payload.get("content") is not None:
            headers["Content-Type"] = "application/json"
        request = self._client.build_request(
            method,
            self.url(path),
            headers=headers,
            timeout=httpx2.Timeout(remaining),
            **payload,
        )
        try:
            async with asyncio.timeout_at(deadline_at):
                response = await self._client.send(
                    request, stream=True, follow_redirects=False
                )
        except (TimeoutError, httpx2.TimeoutException) as err:
            self._reached(False)
            raise ConnectError("timeout_connect") from err
        except httpx2.HTTPError as err:
            self._reached(False)
            raise ConnectError("cannot_connect") from err
        self._reached(True)
        if 300 <= response.status_code < 400:
            await response.aclose()
            raise redirected(response)
        return response


def redirected(response: httpx2.Response) -> ServerError:
    """Return the error of a redirect, not followed: the key would go elsewhere."""
    try:
        target = response.url.join(response.headers["location"])
    except KeyError, httpx2.InvalidURL:
        return ServerError("redirected_nowhere", status=str(response.status_code))
    bare = target.copy_with(username=None, password=None, query=None, fragment=None)
    return ServerError(
        "redirected", status=str(response.status_code), location=shown(str(bare))
    )


def _payload(body: Mapping[str, object] | None, files: FormFiles | None) -> Payload:
    """Return what a request carries; a form's booleans as OpenAI's client writes them."""
    if files is None:
        return {"content": None if body is None else json_bytes(body)}
    fields = {
        key: str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in (body or {}).items()
    }
    return {"data": fields, "files": list(files)}


def parse_json(raw: bytes) -> Any:
    """Return an answer's JSON, Python's NaN too; raise answer_not_json if none."""
    try:
        return json_loads(raw)
    except ValueError:
        pass
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise ServerError("answer_not_json") from err
