"""What the flows share: form fields, the titles pickers show, the subentry flows' base."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from typing import Any, Final

from homeassistant.config_entries import (
    SOURCE_USER,
    ConfigEntry,
    ConfigEntryState,
    ConfigSubentry,
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
from homeassistant.helpers.typing import VolDictType
from homeassistant.util.network import is_ip_address
import probatio
from yarl import URL

from ..const import (
    CONF_AUDIO_MODEL,
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    CONF_SERVER_KIND,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONVERSATION_NAME,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from ..models.providers import PROVIDER_CUSTOM, PROVIDERS, Provider, provider_for

type Input = dict[str, Any] | None  # what a flow step is given

# Agents and tasks of one model are told apart; an agent adds nothing.
KIND_SUFFIXES: Final[dict[str, str]] = {
    SUBENTRY_AI_TASK: "AI task",
    SUBENTRY_STT: "Speech-to-text",
    SUBENTRY_TTS: "Text-to-speech",
}
# The fixed titles that subentries got before titles named server and model.
LEGACY_TITLES: Final[dict[str, str]] = {
    SUBENTRY_CONVERSATION: DEFAULT_CONVERSATION_NAME,
    SUBENTRY_AI_TASK: DEFAULT_AI_TASK_NAME,
}


def server_name(entry_data: Mapping[str, Any]) -> str:
    """Return what a server is called: its preset, its software, or its host name."""
    key = entry_data.get(CONF_PROVIDER)
    if key != PROVIDER_CUSTOM and key in PROVIDERS:
        return PROVIDERS[key].name
    if kind := entry_data.get(CONF_SERVER_KIND):
        for preset in PROVIDERS.values():
            if preset.kind == kind:
                return preset.name
    host = URL(entry_data[CONF_BASE_URL]).host or ""
    if host == "localhost" or is_ip_address(host):
        return PROVIDERS[PROVIDER_CUSTOM].name
    return host


def entry_title(entry_data: Mapping[str, Any], taken: Collection[str] = ()) -> str:
    """Return an entry's title: the server's name, with its address where ambiguous."""
    name = server_name(entry_data)
    preset = provider_for(entry_data.get(CONF_PROVIDER))
    url = URL(entry_data[CONF_BASE_URL])
    preset_host = URL(preset.base_url).host if preset.base_url else None
    hosted = not preset.local and preset_host not in (None, "localhost")
    if (hosted and url.host != preset_host) or (not hosted and name in taken):
        return _with_address(name, entry_data)
    return name


def _with_address(name: str, entry_data: Mapping[str, Any]) -> str:
    return f"{name} ({URL(entry_data[CONF_BASE_URL]).host_port_subcomponent or ''})"


def is_generated_entry_title(title: str, entry_data: Mapping[str, Any]) -> bool:
    """Tell whether an entry still has a title the integration gave it."""
    name = server_name(entry_data)
    return title in (
        name,
        _with_address(name, entry_data),
        _with_address("Custom", entry_data),  # the custom preset's name before
    )


def subentry_title(
    subentry_type: str,
    entry_title: str,
    entry_data: Mapping[str, Any],
    subentry_data: Mapping[str, Any],
) -> str:
    """Return a subentry's title unless named: "Ollama · llama3.1:8b · AI task"."""
    # It starts with the server as its entry is titled.
    name = server_name(entry_data)
    with_address = _with_address(name, entry_data)
    label = with_address if entry_title == with_address else name
    return _title(label, subentry_type, subentry_data)


def _title(label: str, subentry_type: str, subentry_data: Mapping[str, Any]) -> str:
    model = subentry_data.get(CONF_CHAT_MODEL) or subentry_data.get(CONF_AUDIO_MODEL)
    rest = (str(model) if model else "", KIND_SUFFIXES.get(subentry_type, ""))
    return " · ".join([label, *filter(None, rest)])


def followed_title(
    subentry: ConfigSubentry,
    entry: ConfigEntry,
    data: Mapping[str, Any] | None = None,
    new_entry: tuple[str, Mapping[str, Any]] | None = None,
) -> str:
    """Return a subentry's title after a change: a given name stays, ours follows."""
    kind, old = subentry.subentry_type, subentry.data
    if subentry.title not in (
        subentry_title(kind, entry.title, entry.data, old),
        LEGACY_TITLES.get(kind),
        _title(server_name(entry.data), kind, old),
        _title(str(URL(entry.data[CONF_BASE_URL]).host), kind, old),
    ):
        return subentry.title
    title, entry_data = new_entry or (entry.title, entry.data)
    return subentry_title(kind, title, entry_data, old if data is None else data)


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

    def _model_fields(self, key: str, models: list[str]) -> VolDictType:
        # A new subentry's name, left empty, is made of server and model.
        name: VolDictType = {probatio.Optional(CONF_NAME): str} if self._is_new else {}
        return name | {probatio.Required(key): dropdown(models, self.options.get(key))}

    def _taken(
        self, given: Mapping[str, Any], owned: Collection[str] | None = None
    ) -> dict[str, Any]:
        """Return the options with the values of the shown form (or `owned`); blanks go."""
        if owned is None:
            assert self.cur_step is not None and self.cur_step["data_schema"]
            owned = {str(key) for key in self.cur_step["data_schema"].schema}
        kept = {key: value for key, value in self.options.items() if key not in owned}
        return kept | {k: v for k, v in given.items() if v not in (None, "", [], {})}

    def _entry(self) -> ConfigEntry:
        """Return the entry; abort the flow unless it is loaded (its models known)."""
        entry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            raise AbortFlow("entry_not_loaded")
        return entry

    async def async_step_user(self, user_input: Input = None) -> SubentryFlowResult:
        """Add a subentry, starting from what suits the server's models."""
        entry = self._entry()
        preset = provider_for(entry.data.get(CONF_PROVIDER))
        self.options = self._defaults(entry.runtime_data.models, preset)
        return await self.async_step_init()

    async def async_step_reconfigure(
        self, user_input: Input = None
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
