"""Fields a user adds to every request of an agent or task, beside the thinking.

The form refuses those the integration owns. A server that refuses one names
it; the round trip drops it and the model remembers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..const import CONF_EXTRA_FIELDS, CONF_THINKING
from ..models.capabilities import ModelCapabilities
from ..models.names import thinking_fields, thinking_setting
from ..net.transport import without_keys

# What the integration sets itself, over either wire API.
OWNED_FIELDS: Final = frozenset(
    {
        "model",
        "messages",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "stream",
        "stream_options",
        "response_format",
        # The Responses API's answer format, and what keeps it stateless.
        "text",
        "include",
        "store",
        "previous_response_id",
    }
)


def owned_fields(fields: Mapping[str, Any]) -> list[str]:
    """Return the fields of an object that the integration owns, in order."""
    return sorted(key for key in fields if key in OWNED_FIELDS)


def request_fields(
    data: Mapping[str, Any], capabilities: ModelCapabilities
) -> dict[str, object]:
    """Return a subentry's extra fields with its thinking switch merged in.

    An object in both is merged one deep: the switch's keys over the user's.
    """
    saved = data.get(CONF_EXTRA_FIELDS)
    fields = without_keys(saved, tuple(OWNED_FIELDS)) if isinstance(saved, dict) else {}
    thinking = thinking_setting(data.get(CONF_THINKING))
    switch = thinking_fields(thinking, capabilities.kind, capabilities.model)
    for key, value in switch.items():
        old = fields.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            value = {**old, **value}
        fields[key] = value
    return fields
