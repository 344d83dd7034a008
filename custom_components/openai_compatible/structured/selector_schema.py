"""Task structures as JSON schema: each Home Assistant selector's values.

Home Assistant gives a data task its structure as a probatio schema whose values
are selectors. This module turns it into the plain JSON schema a model is asked
to answer in, closed and described, for each selector Home Assistant offers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from homeassistant.helpers import llm, selector
import probatio

from .selector_parts import Schema, joined, multiple
from .selector_values import HANDLERS

_OPENAPI_VERSION: Final = "3.1.0"


def structure_to_json_schema(
    structure: probatio.Schema,
    custom_serializer: Callable[[Any], Any] | None = None,
) -> Schema:
    """Return the plain JSON schema of a task structure.

    Optional keys are not required, descriptions are kept (with what the
    selector adds, such as the meaning of select options or a unit), and objects
    with known fields take no other keys. ``custom_serializer`` is the LLM API's
    (``llm.APIInstance.custom_serializer``), asked about what we do not map.
    """
    serializer = _Serializer(custom_serializer)
    result = serializer.convert(structure)
    properties = result.get("properties", {})
    fields = structure.schema if isinstance(structure.schema, dict) else {}
    for key, value in fields.items():
        if (
            isinstance(key, probatio.Marker)
            and key.description
            and key.schema in properties
        ):
            # to_openapi put the key's description over the one of the value.
            own = serializer.convert(value).get("description")
            properties[key.schema]["description"] = joined(key.description, own)
    return result


class _Serializer:
    """Serializer for to_openapi: our selector mapping, the API's, Home Assistant's."""

    def __init__(self, api_serializer: Callable[[Any], Any] | None) -> None:
        """Keep the LLM API's serializer, if there is one."""
        self._api_serializer = api_serializer

    def __call__(self, node: Any) -> Any:
        """Return the schema of one node, or UNSUPPORTED for probatio to render."""
        if isinstance(node, selector.Selector) and (
            handler := HANDLERS.get(node.selector_type)
        ):
            return handler(node.config, self.convert_selector)
        if self._api_serializer is not None:
            # A merged API serializer hands back the node itself when no API knows it.
            result = self._api_serializer(node)
            if isinstance(result, dict) and result is not node:
                return result
        if isinstance(node, selector.Selector):
            return multiple(
                node.config,
                {
                    "type": "string",
                    "description": f"Value for a Home Assistant {node.selector_type} selector",
                },
            )
        return llm.selector_serializer(node)

    def convert(self, node: Any) -> Schema:
        """Return the schema of a probatio schema or validator."""
        return probatio.to_openapi(
            node, custom_serializer=self, openapi_version=_OPENAPI_VERSION
        )

    def convert_selector(self, value: Any) -> Schema:
        """Return the schema of a nested selector, an object or its configuration."""
        if not isinstance(value, selector.Selector):
            value = selector.selector(value)
        return self.convert(value)
