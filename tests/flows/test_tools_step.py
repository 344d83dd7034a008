"""The agent's tools step: the subset, tools on demand and the call cap."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import SOURCE_USER
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import llm
import pytest

from custom_components.openai_compatible.const import (
    CONF_CHAT_MODEL,
    CONF_MAX_TOOL_CALLS,
    CONF_ONE_ROUND,
    CONF_RECOMMENDED,
    CONF_TOOLS,
    CONF_TOOLS_ON_DEMAND,
    SUBENTRY_CONVERSATION,
)

from ..conftest import SetupEntry

TURN_ON = "intent__HassTurnOn"


async def _tools_form(
    hass: HomeAssistant, entry_id: str, subentry_id: str | None = None
) -> Any:
    """Fill the agent's first step with the Assist API; return the tools step."""
    flows = hass.config_entries.subentries
    if subentry_id is None:
        result = await flows.async_init(
            (entry_id, SUBENTRY_CONVERSATION), context={"source": SOURCE_USER}
        )
    else:
        result = await flows.async_init(
            (entry_id, SUBENTRY_CONVERSATION),
            context={"source": "reconfigure", "subentry_id": subentry_id},
        )
    result = await flows.async_configure(
        result["flow_id"],
        {
            CONF_CHAT_MODEL: "gpt-4o-mini",
            CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
            CONF_RECOMMENDED: True,
        },
    )
    assert result["step_id"] == "tools"
    return result


def _labels(result: Any) -> dict[str, str]:
    """Return the tools the step offers: their labels by name."""
    schema = result["data_schema"].schema
    key = next(key for key in schema if key == CONF_TOOLS)
    return {
        option["value"]: option["label"] for option in schema[key].config["options"]
    }


def _options(result: Any) -> list[str]:
    """Return the tool names the step offers."""
    return list(_labels(result))


class NoteTool(llm.Tool):
    """A tool of the notes API, named as one of Assist's."""

    name = TURN_ON
    integration = "notes"

    def __init__(self, title: str | None, description: str) -> None:
        """Take the title and description the test gives."""
        self.title, self.description = title, description

    async def async_call(
        self,
        hass: HomeAssistant,
        tool_input: llm.ToolInput,
        llm_context: llm.LLMContext,
    ) -> llm.ToolResult:
        """Never called: the step only lists tools."""
        raise NotImplementedError


class NotesAPI(llm.API):
    """An API whose one tool shares its name with an Assist tool."""

    tool: NoteTool

    async def async_get_api_instance(
        self, llm_context: llm.LLMContext
    ) -> llm.APIInstance:
        """Return the API with its tool."""
        return llm.APIInstance(self, "", llm_context, [self.tool])


async def test_tools_step_stores_the_choice(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """The Assist API's tools are listed; the choice is stored by name."""
    entry = await setup_entry()
    result = await _tools_form(hass, entry.entry_id)
    assert TURN_ON in _options(result)

    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_TOOLS: [TURN_ON], CONF_TOOLS_ON_DEMAND: True, CONF_MAX_TOOL_CALLS: 3},
    )

    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_TOOLS] == [TURN_ON]
    assert result["data"][CONF_TOOLS_ON_DEMAND] is True
    assert result["data"][CONF_MAX_TOOL_CALLS] == 3


async def test_tools_are_listed_by_what_they_do_and_their_api(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A tool shows its title (or description) and its API; its name is the value."""
    entry = await setup_entry()
    result = await _tools_form(hass, entry.entry_id)

    labels = _labels(result)
    assert labels[TURN_ON] == "Turn on (Device control)"
    assert "__" not in "".join(labels.values())
    assert list(labels.values()) == sorted(labels.values())


@pytest.mark.parametrize(
    ("title", "description", "label"),
    [
        ("Switch a note", "Ignored.", "Switch a note (Notes)"),
        (
            None,
            (
                "Marks a note as done in the household notebook that everyone "
                "shares. Use it for chores."
            ),
            "Marks a note as done in the household notebook that… (Notes)",
        ),
    ],
)
async def test_a_tool_of_two_apis_shows_each_api(
    hass: HomeAssistant,
    setup_entry: SetupEntry,
    title: str | None,
    description: str,
    label: str,
) -> None:
    """Where two APIs have a tool of one name, each is listed under its own API.

    A title goes first; a long description is cut at a word.
    """
    api = NotesAPI(hass=hass, id="notes", name="Notes")
    api.tool = NoteTool(title, description)
    llm.async_register_api(hass, api)
    entry = await setup_entry(
        conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST, "notes"]}
    )
    subentry_id = next(
        sub.subentry_id
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    flows = hass.config_entries.subentries
    result = await flows.async_init(
        (entry.entry_id, SUBENTRY_CONVERSATION),
        context={"source": "reconfigure", "subentry_id": subentry_id},
    )
    result = await flows.async_configure(
        result["flow_id"],
        {
            CONF_CHAT_MODEL: "gpt-4o-mini",
            CONF_LLM_HASS_API: [llm.LLM_API_ASSIST, "notes"],
            CONF_RECOMMENDED: True,
        },
    )

    labels = _labels(result)
    assert labels[f"notes__{TURN_ON}"] == label
    assert labels[f"assist__{TURN_ON}"] == ("Turn on (Device control)")


async def test_a_stored_name_the_api_lost_stays_listed(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A chosen tool the API no longer has can still be taken out; defaults go."""
    entry = await setup_entry(
        conversation={
            CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
            CONF_TOOLS: ["gone__Tool"],
            CONF_MAX_TOOL_CALLS: 2,
        }
    )
    subentry_id = next(
        sub.subentry_id
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    result = await _tools_form(hass, entry.entry_id, subentry_id)
    assert "gone__Tool" in _options(result)

    result = await hass.config_entries.subentries.async_configure(result["flow_id"], {})

    assert result["type"] is FlowResultType.ABORT
    data = entry.subentries[subentry_id].data
    assert not {CONF_TOOLS, CONF_TOOLS_ON_DEMAND, CONF_MAX_TOOL_CALLS} & set(data)


def _default(result: Any, name: str) -> Any:
    """Return a field's default in the form."""
    return next(key for key in result["data_schema"].schema if key == name).default()


async def test_one_round_answers_are_on_by_default_for_a_local_server(
    hass: HomeAssistant, setup_entry: SetupEntry
) -> None:
    """A local server answers done intents at once unless told; others are asked."""
    local = await setup_entry(provider="llama_cpp")
    hosted = await setup_entry()
    local_form = await _tools_form(hass, local.entry_id)
    hosted_form = await _tools_form(hass, hosted.entry_id)
    assert _default(local_form, CONF_ONE_ROUND) is True
    assert _default(hosted_form, CONF_ONE_ROUND) is False

    configure = hass.config_entries.subentries.async_configure
    local_data = (await configure(local_form["flow_id"], {CONF_ONE_ROUND: False}))[
        "data"
    ]
    hosted_data = (await configure(hosted_form["flow_id"], {CONF_ONE_ROUND: False}))[
        "data"
    ]

    assert local_data[CONF_ONE_ROUND] is False
    assert CONF_ONE_ROUND not in hosted_data
