"""The advanced form's fields for local servers: extra request fields, thinking."""

from __future__ import annotations

from typing import Any, Final

from homeassistant import data_entry_flow
from homeassistant.helpers.field_visibility import FieldCondition
from homeassistant.helpers.selector import ObjectSelector
from homeassistant.helpers.typing import VolDictType

from ..const import CONF_EXTRA_FIELDS, CONF_RECOMMENDED, CONF_THINKING
from ..models.thinking import Thinking
from ..wire.extra_fields import owned_fields
from .fields import choice

# The keys these fields save.
KNOB_KEYS: Final = (CONF_EXTRA_FIELDS, CONF_THINKING)


def knob_fields(visible: FieldCondition) -> VolDictType:
    """Return the fields, shown where `visible` holds."""
    return {
        data_entry_flow.Optional(CONF_EXTRA_FIELDS, visible=visible): ObjectSelector(),
        data_entry_flow.Optional(
            CONF_THINKING, default=Thinking.DEFAULT, visible=visible
        ): choice(CONF_THINKING, Thinking),
    }


def knob_errors(user_input: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """Return the form's errors and their placeholders; none while recommended.

    Extra fields must be an object that sets nothing the integration owns.
    """
    fields = user_input.get(CONF_EXTRA_FIELDS)
    if user_input.get(CONF_RECOMMENDED, True) or fields in (None, ""):
        return {}, {}
    if not isinstance(fields, dict):
        return {CONF_EXTRA_FIELDS: "extra_fields_not_object"}, {}
    if owned := owned_fields(fields):
        return {CONF_EXTRA_FIELDS: "extra_fields_owned"}, {"fields": ", ".join(owned)}
    return {}, {}


def knob_data(user_input: dict[str, Any]) -> dict[str, Any]:
    """Return what the form saves of these fields: only what differs from none."""
    data: dict[str, Any] = {}
    if fields := user_input.get(CONF_EXTRA_FIELDS):
        data[CONF_EXTRA_FIELDS] = fields
    if (thinking := user_input.get(CONF_THINKING)) not in (None, Thinking.DEFAULT):
        data[CONF_THINKING] = thinking
    return data
