"""Form fields the flows share: open dropdowns, translated choices, number boxes."""

from __future__ import annotations

from collections.abc import Iterable

from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
)
import probatio


def dropdown(values: list[str], current: str | None = None) -> SelectSelector:
    """Return a dropdown of the values that takes any other too; a current one stays."""
    if current and current not in values:
        values = [current, *values]
    return SelectSelector(
        SelectSelectorConfig(
            options=[SelectOptionDict(value=value, label=value) for value in values],
            custom_value=True,
            mode=SelectSelectorMode.DROPDOWN,
        )
    )


def choice(
    key: str,
    options: Iterable[str],
    mode: SelectSelectorMode = SelectSelectorMode.DROPDOWN,
) -> SelectSelector:
    """Return a selector of choices translated under the key."""
    return SelectSelector(
        SelectSelectorConfig(options=list(options), translation_key=key, mode=mode)
    )


def whole_number(low: int, high: int) -> probatio.All[int]:
    """Return a number box for a whole number from low to high."""
    return probatio.All(
        NumberSelector(
            NumberSelectorConfig(min=low, max=high, step=1, mode=NumberSelectorMode.BOX)
        ),
        probatio.Coerce(int),
    )
