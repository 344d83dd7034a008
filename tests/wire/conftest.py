"""A small home for the rescue of small models' calls, and their recorded answers.

`small_home`: the kitchen lights, a lamp in the living room (ground floor)
and a garage door, all exposed to Assist; `real_answer(key)`: an answer a
real model gave, from real_answers.json, and `real_stream(key)` its words
streamed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.components.cover import (
    CoverDeviceClass,
    CoverEntity,
    CoverEntityFeature,
)
from homeassistant.components.homeassistant.exposed_entities import async_expose_entity
from homeassistant.components.light import ColorMode, LightEntity
from homeassistant.core import HomeAssistant
from homeassistant.helpers import (
    area_registry as ar,
    entity_registry as er,
    floor_registry as fr,
)
from homeassistant.setup import async_setup_component
from homeassistant.util import slugify
import pytest
from pytest_homeassistant_custom_component.common import setup_test_component_platform

from simulator import chunk

REAL_ANSWERS = json.loads(
    (Path(__file__).parent / "real_answers.json").read_text(encoding="utf-8")
)


def real_answer(key: str) -> dict[str, Any]:
    """Return an answer a real model gave, as its server sent it."""
    answer: dict[str, Any] = REAL_ANSWERS[key]
    return answer


def real_stream(key: str) -> list[dict[str, Any]]:
    """Return the words of a real answer as a stream, a few characters a chunk."""
    (choice,) = real_answer(key)["choices"]
    text = choice["message"]["content"]
    return [
        *(chunk({"content": text[at : at + 7]}) for at in range(0, len(text), 7)),
        chunk({}, finish_reason=choice["finish_reason"]),
    ]


class Lamp(LightEntity):
    """A light that switches on and off."""

    _attr_color_mode = ColorMode.ONOFF
    _attr_supported_color_modes = {ColorMode.ONOFF}  # noqa: RUF012
    _attr_is_on = False

    def __init__(self, name: str) -> None:
        """Name the light."""
        self._attr_name = name
        self._attr_unique_id = slugify(name)

    async def async_turn_on(self, **kwargs: Any) -> None:
        """Switch on."""
        self._attr_is_on = True
        self.async_write_ha_state()

    async def async_turn_off(self, **kwargs: Any) -> None:
        """Switch off."""
        self._attr_is_on = False
        self.async_write_ha_state()


class GarageDoor(CoverEntity):
    """A garage door that opens and closes at once."""

    _attr_name = "Garage Door"
    _attr_unique_id = "garage_door"
    _attr_device_class = CoverDeviceClass.GARAGE
    _attr_supported_features = CoverEntityFeature.OPEN | CoverEntityFeature.CLOSE
    _attr_is_closed = False

    async def async_open_cover(self, **kwargs: Any) -> None:
        """Open."""
        self._attr_is_closed = False
        self.async_write_ha_state()

    async def async_close_cover(self, **kwargs: Any) -> None:
        """Close."""
        self._attr_is_closed = True
        self.async_write_ha_state()


@pytest.fixture
async def small_home(hass: HomeAssistant) -> None:
    """Set up the small home, every device exposed to Assist."""
    assert await async_setup_component(hass, "homeassistant", {})
    assert await async_setup_component(hass, "intent", {})
    setup_test_component_platform(
        hass, "light", [Lamp("Kitchen Lights"), Lamp("Reading Lamp")]
    )
    setup_test_component_platform(hass, "cover", [GarageDoor()])
    for domain in ("light", "cover"):
        assert await async_setup_component(hass, domain, {domain: {"platform": "test"}})
    await hass.async_block_till_done()
    floor = fr.async_get(hass).async_create("Ground Floor")
    area = ar.async_get(hass).async_create("Living Room", floor_id=floor.floor_id)
    er.async_get(hass).async_update_entity("light.reading_lamp", area_id=area.id)
    for entity_id in (
        "light.kitchen_lights",
        "light.reading_lamp",
        "cover.garage_door",
    ):
        async_expose_entity(hass, conversation.DOMAIN, entity_id, True)
