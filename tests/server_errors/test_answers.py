"""Reading error answers: the rejection classifier and the one error mapper."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
import json

import pytest

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.errors import (
    AuthError,
    ContextOverflowError,
    RateLimitedError,
    RequestRejectedError,
    ServerError,
)
from custom_components.openai_compatible.server_errors.answers import (
    MAX_ERROR_BYTES,
    Rejection,
    classify_rejection,
    error_for_status,
    error_text,
    retry_after,
)

FORMAT = frozenset({Feature.STRICT_SCHEMA, Feature.JSON_SCHEMA})
STREAMED_TOOLS = frozenset(
    {Feature.TOOLS, Feature.TOOL_CHOICE, Feature.STREAM_WITH_TOOLS}
)
DECISIONS = frozenset({Feature.DECISIONS})


@pytest.mark.parametrize(
    ("status", "text", "sent", "feature", "general"),
    [
        (
            400,
            "Unrecognized request argument supplied: stream_options",
            frozenset({Feature.STREAM_OPTIONS}),
            Feature.STREAM_OPTIONS,
            True,
        ),
        (
            500,
            "'loc': ('body', 'response_format', 'type') literal_error",
            FORMAT,
            Feature.JSON_SCHEMA,
            True,
        ),
        (
            422,
            "json_schema.strict: Extra inputs are not permitted",
            FORMAT,
            Feature.STRICT_SCHEMA,
            True,
        ),
        (
            400,
            "Invalid schema for response_format 'x': In context=()",
            FORMAT,
            Feature.JSON_SCHEMA,
            False,
        ),
        (
            404,
            "The route /v1/x has no response_format",
            FORMAT,
            Feature.JSON_SCHEMA,
            True,
        ),
        (
            400,
            "logprobs are not supported",
            frozenset({Feature.LOGPROBS}),
            Feature.LOGPROBS,
            True,
        ),
        (
            400,
            "Streaming with tools is not supported",
            frozenset({Feature.TOOLS, Feature.STREAM_WITH_TOOLS}),
            Feature.STREAM_WITH_TOOLS,
            True,
        ),
        (
            400,
            "This model does not support tools",
            frozenset({Feature.TOOLS, Feature.STREAM_WITH_TOOLS}),
            Feature.TOOLS,
            True,
        ),
        (
            400,
            "Image input is not supported for this model",
            frozenset({Feature.IMAGE_INPUT}),
            Feature.IMAGE_INPUT,
            True,
        ),
        (
            400,
            (
                "'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead."
            ),
            frozenset({Feature.MAX_TOKENS}),
            Feature.MAX_TOKENS,
            True,
        ),
        (
            404,
            '{"error": {"message": "Invalid URL (POST /v1/decisions)"}}',
            frozenset({Feature.DECISIONS, Feature.IMAGE_INPUT}),
            Feature.DECISIONS,
            True,
        ),
        (405, "Method Not Allowed", DECISIONS, Feature.DECISIONS, True),
        # llama-cpp-python's text-only template given parts, in its JSON body.
        (
            500,
            '{"error": {"message": "can only concatenate str (not \\"list\\") to str"}}',
            frozenset({Feature.IMAGE_INPUT}),
            Feature.IMAGE_INPUT,
            True,
        ),
        (
            429,
            "Resource unavailable: flex processing is full",
            frozenset({Feature.SERVICE_TIER}),
            Feature.SERVICE_TIER,
            False,
        ),
        (
            400,
            "Unknown parameter: 'service_tier'.",
            frozenset({Feature.SERVICE_TIER, Feature.REASONING}),
            Feature.SERVICE_TIER,
            True,
        ),
        (
            400,
            "The service tier 'flex' is not available with reasoning effort high",
            frozenset({Feature.SERVICE_TIER, Feature.REASONING}),
            Feature.SERVICE_TIER,
            True,
        ),
        (
            404,
            '{"detail": "Not Found"}',
            frozenset({Feature.IMAGES_GENERATIONS}),
            Feature.IMAGES_GENERATIONS,
            True,
        ),
        (
            501,
            "Unexpected endpoint or method. (POST /v1/images/edits)",
            frozenset({Feature.IMAGES_EDITS}),
            Feature.IMAGES_EDITS,
            True,
        ),
        (
            404,
            (
                "litellm.NotFoundError: NotFoundError: OpenAIException - Error "
                "code: 404 - {'detail': 'Not Found'}. Received Model Group=tiny"
            ),
            frozenset({Feature.IMAGES_GENERATIONS}),
            Feature.IMAGES_GENERATIONS,
            True,
        ),
        (
            500,
            "Conversation roles must alternate user/assistant/user/assistant/...",
            frozenset({Feature.SYSTEM_MESSAGES, *STREAMED_TOOLS}),
            Feature.SYSTEM_MESSAGES,
            True,
        ),
    ],
)
def test_classify_rejection(
    status: int, text: str, sent: frozenset[Feature], feature: Feature, general: bool
) -> None:
    """The feature the answer names, among those sent, and whether it is general."""
    rejection = classify_rejection(status, text, sent)
    assert rejection is not None
    assert (rejection.feature, rejection.general) == (feature, general)


@pytest.mark.parametrize(
    ("status", "text", "sent"),
    [
        # A feature we did not send is not refused.
        (400, "response_format is not supported", frozenset({Feature.LOGPROBS})),
        # Keys, rate limits and timeouts are no refusal of a feature.
        (401, "response_format", FORMAT),
        (429, "response_format", FORMAT),
        (429, "Resource unavailable", FORMAT),
        (
            429,
            "Rate limit reached for service_tier requests",
            frozenset({Feature.SERVICE_TIER}),
        ),
        (408, "response_format", FORMAT),
        (500, "CUDA out of memory", FORMAT),
        # Names count only where a word starts: these are outages.
        (
            503,
            (
                "upstream connect error or disconnect/reset before headers. "
                "reset reason: connection failure"
            ),
            STREAMED_TOOLS,
        ),
        (
            502,
            "<html><body>Upstream server is not available</body></html>",
            STREAMED_TOOLS,
        ),
        (500, "The key is restricted to other models", FORMAT),
        (
            500,
            "Unknown revision of the model weights",
            frozenset({Feature.IMAGE_INPUT}),
        ),
        # A server that has the route may answer 404 for something else.
        (404, "No such question type", DECISIONS),
        (500, "Not Found", DECISIONS),
        (
            404,
            "model 'sd-turbo' not found",
            frozenset({Feature.IMAGES_GENERATIONS}),
        ),
    ],
)
def test_no_rejection(status: int, text: str, sent: frozenset[Feature]) -> None:
    """Answers that name no sent feature are not walked down any ladder."""
    assert classify_rejection(status, text, sent) is None


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (b'{"error": {"message": "bad"}}', "bad"),
        (b'{"error": "plain"}', "plain"),
        (b'{"message": "top"}', "top"),
        (b'{"detail": "Not Found"}', "Not Found"),
        (
            json.dumps(
                {"detail": [{"loc": ["body", "x"], "msg": "wrong"}, {"msg": "also"}]}
            ).encode(),
            "body.x: wrong; also",
        ),
        (b'{"detail": ["odd"]}', "odd"),
        (b'"a JSON string"', "a JSON string"),
        (b"[1, 2]", "[1, 2]"),
        (b"<html><script>x()</script><b>Bad</b>&amp; gone</html>", "Bad & gone"),
        (b"\xff\xfe not utf-8", "\ufffd\ufffd not utf-8"),
        (b"<STYLE>p {}</style >Hi<script>x()</SCRIPT>!", "Hi !"),
        (b"<p>a</p><script>never closed <i>b</i>", "a never closed b"),
        (b"</script><script>1<script>2<style>3", "1 2 3"),
        (b"1 < 2 <b>and</b> 3 > 2", "1 < 2 and 3 > 2"),
    ],
)
def test_error_text(body: bytes, text: str) -> None:
    """The human part of an error body, whatever its shape, on one line."""
    assert error_text(body) == text


def test_only_the_start_of_a_long_error_body_counts() -> None:
    """Past MAX_ERROR_BYTES nothing is read, even when a client read it all."""
    assert MAX_ERROR_BYTES == 64 * 1024
    said = b'"The model x does not exist"'
    assert error_for_status(404, {}, said).translation_key == "model_not_found"
    hidden = error_for_status(404, {}, b" " * MAX_ERROR_BYTES + said)
    assert hidden.translation_key == "api_error"


def test_retry_after() -> None:
    """Seconds, or an HTTP date; nothing readable means no hint."""
    assert retry_after("3") == 3
    assert retry_after("-2") == 0
    assert retry_after(None) is None
    assert retry_after("soon") is None
    assert retry_after("nan") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < (retry_after(later) or 0) <= 30
    naive = later.replace(" GMT", "")
    assert retry_after(naive) is not None


@pytest.mark.parametrize(
    ("status", "headers", "body", "kind", "key"),
    [
        (401, {}, b'{"error": {"message": "bad key"}}', AuthError, "invalid_auth"),
        (
            403,
            {},
            b'{"error": {"message": "Missing scopes: api.x"}}',
            ServerError,
            "permission_denied",
        ),
        (
            429,
            {},
            b'{"error": {"code": "insufficient_quota"}}',
            ServerError,
            "insufficient_quota",
        ),
        (429, {"retry-after": "7"}, b"{}", RateLimitedError, "rate_limited_retry"),
        (429, {}, b"{}", RateLimitedError, "rate_limited"),
        (
            404,
            {},
            b'{"error": {"message": "The model `x` does not exist"}}',
            ServerError,
            "model_not_found",
        ),
        (
            404,
            {},
            b'{"error": {"message": "Unknown model: x"}}',
            ServerError,
            "model_not_found",
        ),
        (
            404,
            {},
            b"Not found: the model route",
            RequestRejectedError,
            "api_error",
        ),
        (404, {}, b"model " * 10_000, RequestRejectedError, "api_error"),
        (404, {}, b"Not Found", RequestRejectedError, "api_error"),
        (501, {}, b"Not Implemented", RequestRejectedError, "api_error"),
        (503, {}, b"", ServerError, "server_unavailable"),
        (502, {}, b"<html>Bad Gateway</html>", ServerError, "gateway_failed"),
        (500, {"content-type": "text/html"}, b"Oops", ServerError, "server_failed"),
        (500, {}, b"CUDA out of memory", ServerError, "api_error"),
    ],
)
def test_error_for_status(
    status: int,
    headers: dict[str, str],
    body: bytes,
    kind: type[ServerError],
    key: str,
) -> None:
    """Each status and body becomes our translated error of the right kind."""
    error = error_for_status(status, headers, body)
    assert type(error) is kind
    assert error.translation_key == key


def test_tools_refused_is_its_own_error() -> None:
    """A model that cannot call tools is told apart from other refusals."""
    error = error_for_status(
        400,
        {},
        b'{"error": {"message": "llama3 does not support tools"}}',
        sent=frozenset({Feature.TOOLS}),
    )
    assert isinstance(error, RequestRejectedError)
    assert (error.feature, error.general) == (Feature.TOOLS, True)
    assert error.translation_key == "tools_unsupported"
    assert error.translation_placeholders == {
        "message": "llama3 does not support tools"
    }


def test_an_overflow_is_not_a_refused_feature() -> None:
    """An overflow may name max_tokens; trimming, not the field, helps."""
    error = error_for_status(
        400,
        {},
        b'{"error": {"message": "\'max_tokens\' is too large: 5000. This '
        b"model's maximum context length is 4096 tokens and your request has "
        b'100 input tokens (5000 > 4096 - 100)."}}',
        sent=frozenset({Feature.MAX_TOKENS}),
    )
    assert isinstance(error, ContextOverflowError)


@pytest.mark.parametrize(
    ("status", "body", "key", "placeholders"),
    [
        (502, b"", "gateway_failed", {"status": "502"}),
        (400, b"", "api_error", {"message": "HTTP 400 Bad Request"}),
        (404, b"<h1>Gone, gone</h1>", "api_error", {"message": "HTTP 404 Not Found"}),
        (499, b"<p>Client closed</p>", "api_error", {"message": "HTTP 499"}),
    ],
)
def test_no_words_or_a_page_name_the_status(
    status: int, body: bytes, key: str, placeholders: dict[str, str]
) -> None:
    """With no words from the server, or only a page, the status tells."""
    error = error_for_status(status, {}, body)
    assert error.translation_key == key
    assert error.translation_placeholders == placeholders


@pytest.mark.parametrize(
    ("text", "sent", "key"),
    [
        (
            "Image input is not supported",
            frozenset({Feature.IMAGE_INPUT}),
            "image_input_refused",
        ),
        (
            "15 validation errors: ... 'file' ...",
            frozenset({Feature.FILE_INPUT}),
            "file_input_refused",
        ),
        # A chat template that takes only text, given content parts.
        (
            'can only concatenate str (not "list") to str',
            frozenset({Feature.IMAGE_INPUT}),
            "image_input_refused",
        ),
    ],
)
def test_refused_attachments_are_told(
    text: str, sent: frozenset[Feature], key: str
) -> None:
    """A model that cannot take the attachments says so, in the user's terms."""
    error = error_for_status(500, {}, text.encode(), sent=sent)
    assert isinstance(error, RequestRejectedError)
    assert error.translation_key == key


@pytest.mark.parametrize(
    "text",
    [
        "Failed to parse input at pos 40: <tool_call>{",
        "Response does not match the expected peg-native format",
    ],
)
def test_unparsed_answer_next_to_tools_is_asked_again_unstreamed(text: str) -> None:
    """A tool call the server could not parse refuses this stream, never the tools."""
    sent = frozenset({Feature.TOOLS, Feature.STREAM_WITH_TOOLS})
    rejection = classify_rejection(500, f"{text} (not supported)", sent)
    assert rejection == Rejection(Feature.STREAM_WITH_TOOLS, general=False)
    assert classify_rejection(500, text, frozenset()) is None
