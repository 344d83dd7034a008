"""The simulator's HTTP server: routes, recording, scripted responses, switches."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
import json
import re
import time
from typing import Any, Literal
import uuid

from aiohttp import web

from . import audio, chat, decisions, native, responses, responses_output, window
from .imagegen import draw_png, is_image
from .native import NativeServer
from .profiles import Replay, ServerProfile, load_profile
from .responses import HOSTED_TOOLS
from .wire import (
    APIError,
    error_body,
    invalid_type,
    invalid_value,
    missing,
    parse_multipart,
    require_multipart,
    unknown_parameter,
)


class _HungUp(web.StreamResponse):
    """What goes to a client that hung up mid-answer: nothing more."""

    async def prepare(self, request: web.BaseRequest) -> None:
        """Send no second head on a closed connection."""

    async def write_eof(self, data: bytes = b"") -> None:
        """Send no end on a closed connection."""


DEFAULT_MODELS = (
    "gpt-4o-mini",
    "gpt-5-mini",
    "gpt-image-1",
    "text-embedding-3-small",
    "llama3.2:3b",
)
_MAX_BODY = 64 * 1024 * 1024
# Seconds between the bytes of a trickled file.
_TRICKLE_SECONDS = 0.05
_SIZE = re.compile(r"^(\d{2,4})x(\d{2,4})$")
_IMAGE_FORMATS = ("url", "b64_json")

type Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Pause:
    """An item of a scripted stream that waits: a server that trickles."""

    seconds: float


type SSEItem = dict[str, Any] | str | bytes | Pause


@dataclass(slots=True)
class SimulatorSettings:
    """Switches that make the simulator behave like one server or another.

    The defaults describe a friendly OpenAI-like server.
    """

    # Kinds of tool_choice (chat.tool_choice_kind) under which tools are
    # ignored and answers are text, as with chat formats without tool support.
    ignore_tools_when: frozenset[str] = frozenset()
    # A real server's recorded refusals, replayed (see profiles.py).
    profile: ServerProfile | None = None

    @classmethod
    def imitating(cls, name: str) -> SimulatorSettings:
        """Return settings that answer as the recorded server `name` did."""
        profile = load_profile(name)
        return cls(
            logprobs=profile.logprobs,
            stream_usage=profile.stream_usage,
            ignore_tools_when=profile.ignore_tools_when,
            profile=profile,
        )

    # False: GET /v1/models answers 404.
    models_endpoint: bool = True
    # False: a request with tools answers 400, as Ollama does for such models.
    supports_tools: bool = True
    # True: tools are taken and left out of the prompt, as llama-server does
    # with a chat template that has no tool format: the answer is text, and
    # the prompt's token count holds no tools.
    drops_tools: bool = False
    # "strict", "non_strict" (rejects strict: true), "json_object" (rejects
    # json_schema) or "none" (rejects any response_format).
    json_schema: Literal["strict", "non_strict", "json_object", "none"] = "strict"
    # False: logprobs and top_logprobs are ignored and `logprobs` is null.
    logprobs: bool = True
    # False: /v1/decisions answers 404.
    decisions: bool = True
    # False: /v1/images/generations and /v1/images/edits answer 404.
    images: bool = True
    # How images come back unless the request says: base64 or a URL served here.
    image_response: Literal["b64_json", "url"] = "b64_json"
    # Where built-in answers put a short reasoning text, if anywhere.
    reasoning: Literal["reasoning_content", "reasoning", "think_tags"] | None = None
    # Set: every number of a built-in JSON answer is written as this literal,
    # its bounds ignored, as llama-server's grammar lets "-7.9E3667" through.
    unbounded_number: str | None = None
    # False: a label answer's top tokens hold no label unless a json_schema
    # enum of the labels holds the answer to them, as random weights do.
    labels_in_top: bool = True
    # True: as llama.cpp, an answer a grammar holds reports the model's token
    # alternatives before the grammar (no label among them), unless asked for
    # `post_sampling_probs`: then the grammar's, as `top_probs` with a `prob`.
    logprobs_before_grammar: bool = False
    # False: a request with prompt_cache_key answers 400.
    prompt_cache_key: bool = True
    # False: streams never end with a usage chunk, even when asked.
    stream_usage: bool = True
    # Set: every API request answers this status with an OpenAI-style error.
    fail_status: int | None = None
    fail_message: str = (
        "The server had an error while processing your request. Sorry about that!"
    )
    # Seconds to wait before answering each request.
    latency: float = 0.0
    # Set: chat requests over this many tokens (as `window.prompt_tokens`
    # counts them) are refused, in the words of `overflow_style`'s server.
    context_window: int | None = None
    overflow_style: window.OverflowStyle = "openai"
    # False: system messages are dropped from chat requests without a word, as
    # llama-cpp-python's gemma chat format does (see window.rendered).
    system_messages: bool = True
    # Seconds to wait between the chunks of a streamed chat answer.
    stream_chunk_delay: float = 0.0
    # What every transcription says; None: a sentence about the audio's length.
    transcript: str | None = None
    # True: transcription refuses the `stream` field, as strict servers do.
    transcription_stream_refused: bool = False
    # Optional speech fields ("speed", "instructions") speech refuses as unknown.
    speech_fields_refused: tuple[str, ...] = ()
    # The voices speech accepts.
    voices: tuple[str, ...] = audio.OPENAI_VOICES
    # True: GET /v1/audio/voices lists them, as Kokoro-FastAPI does; else 404.
    voices_endpoint: bool = False
    # Seconds of synthesis per character of text before speech starts.
    speech_seconds_per_character: float = 0.0
    # False: POST /v1/responses answers 404, as servers without it do.
    responses: bool = True
    # False: reasoning summaries are refused (an organization not verified).
    reasoning_summaries: bool = True
    # The service tiers /v1/responses takes; none: the field is refused.
    service_tiers: tuple[str, ...] = ("auto", "default", "flex", "priority")
    # True: flex processing is full, and a flex request answers 429.
    flex_busy: bool = False
    # The provider-run tools /v1/responses runs; others are refused.
    hosted_tools: frozenset[str] = frozenset(HOSTED_TOOLS)
    # Set: the native info routes of this local server answer (native.py).
    native: NativeServer | None = None


class Headers(dict[str, str]):
    """Request headers under lower-case names, looked up regardless of case."""

    def __getitem__(self, key: str) -> str:
        """Return the header's value."""
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        """Tell whether the header was sent."""
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        """Return the header's value, or the default."""
        return super().get(key.lower(), default)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the simulator received it."""

    method: str
    path: str
    headers: Headers
    json: Any
    body: bytes


@dataclass(frozen=True, slots=True)
class ServedFile:
    """A file under /files/: its bytes, status and headers, sent at once or slowly."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    # True: the body goes out a byte at a time, every _TRICKLE_SECONDS.
    trickle: bool = False


@dataclass(frozen=True, slots=True)
class _Scripted:
    """A queued response."""

    status: int
    json: Any
    sse: Sequence[SSEItem] | None
    raw: str | bytes | None
    headers: dict[str, str] = field(default_factory=dict)
    # False: the stream ends without `data: [DONE]`.
    done: bool = True


class OpenAISimulator:
    """A deterministic, scriptable server speaking the OpenAI wire protocol.

    It is not a model: built-in answers follow simple rules, and tests can
    queue exact responses per path with `enqueue`.
    """

    def __init__(
        self,
        api_key: str | None = None,
        models: list[str] | None = None,
        *,
        profile: str | None = None,
    ) -> None:
        """Prepare the application; `start` serves it.

        `profile`: answer as a recorded real server did (see profiles.py).
        """
        self.api_key = api_key
        self.models = list(DEFAULT_MODELS if models is None else models)
        # Shutdown dates (YYYY-MM-DD) the model list gives, as OpenAI's does.
        self.shutdown_dates: dict[str, str] = {}
        self.settings = (
            SimulatorSettings.imitating(profile) if profile else SimulatorSettings()
        )
        self.requests: list[RecordedRequest] = []
        # Requests being answered now, and the most there ever were at once.
        self.in_flight = 0
        self.peak_in_flight = 0
        self._queue: list[tuple[str, _Scripted]] = []
        self._files: dict[str, ServedFile] = {}
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None
        self.app = web.Application(
            middlewares=[self._middleware], client_max_size=_MAX_BODY
        )
        self.app.add_routes(
            [
                web.get("/v1/models", self._list_models),
                web.get("/v1/models/{model:.+}", self._get_model),
                web.post("/v1/chat/completions", self._chat_completions),
                web.post("/v1/responses", self._responses),
                web.post("/v1/images/generations", self._image_generations),
                web.post("/v1/images/edits", self._image_edits),
                web.post("/v1/decisions", self._decisions),
                web.post("/v1/audio/transcriptions", self._transcriptions),
                web.post("/v1/audio/speech", self._speech),
                web.get("/v1/audio/voices", self._voices),
                web.get("/files/{name}.png", self._file),
                web.get("/props", self._native),
                web.get("/version", self._native),
                web.get("/api/version", self._native),
                web.get("/api/ps", self._native),
                web.post("/api/show", self._native),
                web.get("/api/v0/models", self._native),
            ]
        )
        self.app.on_response_prepare.append(self._stamp)

    @property
    def base_url(self) -> str:
        """Return the API base URL, such as `http://127.0.0.1:PORT/v1`."""
        if self._base_url is None:
            raise RuntimeError("The simulator is not running; await start() first")
        return self._base_url

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on host and port (0: any free port); return the base URL."""
        if self._runner is not None:
            raise RuntimeError("The simulator is already running")
        runner = web.AppRunner(
            self.app, access_log=None, handler_cancellation=True, shutdown_timeout=0.25
        )
        await runner.setup()
        await web.TCPSite(runner, host, port).start()
        self._runner = runner
        bound = runner.addresses[0][1]
        shown = f"[{host}]" if ":" in host else host
        self._base_url = f"http://{shown}:{bound}/v1"
        return self._base_url

    async def stop(self) -> None:
        """Stop serving and close all connections."""
        if self._runner is not None:
            await self._runner.cleanup()
        self._runner = None
        self._base_url = None

    def enqueue(
        self,
        path: str,
        *,
        status: int = 200,
        json: Any = None,
        sse: Sequence[SSEItem] | None = None,
        headers: dict[str, str] | None = None,
        raw: str | bytes | None = None,
        done: bool = True,
    ) -> None:
        """Queue the next response for request paths ending in `path`.

        Queued responses are used first in, first out, before the built-in
        behaviour. `sse` items are chunk dicts (sent as `data: <json>`, with id,
        object, created and model filled in unless it is an error event) or raw
        strings or bytes sent as they are, each written on its own; `data:
        [DONE]` follows unless `done` is False. `raw` text goes as text/plain,
        raw bytes as application/octet-stream, unless `headers` say otherwise.
        Without a body, an error status gets an OpenAI-style error body.
        """
        if sum(body is not None for body in (json, sse, raw)) > 1:
            raise ValueError("Give at most one of json, sse and raw")
        key = path if path.startswith("/") else f"/{path}"
        self._queue.append(
            (key, _Scripted(status, json, sse, raw, dict(headers or {}), done))
        )

    def serve_file(
        self,
        name: str,
        body: bytes = b"",
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        trickle: bool = False,
    ) -> str:
        """Serve a file at `/files/<name>.png`, as image URLs are; return its URL.

        `status` and `headers` make it a redirect (with `Location`), an error
        or a compressed body (with `Content-Encoding`; the body is sent as
        given); `trickle` sends it a byte at a time, slowly.
        """
        self._files[name] = ServedFile(body, status, dict(headers or {}), trickle)
        return f"{self.base_url.removesuffix('/v1')}/files/{name}.png"

    def clear_queue(self) -> None:
        """Drop the queued responses that no request used."""
        self._queue.clear()

    def unused_responses(self) -> list[str]:
        """Return the paths of queued responses that no request has taken yet."""
        return [path for path, _ in self._queue]

    def chat_requests(self) -> list[dict[str, Any]]:
        """Return the bodies of the chat completion requests received, in order."""
        return self._bodies("/chat/completions")

    def responses_requests(self) -> list[dict[str, Any]]:
        """Return the bodies of the /responses requests received, in order."""
        return self._bodies("/responses")

    def _bodies(self, path: str) -> list[dict[str, Any]]:
        """Return the JSON bodies of the POST requests to a path, in order."""
        return [
            request.json
            for request in self.requests
            if request.method == "POST"
            and request.path.endswith(path)
            and isinstance(request.json, dict)
        ]

    # --- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Handler
    ) -> web.StreamResponse:
        """Record the request, then apply switches, auth and scripted responses."""
        raw = await request.read()
        try:
            parsed = (
                json.loads(raw)
                if raw and request.content_type == "application/json"
                else None
            )
        except ValueError:
            parsed = None
        request["json"] = parsed
        self.requests.append(
            RecordedRequest(
                request.method,
                request.path,
                Headers(
                    (name.lower(), value) for name, value in request.headers.items()
                ),
                parsed,
                raw,
            )
        )
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._answer(request, handler, parsed)
        except ConnectionResetError:
            # The client hung up mid-answer (as ours does on an endless one):
            # a real server shrugs, it does not log a server error.
            return _HungUp()
        finally:
            self.in_flight -= 1

    async def _answer(
        self, request: web.Request, handler: Handler, parsed: Any
    ) -> web.StreamResponse:
        """Apply latency, switches, auth and scripted responses, then answer."""
        if self.settings.latency:
            await asyncio.sleep(self.settings.latency)
        try:
            if not request.path.startswith("/files/"):
                self._check_access(request)
                if request.path.endswith("/chat/completions") and isinstance(
                    parsed, dict
                ):
                    parsed = request["json"] = window.rendered(parsed, self.settings)
                    # Like a real server's, even for a scripted answer.
                    window.check(parsed, self.settings)
                if (scripted := self._next_scripted(request.path)) is not None:
                    return await self._send_scripted(request, scripted)
                if (replay := self._replay(request)) is not None:
                    return await self._send_replay(request, replay)
            return await handler(request)
        except APIError as err:
            return web.json_response(err.body(), status=err.status)
        except web.HTTPException as err:
            if err.status < 400:
                raise
            return self._not_found(request, err.status)

    def _check_access(self, request: web.Request) -> None:
        """Apply the fault switch, then the API key."""
        if (status := self.settings.fail_status) is not None:
            raise APIError(
                self.settings.fail_message,
                status=status,
                type_="server_error" if status >= 500 else "invalid_request_error",
                code="rate_limit_exceeded" if status == 429 else None,
            )
        if self.api_key is not None and (
            request.headers.get("Authorization") != f"Bearer {self.api_key}"
        ):
            raise APIError(
                "Incorrect API key provided", status=401, code="invalid_api_key"
            )

    def _next_scripted(self, path: str) -> _Scripted | None:
        """Pop the oldest queued response for the path, if any."""
        for index, (suffix, scripted) in enumerate(self._queue):
            if path.endswith(suffix):
                del self._queue[index]
                return scripted
        return None

    def _replay(self, request: web.Request) -> Replay | None:
        """Return the recorded answer of the profile's server, if it has one."""
        if (profile := self.settings.profile) is None:
            return None
        return profile.replay_for(request.path, request["json"])

    @staticmethod
    async def _send_replay(request: web.Request, replay: Replay) -> web.StreamResponse:
        """Send a recorded answer as the real server sent it."""
        response = web.StreamResponse(
            status=replay.status, headers={"Content-Type": replay.content_type}
        )
        await response.prepare(request)
        await response.write(replay.body.encode())
        await response.write_eof()
        return response

    async def _stamp(self, request: web.Request, response: web.StreamResponse) -> None:
        """Give every API response a request id, as OpenAI does."""
        if not request.path.startswith("/files/"):
            response.headers.setdefault("x-request-id", chat.new_id("req_", 32))

    @staticmethod
    def _not_found(request: web.Request, status: int = 404) -> web.Response:
        """Answer a route that does not exist (or is switched off)."""
        return web.json_response(
            error_body(f"Invalid URL ({request.method} {request.path})"), status=status
        )

    async def _send_scripted(
        self, request: web.Request, scripted: _Scripted
    ) -> web.StreamResponse:
        """Send a queued response."""
        if scripted.sse is not None and request.path.endswith("/responses"):
            return await self._send_events(
                request, scripted.sse, status=scripted.status, headers=scripted.headers
            )
        if scripted.sse is not None:
            body = request["json"] if isinstance(request["json"], dict) else {}
            return await self._send_sse(
                request,
                scripted.sse,
                model=str(body.get("model") or "simulator"),
                status=scripted.status,
                headers=scripted.headers,
                done=scripted.done,
            )
        if scripted.json is not None:
            payload, content_type = json.dumps(scripted.json), "application/json"
        elif isinstance(scripted.raw, bytes):
            payload, content_type = scripted.raw, "application/octet-stream"
        elif scripted.raw is not None:
            payload, content_type = scripted.raw, "text/plain; charset=utf-8"
        elif scripted.status >= 400:
            phrase = (
                HTTPStatus(scripted.status).phrase
                if scripted.status in HTTPStatus
                else "Error"
            )
            payload = json.dumps(
                error_body(
                    phrase,
                    type_="server_error"
                    if scripted.status >= 500
                    else "invalid_request_error",
                )
            )
            content_type = "application/json"
        else:
            payload, content_type = "", "text/plain; charset=utf-8"
        response = web.Response(
            body=payload if isinstance(payload, bytes) else payload.encode(),
            status=scripted.status,
            headers=scripted.headers,
        )
        if "Content-Type" not in response.headers:
            response.headers["Content-Type"] = content_type
        return response

    async def _send_sse(
        self,
        request: web.Request,
        items: Sequence[SSEItem],
        *,
        model: str,
        status: int = 200,
        headers: dict[str, str] | None = None,
        done: bool = True,
    ) -> web.StreamResponse:
        """Stream chunks as server-sent events, then `data: [DONE]` if `done`."""
        response = web.StreamResponse(status=status, headers=headers)
        response.headers.setdefault("Content-Type", "text/event-stream; charset=utf-8")
        response.headers.setdefault("Cache-Control", "no-cache")
        await response.prepare(request)
        defaults = {
            "id": chat.new_id("chatcmpl-", 29),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        for index, item in enumerate(items):
            if index and self.settings.stream_chunk_delay:
                await asyncio.sleep(self.settings.stream_chunk_delay)
            if isinstance(item, Pause):
                await asyncio.sleep(item.seconds)
                continue
            if isinstance(item, (str, bytes)):
                await response.write(item if isinstance(item, bytes) else item.encode())
                continue
            event = item if "error" in item else {**defaults, **item}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        if done:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _send_events(
        self,
        request: web.Request,
        items: Sequence[SSEItem],
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> web.StreamResponse:
        """Stream Responses API events, each named; no `[DONE]` follows."""
        response = web.StreamResponse(status=status, headers=headers)
        response.headers.setdefault("Content-Type", "text/event-stream; charset=utf-8")
        response.headers.setdefault("Cache-Control", "no-cache")
        await response.prepare(request)
        for item in items:
            await response.write(responses_output.sse_bytes(item))
        await response.write_eof()
        return response

    # --- routes --------------------------------------------------------------

    async def _list_models(self, request: web.Request) -> web.Response:
        """List the models, OpenAI style."""
        if not self.settings.models_endpoint:
            return self._not_found(request)
        return web.json_response(
            {
                "object": "list",
                "data": [
                    _model_entry(
                        model, self.settings.native, self.settings.context_window
                    )
                    | self._shutdown_field(model)
                    for model in self.models
                ],
            }
        )

    def _shutdown_field(self, model: str) -> dict[str, str]:
        """Return the shutdown date field of a model's entry, if it has a date."""
        if model in self.shutdown_dates:
            return {"shutdown_date": self.shutdown_dates[model]}
        return {}

    async def _get_model(self, request: web.Request) -> web.Response:
        """Describe one model."""
        model = request.match_info["model"]
        if not self.settings.models_endpoint:
            return self._not_found(request)
        if model not in self.models:
            raise APIError(
                f"The model '{model}' does not exist",
                status=404,
                param="model",
                code="model_not_found",
            )
        return web.json_response(
            _model_entry(model, self.settings.native, self.settings.context_window)
        )

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        """Validate the request and answer it, streamed or not."""
        body = request["json"]
        chat.validate(body, self.settings)
        if self.settings.drops_tools:
            body = {
                key: body[key] for key in body if key not in ("tools", "tool_choice")
            }
        result = chat.answer(body, self.settings)
        usage = chat.usage(body, result)
        mode = self.settings.reasoning
        if not body.get("stream"):
            return web.json_response(
                chat.completion(
                    result, model=body["model"], reasoning_mode=mode, usage=usage
                )
            )
        wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = chat.stream_chunks(
            result,
            reasoning_mode=mode,
            usage=usage if wants_usage and self.settings.stream_usage else None,
        )
        return await self._send_sse(request, chunks, model=body["model"])

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        """Validate a Responses API request and answer it, streamed or not."""
        if not self.settings.responses:
            return self._not_found(request)
        body = request["json"]
        responses.validate(body, self.settings)
        window.check(responses.chat_body(body), self.settings)
        answer = responses_output.respond(body, self.settings)
        if not body.get("stream"):
            return web.json_response(answer)
        return await self._send_events(request, responses_output.events(answer))

    async def _image_generations(self, request: web.Request) -> web.Response:
        """Draw images for a JSON request."""
        if not self.settings.images:
            return self._not_found(request)
        body = request["json"]
        if not isinstance(body, dict):
            raise APIError("We could not parse the JSON body of your request.")
        return self._images(request, body)

    async def _image_edits(self, request: web.Request) -> web.Response:
        """Draw images for a multipart request, after checking its images decode."""
        if not self.settings.images:
            return self._not_found(request)
        require_multipart(request.content_type)
        fields, files = parse_multipart(
            request.headers["Content-Type"], await request.read()
        )
        images = [file.data for file in files if file.field in ("image", "image[]")]
        if not images:
            raise missing("image")
        for index, data in enumerate(images, start=1):
            if not is_image(data):
                raise APIError(
                    f"Invalid image file or mode for image {index}, please check your "
                    "image file.",
                    param="image",
                    code="invalid_image_file",
                )
        for file in files:
            if file.field == "mask" and not is_image(file.data):
                raise APIError(
                    "Invalid mask image file.", param="mask", code="invalid_image_file"
                )
        return self._images(request, fields)

    def _images(self, request: web.Request, fields: dict[str, Any]) -> web.Response:
        """Validate image parameters and answer with freshly drawn PNGs."""
        prompt = fields.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            raise missing("prompt")
        model = str(fields.get("model") or "dall-e-2")
        gpt_image = model.startswith("gpt-image")
        count = _image_count(fields.get("n", 1))
        width, height = _image_size(fields.get("size"))
        response_format = fields.get("response_format")
        if response_format is not None:
            if gpt_image:
                raise unknown_parameter("response_format")
            if response_format not in _IMAGE_FORMATS:
                raise invalid_value("response_format", response_format, _IMAGE_FORMATS)
        else:
            response_format = self.settings.image_response
        data: list[dict[str, Any]] = []
        for index in range(count):
            png = draw_png(f"{prompt}#{index}" if index else prompt, width, height)
            item: dict[str, Any] = {}
            if response_format == "url":
                name = uuid.uuid4().hex
                self._files[name] = ServedFile(png)
                item["url"] = f"{request.scheme}://{request.host}/files/{name}.png"
            else:
                item["b64_json"] = base64.b64encode(png).decode()
            if not gpt_image:
                item["revised_prompt"] = prompt
            data.append(item)
        result: dict[str, Any] = {"created": int(time.time()), "data": data}
        if gpt_image:
            prompt_tokens = chat.count_tokens(prompt)
            result |= {
                "background": "opaque",
                "output_format": "png",
                "quality": "medium",
                "size": f"{width}x{height}",
                "usage": {
                    "input_tokens": prompt_tokens,
                    "input_tokens_details": {
                        "text_tokens": prompt_tokens,
                        "image_tokens": 0,
                    },
                    "output_tokens": 1056 * count,
                    "total_tokens": prompt_tokens + 1056 * count,
                },
            }
        return web.json_response(result)

    async def _decisions(self, request: web.Request) -> web.Response:
        """Answer decision questions with deterministic probabilities."""
        if not self.settings.decisions:
            return self._not_found(request)
        body = request["json"]
        decisions.validate(body)
        return web.json_response(decisions.decide(body))

    async def _transcriptions(self, request: web.Request) -> web.StreamResponse:
        """Transcribe an uploaded recording."""
        return await audio.transcribe(request, self.settings, self.models)

    async def _speech(self, request: web.Request) -> web.StreamResponse:
        """Generate speech for a text."""
        return await audio.speak(request, self.settings, self.models)

    async def _voices(self, request: web.Request) -> web.Response:
        """List the voices, where the server is set to."""
        if (listed := audio.voices(self.settings)) is None:
            return self._not_found(request)
        return web.json_response(listed)

    async def _native(self, request: web.Request) -> web.Response:
        """Answer the native info route of the server `settings.native` names."""
        server, window_size = self.settings.native, self.settings.context_window
        if server is None:
            return self._not_found(request)
        route = (server, request.method, request.path)
        if route == ("llama_cpp", "GET", "/props"):
            return web.json_response(
                native.llama_cpp_props(
                    window_size, self.models, tools=self.settings.supports_tools
                )
            )
        if route in {("vllm", "GET", "/version"), ("ollama", "GET", "/api/version")}:
            return web.json_response({"version": native.VERSIONS[server]})
        if route == ("ollama", "GET", "/api/ps"):
            return web.json_response(native.ollama_ps(self.models))
        if route == ("ollama", "POST", "/api/show"):
            model = (request["json"] or {}).get("model")
            if model not in self.models:
                return web.json_response(
                    {"error": f"model '{model}' not found"}, status=404
                )
            return web.json_response(
                native.ollama_show(
                    model, window_size, tools=self.settings.supports_tools
                )
            )
        if route == ("lm_studio", "GET", "/api/v0/models"):
            return web.json_response(native.lm_studio_models(self.models, window_size))
        return self._not_found(request)

    async def _file(self, request: web.Request) -> web.StreamResponse:
        """Serve a file: an image generated in URL mode, or one a test set up."""
        served = self._files.get(request.match_info["name"])
        if served is None:
            return self._not_found(request)
        headers = {"Content-Type": "image/png", **served.headers}
        if not served.trickle:
            return web.Response(body=served.body, status=served.status, headers=headers)
        response = web.StreamResponse(status=served.status, headers=headers)
        await response.prepare(request)
        for byte in served.body:
            await response.write(bytes((byte,)))
            await asyncio.sleep(_TRICKLE_SECONDS)
        await response.write_eof()
        return response


def _model_entry(
    model: str, server: NativeServer | None = None, window_size: int | None = None
) -> dict[str, Any]:
    """Return one entry of the model list, as the server named lists it."""
    entry: dict[str, Any] = {
        "id": model,
        "object": "model",
        "created": 1_700_000_000,
        "owned_by": "library" if ":" in model else "openai",
    }
    if server == "llama_cpp":
        entry["owned_by"] = "llamacpp"
    elif server == "vllm":
        entry["owned_by"] = "vllm"
        entry["max_model_len"] = window_size or native.TRAINED_CONTEXT
    elif window_size is not None:
        # As OpenRouter and other hosted services report it.
        entry["context_length"] = window_size
    return entry


def _image_count(value: Any) -> int:
    """Return `n`, from JSON or a form field, checked to lie within 1 to 10."""
    try:
        count = int(value)
    except TypeError, ValueError:
        raise invalid_type("n", "an integer", value) from None
    if not 1 <= count <= 10:
        raise APIError(
            f"Invalid 'n': integer out of range. Expected a value between 1 and 10, "
            f"but got {count} instead.",
            param="n",
            code="integer_out_of_range",
        )
    return count


def _image_size(value: Any) -> tuple[int, int]:
    """Return (width, height) for `size`; "auto" and none mean 1024x1024."""
    if value in (None, "auto"):
        return 1024, 1024
    match = _SIZE.match(str(value))
    if match is None or not all(16 <= int(side) <= 4096 for side in match.groups()):
        raise invalid_value(
            "size", value, ("1024x1024", "1024x1536", "1536x1024", "auto")
        )
    return int(match[1]), int(match[2])
