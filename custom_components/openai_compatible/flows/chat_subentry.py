"""Subentry flow of conversation agents and AI tasks: model, prompt, tuning."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from homeassistant import data_entry_flow
from homeassistant.components.ai_task import DOMAIN as AI_TASK_DOMAIN
from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.config_entries import SubentryFlowResult
from homeassistant.const import CONF_LLM_HASS_API, CONF_NAME, CONF_PROMPT
from homeassistant.helpers import entity_registry as er, llm
from homeassistant.helpers.field_visibility import FieldCondition
from homeassistant.helpers.selector import (
    EntitySelector,
    EntitySelectorConfig,
    NumberSelector,
    NumberSelectorConfig,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TemplateSelector,
)
from homeassistant.helpers.typing import VolDictType
import probatio

from ..const import (
    CONF_CHAT_MODEL,
    CONF_CONTEXT_WINDOW,
    CONF_FALLBACK,
    CONF_HISTORY_TURNS,
    CONF_IMAGE_MODEL,
    CONF_MAX_TOKENS,
    CONF_RECOMMENDED,
    CONF_STREAMING,
    CONF_TEMPERATURE,
    CONF_TOP_P,
    DOMAIN,
    RECOMMENDED_MAX_TOKENS,
    RECOMMENDED_TEMPERATURE,
    RECOMMENDED_TOP_P,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)
from ..fallback import closes_loop
from ..models.kinds import chat_models_first, image_models_first
from ..models.lifecycle import lasting_models
from ..models.providers import Provider
from ..window.context_window import default_answer_limit
from .defaults import chat_defaults
from .fields import dropdown, whole_number
from .knobs import KNOB_KEYS, knob_data, knob_errors, knob_fields
from .responses_step import responses_data, responses_schema, suggested_values
from .subentry_base import SubentryFlow
from .tools_step import async_tool_names, tools_data, tools_schema

# The sampling settings behind the "recommended" toggle, with their defaults.
ADVANCED_DEFAULTS: Final[dict[str, float]] = {
    CONF_MAX_TOKENS: RECOMMENDED_MAX_TOKENS,
    CONF_TEMPERATURE: RECOMMENDED_TEMPERATURE,
    CONF_TOP_P: RECOMMENDED_TOP_P,
}

# How much of the context an agent or task uses; empty: the default.
CONTEXT_KEYS: Final = (CONF_HISTORY_TURNS, CONF_CONTEXT_WINDOW)

# Every key the subentry form owns; other keys in saved data are kept.
SUBENTRY_FORM_KEYS: Final = frozenset(
    {
        *CONTEXT_KEYS,
        CONF_CHAT_MODEL,
        CONF_FALLBACK,
        CONF_IMAGE_MODEL,
        CONF_LLM_HASS_API,
        CONF_PROMPT,
        CONF_RECOMMENDED,
        CONF_STREAMING,
        *ADVANCED_DEFAULTS,
        *KNOB_KEYS,
    }
)
_ADVANCED: Final[FieldCondition] = {"field": CONF_RECOMMENDED, "value": False}
# The entity domain of each kind of subentry, for its fallback.
_ENTITY_DOMAINS: Final = {
    SUBENTRY_CONVERSATION: CONVERSATION_DOMAIN,
    SUBENTRY_AI_TASK: AI_TASK_DOMAIN,
}


class ModelSubentryFlowHandler(SubentryFlow):
    """Add or change a conversation agent or an AI task of a server."""

    # The name given in the first step of a new subentry.
    _name = ""

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, object]:
        """Start from the recommended settings and a model that will last."""
        lasting = lasting_models(models, preset.shutdowns)
        return chat_defaults(self._subentry_type, lasting, preset.recommended_model)

    async def async_step_init(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Show and save the settings of the agent or task."""
        if (entry := self._loaded_entry()) is None:
            return self.async_abort(reason="entry_not_loaded")

        errors, placeholders = knob_errors(user_input or {})
        if user_input is not None and not errors:
            data = self._form_data(user_input)
            self._name = (user_input.get(CONF_NAME) or "").strip()
            if self._closes_loop(data):
                errors[CONF_FALLBACK] = "fallback_loop"
                self.options = data
            elif data.get(CONF_LLM_HASS_API):
                self.options = data
                return await self.async_step_tools()
            else:
                return await self._async_after_tools(data)

        self._drop_stale_apis()
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                self._schema(entry.runtime_data.models),
                {**self.options, **(user_input or {})},
            ),
            errors=errors or None,
            description_placeholders=placeholders or None,
            # The tools step follows where an LLM API is chosen.
            last_step=not self.options.get(CONF_LLM_HASS_API)
            and self._responses_schema(self.options) is None,
        )

    async def async_step_tools(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Show and save which tools the agent offers, and how."""
        local = bool(self._entry().runtime_data.capabilities.local)
        if user_input is not None:
            data = tools_data(self.options, user_input, local)
            return await self._async_after_tools(data)
        names = await async_tool_names(self.hass, self.options[CONF_LLM_HASS_API])
        return self.async_show_form(
            step_id="tools",
            data_schema=self.add_suggested_values_to_schema(
                tools_schema(names, self.options, local), self.options
            ),
            last_step=self._responses_schema(self.options) is None,
        )

    async def _async_after_tools(self, data: dict[str, Any]) -> SubentryFlowResult:
        """Go on to the Responses API options where the model takes some; or save."""
        if self._responses_schema(data) is not None:
            self.options = data
            return await self.async_step_responses()
        return self._async_store(data, self._name)

    async def async_step_responses(
        self, user_input: dict[str, Any] | None = None
    ) -> SubentryFlowResult:
        """Show and save the Responses API options the chosen model takes."""
        if user_input is not None:
            return self._async_store(
                responses_data(self.options, user_input), self._name
            )
        schema = self._responses_schema(self.options)
        assert schema is not None  # only reached over the Responses API
        return self.async_show_form(
            step_id="responses",
            data_schema=self.add_suggested_values_to_schema(
                schema, suggested_values(schema, self.options)
            ),
            last_step=True,
        )

    def _own_entity_id(self) -> str | None:
        """Return the entity of the subentry being changed; None for a new one."""
        if self._is_new:
            return None
        return er.async_get(self.hass).async_get_entity_id(
            _ENTITY_DOMAINS[self._subentry_type],
            DOMAIN,
            self._get_reconfigure_subentry().subentry_id,
        )

    def _closes_loop(self, data: Mapping[str, object]) -> bool:
        """Tell whether the chosen fallback leads back to this agent or task."""
        target = data.get(CONF_FALLBACK)
        return isinstance(target, str) and closes_loop(
            self.hass, self._own_entity_id(), target
        )

    def _fallback_field(self) -> VolDictType:
        """Return the fallback field: an agent or task of any integration but this."""
        own = self._own_entity_id()
        return {
            probatio.Optional(CONF_FALLBACK): EntitySelector(
                EntitySelectorConfig(
                    domain=_ENTITY_DOMAINS[self._subentry_type],
                    exclude_entities=[own] if own else [],
                )
            )
        }

    def _responses_schema(self, data: Mapping[str, Any]) -> probatio.Schema | None:
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
        schema[probatio.Required(CONF_CHAT_MODEL)] = dropdown(
            chat_models_first(models), self.options.get(CONF_CHAT_MODEL)
        )
        if self._subentry_type == SUBENTRY_CONVERSATION:
            schema.update(self._agent_fields())
        else:
            schema[probatio.Optional(CONF_IMAGE_MODEL)] = dropdown(
                image_models_first(models), self.options.get(CONF_IMAGE_MODEL)
            )
        schema.update(self._fallback_field())
        schema[probatio.Optional(CONF_CONTEXT_WINDOW)] = whole_number(256, 10_000_000)
        schema[probatio.Optional(CONF_STREAMING, default=True)] = bool
        schema[probatio.Required(CONF_RECOMMENDED, default=True)] = bool
        schema.update(self._tuning_fields())
        schema.update(knob_fields(_ADVANCED))
        return probatio.Schema(schema)

    def _agent_fields(self) -> VolDictType:
        """Return the fields only a conversation agent has."""
        apis = [
            SelectOptionDict(value=api.id, label=api.name)
            for api in llm.async_get_apis(self.hass)
        ]
        return {
            probatio.Optional(CONF_PROMPT): TemplateSelector(),
            probatio.Optional(CONF_LLM_HASS_API): SelectSelector(
                SelectSelectorConfig(
                    options=apis, multiple=True, mode=SelectSelectorMode.LIST
                )
            ),
            probatio.Optional(CONF_HISTORY_TURNS): whole_number(0, 1000),
        }

    def _tuning_fields(self) -> VolDictType:
        """Return the sampling fields, shown when the recommended toggle is off."""
        return {
            data_entry_flow.Optional(
                CONF_MAX_TOKENS, default=self._max_tokens(), visible=_ADVANCED
            ): whole_number(1, 1_000_000),
            data_entry_flow.Optional(
                CONF_TEMPERATURE, default=RECOMMENDED_TEMPERATURE, visible=_ADVANCED
            ): NumberSelector(NumberSelectorConfig(min=0, max=2, step=0.05)),
            data_entry_flow.Optional(
                CONF_TOP_P, default=RECOMMENDED_TOP_P, visible=_ADVANCED
            ): NumberSelector(NumberSelectorConfig(min=0, max=1, step=0.05)),
        }

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
        for key in (*CONTEXT_KEYS, CONF_FALLBACK):
            if (value := user_input.get(key)) is not None:
                data[key] = value
        if not user_input.get(CONF_STREAMING, True):
            data[CONF_STREAMING] = False
        if not data[CONF_RECOMMENDED]:
            data.update(self._tuning(user_input))
            data.update(knob_data(user_input))
        return data

    def _tuning(self, user_input: dict[str, Any]) -> dict[str, Any]:
        """Return what the form shows of the tuning, defaults included: all is sent."""
        defaults = {**ADVANCED_DEFAULTS, CONF_MAX_TOKENS: self._max_tokens()}
        return {
            key: value
            for key, default in defaults.items()
            if (value := user_input.get(key, default)) is not None
        }
