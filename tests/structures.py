"""Task structures built the way the ai_task service builds them, for tests."""

from __future__ import annotations

from typing import Any

from homeassistant.components.ai_task.services import (
    STRUCTURE_FIELD_SCHEMA,
    _validate_structure_fields,
)
import probatio

# The `structure` field of ai_task.generate_data, as the service validates it.
STRUCTURE = probatio.All(
    probatio.Schema({str: STRUCTURE_FIELD_SCHEMA}), _validate_structure_fields
)


def build(fields: dict[str, Any]) -> probatio.Schema:
    """Return the structure ai_task builds from service-call style fields."""
    structure: probatio.Schema = STRUCTURE(fields)
    return structure


def single(selector_config: dict[str, Any]) -> probatio.Schema:
    """Return a structure with one required field, `value`, using the selector."""
    return build(
        {
            "value": {
                "description": "The value",
                "required": True,
                "selector": selector_config,
            }
        }
    )
