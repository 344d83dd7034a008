"""Config flow: pick a server, connect to it, and set up agents and tasks."""

from __future__ import annotations

from collections.abc import Mapping
import ipaddress
import logging
from typing import Any, Final, override

from homeassistant import data_entry_flow
from homeassistant.config_entries import (
    SOURCE_USER,
    ConfigEntry,
    ConfigEntryState,
    ConfigFlow,
    ConfigFlowResult,
    ConfigSubentryData,
    ConfigSubentryFlow,
    OptionsFlow,
    SubentryFlowResult,
)
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_NAME, CONF_PROMPT
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import llm
from homeassistant.helpers.field_visibility import FieldCondition
from homeassistant.helpers.selector import (
    NumberSelector,
    NumberSelectorConfig,
    NumberSelectorMode,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TemplateSelector,
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
from homeassistant.helpers.typing import VolDictType
import probatio
from yarl import URL

from .api import ModelListing, async_validate_server, normalize_base_url
from .capabilities import PROVIDER_CUSTOM, PROVIDERS, async_forget, provider_for
from .const import (
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_CONTEXT_WINDOW,
    CONF_HISTORY_TURNS,
    CONF_IMAGE_MODEL,
    CONF_MAX_TOKENS,
    CONF_PROVIDER,
    CONF_RECOMMENDED,
    CONF_SERVER_KIND,
    CONF_STREAMING,
    CONF_TEMPERATURE,
    CONF_TOP_P,
    DOMAIN,
    RECOMMENDED_MAX_TOKENS,
    RECOMMENDED_TEMPERATURE,
    RECOMMENDED_TOP_P,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_STT,
    SUBENTRY_TTS,
)
from .discovery import async_answering_presets
from .errors import (
    AuthError,
    ConnectError,
    InvalidURLError,
    NotCompatibleError,
    RateLimitedError,
    ServerError,
)
from .model_kinds import (
    chat_models_first,
    image_models_first,
    pick_chat_model,
    pick_image_model,
)
from .model_lifecycle import lasting_models
from .naming import (
    entry_title,
    followed_title,
    is_generated_entry_title,
    is_generated_title,
    subentry_title,
)
from .options_flow import ConnectionOptionsFlow
from .responses_flow import responses_data, responses_schema, suggested_values
from .server_info import guess_kind
from .url_completion import completed_url
from .voice_flow import (
    SpeechToTextSubentryFlowHandler,
    TextToSpeechSubentryFlowHandler,
    voice_defaults,
)
from .window import default_answer_limit

_LOGGER = logging.getLogger(__name__)

DEFAULT_PROVIDER = "openai"

# The sampling settings behind the "recommended" toggle, with their defaults.
ADVANCED_DEFAULTS: dict[str, float] = {
    CONF_MAX_TOKENS: RECOMMENDED_MAX_TOKENS,
    CONF_TEMPERATURE: RECOMMENDED_TEMPERATURE,
    CONF_TOP_P: RECOMMENDED_TOP_P,
}

# How much of the context an agent or task uses; empty: the default.
CONTEXT_KEYS = (CONF_HISTORY_TURNS, CONF_CONTEXT_WINDOW)

# Every key the subentry form owns; other keys in saved data are kept.
SUBENTRY_FORM_KEYS = frozenset(
    {
        *CONTEXT_KEYS,
        CONF_CHAT_MODEL,
        CONF_IMAGE_MODEL,
        CONF_LLM_HASS_API,
        CONF_PROMPT,
        CONF_RECOMMENDED,
        CONF_STREAMING,
        *ADVANCED_DEFAULTS,
    }
)


def _same_origin(url: str, other: str) -> bool:
    """Tell whether two base URLs have the same scheme, host and port."""
    first, second = URL(url), URL(other)
    return (first.scheme, first.host, first.port) == (
        second.scheme,
        second.host,
        second.port,
    )


def _connect_step(provider_key: str) -> str:
    """Return the connect step whose hints suit the preset."""
    if provider_key == PROVIDER_CUSTOM:
        return "connect_custom"
    preset = provider_for(provider_key)
    if preset.listen_command:
        return "connect_local"
    if preset.asks_for_resource:
        return "connect_azure"
    return "connect"


def _is_loopback(base_url: str) -> bool:
    """Tell whether a base URL points at the machine that runs Home Assistant."""
    host = URL(base_url).host or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Server errors the connect step tells in its own words, with their placeholders.
_TOLD_ERRORS: Final = frozenset(
    {
        "redirected",
        "redirected_nowhere",
        "gateway_failed",
        "server_unavailable",
        "server_failed",
    }
)


def _flow_error(err: ServerError, placeholders: dict[str, str]) -> str:
    """Return the form's error for a server error; fill in its placeholders."""
    given = err.translation_placeholders or {}
    if (key := err.translation_key) is not None and key in _TOLD_ERRORS:
        placeholders.update(given)
        return key
    placeholders["message"] = given.get("message", "")
    return "api_error"


def _api_key_field(required: bool) -> probatio.Marker:
    """Return the schema key of the API key, required or not."""
    marker = probatio.Required if required else probatio.Optional
    return marker(probatio.Secret(CONF_API_KEY))


API_KEY_SELECTOR = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))
URL_SELECTOR = TextSelector(TextSelectorConfig(type=TextSelectorType.URL))


class OpenAICompatibleConfigFlow(ConfigFlow, domain=DOMAIN):
    """Set up a connection to one OpenAI-compatible server."""

    VERSION = 1
    # 1.2: no unique id (duplicates are refused by data); subentry titles name
    # server and model.
    MINOR_VERSION = 2

    def __init__(self) -> None:
        """Start with no provider chosen."""
        self._provider_key = DEFAULT_PROVIDER
        self._data: dict[str, Any] = {}
        self._models: list[str] = []

    @override
    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask which kind of server to connect to."""
        if user_input is not None:
            self._provider_key = user_input[CONF_PROVIDER]
            return await self._async_connect(None)

        # Local servers answering on this machine come first, then any other
        # server, then the remaining presets.
        found = await async_answering_presets(self.hass)
        rest = [key for key in PROVIDERS if key not in (*found, PROVIDER_CUSTOM)]
        schema = probatio.Schema(
            {
                probatio.Required(
                    CONF_PROVIDER, default=found[0] if found else DEFAULT_PROVIDER
                ): SelectSelector(
                    SelectSelectorConfig(
                        options=[*found, PROVIDER_CUSTOM, *rest],
                        mode=SelectSelectorMode.DROPDOWN,
                        translation_key=CONF_PROVIDER,
                    )
                )
            }
        )
        if not found:
            return self.async_show_form(step_id="user", data_schema=schema)
        return self.async_show_form(
            step_id="user_found",
            data_schema=schema,
            description_placeholders={
                "found": ", ".join(PROVIDERS[key].name for key in found)
            },
        )

    async def async_step_user_found(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Take the server chosen where local servers were found."""
        return await self.async_step_user(user_input)

    async def async_step_connect(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Connect to a hosted service or any other server."""
        return await self._async_connect(user_input)

    async def async_step_connect_azure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Connect to an Azure OpenAI resource."""
        return await self._async_connect(user_input)

    async def async_step_connect_custom(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Connect to any other OpenAI-compatible server."""
        return await self._async_connect(user_input)

    async def async_step_connect_local(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Connect to a server that runs on one of the user's own machines."""
        return await self._async_connect(user_input)

    async def _async_connect(
        self, user_input: dict[str, Any] | None
    ) -> ConfigFlowResult:
        """Ask where the server is and for its key; validate and create."""
        preset = provider_for(self._provider_key)
        errors: dict[str, str] = {}
        placeholders = {
            "provider": preset.name,
            "port": str(URL(preset.base_url).port or "") if preset.base_url else "",
            "listen": provider_for(self._provider_key).listen_command or "",
            "message": "",
        }

        if user_input is not None:
            data = self._entry_data(user_input)
            if data is None:
                errors[CONF_BASE_URL] = "invalid_url"
            else:
                self._abort_if_duplicate(data)
                models = await self._async_validate(data, errors, placeholders)
                if not errors:
                    self._data, self._models = data, models
                    if pick_chat_model(
                        models, preset.recommended_model
                    ) is None and not voice_defaults(models):
                        return await self.async_step_model()
                    return self._async_create(None)

        schema = probatio.Schema(
            {
                probatio.Required(CONF_BASE_URL): URL_SELECTOR,
                _api_key_field(preset.api_key_required): API_KEY_SELECTOR,
            }
        )
        suggested = {CONF_BASE_URL: preset.base_url or None}
        return self.async_show_form(
            step_id=_connect_step(self._provider_key),
            data_schema=self.add_suggested_values_to_schema(
                schema, {**suggested, **(user_input or {})}
            ),
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_model(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for the model when the server names no chat model."""
        if user_input is not None:
            return self._async_create(user_input[CONF_CHAT_MODEL].strip())
        schema = probatio.Schema(
            {
                probatio.Required(CONF_CHAT_MODEL): SelectSelector(
                    SelectSelectorConfig(
                        options=_model_options(chat_models_first(self._models), None),
                        custom_value=True,
                        mode=SelectSelectorMode.DROPDOWN,
                    )
                )
            }
        )
        return self.async_show_form(step_id="model", data_schema=schema)

    def _async_create(self, chat_model: str | None) -> ConfigFlowResult:
        """Create the entry with one agent and one task."""
        preset = provider_for(self._provider_key)
        return self.async_create_entry(
            title=entry_title(self._data, self._other_titles()),
            data=self._data,
            subentries=_default_subentries(
                self._data, self._models, chat_model or preset.recommended_model
            ),
        )

    async def async_step_reauth(
        self, entry_data: Mapping[str, Any]
    ) -> ConfigFlowResult:
        """Start re-authentication after the server refused the key."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Ask for a new key and check it against the same server."""
        entry = self._get_reauth_entry()
        preset = provider_for(entry.data.get(CONF_PROVIDER))
        errors: dict[str, str] = {}
        placeholders = {
            "name": entry.title,
            "base_url": entry.data[CONF_BASE_URL],
            "message": "",
        }

        if user_input is not None:
            data = {**entry.data}
            data.pop(CONF_API_KEY, None)
            if api_key := (user_input.get(CONF_API_KEY) or "").strip():
                data[CONF_API_KEY] = api_key
            self._abort_if_duplicate(data)
            await self._async_validate(data, errors, placeholders)
            if not errors:
                return self._async_update_entry(entry, data, entry.title)

        schema = probatio.Schema(
            {_api_key_field(preset.api_key_required): API_KEY_SELECTOR}
        )
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=schema,
            errors=errors,
            description_placeholders=placeholders,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """Change the address and/or the key of a server; forget what was learned."""
        entry = self._get_reconfigure_entry()
        provider_key = entry.data.get(CONF_PROVIDER, PROVIDER_CUSTOM)
        errors: dict[str, str] = {}
        placeholders = {"name": entry.title, "message": ""}

        if user_input is not None:
            data = self._entry_data(user_input, provider_key)
            if data is None:
                errors[CONF_BASE_URL] = "invalid_url"
            elif CONF_API_KEY not in data and entry.data.get(CONF_API_KEY):
                # An empty key keeps the current one, but only on the same
                # origin: the key must never go to another server.
                if _same_origin(data[CONF_BASE_URL], entry.data[CONF_BASE_URL]):
                    data[CONF_API_KEY] = entry.data[CONF_API_KEY]
                elif provider_for(provider_key).api_key_required:
                    errors[CONF_API_KEY] = "api_key_required"
            if data is not None and not errors:
                self._abort_if_duplicate(data)
                await self._async_validate(data, errors, placeholders)
                if not errors:
                    title = entry.title
                    if is_generated_entry_title(title, entry.data):
                        # Still the generated title: follow the new server.
                        title = entry_title(data, self._other_titles())
                    self._retitle_subentries(entry, data)
                    await _async_forget_lessons(self.hass, entry)
                    return self._async_update_entry(entry, data, title)

        schema = probatio.Schema(
            {
                probatio.Required(CONF_BASE_URL): URL_SELECTOR,
                probatio.Optional(probatio.Secret(CONF_API_KEY)): API_KEY_SELECTOR,
            }
        )
        suggested = {CONF_BASE_URL: (user_input or entry.data)[CONF_BASE_URL]}
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=self.add_suggested_values_to_schema(schema, suggested),
            errors=errors,
            description_placeholders=placeholders,
        )

    @staticmethod
    @callback
    @override
    def async_get_options_flow(config_entry: ConfigEntry) -> OptionsFlow:
        """Return the flow of the entry's connection options."""
        return ConnectionOptionsFlow()

    @classmethod
    @callback
    @override
    def async_get_supported_subentry_types(
        cls, config_entry: ConfigEntry
    ) -> dict[str, type[ConfigSubentryFlow]]:
        """Return the kinds of things each server can host."""
        return {
            SUBENTRY_CONVERSATION: ModelSubentryFlowHandler,
            SUBENTRY_AI_TASK: ModelSubentryFlowHandler,
            SUBENTRY_STT: SpeechToTextSubentryFlowHandler,
            SUBENTRY_TTS: TextToSpeechSubentryFlowHandler,
        }

    def _entry_data(
        self, user_input: Mapping[str, Any], provider_key: str | None = None
    ) -> dict[str, Any] | None:
        """Return the entry data for a form's input; None for a bad URL."""
        try:
            base_url = normalize_base_url(completed_url(user_input[CONF_BASE_URL]))
        except InvalidURLError:
            return None
        data: dict[str, Any] = {
            CONF_PROVIDER: provider_key or self._provider_key,
            CONF_BASE_URL: base_url,
        }
        if api_key := (user_input.get(CONF_API_KEY) or "").strip():
            data[CONF_API_KEY] = api_key
        return data

    async def _async_validate(
        self,
        data: dict[str, Any],
        errors: dict[str, str],
        placeholders: dict[str, str],
    ) -> list[str]:
        """Connect with the settings; fill in errors; return the models."""
        preset = provider_for(data.get(CONF_PROVIDER))
        try:
            listing = await async_validate_server(
                self.hass, data, preset.recommended_model
            )
        except AuthError:
            errors["base"] = "invalid_auth"
        except ConnectError as err:
            errors["base"] = err.translation_key or "cannot_connect"
            if errors["base"] == "cannot_connect" and _is_loopback(data[CONF_BASE_URL]):
                # Most often the server runs elsewhere, not beside Home Assistant.
                errors["base"] = "cannot_connect_local"
                placeholders["port"] = str(URL(data[CONF_BASE_URL]).port)
        except NotCompatibleError:
            errors["base"] = "not_compatible"
        except RateLimitedError:
            errors["base"] = "rate_limited"
        except ServerError as err:
            errors["base"] = _flow_error(err, placeholders)
        except Exception:
            _LOGGER.exception("Unexpected error while connecting to the server")
            errors["base"] = "unknown"
        else:
            _note_server_kind(data, listing)
            return listing.ids
        return []

    def _other_titles(self) -> set[str]:
        """Return the titles of the other entries, which a new title must not repeat."""
        return {
            entry.title
            for entry in self._async_current_entries(include_ignore=False)
            if entry.entry_id != self.context.get("entry_id")
        }

    def _abort_if_duplicate(self, data: Mapping[str, Any]) -> None:
        """Abort, naming the entry, when another has the same base URL and key.

        Without a key, any other entry for the same base URL counts: a server
        that needs no key is already reachable through it.
        """
        api_key = data.get(CONF_API_KEY)
        for entry in self._async_current_entries(include_ignore=False):
            if (
                entry.entry_id != self.context.get("entry_id")
                and entry.data[CONF_BASE_URL] == data[CONF_BASE_URL]
                and api_key in (None, entry.data.get(CONF_API_KEY))
            ):
                raise data_entry_flow.AbortFlow(
                    "already_configured_key" if api_key else "already_configured",
                    {"name": entry.title},
                )

    def _retitle_subentries(
        self, entry: ConfigEntry, new_data: Mapping[str, Any]
    ) -> None:
        """Let generated subentry titles follow the server to its new address."""
        for subentry in entry.subentries.values():
            kind, options = subentry.subentry_type, subentry.data
            if is_generated_title(subentry.title, kind, entry.data, options):
                self.hass.config_entries.async_update_subentry(
                    entry, subentry, title=subentry_title(kind, new_data, options)
                )

    def _async_update_entry(
        self, entry: ConfigEntry, data: dict[str, Any], title: str
    ) -> ConfigFlowResult:
        """Save the new settings and reload the entry."""
        if entry.update_listeners:
            # A loaded entry reloads itself through its update listener.
            return self.async_update_and_abort(entry, data=data, title=title)
        return self.async_update_reload_and_abort(entry, data=data, title=title)


def _note_server_kind(data: dict[str, Any], listing: ModelListing) -> None:
    """Note the server software a custom server's models list gives away."""
    data.pop(CONF_SERVER_KIND, None)
    if data.get(CONF_PROVIDER) == PROVIDER_CUSTOM and (kind := guess_kind(listing)):
        data[CONF_SERVER_KIND] = kind.value


async def _async_forget_lessons(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """Forget what was learned about an entry's server: the user set it anew."""
    if entry.state is ConfigEntryState.LOADED:
        entry.runtime_data.capabilities.forget()
    else:
        await async_forget(hass, entry.entry_id)


def _default_subentries(
    entry_data: Mapping[str, Any], models: list[str], preferred_model: str | None
) -> list[ConfigSubentryData]:
    """Return one conversation agent and one AI task for a new entry.

    Speech-to-text and text-to-speech come too where the server lists evident
    audio models; a server with only those gets only them.
    """
    preset = provider_for(entry_data.get(CONF_PROVIDER))
    models = lasting_models(models, preset.shutdowns)
    chat_model = pick_chat_model(models, preferred_model)
    conversation: dict[str, Any] = {
        CONF_RECOMMENDED: True,
        CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
    }
    ai_task: dict[str, Any] = {CONF_RECOMMENDED: True}
    if chat_model:
        conversation[CONF_CHAT_MODEL] = chat_model
        ai_task[CONF_CHAT_MODEL] = chat_model
    if image_model := pick_image_model(models):
        ai_task[CONF_IMAGE_MODEL] = image_model
    chat = [(SUBENTRY_CONVERSATION, conversation), (SUBENTRY_AI_TASK, ai_task)]
    voice = voice_defaults(models)
    if chat_model is None and voice:
        chat = []
    return [
        ConfigSubentryData(
            subentry_type=kind,
            data=data,
            title=subentry_title(kind, entry_data, data),
            unique_id=None,
        )
        for kind, data in (*chat, *voice)
    ]


def _whole_number(low: int, high: int) -> probatio.All[int]:
    """Return a number box for a whole number from low to high."""
    return probatio.All(
        NumberSelector(
            NumberSelectorConfig(min=low, max=high, step=1, mode=NumberSelectorMode.BOX)
        ),
        probatio.Coerce(int),
    )


def _model_options(
    ordered_models: list[str], current: str | None
) -> list[SelectOptionDict]:
    """Return dropdown options in the given order, a saved model first."""
    if current and current not in ordered_models:
        ordered_models = [current, *ordered_models]
    return [SelectOptionDict(value=model, label=model) for model in ordered_models]


class ModelSubentryFlowHandler(ConfigSubentryFlow):
    """Add or change a conversation agent or an AI task of a server."""

    options: dict[str, Any]
    # The name given in the first step of a new subentry.
    _name = ""

    @property
    def _is_new(self) -> bool:
        """Tell whether the flow creates a subentry."""
        return self.source == SOURCE_USER

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Add a subentry, starting from the recommended settings."""
        entry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="entry_not_loaded")
        preset = provider_for(entry.data.get(CONF_PROVIDER))
        models = lasting_models(entry.runtime_data.models, preset.shutdowns)
        self.options = {CONF_RECOMMENDED: True}
        if chat_model := pick_chat_model(models, preset.recommended_model):
            self.options[CONF_CHAT_MODEL] = chat_model
        if self._subentry_type == SUBENTRY_CONVERSATION:
            self.options[CONF_PROMPT] = llm.DEFAULT_INSTRUCTIONS_PROMPT
            self.options[CONF_LLM_HASS_API] = [llm.LLM_API_ASSIST]
        elif image_model := pick_image_model(models):
            self.options[CONF_IMAGE_MODEL] = image_model
        return await self.async_step_init()

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Change a subentry, starting from its saved settings."""
        if self._get_entry().state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="entry_not_loaded")
        self.options = dict(self._get_reconfigure_subentry().data)
        return await self.async_step_init()

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Show and save the settings of the agent or task."""
        entry = self._get_entry()
        if entry.state is not ConfigEntryState.LOADED:
            return self.async_abort(reason="entry_not_loaded")

        if user_input is not None:
            data = self._form_data(user_input)
            self._name = (user_input.get(CONF_NAME) or "").strip()
            if self._responses_schema(data) is not None:
                self.options = data
                return await self.async_step_responses()
            return self._async_store(data)

        self._drop_stale_apis()
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                self._schema(entry.runtime_data.models), self.options
            ),
            last_step=self._responses_schema(self.options) is None,
        )

    async def async_step_responses(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Show and save the Responses API options the chosen model takes."""
        if user_input is not None:
            return self._async_store(responses_data(self.options, user_input))
        schema = self._responses_schema(self.options)
        assert schema is not None  # only reached over the Responses API
        return self.async_show_form(
            step_id="responses",
            data_schema=self.add_suggested_values_to_schema(
                schema, suggested_values(schema, self.options)
            ),
            last_step=True,
        )

    def _responses_schema(self, data: dict[str, Any]) -> probatio.Schema | None:
        """Return the Responses API options the subentry's model takes, if any."""
        entry = self._get_entry()
        model = entry.runtime_data.capabilities.model(str(data.get(CONF_CHAT_MODEL)))
        return responses_schema(entry.options, model, self._subentry_type)

    def _drop_stale_apis(self) -> None:
        """Forget saved LLM APIs that no longer exist."""
        saved = self.options.get(CONF_LLM_HASS_API)
        if saved is None:
            return
        if isinstance(saved, str):
            saved = [saved]
        known = {api.id for api in llm.async_get_apis(self.hass)}
        if apis := [api for api in saved if api in known]:
            self.options[CONF_LLM_HASS_API] = apis
        else:
            self.options.pop(CONF_LLM_HASS_API)

    def _schema(self, models: list[str]) -> probatio.Schema:
        """Return the form for this kind of subentry."""
        schema: VolDictType = {}
        if self._is_new:
            # Left empty, the name is made of server and model.
            schema[probatio.Optional(CONF_NAME)] = str

        schema[probatio.Required(CONF_CHAT_MODEL)] = SelectSelector(
            SelectSelectorConfig(
                options=_model_options(
                    chat_models_first(models), self.options.get(CONF_CHAT_MODEL)
                ),
                custom_value=True,
                mode=SelectSelectorMode.DROPDOWN,
            )
        )

        if self._subentry_type == SUBENTRY_CONVERSATION:
            schema[probatio.Optional(CONF_PROMPT)] = TemplateSelector()
            schema[probatio.Optional(CONF_LLM_HASS_API)] = SelectSelector(
                SelectSelectorConfig(
                    options=[
                        SelectOptionDict(value=api.id, label=api.name)
                        for api in llm.async_get_apis(self.hass)
                    ],
                    multiple=True,
                    mode=SelectSelectorMode.LIST,
                )
            )
            schema[probatio.Optional(CONF_HISTORY_TURNS)] = _whole_number(0, 1000)
        else:
            schema[probatio.Optional(CONF_IMAGE_MODEL)] = SelectSelector(
                SelectSelectorConfig(
                    options=_model_options(
                        image_models_first(models), self.options.get(CONF_IMAGE_MODEL)
                    ),
                    custom_value=True,
                    mode=SelectSelectorMode.DROPDOWN,
                )
            )
        schema[probatio.Optional(CONF_CONTEXT_WINDOW)] = _whole_number(256, 10_000_000)

        schema[probatio.Optional(CONF_STREAMING, default=True)] = bool
        schema[probatio.Required(CONF_RECOMMENDED, default=True)] = bool
        advanced: FieldCondition = {"field": CONF_RECOMMENDED, "value": False}
        schema.update(
            {
                data_entry_flow.Optional(
                    CONF_MAX_TOKENS, default=self._max_tokens(), visible=advanced
                ): _whole_number(1, 1_000_000),
                data_entry_flow.Optional(
                    CONF_TEMPERATURE, default=RECOMMENDED_TEMPERATURE, visible=advanced
                ): NumberSelector(NumberSelectorConfig(min=0, max=2, step=0.05)),
                data_entry_flow.Optional(
                    CONF_TOP_P, default=RECOMMENDED_TOP_P, visible=advanced
                ): NumberSelector(NumberSelectorConfig(min=0, max=1, step=0.05)),
            }
        )
        return probatio.Schema(schema)

    def _max_tokens(self) -> int:
        """Return the maximum tokens the form offers: a local server's own limit."""
        server = self._get_entry().runtime_data.capabilities
        return default_answer_limit(server, self.options) or RECOMMENDED_MAX_TOKENS

    def _form_data(self, user_input: dict[str, Any]) -> dict[str, Any]:
        """Return the subentry's data with the form's values; tuning only when on."""
        data = {
            key: value
            for key, value in self.options.items()
            if key not in SUBENTRY_FORM_KEYS
        }
        data[CONF_RECOMMENDED] = user_input[CONF_RECOMMENDED]
        data[CONF_CHAT_MODEL] = user_input[CONF_CHAT_MODEL].strip()
        if self._subentry_type == SUBENTRY_CONVERSATION:
            if prompt := user_input.get(CONF_PROMPT):
                data[CONF_PROMPT] = prompt
            if apis := user_input.get(CONF_LLM_HASS_API):
                data[CONF_LLM_HASS_API] = apis
        elif image_model := (user_input.get(CONF_IMAGE_MODEL) or "").strip():
            data[CONF_IMAGE_MODEL] = image_model
        for key in CONTEXT_KEYS:
            if (value := user_input.get(key)) is not None:
                data[key] = value
        if not user_input.get(CONF_STREAMING, True):
            data[CONF_STREAMING] = False
        if not data[CONF_RECOMMENDED]:
            # Store what the form shows, defaults included: all of it is sent.
            defaults = {**ADVANCED_DEFAULTS, CONF_MAX_TOKENS: self._max_tokens()}
            for key, default in defaults.items():
                value = user_input.get(key, default)
                if value is not None:
                    data[key] = value
        return data

    def _async_store(self, data: dict[str, Any]) -> SubentryFlowResult:
        """Create or update the subentry with its data."""
        entry = self._get_entry()
        if self._is_new:
            return self.async_create_entry(
                title=self._name
                or subentry_title(self._subentry_type, entry.data, data),
                data=data,
            )
        subentry = self._get_reconfigure_subentry()
        title = followed_title(
            subentry.title, self._subentry_type, entry.data, subentry.data, data
        )
        return self.async_update_and_abort(entry, subentry, data=data, title=title)
