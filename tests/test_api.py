"""The SDK client's errors (Images API) through the one error mapper."""

from __future__ import annotations

from typing import Any

from homeassistant.core import HomeAssistant
import openai
import pytest

from custom_components.openai_compatible.api import (
    async_create_client,
    map_error,
    translate_errors,
)
from custom_components.openai_compatible.const import CONF_BASE_URL
from custom_components.openai_compatible.errors import RequestRejectedError, ServerError
from simulator import OpenAISimulator


@pytest.mark.parametrize(
    ("status", "body", "key", "message"),
    [
        (400, {"error": "plain string error"}, "api_error", "plain string error"),
        (422, {"message": "top-level message"}, "api_error", "top-level message"),
        (404, {"detail": "Not Found"}, "api_error", "Not Found"),
        (503, None, "api_error", None),
        (429, {"error": {"message": "busy"}}, "rate_limited", None),
        (
            429,
            {
                "error": {
                    "message": "You exceeded your current quota.",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
            "insufficient_quota",
            "You exceeded your current quota.",
        ),
        (401, {"error": {"message": "Incorrect API key"}}, "invalid_auth", None),
        (
            401,
            {
                "error": {
                    "message": "You have insufficient permissions for this "
                    "operation. Missing scopes: api.responses.write.",
                    "code": None,
                }
            },
            "permission_denied",
            (
                "You have insufficient permissions for this operation. "
                "Missing scopes: api.responses.write."
            ),
        ),
        (403, {"error": {"message": "Forbidden"}}, "invalid_auth", None),
        (
            403,
            {"error": {"message": "Your organization must be verified to use it."}},
            "permission_denied",
            "Your organization must be verified to use it.",
        ),
        (
            401,
            {
                "error": {
                    "message": "Missing scopes: api.model.read",
                    "code": "missing_scope",
                }
            },
            "permission_denied",
            "Missing scopes: api.model.read",
        ),
    ],
)
async def test_error_bodies_of_any_shape(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    status: int,
    body: dict[str, Any] | None,
    key: str,
    message: str | None,
) -> None:
    """Whatever shape the error body has, the user reads the server's words."""
    client = await async_create_client(hass, {CONF_BASE_URL: simulator.base_url})
    if body is None:
        simulator.enqueue("/models", status=status, raw="upstream failed")
    else:
        simulator.enqueue("/models", status=status, json=body)

    with pytest.raises(ServerError) as err, translate_errors():
        await client.models.list()

    assert err.value.translation_key == key
    if message is not None:
        assert err.value.translation_placeholders == {"message": message}
    if status in (400, 404, 422):
        assert isinstance(err.value, RequestRejectedError)


def test_errors_outside_http() -> None:
    """Client errors without a response still become translated errors."""
    error = map_error(openai.OpenAIError("stream ended early"))
    assert error.translation_key == "api_error"
    assert error.translation_placeholders == {"message": "stream ended early"}
