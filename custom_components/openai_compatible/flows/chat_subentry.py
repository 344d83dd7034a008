"""Subentry flow of agents and AI tasks: settings, tools, Responses API options."""

from __future__ import annotations

from typing import Any, Final

from homeassistant import data_entry_flow
from homeassistant.components import conversation
from homeassistant.components.ai_task import DOMAIN as AI_TASK_DOMAIN
from homeassistant.components.conversation import DOMAIN as CONVERSATION_DOMAIN
from homeassistant.config_entries import SubentryFlowResult
from homeassistant.const import CONF_LLM_HASS_API, CONF_PROMPT
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import entity_registry as er, llm
from homeassistant.helpers.field_visibility import FieldCondition
from homeassistant.helpers.selector import (
    EntitySelector,
    EntitySelectorConfig,
    NumberSelector,
    NumberSelectorConfig,
    ObjectSelector,
    SelectOptionDict,
    SelectSelector,
    SelectSelectorConfig,
    SelectSelectorMode,
    TemplateSelector,
)
import probatio
from slugify import slugify

from ..const import (
    CONF_CALL_EXAMPLES,
    CONF_CHAT_MODEL,
    CONF_CONTEXT_WINDOW,
    CONF_EXTRA_FIELDS,
    CONF_FALLBACK,
    CONF_HISTORY_TURNS,
    CONF_IMAGE_MODEL,
    CONF_MAX_TOKENS,
    CONF_MAX_TOOL_CALLS,
    CONF_ONE_ROUND,
    CONF_RECOMMENDED,
    CONF_STREAMING,
    CONF_TEMPERATURE,
    CONF_THINKING,
    CONF_TOOLS,
    CONF_TOOLS_ON_DEMAND,
    CONF_TOP_P,
    DOMAIN,
    RECOMMENDED_MAX_TOKENS,
    RECOMMENDED_TEMPERATURE,
    RECOMMENDED_TOP_P,
    SUBENTRY_CONVERSATION,
)
from ..models.listing import lasting_models
from ..models.names import (
    ModelKind,
    Thinking,
    models_first,
    pick_chat_model,
    pick_image_model,
)
from ..models.providers import Provider
from ..window.context_window import default_answer_limit
from ..wire.round_trip import owned_fields
from .common import Input, SubentryFlow, choice, dropdown, whole_number
from .responses_step import RESPONSES_KEYS, responses_schema

# Home Assistant leaves these fields out of the input while recommended is on.
_ADVANCED: Final[FieldCondition] = {"field": CONF_RECOMMENDED, "value": False}
# Values that ask for nothing, and so are not saved.
_UNSAVED: Final = {CONF_STREAMING: True, CONF_THINKING: Thinking.DEFAULT}


def chat_defaults(
    subentry_type: str, models: list[str], preferred: str | None
) -> dict[str, object]:
    """Return the settings a new agent or task starts from, of the lasting `models`."""
    data: dict[str, object] = {CONF_RECOMMENDED: True}
    if chat_model := pick_chat_model(models, preferred):
        data[CONF_CHAT_MODEL] = chat_model
    if subentry_type == SUBENTRY_CONVERSATION:
        data[CONF_PROMPT] = llm.DEFAULT_INSTRUCTIONS_PROMPT
        data[CONF_LLM_HASS_API] = [llm.LLM_API_ASSIST]
    elif image_model := pick_image_model(models):
        data[CONF_IMAGE_MODEL] = image_model
    return data


LABEL_CHARACTERS: Final = 60


async def async_tool_options(
    hass: HomeAssistant, api_ids: list[str]
) -> list[SelectOptionDict]:
    """Return the APIs' tools: names, labeled with what they do and their API."""
    context = llm.LLMContext(
        platform=DOMAIN,
        context=Context(),
        language=hass.config.language,
        assistant=conversation.DOMAIN,
        device_id=None,
    )
    try:
        merged = await llm.async_get_api(hass, api_ids, context)
        apis = [await llm.async_get_api(hass, api_id, context) for api_id in api_ids]
    except HomeAssistantError:
        return []
    # Where two APIs have a tool of one name, the merged one is namespaced.
    sources: dict[str, str] = {}
    for api in apis:
        for tool in api.tools:
            sources.setdefault(tool.name, api.api.name)
            sources[f"{slugify(api.api.id)}__{tool.name}"] = api.api.name
    options: list[SelectOptionDict] = []
    for tool in merged.tools:
        text = tool.title or (tool.description or "").split(". ")[0].split("\n")[0]
        text = text.strip().rstrip(".")
        if len(text) > LABEL_CHARACTERS:
            text = text[:LABEL_CHARACTERS].rsplit(" ", 1)[0] + "…"
        label = f"{text or tool.name} ({sources.get(tool.name, merged.api.name)})"
        options.append(SelectOptionDict(value=tool.name, label=label))
    return options


class ModelSubentryFlowHandler(SubentryFlow):
    """Add or change a conversation agent or an AI task of a server."""

    def _defaults(self, models: list[str], preset: Provider) -> dict[str, object]:
        lasting = lasting_models(models, preset.shutdowns)
        return chat_defaults(self._subentry_type, lasting, preset.recommended_model)

    async def async_step_init(self, user_input: Input = None) -> SubentryFlowResult:
        """Show and take the settings of the agent or task."""
        entry = self._entry()
        errors: dict[str, str] = {}
        placeholders: dict[str, str] = {}
        # The extra fields: an object, setting nothing we own.
        given = user_input or {}
        fields = given.get(CONF_EXTRA_FIELDS)
        if fields not in (None, ""):
            if not isinstance(fields, dict):
                errors[CONF_EXTRA_FIELDS] = "extra_fields_not_object"
            elif owned := owned_fields(fields):
                errors[CONF_EXTRA_FIELDS] = "extra_fields_owned"
                placeholders["fields"] = ", ".join(owned)
        if user_input is not None and not errors:
            given = {
                k: v.strip() if isinstance(v, str) and k != CONF_PROMPT else v
                for k, v in user_input.items()
                if _UNSAVED.get(k) != v
            }
            self.options = self._taken(given)
            target = self.options.get(CONF_FALLBACK)
            if not (target and closes_loop(self.hass, self._own_entity_id(), target)):
                return await self.async_step_tools()
            errors[CONF_FALLBACK] = "fallback_loop"
        if (saved := self.options.get(CONF_LLM_HASS_API)) is not None:
            known = {api.id for api in llm.async_get_apis(self.hass)}
            saved = [saved] if isinstance(saved, str) else saved
            if apis := [api for api in saved if api in known]:
                self.options[CONF_LLM_HASS_API] = apis
            else:
                self.options.pop(CONF_LLM_HASS_API)
        return self.async_show_form(
            step_id="init",
            data_schema=self.add_suggested_values_to_schema(
                self._schema(entry.runtime_data.models),
                {**self.options, **(user_input or {})},
            ),
            errors=errors or None,
            description_placeholders=placeholders or None,
            last_step=not self.options.get(CONF_LLM_HASS_API)
            and self._responses_schema() is None,
        )

    async def async_step_tools(self, user_input: Input = None) -> SubentryFlowResult:
        """Show and take which tools the agent offers, where it has an LLM API."""
        apis = self.options.get(CONF_LLM_HASS_API)
        local = bool(self._entry().runtime_data.capabilities.local)
        if user_input is not None:
            # One round and call examples are on for a local server; defaults go.
            unsaved = {CONF_TOOLS_ON_DEMAND: False, CONF_ONE_ROUND: local}
            unsaved[CONF_CALL_EXAMPLES] = local
            given = {k: v for k, v in user_input.items() if unsaved.get(k) != v}
            self.options = self._taken(given)
        if user_input is not None or not apis:
            return await self.async_step_responses()
        options = await async_tool_options(self.hass, apis)
        offered = {option["value"] for option in options}
        # A saved tool no API offers now stays, under its name.
        options += [
            SelectOptionDict(value=name, label=name)
            for name in self.options.get(CONF_TOOLS, ())
            if name not in offered
        ]
        options.sort(key=lambda option: option["label"])
        schema = {
            probatio.Optional(CONF_TOOLS): SelectSelector(
                SelectSelectorConfig(
                    options=options, multiple=True, mode=SelectSelectorMode.DROPDOWN
                )
            ),
            probatio.Optional(CONF_TOOLS_ON_DEMAND, default=False): bool,
            probatio.Optional(CONF_MAX_TOOL_CALLS): whole_number(1, 100),
            probatio.Optional(CONF_ONE_ROUND, default=local): bool,
            probatio.Optional(CONF_CALL_EXAMPLES, default=local): bool,
        }
        return self.async_show_form(
            step_id="tools",
            data_schema=self.add_suggested_values_to_schema(
                probatio.Schema(schema), self.options
            ),
            last_step=self._responses_schema() is None,
        )

    async def async_step_responses(
        self, user_input: Input = None
    ) -> SubentryFlowResult:
        """Show and save the Responses API options the model takes; or save."""
        if (schema := self._responses_schema()) is None:
            return self._async_store(self.options)
        if user_input is not None:
            return self._async_store(self._taken(user_input, RESPONSES_KEYS))
        # Saved values the step cannot show (a tier of another model) are left out.
        suggested = dict(self.options)
        for key, validator in schema.schema.items():
            if (name := str(key)) in suggested:
                try:
                    validator(suggested[name])
                except probatio.Invalid:
                    del suggested[name]
        return self.async_show_form(
            step_id="responses",
            data_schema=self.add_suggested_values_to_schema(schema, suggested),
            last_step=True,
        )

    def _entity_domain(self) -> str:
        agent = self._subentry_type == SUBENTRY_CONVERSATION
        return CONVERSATION_DOMAIN if agent else AI_TASK_DOMAIN

    def _own_entity_id(self) -> str | None:
        if self._is_new:
            return None
        return er.async_get(self.hass).async_get_entity_id(
            self._entity_domain(), DOMAIN, self._get_reconfigure_subentry().subentry_id
        )

    def _responses_schema(self) -> probatio.Schema | None:
        entry = self._get_entry()
        model = str(self.options.get(CONF_CHAT_MODEL))
        capabilities = entry.runtime_data.capabilities.model(model)
        return responses_schema(entry.options, capabilities, self._subentry_type)

    def _schema(self, models: list[str]) -> probatio.Schema:
        schema = self._model_fields(
            CONF_CHAT_MODEL, models_first(models, ModelKind.CHAT)
        )
        if self._subentry_type == SUBENTRY_CONVERSATION:
            apis = [
                SelectOptionDict(value=api.id, label=api.name)
                for api in llm.async_get_apis(self.hass)
            ]
            schema[probatio.Optional(CONF_PROMPT)] = TemplateSelector()
            schema[probatio.Optional(CONF_LLM_HASS_API)] = SelectSelector(
                SelectSelectorConfig(
                    options=apis, multiple=True, mode=SelectSelectorMode.LIST
                )
            )
            schema[probatio.Optional(CONF_HISTORY_TURNS)] = whole_number(0, 1000)
        else:
            schema[probatio.Optional(CONF_IMAGE_MODEL)] = dropdown(
                models_first(models, ModelKind.IMAGE),
                self.options.get(CONF_IMAGE_MODEL),
            )
        own = self._own_entity_id()
        schema[probatio.Optional(CONF_FALLBACK)] = EntitySelector(
            EntitySelectorConfig(
                domain=self._entity_domain(), exclude_entities=[own] if own else []
            )
        )
        schema[probatio.Optional(CONF_CONTEXT_WINDOW)] = whole_number(256, 10_000_000)
        schema[probatio.Optional(CONF_STREAMING, default=True)] = bool
        schema[probatio.Required(CONF_RECOMMENDED, default=True)] = bool

        def advanced(key: str, default: Any = probatio.UNDEFINED) -> probatio.Marker:
            return data_entry_flow.Optional(key, default=default, visible=_ADVANCED)

        # The answer limit offered: a local server's own limit.
        server = self._get_entry().runtime_data.capabilities
        limit = default_answer_limit(server, self.options) or RECOMMENDED_MAX_TOKENS
        schema |= {
            advanced(CONF_MAX_TOKENS, limit): whole_number(1, 1_000_000),
            advanced(CONF_TEMPERATURE, RECOMMENDED_TEMPERATURE): NumberSelector(
                NumberSelectorConfig(min=0, max=2, step=0.05)
            ),
            advanced(CONF_TOP_P, RECOMMENDED_TOP_P): NumberSelector(
                NumberSelectorConfig(min=0, max=1, step=0.05)
            ),
            advanced(CONF_EXTRA_FIELDS): ObjectSelector(),
            advanced(CONF_THINKING, Thinking.DEFAULT): choice(CONF_THINKING, Thinking),
        }
        return probatio.Schema(schema)


def closes_loop(hass: HomeAssistant, source: str | None, target: str) -> bool:
    """Tell whether naming `target` as the fallback of `source` makes a loop of ours."""
    seen: set[str] = set()
    current: str | None = target
    while current is not None and current not in seen:
        if current == source:
            return True
        seen.add(current)
        entity = er.async_get(hass).async_get(current)
        if (
            entity is None
            or entity.platform != DOMAIN
            or entity.config_entry_id is None
        ):
            return False
        entry = hass.config_entries.async_get_entry(entity.config_entry_id)
        subentry = (
            entry.subentries.get(entity.config_subentry_id or "") if entry else None
        )
        current = subentry.data.get(CONF_FALLBACK) if subentry else None
    return False
