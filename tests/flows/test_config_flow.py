"""The config flow, reauth, reconfigure and subentry flows, against the simulator."""

from __future__ import annotations

from collections.abc import Iterator
import json
from pathlib import Path
import socket
from typing import Any
from unittest.mock import patch

from homeassistant.config_entries import (
    SOURCE_USER,
    ConfigEntryState,
    ConfigFlowResult,
    SubentryFlowResult,
)
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API, CONF_NAME, CONF_PROMPT
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import (
    FlowResultType,
    InvalidData,
    add_visible_conditions_to_serialized_schema,
)
from homeassistant.helpers import (
    config_validation as cv,
    device_registry as dr,
    entity_registry as er,
    llm,
)
import probatio
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
from syrupy.assertion import SnapshotAssertion
from yarl import URL

from custom_components.openai_compatible.const import (
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_CONTEXT_WINDOW,
    CONF_EXTRA_FIELDS,
    CONF_FALLBACK,
    CONF_HISTORY_TURNS,
    CONF_IMAGE_MODEL,
    CONF_MAX_TOKENS,
    CONF_PROVIDER,
    CONF_RECOMMENDED,
    CONF_SERVER_KIND,
    CONF_STREAMING,
    CONF_TEMPERATURE,
    CONF_THINKING,
    CONF_TOP_P,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    Feature,
)
from custom_components.openai_compatible.errors import ConnectError
from custom_components.openai_compatible.flows.connection import entry_data
from custom_components.openai_compatible.models.listing import ModelListing
from custom_components.openai_compatible.models.providers import (
    PROVIDER_CUSTOM,
    PROVIDERS,
)
from custom_components.openai_compatible.net.transport import Budget
from simulator import OpenAISimulator, Pause
from tests.conftest import KEYED_SIMULATOR_KEY, TEST_API_KEY, MakeConfigEntry, served

pytestmark = pytest.mark.usefixtures("ha_core")

TRANSLATIONS = (
    Path(__file__).parent.parent.parent
    / "custom_components/openai_compatible/translations"
)
EN = json.loads((TRANSLATIONS / "en.json").read_text(encoding="utf-8"))
LANGUAGES = {
    path.stem: json.loads(path.read_text(encoding="utf-8"))
    for path in sorted(TRANSLATIONS.glob("*.json"))
}


def _suggested(result: ConfigFlowResult, field: str) -> Any:
    """Return the suggested value of a form field, or None."""
    for key in result["data_schema"].schema:
        if key == field:
            return (key.description or {}).get("suggested_value")
    raise AssertionError(f"no field {field}")


def _field(result: ConfigFlowResult, field: str) -> Any:
    """Return the schema marker of a form field."""
    for key in result["data_schema"].schema:
        if key == field:
            return key
    raise AssertionError(f"no field {field}")


def _fields(result: ConfigFlowResult) -> list[str]:
    """Return the names of a form's fields."""
    return [str(key) for key in result["data_schema"].schema]


def _field_selector(result: ConfigFlowResult, field: str) -> Any:
    """Return the selector of a form field."""
    selector = result["data_schema"].schema[_field(result, field)]
    if isinstance(selector, probatio.All):
        selector = selector.validators[0]
    return selector


def _selector_options(result: ConfigFlowResult, field: str) -> list[Any]:
    """Return the option values of a select field."""
    selector = _field_selector(result, field)
    return [
        option["value"] if isinstance(option, dict) else option
        for option in selector.config["options"]
    ]


def _closed_port_url() -> str:
    """Return a URL on which nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def _connect_form(hass: HomeAssistant, provider: str) -> ConfigFlowResult:
    """Start the flow and pick a provider; return the connect form."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_PROVIDER: provider}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"].startswith("connect")
    return result


# --- the user flow ----------------------------------------------------------


async def test_provider_dropdown_lists_every_preset_custom_first(
    hass: HomeAssistant,
) -> None:
    """The first step offers all presets as a translated dropdown.

    Any other server comes first, not off-screen below fifteen presets.
    """
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    options = _selector_options(result, CONF_PROVIDER)
    assert sorted(options) == sorted(PROVIDERS)
    assert options[0] == PROVIDER_CUSTOM
    selector = result["data_schema"].schema[_field(result, CONF_PROVIDER)]
    assert selector.config["translation_key"] == CONF_PROVIDER
    assert selector.config["mode"] == "dropdown"


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_preset_fills_url_and_key_requirement(
    hass: HomeAssistant, provider: str
) -> None:
    """Each preset prefills its URL and requires a key only where needed."""
    preset = PROVIDERS[provider]
    result = await _connect_form(hass, provider)
    assert _suggested(result, CONF_BASE_URL) == (preset.base_url or None)
    key_marker = _field(result, CONF_API_KEY)
    assert isinstance(key_marker, probatio.Required) is preset.api_key_required
    assert result["description_placeholders"]["provider"] == preset.name


@pytest.mark.parametrize(
    ("provider", "step_id", "port", "listen"),
    [
        ("openai", "connect", "443", ""),
        ("custom", "connect_custom", "", ""),
        ("azure", "connect_azure", "443", ""),
        ("ollama", "connect_local", "11434", "OLLAMA_HOST=0.0.0.0"),
        ("lm_studio", "connect_local", "1234", "lms server start --bind 0.0.0.0"),
        ("llama_cpp", "connect_local", "8080", "llama-server --host 0.0.0.0"),
        ("vllm", "connect_local", "8000", "vllm serve MODEL --host 0.0.0.0"),
        ("localai", "connect_local", "8080", "local-ai run --address 0.0.0.0:8080"),
        ("litellm", "connect_local", "4000", "litellm --host 0.0.0.0"),
    ],
)
async def test_connect_hints_suit_the_preset(
    hass: HomeAssistant, provider: str, step_id: str, port: str, listen: str
) -> None:
    """Azure's template, each local server's port and listen setting.

    Any other server is not named: the preset's name "Custom" means nothing there.
    """
    result = await _connect_form(hass, provider)
    assert result["step_id"] == step_id
    placeholders = result["description_placeholders"]
    assert (placeholders["port"], placeholders["listen"]) == (port, listen)
    step = json.dumps(EN["config"]["step"][step_id])
    assert ("YOUR-RESOURCE" in step) is (provider == "azure")
    assert ("{listen}" in step) is bool(listen)
    assert ("{provider}" in step) is (provider != "custom")


async def test_local_hint_and_error_give_one_full_example(
    hass: HomeAssistant,
) -> None:
    """The Ollama step's hint and its error show the same address, port and /v1.

    The hint is Markdown: in backticks, the example is no link to follow. The
    same in every language.
    """
    result = await _connect_form(hass, "ollama")
    example = "http://192.168.1.20:{port}/v1"
    for path in sorted(TRANSLATIONS.glob("*.json")):
        config = json.loads(path.read_text(encoding="utf-8"))["config"]
        local_hint = config["step"]["connect_local"]["data_description"]
        assert f"`{example}`" in local_hint[CONF_BASE_URL], path.name
        assert example in config["error"]["cannot_connect_local"], path.name
    hint = EN["config"]["step"]["connect_local"]["data_description"][CONF_BASE_URL]
    shown = hint.format(**result["description_placeholders"])
    assert "`http://192.168.1.20:11434/v1`" in shown


async def test_custom_server_without_key(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A keyless server creates an entry with one agent and one task."""
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: f"  {simulator.base_url}/ "}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    # Software unknown, host an IP address: the entry says what it is.
    assert result["title"] == "OpenAI-compatible server"
    assert result["data"] == {
        CONF_PROVIDER: PROVIDER_CUSTOM,
        CONF_BASE_URL: simulator.base_url,
    }
    entry = result["result"]
    # Duplicates are refused by base URL and key; nothing else names the entry.
    assert entry.unique_id is None
    subentries = {sub.subentry_type: sub for sub in entry.subentries.values()}
    assert len(entry.subentries) == 2
    conversation = subentries[SUBENTRY_CONVERSATION]
    assert conversation.title == "OpenAI-compatible server · gpt-4o-mini"
    assert conversation.data == {
        CONF_RECOMMENDED: True,
        CONF_PROMPT: llm.DEFAULT_INSTRUCTIONS_PROMPT,
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
        CONF_CHAT_MODEL: "gpt-4o-mini",
    }
    ai_task = subentries[SUBENTRY_AI_TASK]
    assert ai_task.title == "OpenAI-compatible server · gpt-4o-mini · AI task"
    assert ai_task.data == {
        CONF_RECOMMENDED: True,
        CONF_CHAT_MODEL: "gpt-4o-mini",
        CONF_IMAGE_MODEL: "gpt-image-1",
    }
    # Validation listed the models, with the placeholder key.
    request = simulator.requests[0]
    assert (request.method, request.path) == ("GET", "/v1/models")
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED


async def test_hosted_preset_prefers_its_model(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """The preset's recommended model wins; the key is sent, never stored hashed.

    Models whose shutdown OpenAI announced are passed over for the defaults.
    """
    simulator.models[:] = [
        "gpt-5-mini",
        "gpt-image-1-mini",
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-image-1",
    ]
    result = await _connect_form(hass, "openai")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: " sk-live "},
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"].startswith("OpenAI (127.0.0.1:")
    assert result["data"][CONF_API_KEY] == "sk-live"
    entry = result["result"]
    assert entry.unique_id is None
    models = {
        sub.subentry_type: (sub.data[CONF_CHAT_MODEL], sub.data.get(CONF_IMAGE_MODEL))
        for sub in entry.subentries.values()
    }
    assert models == {
        SUBENTRY_CONVERSATION: ("gpt-4o-mini", None),
        SUBENTRY_AI_TASK: ("gpt-4o-mini", "gpt-image-1"),
    }
    # Elsewhere than OpenAI's own address, its agents show where, as it does.
    assert sorted(sub.title for sub in entry.subentries.values()) == [
        f"{result['title']} · gpt-4o-mini",
        f"{result['title']} · gpt-4o-mini · AI task",
    ]
    assert simulator.requests[0].headers["Authorization"] == "Bearer sk-live"


async def test_hosted_preset_title_is_the_provider(hass: HomeAssistant) -> None:
    """A hosted service at its own address is named without a host."""
    with patch(
        "custom_components.openai_compatible.flows.connection.async_validate_server",
        return_value=ModelListing(["gpt-5-mini"], {}),
    ):
        result = await _connect_form(hass, "openai")
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"],
            {CONF_BASE_URL: "HTTPS://API.OpenAI.com/v1/", CONF_API_KEY: "sk-a"},
        )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "OpenAI"
    assert result["data"][CONF_BASE_URL] == "https://api.openai.com/v1"


async def test_hosted_preset_requires_a_key(hass: HomeAssistant) -> None:
    """OpenAI without a key does not pass the form."""
    result = await _connect_form(hass, "openai")
    with pytest.raises(InvalidData):
        await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_BASE_URL: "https://api.openai.com/v1"}
        )


@pytest.mark.parametrize(
    ("native", "name", "entity_id"),
    [
        ("llama_cpp", "llama.cpp server", "conversation.llama_cpp_server_gpt_4o_mini"),
        ("vllm", "vLLM", "conversation.vllm_gpt_4o_mini"),
        ("lm_studio", "LM Studio", "conversation.lm_studio_gpt_4o_mini"),
        ("ollama", "Ollama", "conversation.ollama_gpt_4o_mini"),
        (None, "OpenAI-compatible server", "conversation.openai_compatible_server_gpt_4o_mini"),
    ],
)  # fmt: skip
async def test_custom_server_named_after_its_software(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    native: Any,
    name: str,
    entity_id: str,
) -> None:
    """An "Other server" entry takes the name of the software it runs, not its IP.

    Its agent's entity id follows; a second entry of the same name shows its
    address to tell the two apart, and so do its agent's and task's names.
    """
    simulator.settings.native = native
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: "sk-a"}
    )
    assert result["title"] == name
    await hass.async_block_till_done()
    # The entry then reads the native routes of the software it was recognised as.
    assert result["result"].runtime_data.capabilities.report.kind == native
    registry = er.async_get(hass)
    assert registry.async_get(entity_id) is not None
    assert not [e for e in registry.entities if e.startswith("conversation.127")]

    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: "sk-b"}
    )
    titled = f"{name} ({URL(simulator.base_url).host_port_subcomponent})"
    assert result["title"] == titled
    await hass.async_block_till_done()
    subentries = result["result"].subentries.values()
    assert sorted(subentry.title for subentry in subentries) == [
        f"{titled} · gpt-4o-mini",
        f"{titled} · gpt-4o-mini · AI task",
    ]
    agents = [
        hass.states.get(e.entity_id)
        for e in registry.entities.values()
        if e.platform == DOMAIN and e.domain == "conversation"
    ]
    assert {state.name for state in agents if state} == {
        f"{name} · gpt-4o-mini",
        f"{titled} · gpt-4o-mini",
    }


@pytest.mark.parametrize(
    ("models", "asked"),
    [
        (["gpt-4o-mini", "llama3.2:3b"], True),
        (["gpt-4o-mini", "qwen3-8b"], False),
    ],
)
async def test_only_an_ollama_like_list_asks_for_ollama_version(
    hass: HomeAssistant, simulator: OpenAISimulator, models: list[str], asked: bool
) -> None:
    """Only a list with Ollama's tagged ids asks `/api/version`; a 404 names nothing."""
    simulator.models = models
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    await hass.async_block_till_done()

    assert result["title"] == "OpenAI-compatible server"
    assert CONF_SERVER_KIND not in result["data"]
    paths = [request.path for request in simulator.requests]
    assert ("/api/version" in paths) is asked


async def test_pasted_endpoint_is_trimmed(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A pasted /chat/completions endpoint becomes the base URL."""
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: f"{simulator.base_url}/chat/completions"}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_BASE_URL] == simulator.base_url


# --- errors -----------------------------------------------------------------


async def test_cannot_connect_then_recover(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A closed port is cannot_connect; the form keeps the input; a fix works."""
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    url = _closed_port_url()
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: url}
    )
    assert result["type"] is FlowResultType.FORM
    # Nothing on this machine: most often the server runs on another one.
    assert result["errors"] == {"base": "cannot_connect_local"}
    assert result["description_placeholders"]["port"] == url.split(":")[2][:-3]
    assert _suggested(result, CONF_BASE_URL) == url
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://192.168.1.20:11434/v1", "cannot_connect"),
        ("http://ollama.home.arpa:11434/v1", "cannot_connect"),
        ("http://localhost:11434/v1", "cannot_connect_local"),
        ("http://127.0.0.2:11434/v1", "cannot_connect_local"),
        ("http://[::1]:11434/v1", "cannot_connect_local"),
    ],
)
async def test_unreachable_local_address_explains_localhost(
    hass: HomeAssistant, url: str, error: str
) -> None:
    """Only a loopback address gets the hint about Home Assistant's container."""
    result = await _connect_form(hass, "ollama")
    with patch(
        "custom_components.openai_compatible.flows.connection.async_validate_server",
        side_effect=ConnectError("cannot_connect"),
    ):
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_BASE_URL: url}
        )
    assert result["errors"] == {"base": error}
    assert result["description_placeholders"]["port"] == "11434"


async def test_invalid_auth_then_recover(
    hass: HomeAssistant, keyed_simulator: OpenAISimulator
) -> None:
    """A refused key is invalid_auth; the right key creates the entry."""
    result = await _connect_form(hass, "litellm")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: keyed_simulator.base_url, CONF_API_KEY: "sk-wrong"},
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: keyed_simulator.base_url, CONF_API_KEY: KEYED_SIMULATOR_KEY},
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_PROVIDER] == "litellm"
    assert result["title"] == "LiteLLM proxy"


@pytest.mark.parametrize(
    "url",
    [
        "not a url",
        "localhost/v1",
        "localhost:0/v1",
        "ftp://example.com/v1",
        "http://",
        "https://example.com/v1?api-version=1",
        "https://example.com/v1#top",
        "https://user:secret@proxy.example.com/v1/",
        "https://user@proxy.example.com/v1",
        "https://:secret@proxy.example.com/v1",
        "http://[::1/v1",
        "",
        "http://127.0.0.1:0/v1",
        "http://127.0.0.1:1/v1/%2e%2e/",
        "http://127.0.0.1:1/v1/%2E%2e",
        "http://127.0.0.1:1/v1/../",
        "http://127.0.0.1:1/%2e/v1",
        "http://127.0.0.1:1/v1%2f..%2fadmin",
        "http://127.0.0.1:1/v1%252F%252E%252E%252Fadmin",
        "http://127.0.0.1:1/v1%5c..%5cadmin",
        "http://127.0.0.1:1/" + "v" * 100_000,
    ],
    ids=lambda url: url[:40],
)
async def test_invalid_url(hass: HomeAssistant, url: str) -> None:
    """Malformed, non-http(s) or odd URLs are refused before any request."""
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: url}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_BASE_URL: "invalid_url"}


# The address every language's invalid_url message gives as one that is taken.
TAKEN_WITHOUT_SCHEME = "192.168.1.20:11434/v1"


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_invalid_url_message_tells_what_is_refused(language: str) -> None:
    """The message shows that a host with its port needs no scheme, and what is refused.

    It no longer asks for a complete http:// address: those are completed.
    """
    message = LANGUAGES[language]["config"]["error"]["invalid_url"]
    assert TAKEN_WITHOUT_SCHEME in message
    for refused in ("http://", "https://", "?", "#", ".."):
        assert refused in message
    assert entry_data({CONF_BASE_URL: TAKEN_WITHOUT_SCHEME}, PROVIDER_CUSTOM, {})


@pytest.mark.parametrize("path", ["/v1", "/v1/"])
async def test_url_without_scheme_is_completed(
    hass: HomeAssistant, simulator: OpenAISimulator, path: str
) -> None:
    """A host and port typed without http:// get it, then the server is checked."""
    typed = simulator.base_url.removeprefix("http://").removesuffix("/v1") + path
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: typed}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_BASE_URL] == simulator.base_url
    assert simulator.requests


async def test_hosted_host_without_scheme_gets_https(hass: HomeAssistant) -> None:
    """A hosted preset's host typed without a scheme is checked over https://."""
    result = await _connect_form(hass, "groq")
    with patch(
        "custom_components.openai_compatible.flows.connection.async_validate_server",
        return_value=ModelListing(["llama-3.3-70b-versatile"], {}),
    ) as validate:
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"],
            {CONF_BASE_URL: "api.groq.com/openai/v1", CONF_API_KEY: "gsk-a"},
        )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"][CONF_BASE_URL] == "https://api.groq.com/openai/v1"
    assert validate.call_args.args[1][CONF_BASE_URL] == result["data"][CONF_BASE_URL]


@pytest.mark.usefixtures("socket_enabled")
async def test_completed_url_is_checked_as_usual(hass: HomeAssistant) -> None:
    """A completed URL where nothing answers gets the connection error."""
    typed = _closed_port_url().removeprefix("http://")
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: typed}
    )
    assert result["errors"] == {"base": "cannot_connect_local"}


async def test_azure_template_must_be_edited(hass: HomeAssistant) -> None:
    """The Azure preset's placeholder host is refused until replaced."""
    result = await _connect_form(hass, "azure")
    template = _suggested(result, CONF_BASE_URL)
    assert "YOUR-RESOURCE" in template
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: template, CONF_API_KEY: "azure-key"}
    )
    assert result["errors"] == {CONF_BASE_URL: "invalid_url"}
    with patch(
        "custom_components.openai_compatible.flows.connection.async_validate_server",
        return_value=ModelListing(["gpt-4.1"], {}),
    ):
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"],
            {
                CONF_BASE_URL: template.replace("YOUR-RESOURCE", "home"),
                CONF_API_KEY: "azure-key",
            },
        )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Azure OpenAI (home.openai.azure.com)"


async def test_timeout(hass: HomeAssistant, simulator: OpenAISimulator) -> None:
    """A server slower than the validation timeout is timeout_connect."""
    simulator.settings.latency = 1.0
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    with patch(
        "custom_components.openai_compatible.models.listing.VALIDATION_BUDGET",
        Budget(0.05),
    ):
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_BASE_URL: simulator.base_url}
        )
    assert result["errors"] == {"base": "timeout_connect"}
    # No retries while validating: one request only.
    assert len(simulator.requests) == 1


async def test_a_stalled_answer_is_timeout_connect(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A model list that stops mid-way is timeout_connect, a key the form translates."""
    simulator.enqueue("/models", sse=['data: {"a": 1}\n\n', Pause(30)], done=False)
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    with patch(
        "custom_components.openai_compatible.models.listing.VALIDATION_BUDGET",
        Budget(0.5),
    ):
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_BASE_URL: simulator.base_url}
        )
    assert result["errors"] == {"base": "timeout_connect"}
    assert result["errors"]["base"] in EN["config"]["error"]


async def test_unknown_error(
    hass: HomeAssistant, simulator: OpenAISimulator, caplog: pytest.LogCaptureFixture
) -> None:
    """An unexpected exception is unknown and logged with its traceback."""
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    with patch(
        "custom_components.openai_compatible.flows.connection.async_validate_server",
        side_effect=RuntimeError("boom"),
    ):
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_BASE_URL: simulator.base_url}
        )
    assert result["errors"] == {"base": "unknown"}
    assert "Unexpected error while connecting" in caplog.text
    assert "RuntimeError: boom" in caplog.text
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


@pytest.mark.parametrize(
    ("status", "error"), [(500, "api_error"), (503, "api_error"), (429, "rate_limited")]
)
async def test_failing_server(
    hass: HomeAssistant, simulator: OpenAISimulator, status: int, error: str
) -> None:
    """A failing server is reported with its own message."""
    simulator.settings.fail_status = status
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["errors"] == {"base": error}
    if error == "api_error":
        assert (
            result["description_placeholders"]["message"]
            == simulator.settings.fail_message
        )
    # The models listing failed, then the probe did.
    assert [request.path for request in simulator.requests] == [
        "/v1/models",
        "/v1/chat/completions",
    ]


async def test_redirecting_server_is_told_and_not_followed(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A redirect names where it leads (no credentials, no query); no key goes there."""
    async with served(OpenAISimulator()) as elsewhere:
        where = elsewhere.base_url
        target = where.replace("://", "://user:secret@", 1)
        for route in ("/models", "/chat/completions"):
            simulator.enqueue(
                route, status=307, headers={"Location": f"{target}{route}?key=abc#x"}
            )
        result = await _connect_form(hass, PROVIDER_CUSTOM)
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"],
            {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: TEST_API_KEY},
        )
        assert not elsewhere.requests
    assert result["errors"] == {"base": "redirected"}
    told = result["description_placeholders"]
    assert (told["status"], told["location"]) == ("307", f"{where}/chat/completions")


@pytest.mark.parametrize(
    ("status", "error"),
    [(502, "gateway_failed"), (503, "server_unavailable"), (500, "server_failed")],
)
async def test_error_page_is_told_by_its_status(
    hass: HomeAssistant, simulator: OpenAISimulator, status: int, error: str
) -> None:
    """A proxy's HTML page says what its status means, not the page's text."""
    page = f"<html><body><h1>{status} Bad Gateway</h1>nginx</body></html>"
    for route in ("/models", "/chat/completions"):
        simulator.enqueue(
            route, status=status, raw=page, headers={"Content-Type": "text/html"}
        )
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["errors"] == {"base": error}
    assert result["description_placeholders"]["status"] == str(status)


# --- servers without a models endpoint --------------------------------------


async def test_missing_models_endpoint_probe_succeeds(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """No /models: an empty chat request proves the server; no tokens spent."""
    simulator.settings.models_endpoint = False
    result = await _connect_form(hass, "openai")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: "sk-probe"},
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    probe = simulator.requests[1]
    assert (probe.method, probe.path) == ("POST", "/v1/chat/completions")
    assert probe.json == {"model": "gpt-4o-mini", "messages": []}
    assert probe.headers["Authorization"] == "Bearer sk-probe"
    subentries = {
        sub.subentry_type: dict(sub.data)
        for sub in result["result"].subentries.values()
    }
    assert subentries[SUBENTRY_CONVERSATION][CONF_CHAT_MODEL] == "gpt-4o-mini"
    assert CONF_IMAGE_MODEL not in subentries[SUBENTRY_AI_TASK]


async def test_missing_models_endpoint_asks_for_model(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """Without models or a preset model, the flow asks for the model name."""
    simulator.settings.models_endpoint = False
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "model"
    assert simulator.requests[1].json == {"model": "probe", "messages": []}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: " my-local-model "}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    models = {sub.data[CONF_CHAT_MODEL] for sub in result["result"].subentries.values()}
    assert models == {"my-local-model"}


async def test_only_non_chat_models_asks_for_model(
    hass: HomeAssistant, socket_enabled: None
) -> None:
    """A server listing no chat model asks for a typed name.

    Its embedding and moderation models are not offered for chat.
    """
    # (A server with audio models only gets voice subentries: test_voice_subentry.)
    models = ["text-embedding-3-small", "omni-moderation-latest"]
    async with served(OpenAISimulator(models=models)) as sim:
        result = await _connect_form(hass, PROVIDER_CUSTOM)
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_BASE_URL: sim.base_url}
        )
        assert result["step_id"] == "model"
        assert _selector_options(result, CONF_CHAT_MODEL) == []
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_CHAT_MODEL: "qwen3"}
        )
    assert result["type"] is FlowResultType.CREATE_ENTRY


@pytest.mark.parametrize(
    "answer",
    [
        {"status": 200, "json": {"id": "x", "choices": []}},
        {"status": 422, "json": {"detail": [{"msg": "field required"}]}},
        {"status": 400, "json": {"error": "messages: must not be empty"}},
        {"status": 404, "json": {"error": "model 'probe' not found"}},
        {
            "status": 404,
            "json": {
                "error": {
                    "message": "The model 'probe' does not exist",
                    "code": "model_not_found",
                }
            },
        },
    ],
)
async def test_probe_answers_that_prove_the_protocol(
    hass: HomeAssistant, simulator: OpenAISimulator, answer: dict[str, Any]
) -> None:
    """A 200, a 422 validation error or an unknown-model 404 all pass."""
    simulator.settings.models_endpoint = False
    simulator.enqueue("/chat/completions", **answer)
    result = await _connect_form(hass, "groq")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: "gsk"}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"status": 404, "raw": "404 page not found"}, "not_compatible"),
        ({"status": 404}, "not_compatible"),
        ({"status": 404, "json": {"error": "no such route"}}, "not_compatible"),
        ({"status": 404, "json": ["not", "an", "object"]}, "not_compatible"),
        ({"status": 405, "raw": "Method Not Allowed"}, "not_compatible"),
        ({"status": 400, "raw": "Bad Request"}, "not_compatible"),
        ({"status": 400, "raw": "[" * 1_000_000}, "not_compatible"),
        ({"status": 401}, "invalid_auth"),
        ({"status": 403}, "invalid_auth"),
    ],
)
async def test_probe_answers_that_fail(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    answer: dict[str, Any],
    error: str,
) -> None:
    """A plain 404/405/400 is not the protocol; 401/403 refuse the key."""
    simulator.enqueue("/models", status=404, raw="Not Found")
    simulator.enqueue("/chat/completions", **answer)
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["errors"] == {"base": error}


@pytest.mark.parametrize(
    "answer",
    [
        {"raw": "<html><body>Welcome</body></html>"},
        {"raw": "<html>", "headers": {"Content-Type": "text/html"}},
        {"json": ["not", "an", "object"]},
        {"raw": ""},
        # JSON nested past the decoder's depth.
        {"raw": "[" * 1_000_000, "headers": {"Content-Type": "application/json"}},
    ],
)
async def test_web_page_on_both_routes_is_not_compatible(
    hass: HomeAssistant, simulator: OpenAISimulator, answer: dict[str, Any]
) -> None:
    """A server that answers every route with 200 and no JSON object is refused."""
    simulator.enqueue("/models", **answer)
    simulator.enqueue("/chat/completions", **answer)
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["errors"] == {"base": "not_compatible"}
    assert [request.path for request in simulator.requests] == [
        "/v1/models",
        "/v1/chat/completions",
    ]


async def test_probe_connection_lost(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A server that dies between listing and probing cannot be connected to."""
    with patch(
        "custom_components.openai_compatible.models.listing.async_fetch_models",
        side_effect=_stop_then_none(simulator),
    ):
        result = await _connect_form(hass, PROVIDER_CUSTOM)
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_BASE_URL: simulator.base_url}
        )
    assert result["errors"] == {"base": "cannot_connect_local"}


def _stop_then_none(simulator: OpenAISimulator) -> Any:
    """Return a models fetcher that stops the server and finds no models."""

    async def fetch(client: Any) -> None:
        await simulator.stop()

    return fetch


# --- duplicates -------------------------------------------------------------


async def test_duplicate_aborts(
    hass: HomeAssistant, simulator: OpenAISimulator, make_config_entry: MakeConfigEntry
) -> None:
    """The same server and key cannot be added twice, however spelled."""
    make_config_entry(api_key="sk-same", title="Kitchen server")
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {
            CONF_BASE_URL: simulator.base_url.replace("http://", "HTTP://") + "/",
            CONF_API_KEY: "sk-same",
        },
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured_key"
    assert result["description_placeholders"] == {"name": "Kitchen server"}
    assert simulator.requests == []


@pytest.mark.parametrize("existing_key", [None, "sk-any"])
async def test_keyless_duplicate_aborts(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    make_config_entry: MakeConfigEntry,
    existing_key: str | None,
) -> None:
    """Without a key, any entry for the same base URL is a duplicate.

    The message names the entry and says nothing of a key nobody entered.
    """
    make_config_entry(api_key=existing_key, title="Kitchen server")
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"
    assert result["description_placeholders"] == {"name": "Kitchen server"}
    message = EN["config"]["abort"]["already_configured"]
    assert "{name}" in message
    assert "key" not in message.lower()


@pytest.mark.parametrize(
    ("saved", "typed"),
    [
        ("http://localhost:{port}/v1", "127.0.0.1:{port}/v1"),
        ("http://127.0.0.1:{port}/v1", "localhost:{port}/v1/"),
        ("http://[::1]:{port}/v1", "http://LocalHost:{port}/v1"),
    ],
)
async def test_loopback_names_are_one_server(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    make_config_entry: MakeConfigEntry,
    saved: str,
    typed: str,
) -> None:
    """localhost, 127.0.0.1 and ::1 on one port are the same server; the entry is named."""
    port = URL(simulator.base_url).port
    make_config_entry(base_url=saved.format(port=port), title="Kitchen server")
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: typed.format(port=port)}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"
    assert result["description_placeholders"] == {"name": "Kitchen server"}
    assert simulator.requests == []


async def test_other_path_on_the_same_host_is_another_entry(
    hass: HomeAssistant, simulator: OpenAISimulator, make_config_entry: MakeConfigEntry
) -> None:
    """Duplicates are judged by the whole base URL, not by the host alone."""
    make_config_entry(base_url=f"{simulator.base_url}/other", api_key=None)
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


async def test_same_server_other_key_is_another_entry(
    hass: HomeAssistant, simulator: OpenAISimulator, make_config_entry: MakeConfigEntry
) -> None:
    """Another key on the same server is a separate entry."""
    make_config_entry(api_key="sk-one")
    result = await _connect_form(hass, PROVIDER_CUSTOM)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: "sk-two"}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


# --- reauth -----------------------------------------------------------------


async def test_reauth_after_refused_key(
    hass: HomeAssistant,
    keyed_simulator: OpenAISimulator,
    make_config_entry: MakeConfigEntry,
) -> None:
    """Setup refuses the key, reauth checks a new one and reloads the entry."""
    entry = make_config_entry(
        base_url=keyed_simulator.base_url, api_key="sk-old", provider="vllm"
    )
    await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.SETUP_ERROR
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert len(flows) == 1
    flow_id = flows[0]["flow_id"]
    result = await hass.config_entries.flow.async_configure(flow_id)
    assert result["step_id"] == "reauth_confirm"
    assert result["description_placeholders"]["base_url"] == keyed_simulator.base_url
    assert result["description_placeholders"]["name"] == entry.title

    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_API_KEY: "sk-still-wrong"}
    )
    assert result["errors"] == {"base": "invalid_auth"}

    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_API_KEY: f" {KEYED_SIMULATOR_KEY}\n"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert entry.data[CONF_API_KEY] == KEYED_SIMULATOR_KEY
    assert entry.state is ConfigEntryState.LOADED


async def test_reauth_of_loaded_entry(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """Reauth started at runtime updates a loaded entry, which reloads."""
    entry = setup_integration
    result = await entry.start_reauth_flow(hass)
    assert result["step_id"] == "reauth_confirm"
    # The preset of a custom server makes the key optional: clear it.
    assert isinstance(_field(result, CONF_API_KEY), probatio.Optional)
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    assert result["reason"] == "reauth_successful"
    await hass.async_block_till_done()
    assert CONF_API_KEY not in entry.data
    assert entry.state is ConfigEntryState.LOADED


async def test_reauth_to_key_of_another_entry_aborts(
    hass: HomeAssistant, make_config_entry: MakeConfigEntry
) -> None:
    """Reauth cannot turn an entry into a duplicate of another."""
    make_config_entry(api_key="sk-taken")
    entry = make_config_entry(api_key="sk-mine")
    result = await entry.start_reauth_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_API_KEY: "sk-taken"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured_key"


# --- reconfigure ------------------------------------------------------------


async def test_reconfigure_moves_to_another_server(
    hass: HomeAssistant,
    setup_integration: MockConfigEntry,
    keyed_simulator: OpenAISimulator,
) -> None:
    """A new URL and key are validated, saved, and the entry reloads."""
    entry = setup_integration
    result = await entry.start_reconfigure_flow(hass)
    assert result["step_id"] == "reconfigure"
    assert _suggested(result, CONF_BASE_URL) == entry.data[CONF_BASE_URL]
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: keyed_simulator.base_url}
    )
    # The current key stays with the old server: the new one got none.
    assert result["errors"] == {"base": "invalid_auth"}
    assert keyed_simulator.requests
    for request in keyed_simulator.requests:
        assert TEST_API_KEY not in request.headers.get("Authorization", "")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: keyed_simulator.base_url, CONF_API_KEY: KEYED_SIMULATOR_KEY},
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.data == {
        CONF_PROVIDER: PROVIDER_CUSTOM,
        CONF_BASE_URL: keyed_simulator.base_url,
        CONF_API_KEY: KEYED_SIMULATOR_KEY,
    }
    # The old generated title ("Custom (127.0.0.1:…)") follows the new server.
    assert entry.title == "OpenAI-compatible server"
    assert entry.state is ConfigEntryState.LOADED
    assert keyed_simulator.requests[-1].headers["Authorization"] == (
        f"Bearer {KEYED_SIMULATOR_KEY}"
    )


@pytest.mark.parametrize("loaded", [True, False])
async def test_reconfigure_forgets_what_was_learned(
    hass: HomeAssistant, setup_integration: MockConfigEntry, loaded: bool
) -> None:
    """Set up anew, even at the same address, the server is learned again."""
    entry = setup_integration
    entry.runtime_data.capabilities.model("gpt-4o-mini").learn_refused(
        Feature.LOGPROBS, "HTTP 400: refused"
    )
    if not loaded:
        # Unloading forgets the lesson; reconfigure finds nothing to forget.
        assert await hass.config_entries.async_unload(entry.entry_id)

    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: entry.data[CONF_BASE_URL]}
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert not entry.runtime_data.capabilities.model("gpt-4o-mini").lessons.refused


async def test_reconfigure_to_another_host_renames_generated_subentries(
    hass: HomeAssistant, simulator: OpenAISimulator, make_config_entry: MakeConfigEntry
) -> None:
    """Generated titles follow the server, here one recognised as vLLM.

    Titles made of the host, as custom servers' entries and subentries once
    got, count as generated; a given name stays.
    """
    simulator.settings.native = "vllm"
    entry = make_config_entry(base_url="http://127.0.0.1:9/v1", api_key=None)
    assert entry.title == "Custom (127.0.0.1:9)"
    task, agent = sorted(entry.subentries.values(), key=lambda sub: sub.subentry_type)
    hass.config_entries.async_update_subentry(
        entry, agent, title="127.0.0.1 · gpt-4o-mini"
    )
    hass.config_entries.async_update_subentry(entry, task, title="My task")
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url}
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert entry.data[CONF_SERVER_KIND] == "vllm"
    assert entry.title == "vLLM"
    assert entry.subentries[agent.subentry_id].title == "vLLM · gpt-4o-mini"
    assert entry.subentries[task.subentry_id].title == "My task"


async def test_reconfigure_keeps_key_and_custom_title(
    hass: HomeAssistant, simulator: OpenAISimulator, make_config_entry: MakeConfigEntry
) -> None:
    """An empty key keeps the current one; a title the user chose stays."""
    entry = make_config_entry(title="My server")
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: simulator.base_url + "/"}
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.data[CONF_API_KEY] == TEST_API_KEY
    assert entry.title == "My server"
    # The entry was not loaded: it is set up now.
    assert entry.state is ConfigEntryState.LOADED


async def test_reconfigure_never_sends_the_key_to_another_server(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    keyed_simulator: OpenAISimulator,
    make_config_entry: MakeConfigEntry,
) -> None:
    """An empty key on another origin sends no key; the same origin keeps it."""
    entry = make_config_entry()
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: keyed_simulator.base_url}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    assert keyed_simulator.requests
    assert all(
        request.headers.get("Authorization") != f"Bearer {TEST_API_KEY}"
        for request in keyed_simulator.requests
    )
    assert entry.data[CONF_API_KEY] == TEST_API_KEY

    # Another path on the same origin keeps the key.
    origin = simulator.base_url.removesuffix("/v1")
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: f"{origin}/other/v1"}
    )
    assert simulator.requests[-1].path.startswith("/other/v1/")
    assert simulator.requests[-1].headers["Authorization"] == f"Bearer {TEST_API_KEY}"


async def test_reconfigure_hosted_preset_to_another_origin_needs_a_key(
    hass: HomeAssistant,
    keyed_simulator: OpenAISimulator,
    make_config_entry: MakeConfigEntry,
) -> None:
    """A preset that needs a key asks for one when the server moves."""
    entry = make_config_entry(
        provider="openai", base_url="https://api.openai.com/v1", api_key="sk-old"
    )
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: keyed_simulator.base_url}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_API_KEY: "api_key_required"}
    assert not keyed_simulator.requests
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: keyed_simulator.base_url, CONF_API_KEY: KEYED_SIMULATOR_KEY},
    )
    assert result["reason"] == "reconfigure_successful"
    assert entry.data[CONF_API_KEY] == KEYED_SIMULATOR_KEY


async def test_reconfigure_errors(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """A bad URL and a closed port are reported on the reconfigure form."""
    entry = setup_integration
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: "nope"}
    )
    assert result["errors"] == {CONF_BASE_URL: "invalid_url"}
    assert _suggested(result, CONF_BASE_URL) == "nope"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_BASE_URL: _closed_port_url()}
    )
    assert result["errors"] == {"base": "cannot_connect_local"}


async def test_reconfigure_to_another_entry_aborts(
    hass: HomeAssistant, make_config_entry: MakeConfigEntry
) -> None:
    """Reconfigure cannot make an entry a duplicate of another."""
    make_config_entry(base_url="http://127.0.0.1:9/v1", api_key="sk-x")
    entry = make_config_entry(api_key="sk-x")
    result = await entry.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"],
        {CONF_BASE_URL: "http://127.0.0.1:9/v1/", CONF_API_KEY: "sk-x"},
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured_key"


# --- subentries -------------------------------------------------------------


async def _subentry_form(
    hass: HomeAssistant, entry: MockConfigEntry, subentry_type: str
) -> Any:
    """Start adding a subentry; return the form."""
    result = await hass.config_entries.subentries.async_init(
        (entry.entry_id, subentry_type), context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "init"
    return result


async def test_add_conversation_recommended(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """A new agent offers chat models only and saves only what it shows.

    No image or embedding model is offered; any other name can be typed.
    """
    entry = setup_integration
    result = await _subentry_form(hass, entry, SUBENTRY_CONVERSATION)
    assert _fields(result) == [
        CONF_NAME,
        CONF_CHAT_MODEL,
        CONF_PROMPT,
        CONF_LLM_HASS_API,
        CONF_HISTORY_TURNS,
        CONF_FALLBACK,
        CONF_CONTEXT_WINDOW,
        CONF_STREAMING,
        CONF_RECOMMENDED,
        CONF_MAX_TOKENS,
        CONF_TEMPERATURE,
        CONF_TOP_P,
        CONF_EXTRA_FIELDS,
        CONF_THINKING,
    ]
    assert _selector_options(result, CONF_CHAT_MODEL) == [
        "gpt-4o-mini",
        "gpt-5-mini",
        "llama3.2:3b",
    ]
    assert _field_selector(result, CONF_CHAT_MODEL).config["custom_value"] is True
    assert _suggested(result, CONF_CHAT_MODEL) == "gpt-4o-mini"
    # Each LLM API offered is told apart in our own words, in every language.
    apis = [
        option["label"]
        for option in _field_selector(result, CONF_LLM_HASS_API).config["options"]
    ]
    assert set(apis) >= {"Device control", "Home Assistant"}
    for strings in LANGUAGES.values():
        step = strings["config_subentries"]["conversation"]["step"]["init"]
        assert all(api in step["data_description"][CONF_LLM_HASS_API] for api in apis)
    assert _suggested(result, CONF_PROMPT) == llm.DEFAULT_INSTRUCTIONS_PROMPT
    assert _suggested(result, CONF_LLM_HASS_API) == [llm.LLM_API_ASSIST]
    assert _field(result, CONF_MAX_TOKENS).visible == {
        "field": CONF_RECOMMENDED,
        "value": False,
    }
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Kitchen helper",
            CONF_CHAT_MODEL: "gpt-5-mini",
            CONF_PROMPT: "Be brief.",
            CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
            CONF_RECOMMENDED: True,
            # Hidden while recommended: dropped.
            CONF_MAX_TOKENS: 99,
        },
    )
    assert result["step_id"] == "tools"
    result = await hass.config_entries.subentries.async_configure(result["flow_id"], {})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "Kitchen helper"
    assert result["data"] == {
        CONF_RECOMMENDED: True,
        CONF_CHAT_MODEL: "gpt-5-mini",
        CONF_PROMPT: "Be brief.",
        CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
    }
    await hass.async_block_till_done()
    assert len(entry.subentries) == 3
    assert entry.state is ConfigEntryState.LOADED


async def test_add_conversation_advanced_custom_model_no_api(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """Recommended off stores every shown value, defaults too; a typed model is fine."""
    result = await _subentry_form(hass, setup_integration, SUBENTRY_CONVERSATION)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Local",
            CONF_CHAT_MODEL: "my-finetune:latest",
            CONF_LLM_HASS_API: [],
            CONF_RECOMMENDED: False,
            CONF_MAX_TOKENS: 500.0,
            CONF_TEMPERATURE: 0.3,
            CONF_TOP_P: 1.0,
            CONF_STREAMING: False,
            CONF_HISTORY_TURNS: 6.0,
            CONF_CONTEXT_WINDOW: 8192.0,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {
        CONF_RECOMMENDED: False,
        CONF_CHAT_MODEL: "my-finetune:latest",
        CONF_HISTORY_TURNS: 6,
        CONF_CONTEXT_WINDOW: 8192,
        CONF_MAX_TOKENS: 500,
        CONF_TEMPERATURE: 0.3,
        # At its default, and still sent: the form showed it.
        CONF_TOP_P: 1.0,
        CONF_STREAMING: False,
    }
    assert isinstance(result["data"][CONF_MAX_TOKENS], int)
    assert isinstance(result["data"][CONF_CONTEXT_WINDOW], int)


async def test_add_ai_task(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """An AI task offers image models for images, chat models for data.

    An empty image model is left out.
    """
    result = await _subentry_form(hass, setup_integration, SUBENTRY_AI_TASK)
    assert CONF_PROMPT not in _fields(result)
    assert CONF_LLM_HASS_API not in _fields(result)
    assert CONF_HISTORY_TURNS not in _fields(result)
    assert isinstance(_field(result, CONF_CONTEXT_WINDOW), probatio.Optional)
    # Each job its models; any other name can be typed.
    assert _selector_options(result, CONF_IMAGE_MODEL) == ["gpt-image-1"]
    assert _selector_options(result, CONF_CHAT_MODEL) == [
        "gpt-4o-mini",
        "gpt-5-mini",
        "llama3.2:3b",
    ]
    assert _field_selector(result, CONF_IMAGE_MODEL).config["custom_value"] is True
    assert _suggested(result, CONF_IMAGE_MODEL) == "gpt-image-1"
    # Left empty, the name is made of server and model.
    assert isinstance(_field(result, CONF_NAME), probatio.Optional)
    assert _suggested(result, CONF_NAME) is None
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "  ",
            CONF_CHAT_MODEL: "llama3.2:3b",
            CONF_IMAGE_MODEL: "",
            CONF_RECOMMENDED: True,
        },
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "OpenAI-compatible server · llama3.2:3b · AI task"
    assert result["data"] == {CONF_RECOMMENDED: True, CONF_CHAT_MODEL: "llama3.2:3b"}
    # Adding a subentry reloads the entry.
    await hass.async_block_till_done()

    result = await _subentry_form(hass, setup_integration, SUBENTRY_AI_TASK)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_NAME: "Painter",
            CONF_CHAT_MODEL: "gpt-4o-mini",
            CONF_IMAGE_MODEL: "flux-dev",
            CONF_RECOMMENDED: False,
            CONF_TOP_P: 0.5,
            CONF_CONTEXT_WINDOW: 8192.0,
        },
    )
    assert result["data"] == {
        CONF_RECOMMENDED: False,
        CONF_CHAT_MODEL: "gpt-4o-mini",
        CONF_IMAGE_MODEL: "flux-dev",
        CONF_CONTEXT_WINDOW: 8192,
        # The shown defaults of the fields left alone are stored and sent.
        CONF_MAX_TOKENS: 3000,
        CONF_TEMPERATURE: 1.0,
        CONF_TOP_P: 0.5,
    }


async def test_local_server_offers_its_answer_limit(
    hass: HomeAssistant, make_config_entry: MakeConfigEntry
) -> None:
    """A local server's maximum tokens default to its answer limit, sized to the window."""
    entry = make_config_entry(
        provider="llama_cpp",
        ai_task={CONF_CONTEXT_WINDOW: 2048},
    )
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()

    result = await _subentry_form(hass, entry, SUBENTRY_CONVERSATION)
    assert _field(result, CONF_MAX_TOKENS).default() == 1024
    task = next(
        sub
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_AI_TASK
    )
    result = await entry.start_subentry_reconfigure_flow(hass, task.subentry_id)
    # A quarter of the task's window, which is less.
    assert _field(result, CONF_MAX_TOKENS).default() == 512
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_CHAT_MODEL: "gpt-4o-mini", CONF_RECOMMENDED: False},
    )
    assert result["reason"] == "reconfigure_successful"
    assert entry.subentries[task.subentry_id].data[CONF_MAX_TOKENS] == 512


async def test_reconfigure_conversation(
    hass: HomeAssistant, make_config_entry: MakeConfigEntry
) -> None:
    """Reconfigure shows saved values, drops stale APIs, keeps unknown keys."""
    entry = make_config_entry(
        conversation={
            CONF_LLM_HASS_API: [llm.LLM_API_ASSIST, "vanished_api"],
            CONF_CHAT_MODEL: "typed-model",
            CONF_RECOMMENDED: False,
            CONF_TEMPERATURE: 0.2,
            CONF_HISTORY_TURNS: 4,
            "future_option": "kept",
        }
    )
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    subentry = next(
        sub
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    result = await entry.start_subentry_reconfigure_flow(hass, subentry.subentry_id)
    assert result["step_id"] == "init"
    assert CONF_NAME not in _fields(result)
    assert _suggested(result, CONF_LLM_HASS_API) == [llm.LLM_API_ASSIST]
    # A typed model the server does not list is still offered.
    assert _selector_options(result, CONF_CHAT_MODEL)[0] == "typed-model"
    assert _suggested(result, CONF_TEMPERATURE) == 0.2
    assert _suggested(result, CONF_HISTORY_TURNS) == 4
    assert _suggested(result, CONF_CONTEXT_WINDOW) is None
    # A field left empty goes back to its default: it is not saved.
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {
            CONF_CHAT_MODEL: "gpt-5-mini",
            CONF_PROMPT: "New prompt",
            CONF_RECOMMENDED: True,
        },
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert dict(entry.subentries[subentry.subentry_id].data) == {
        "future_option": "kept",
        CONF_RECOMMENDED: True,
        CONF_CHAT_MODEL: "gpt-5-mini",
        CONF_PROMPT: "New prompt",
    }
    assert entry.state is ConfigEntryState.LOADED
    # The old fixed title was no name of the user's: it follows the model.
    assert entry.subentries[subentry.subentry_id].title == (
        "OpenAI-compatible server · gpt-5-mini"
    )


@pytest.mark.parametrize(
    ("title", "new_title"),
    [
        (
            "OpenAI-compatible server · gpt-4o-mini · AI task",
            "OpenAI-compatible server · llama3.2:3b · AI task",
        ),
        ("Painter", "Painter"),
    ],
)
async def test_reconfigured_model_renames_only_generated_titles(
    hass: HomeAssistant,
    setup_integration: MockConfigEntry,
    title: str,
    new_title: str,
) -> None:
    """A title made of server and model follows the model; a given name stays."""
    entry = setup_integration
    subentry = next(
        sub
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_AI_TASK
    )
    hass.config_entries.async_update_subentry(entry, subentry, title=title)
    await hass.async_block_till_done()
    result = await entry.start_subentry_reconfigure_flow(hass, subentry.subentry_id)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"], {CONF_CHAT_MODEL: "llama3.2:3b", CONF_RECOMMENDED: True}
    )
    assert result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.subentries[subentry.subentry_id].title == new_title
    device = dr.async_get(hass).async_get_device_by_identifier(
        (DOMAIN, subentry.subentry_id), entry.entry_id
    )
    assert device is not None
    assert device.name == new_title


async def test_reconfigure_drops_only_stale_apis(
    hass: HomeAssistant, make_config_entry: MakeConfigEntry
) -> None:
    """When every saved API is gone, none is suggested; one saved as text works."""
    entry = make_config_entry(conversation={CONF_LLM_HASS_API: "vanished_api"})
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    subentry_id = next(
        sub.subentry_id
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    result = await entry.start_subentry_reconfigure_flow(hass, subentry_id)
    assert _suggested(result, CONF_LLM_HASS_API) is None

    entry2 = make_config_entry(
        api_key="sk-other", conversation={CONF_LLM_HASS_API: "assist"}
    )
    assert await hass.config_entries.async_setup(entry2.entry_id)
    await hass.async_block_till_done()
    subentry_id = next(
        sub.subentry_id
        for sub in entry2.subentries.values()
        if sub.subentry_type == SUBENTRY_CONVERSATION
    )
    result = await entry2.start_subentry_reconfigure_flow(hass, subentry_id)
    assert _suggested(result, CONF_LLM_HASS_API) == [llm.LLM_API_ASSIST]


async def test_reconfigure_ai_task(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """An AI task can lose its image model."""
    entry = setup_integration
    subentry_id = next(
        sub.subentry_id
        for sub in entry.subentries.values()
        if sub.subentry_type == SUBENTRY_AI_TASK
    )
    result = await entry.start_subentry_reconfigure_flow(hass, subentry_id)
    assert _suggested(result, CONF_IMAGE_MODEL) == "gpt-image-1"
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_CHAT_MODEL: "gpt-4o-mini", CONF_RECOMMENDED: True},
    )
    assert result["reason"] == "reconfigure_successful"
    assert dict(entry.subentries[subentry_id].data) == {
        CONF_RECOMMENDED: True,
        CONF_CHAT_MODEL: "gpt-4o-mini",
    }


@pytest.mark.parametrize("subentry_type", [SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK])
async def test_subentry_needs_loaded_entry(
    hass: HomeAssistant, mock_config_entry: MockConfigEntry, subentry_type: str
) -> None:
    """Adding or changing a subentry of an entry that is not loaded aborts."""
    result = await hass.config_entries.subentries.async_init(
        (mock_config_entry.entry_id, subentry_type), context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "entry_not_loaded"
    subentry_id = next(
        sub.subentry_id
        for sub in mock_config_entry.subentries.values()
        if sub.subentry_type == subentry_type
    )
    result = await mock_config_entry.start_subentry_reconfigure_flow(hass, subentry_id)
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "entry_not_loaded"


async def test_subentry_entry_unloaded_while_open(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """An entry unloaded while the form is open aborts on submit."""
    result = await _subentry_form(hass, setup_integration, SUBENTRY_CONVERSATION)
    await hass.config_entries.async_unload(setup_integration.entry_id)
    result = await hass.config_entries.subentries.async_configure(
        result["flow_id"],
        {CONF_NAME: "x", CONF_CHAT_MODEL: "gpt-4o-mini", CONF_RECOMMENDED: True},
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "entry_not_loaded"


def _serialize(result: ConfigFlowResult) -> list[dict[str, Any]]:
    """Serialize a form's schema as the frontend receives it."""
    schema = result["data_schema"]
    serialized = probatio.to_field_list(schema, custom_serializer=cv.custom_serializer)
    add_visible_conditions_to_serialized_schema(schema, serialized)
    json.dumps(serialized)
    return serialized


async def test_forms_serialize_for_the_frontend(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_integration: MockConfigEntry,
) -> None:
    """Every form converts to the frontend's JSON, visibility included."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    _serialize(result)
    connect = await _connect_form(hass, "ollama")
    fields = {field["name"]: field for field in _serialize(connect)}
    assert fields[CONF_API_KEY]["selector"] == {
        "text": {"type": "password", "multiline": False, "multiple": False}
    }
    simulator.settings.models_endpoint = False
    model = await hass.config_entries.flow.async_configure(
        (await _connect_form(hass, PROVIDER_CUSTOM))["flow_id"],
        {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: "sk-other"},
    )
    assert model["step_id"] == "model"
    _serialize(model)
    simulator.settings.models_endpoint = True
    _serialize(await setup_integration.start_reauth_flow(hass))
    _serialize(await setup_integration.start_reconfigure_flow(hass))
    for subentry_type in (SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK):
        form = await _subentry_form(hass, setup_integration, subentry_type)
        fields = {field["name"]: field for field in _serialize(form)}
        assert fields[CONF_TEMPERATURE]["visible"] == {
            "field": CONF_RECOMMENDED,
            "value": False,
        }
        assert fields[CONF_CHAT_MODEL]["selector"]["select"]["custom_value"] is True
        assert "number" in fields[CONF_MAX_TOKENS]["selector"]


# --- snapshots ----------------------------------------------------------------

# LocalAI has no native routes that setup would ask.
LAN_URL = "http://192.168.1.20:8080/v1"
LAN_MODELS = ["flux-schnell", "llama3.1:8b", "nomic-embed-text", "qwen3:4b"]


def _shown(result: ConfigFlowResult | SubentryFlowResult) -> dict[str, Any]:
    """Return what the frontend gets of a form, or what a flow ended with."""
    if result["type"] is FlowResultType.FORM:
        return {
            "step_id": result["step_id"],
            "fields": _serialize(result),
            "errors": result["errors"],
            "description_placeholders": result["description_placeholders"],
            "last_step": result["last_step"],
        }
    if result["type"] is FlowResultType.ABORT:
        return {"abort": result["reason"]}
    shown: dict[str, Any] = {"title": result["title"], "data": result["data"]}
    if entry := result.get("result"):
        shown["entry"] = {
            "version": (entry.version, entry.minor_version),
            "unique_id": entry.unique_id,
            "subentries": sorted(
                (
                    {
                        "type": sub.subentry_type,
                        "title": sub.title,
                        "data": dict(sub.data),
                    }
                    for sub in entry.subentries.values()
                ),
                key=lambda sub: sub["type"],
            ),
        }
    return shown


@pytest.fixture
def lan_server() -> Iterator[None]:
    """Answer for a server on the LAN that is never reached: models are given."""
    with (
        patch(
            "custom_components.openai_compatible.flows.connection.async_validate_server",
            return_value=ModelListing(LAN_MODELS, {}),
        ),
        patch(
            "custom_components.openai_compatible.coordinator.async_fetch_models",
            return_value=ModelListing(
                LAN_MODELS, {model: {"id": model} for model in LAN_MODELS}
            ),
        ),
    ):
        yield


@pytest.mark.usefixtures("lan_server")
async def test_setup_flow_snapshot(
    hass: HomeAssistant, snapshot: SnapshotAssertion
) -> None:
    """Each form of adding a local server, its error, and the entry it creates."""
    flow = hass.config_entries.flow
    shown = [await flow.async_init(DOMAIN, context={"source": SOURCE_USER})]
    shown.append(
        await flow.async_configure(shown[-1]["flow_id"], {CONF_PROVIDER: "localai"})
    )
    with patch(
        "custom_components.openai_compatible.flows.connection.async_validate_server",
        side_effect=ConnectError("cannot_connect"),
    ):
        shown.append(
            await flow.async_configure(
                shown[-1]["flow_id"], {CONF_BASE_URL: "http://localhost:8080/v1"}
            )
        )
    shown.append(
        await flow.async_configure(shown[-1]["flow_id"], {CONF_BASE_URL: LAN_URL})
    )
    await hass.async_block_till_done()
    assert shown[-1]["result"].state is ConfigEntryState.LOADED
    assert [_shown(result) for result in shown] == snapshot


@pytest.mark.parametrize("provider", ["openai", "azure", "custom"])
async def test_connect_form_snapshot(
    hass: HomeAssistant, snapshot: SnapshotAssertion, provider: str
) -> None:
    """The connect form of a hosted service, of Azure and of any other server."""
    assert _shown(await _connect_form(hass, provider)) == snapshot


@pytest.mark.usefixtures("lan_server")
async def test_entry_flows_snapshot(
    hass: HomeAssistant, make_config_entry: MakeConfigEntry, snapshot: SnapshotAssertion
) -> None:
    """Reauth, reconfigure and the subentry forms of a loaded entry."""
    entry = make_config_entry(
        base_url=LAN_URL, provider="localai", title="LocalAI (192.168.1.20:8080)"
    )
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    forms = {
        "reauth_confirm": await entry.start_reauth_flow(hass),
        "reconfigure": await entry.start_reconfigure_flow(hass),
    }
    for subentry_type in (SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK):
        forms[f"add {subentry_type}"] = await _subentry_form(hass, entry, subentry_type)
    for subentry in entry.subentries.values():
        forms[
            f"change {subentry.subentry_type}"
        ] = await entry.start_subentry_reconfigure_flow(hass, subentry.subentry_id)
    forms["agent added"] = await hass.config_entries.subentries.async_configure(
        forms[f"add {SUBENTRY_CONVERSATION}"]["flow_id"],
        {CONF_CHAT_MODEL: "qwen3:4b", CONF_RECOMMENDED: True},
    )
    await hass.async_block_till_done()
    assert {name: _shown(result) for name, result in forms.items()} == snapshot
