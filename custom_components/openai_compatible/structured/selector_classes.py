"""Selectors of Home Assistant's classes: behaviours, device and state classes.

Automation behaviours, device classes, state classes and units; the tables are
our own, read from the platforms' public enums, and tests hold them against
the selectors themselves.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from enum import StrEnum
from typing import Any, Final

from homeassistant.components.binary_sensor import BinarySensorDeviceClass
from homeassistant.components.button import ButtonDeviceClass
from homeassistant.components.cover import CoverDeviceClass
from homeassistant.components.event import EventDeviceClass
from homeassistant.components.humidifier import HumidifierDeviceClass
from homeassistant.components.infrared import InfraredDeviceClass
from homeassistant.components.media_player import MediaPlayerDeviceClass
from homeassistant.components.number import NumberDeviceClass
from homeassistant.components.sensor import (
    DEVICE_CLASS_UNITS,
    NON_NUMERIC_DEVICE_CLASSES,
    STATE_CLASS_UNITS,
    SensorDeviceClass,
    SensorStateClass,
)
from homeassistant.components.switch import SwitchDeviceClass
from homeassistant.components.update import UpdateDeviceClass
from homeassistant.components.valve import ValveDeviceClass
from homeassistant.const import Platform
from homeassistant.helpers.selector import (
    AutomationBehavior,
    AutomationBehaviorSelectorMode,
)

from .selector_parts import Convert, Schema, multiple

_AUTOMATION_BEHAVIORS: Final[dict[str, tuple[AutomationBehavior, ...]]] = {
    AutomationBehaviorSelectorMode.TRIGGER: (
        AutomationBehavior.FIRST,
        AutomationBehavior.ALL,
        AutomationBehavior.EACH,
    ),
    AutomationBehaviorSelectorMode.CONDITION: (
        AutomationBehavior.ALL,
        AutomationBehavior.ANY,
    ),
}


_DEVICE_CLASSES: Final[dict[str, type[StrEnum]]] = {
    Platform.BINARY_SENSOR: BinarySensorDeviceClass,
    Platform.BUTTON: ButtonDeviceClass,
    Platform.COVER: CoverDeviceClass,
    Platform.EVENT: EventDeviceClass,
    Platform.HUMIDIFIER: HumidifierDeviceClass,
    Platform.INFRARED: InfraredDeviceClass,
    Platform.MEDIA_PLAYER: MediaPlayerDeviceClass,
    Platform.NUMBER: NumberDeviceClass,
    Platform.SENSOR: SensorDeviceClass,
    Platform.SWITCH: SwitchDeviceClass,
    Platform.UPDATE: UpdateDeviceClass,
    Platform.VALVE: ValveDeviceClass,
}


def automation_behavior(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return the behaviors the selector's mode allows, if we know the mode."""
    if (behaviors := _AUTOMATION_BEHAVIORS.get(config["mode"])) is None:
        return {
            "type": "string",
            "description": f"a behavior of the {config['mode']} mode",
        }
    return {"type": "string", "enum": [str(behavior) for behavior in behaviors]}


def device_class(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return the device classes of the selector's domain, if we know the domain."""
    domain = config["domain"]
    if (classes := _DEVICE_CLASSES.get(domain)) is None:
        item: Schema = {"type": "string", "description": f"a device class of {domain}"}
    else:
        item = {"type": "string", "enum": [str(value) for value in classes]}
    return multiple(config, item)


def state_class(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return the sensor state classes the selector allows."""
    allowed = config.get("state_classes")
    options = [
        str(option)
        for option in SensorStateClass
        if allowed is None or option in allowed
    ]
    return multiple(config, {"type": "string", "enum": options})


def unit_of_measurement(config: Mapping[str, Any], convert: Convert) -> Schema:
    """Return a unit, one of those the selector's device and state classes allow."""
    units: set[Any] | None = None
    if device_classes := config.get("device_classes"):
        units = _units(DEVICE_CLASS_UNITS, device_classes)
    if (state_classes := config.get("state_classes")) and (
        state_units := _units(STATE_CLASS_UNITS, state_classes)
    ) is not None:
        units = state_units if units is None else units & state_units
    if units is None:
        return {"type": "string"}
    return {
        "type": "string",
        "enum": sorted(str(unit) for unit in units if unit),
    }


def _units(
    units_by_class: Mapping[Any, Collection[Any]], classes: list[str]
) -> set[Any] | None:
    """Return the units any of the sensor classes allows; None when one allows any.

    A non-numeric device class has no unit.
    """
    units: set[Any] = set()
    for sensor_class in classes:
        if sensor_class in units_by_class:
            units.update(units_by_class[sensor_class])
        elif sensor_class in NON_NUMERIC_DEVICE_CLASSES:
            units.add(None)
        else:
            return None
    return units
