"""What the flows share: form fields, and how a subentry flow starts and saves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from homeassistant.config_entries import (
    SOURCE_USER,
    ConfigEntry,
    ConfigEntryState,
    ConfigSubentryFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_NAME
from homeassistant.data_entry_flow import AbortFlow
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

from ..const import CONF_PROVIDER
from ..models.providers import Provider, provider_for
from .titles import followed_title, subentry_title


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


class SubentryFlow(ConfigSubentryFlow):
    """A subentry flow that starts from `options` and saves them in the end."""

    options: dict[str, Any]
    # Each kind's own: what a new subentry starts from, and its first form.
    _defaults: Callable[[list[str], Provider], dict[str, object]]
    async_step_init: Callable[[], Awaitable[SubentryFlowResult]]

    @property
    def _is_new(self) -> bool:
        return self.source == SOURCE_USER

    def _entry(self) -> ConfigEntry:
        """Return the entry; abort the flow unless it is loaded (its models known)."""
        entry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            raise AbortFlow("entry_not_loaded")
        return entry

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Add a subentry, starting from what suits the server's models."""
        entry = self._entry()
        preset = provider_for(entry.data.get(CONF_PROVIDER))
        self.options = self._defaults(entry.runtime_data.models, preset)
        return await self.async_step_init()

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change a subentry, starting from its saved settings."""
        self._entry()
        self.options = dict(self._get_reconfigure_subentry().data)
        return await self.async_step_init()

    def _async_store(self, data: dict[str, Any]) -> SubentryFlowResult:
        """Create or save the subentry; a title the integration made follows the model."""
        entry = self._get_entry()
        name = str(data.get(CONF_NAME) or "").strip()
        data = {key: value for key, value in data.items() if key != CONF_NAME}
        if self._is_new:
            return self.async_create_entry(
                title=name
                or subentry_title(self._subentry_type, entry.title, entry.data, data),
                data=data,
            )
        subentry = self._get_reconfigure_subentry()
        title = followed_title(subentry, entry, data)
        return self.async_update_and_abort(entry, subentry, data=data, title=title)
