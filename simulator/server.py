"""The simulator's HTTP server: routes, recording, scripted responses, switches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
import json
from typing import Any

from aiohttp import web

from . import (
    audio,
    chat_answers,
    chat_output,
    chat_validation,
    decisions,
    extra_fields,
    images,
    native,
    responses_answers,
    responses_events,
    responses_validation,
    window,
)
from .ids import new_id
from .models import DEFAULT_MODELS, model_entry, model_list
from .profiles import Replay
from .recording import Headers, RecordedRequest
from .responses_as_chat import chat_body
from .scripted import Scripted, send_scripted
from .served_files import ServedFile, send_file
from .settings import SimulatorSettings
from .streams import HungUp, SSEItem, send_chunks, send_events, send_replay
from .wire import APIError, error_body

_MAX_BODY = 64 * 1024 * 1024

type Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
        self._queue: list[tuple[str, Scripted]] = []
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
            (key, Scripted(status, json, sse, raw, dict(headers or {}), done))
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
            return HungUp()
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
                    return await send_scripted(
                        request, scripted, delay=self.settings.stream_chunk_delay
                    )
                if (replay := self._replay(request)) is not None:
                    return await send_replay(request, replay)
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

    def _next_scripted(self, path: str) -> Scripted | None:
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

    async def _stamp(self, request: web.Request, response: web.StreamResponse) -> None:
        """Give every API response a request id, as OpenAI does."""
        if not request.path.startswith("/files/"):
            response.headers.setdefault("x-request-id", new_id("req_", 32))

    @staticmethod
    def _not_found(request: web.Request, status: int = 404) -> web.Response:
        """Answer a route that does not exist (or is switched off)."""
        return web.json_response(
            error_body(f"Invalid URL ({request.method} {request.path})"), status=status
        )

    # --- routes --------------------------------------------------------------

    async def _list_models(self, request: web.Request) -> web.Response:
        """List the models, OpenAI style."""
        if not self.settings.models_endpoint:
            return self._not_found(request)
        return web.json_response(
            model_list(
                self.models,
                self.settings.native,
                self.settings.context_window,
                self.shutdown_dates,
            )
        )

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
            model_entry(model, self.settings.native, self.settings.context_window)
        )

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        """Validate the request and answer it, streamed or not."""
        body = request["json"]
        chat_validation.validate(body, self.settings)
        extra_fields.check(body, self.settings)
        if self.settings.drops_tools:
            body = {
                key: body[key] for key in body if key not in ("tools", "tool_choice")
            }
        result = chat_answers.answer(body, self.settings)
        if not body.get("stream"):
            return web.json_response(
                chat_output.completion(body, result, self.settings)
            )
        return await send_chunks(
            request,
            chat_output.stream(body, result, self.settings),
            model=body["model"],
            delay=self.settings.stream_chunk_delay,
        )

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        """Validate a Responses API request and answer it, streamed or not."""
        if not self.settings.responses:
            return self._not_found(request)
        body = request["json"]
        responses_validation.validate(body, self.settings)
        extra_fields.check(body, self.settings)
        window.check(chat_body(body), self.settings)
        answer = responses_answers.respond(body, self.settings)
        if not body.get("stream"):
            return web.json_response(answer)
        return await send_events(request, responses_events.events(answer))

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
        return self._images(request, await images.edit_fields(request))

    def _images(self, request: web.Request, fields: dict[str, Any]) -> web.Response:
        """Answer with freshly drawn PNGs, those asked for as URLs served here."""
        return images.generate(
            request,
            fields,
            default_format=self.settings.image_response,
            files=self._files,
        )

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
        server = self.settings.native
        found = (
            None
            if server is None
            else native.answer(
                server,
                (request.method, request.path),
                request["json"],
                self.models,
                self.settings.context_window,
                tools=self.settings.supports_tools,
            )
        )
        if not found:
            return self._not_found(request)
        payload, status = found
        return web.json_response(payload, status=status)

    async def _file(self, request: web.Request) -> web.StreamResponse:
        """Serve a file: an image generated in URL mode, or one a test set up."""
        served = self._files.get(request.match_info["name"])
        if served is None:
            return self._not_found(request)
        return await send_file(request, served)
