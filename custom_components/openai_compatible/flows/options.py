"""The entry's options: settings of the connection, not of one agent or task."""

from __future__ import annotations

from typing import Any, Final

from homeassistant.config_entries import ConfigFlowResult, OptionsFlow
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectSelectorMode,
)
import probatio

from ..const import CONF_API, CONF_TIMEOUT, DEFAULT_TIMEOUT_SECONDS
from ..features import WireApi, api_setting
from .fields import choice

MIN_TIMEOUT_SECONDS: Final = 10
MAX_TIMEOUT_SECONDS: Final = 3600


class ConnectionOptionsFlow(OptionsFlow):
    """Change how long one round trip may take, and the API it goes over."""

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Show the options; save them as given."""
        if user_input is not None:
            return self.async_create_entry(data=user_input)
        schema = probatio.Schema(
            {
                probatio.Required(
                    CONF_TIMEOUT,
                    default=self.config_entry.options.get(
                        CONF_TIMEOUT, DEFAULT_TIMEOUT_SECONDS
                    ),
                ): NumberSelector(
                    NumberSelectorConfig(
                        min=MIN_TIMEOUT_SECONDS,
                        max=MAX_TIMEOUT_SECONDS,
                        step=1,
                        unit_of_measurement="s",
                        mode=NumberSelectorMode.BOX,
                    )
                ),
                probatio.Required(
                    CONF_API,
                    default=api_setting(self.config_entry.options.get(CONF_API)),
                ): choice(CONF_API, WireApi, SelectSelectorMode.LIST),
            }
        )
        return self.async_show_form(step_id="init", data_schema=schema)
