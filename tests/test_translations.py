"""Translations: en.json complete, sorted and used; every other language matches it."""

from __future__ import annotations

import json
from pathlib import Path
import re
from typing import Any
from unittest.mock import patch

import homeassistant
from homeassistant.config_entries import (
    SOURCE_USER,
    ConfigFlowResult,
    SubentryFlowResult,
)
from homeassistant.const import CONF_API_KEY, CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import llm
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_AUDIO_MODEL,
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    CONF_RECOMMENDED,
    DOMAIN,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
    SUBENTRY_TTS,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from custom_components.openai_compatible.models.providers import (
    PROVIDER_CUSTOM,
    PROVIDERS,
)
from simulator import OpenAISimulator

PACKAGE = Path(__file__).parent.parent / "custom_components" / "openai_compatible"
EN = json.loads((PACKAGE / "translations" / "en.json").read_text(encoding="utf-8"))

# A translated error raised anywhere in the package: ServerError("key", ...),
# its subclasses, or translation_key="key".
RAISED_KEY = re.compile(
    r"(?:\b[A-Z]\w*Error\(\s*|translation_key=)\"([a-z_]+)\"", re.MULTILINE
)

REQUIRED_EXCEPTIONS = {
    "answer_cut_at_token_limit": set(),
    "answer_cut_by_content_filter": set(),
    "answer_cut_short": set(),
    "answer_line_too_long": {"limit"},
    "answer_malformed": {"part"},
    "answer_not_json": set(),
    "answer_too_large": {"limit"},
    "api_error": {"message"},
    "cannot_connect": set(),
    "evaluate_failed": {"problem"},
    "image_generation_failed": {"message"},
    "invalid_auth": set(),
    "max_tool_rounds": {"rounds"},
    "rate_limited": set(),
    "rate_limited_retry": {"retry_after"},
    "reauth_started": set(),
    "structured_output_invalid": {"problem"},
    "timeout_connect": set(),
    "too_many_tool_calls": {"limit"},
    "tools_unsupported": {"message"},
    "unsupported_attachment": {"mime_type"},
}


# Languages translated besides English.
LANGUAGES = ("de", "es", "fr", "it", "nl")

PLACEHOLDER = re.compile(r"{(\w+)}")
# What must reach every language unchanged: code spans and addresses.
VERBATIM = re.compile(r"`[^`]*`|https?://\w[^\s,;)]*[^\s,;).]")


def _strings(node: Any) -> list[str]:
    """Return every string in a translation tree."""
    if isinstance(node, dict):
        return [text for value in node.values() for text in _strings(value)]
    return [node]


def _leaves(node: Any, path: str = "") -> dict[str, Any]:
    """Return every leaf of a translation tree by its dotted path."""
    if isinstance(node, dict):
        return {
            leaf: text
            for key, value in node.items()
            for leaf, text in _leaves(value, f"{path}.{key}".lstrip(".")).items()
        }
    return {path: node}


def _assert_sorted(node: Any, path: str = "") -> None:
    """Assert that keys are sorted at every level, as Home Assistant keeps them."""
    if isinstance(node, dict):
        assert list(node) == sorted(node), f"keys of {path or 'root'} not sorted"
        for key, value in node.items():
            _assert_sorted(value, f"{path}.{key}")


def test_sorted_and_self_contained() -> None:
    """Keys are sorted and no string refers to core's shared strings."""
    _assert_sorted(EN)
    for text in _strings(EN):
        assert isinstance(text, str)
        assert text.strip() == text
        assert text
        assert "[%key:" not in text


def test_translated_languages() -> None:
    """English and exactly the translated languages have a file."""
    files = {path.stem for path in (PACKAGE / "translations").glob("*.json")}
    assert files == {"en", *LANGUAGES}


@pytest.mark.parametrize("language", LANGUAGES)
def test_language_matches_english(language: str) -> None:
    """A language has every English key and no other, sorted, each string filled.

    Each string keeps the English one's placeholders, code spans, addresses and
    paragraphs.
    """
    path = PACKAGE / "translations" / f"{language}.json"
    translated = json.loads(path.read_text(encoding="utf-8"))
    _assert_sorted(translated)
    english, theirs = _leaves(EN), _leaves(translated)
    untranslated = sorted(english.keys() - theirs.keys())
    assert not untranslated, f"{language}.json lacks {untranslated}"
    extra = sorted(theirs.keys() - english.keys())
    assert not extra, f"{language}.json has keys en.json lacks: {extra}"
    for key, text in theirs.items():
        source = english[key]
        assert isinstance(text, str), key
        assert text, key
        assert text.strip() == text, key
        assert set(PLACEHOLDER.findall(text)) == set(PLACEHOLDER.findall(source)), key
        assert sorted(VERBATIM.findall(text)) == sorted(VERBATIM.findall(source)), key
        assert text.count("\n") == source.count("\n"), key


@pytest.mark.parametrize(("key", "placeholders"), REQUIRED_EXCEPTIONS.items())
def test_required_exceptions(key: str, placeholders: set[str]) -> None:
    """The exceptions that setup and the engine raise are all there."""
    message = EN["exceptions"][key]["message"]
    assert set(re.findall(r"{(\w+)}", message)) == placeholders


def test_every_raised_key_is_translated() -> None:
    """Each translation key raised in the package has an exceptions entry."""
    raised = {
        key
        for path in PACKAGE.rglob("*.py")
        if path.name != "config_flow.py"
        for key in RAISED_KEY.findall(path.read_text(encoding="utf-8"))
    }
    assert raised
    missing = raised - set(EN["exceptions"])
    assert not missing, f"exceptions without a translation: {sorted(missing)}"


def test_provider_labels() -> None:
    """Every preset has a label in the provider dropdown."""
    assert set(EN["selector"]["provider"]["options"]) == set(PROVIDERS)


def test_flow_strings() -> None:
    """The config flow's steps, errors and aborts are all translated."""
    config = EN["config"]
    assert set(config["step"]) == {
        "user",
        "user_found",
        "connect",
        "connect_azure",
        "connect_custom",
        "connect_local",
        "model",
        "reauth_confirm",
        "reconfigure",
    }
    assert set(config["error"]) >= {
        "cannot_connect",
        "invalid_auth",
        "invalid_url",
        "timeout_connect",
        "unknown",
        "not_compatible",
        "rate_limited",
        "api_error",
    }
    assert set(config["abort"]) >= {
        "already_configured",
        "reauth_successful",
        "reconfigure_successful",
    }
    for step in config["step"].values():
        assert set(step.get("data", {})) == set(step.get("data_description", {}))
    for kind in ("conversation", "ai_task_data"):
        subentry = EN["config_subentries"][kind]
        assert set(subentry["initiate_flow"]) == {"user", "reconfigure"}
        assert "entry_not_loaded" in subentry["abort"]
        init = subentry["step"]["init"]
        assert set(init["data"]) == set(init["data_description"])


# --- strings that nothing uses ----------------------------------------------

# Abort reasons and errors may also come from Home Assistant's own flow helpers
# (already_configured, reauth_successful, reconfigure_successful).
HA_FLOW_SOURCES = ("config_entries.py", "data_entry_flow.py")


def _literals_in(paths: list[Path]) -> set[str]:
    """Return every double-quoted word in the given source files."""
    return {
        word
        for path in paths
        for word in re.findall(r"\"([a-z_]+)\"", path.read_text(encoding="utf-8"))
    }


def test_every_reason_error_and_exception_is_used() -> None:
    """Each abort reason, error, exception and entity key is named in the code."""
    ours = _literals_in(list(PACKAGE.rglob("*.py")))
    ha_root = Path(homeassistant.__file__).parent
    from_ha = _literals_in([ha_root / name for name in HA_FLOW_SOURCES])
    unused = {f"exceptions.{key}" for key in EN["exceptions"] if key not in ours}
    unused |= {
        f"entity.{platform}.{key}"
        for platform, keys in EN.get("entity", {}).items()
        for key in keys
        if key not in ours
    }
    subentry_flows = list(EN["config_subentries"].values())
    for section, flows in (("config", [EN["config"]]), ("subentries", subentry_flows)):
        for flow in flows:
            unused |= {
                f"{section}.error.{key}"
                for key in flow.get("error", {})
                if key not in ours
            }
            unused |= {
                f"{section}.abort.{key}"
                for key in flow.get("abort", {})
                if key not in ours | from_ha
            }
    assert not unused, f"translations nothing uses: {sorted(unused)}"


def test_every_selector_is_used() -> None:
    """Each selector translation is named in the code (its translation_key)."""
    ours = _literals_in(list(PACKAGE.rglob("*.py")))
    assert set(EN["selector"]) <= ours


async def _shown_forms(
    hass: HomeAssistant, simulator: OpenAISimulator, entry: MockConfigEntry
) -> list[tuple[str, str, set[str], set[str]]]:
    """Open every form the flows show: (section, step, fields, placeholders)."""
    shown: list[ConfigFlowResult | SubentryFlowResult] = []
    flow = hass.config_entries.flow
    shown.append(await flow.async_init(DOMAIN, context={"source": SOURCE_USER}))
    shown.append(
        await flow.async_configure(
            shown[-1]["flow_id"], {CONF_PROVIDER: PROVIDER_CUSTOM}
        )
    )
    with patch(
        "custom_components.openai_compatible.config_flow.async_answering_presets",
        return_value=["ollama"],
    ):
        shown.append(await flow.async_init(DOMAIN, context={"source": SOURCE_USER}))
    for provider in ("openai", "azure", "ollama"):
        started = await flow.async_init(DOMAIN, context={"source": SOURCE_USER})
        shown.append(
            await flow.async_configure(started["flow_id"], {CONF_PROVIDER: provider})
        )
    simulator.settings.models_endpoint = False
    shown.append(
        await flow.async_configure(
            shown[-1]["flow_id"],
            {CONF_BASE_URL: simulator.base_url, CONF_API_KEY: "sk-other"},
        )
    )
    simulator.settings.models_endpoint = True
    shown.append(await entry.start_reauth_flow(hass))
    shown.append(await entry.start_reconfigure_flow(hass))
    shown.extend(
        [
            await hass.config_entries.subentries.async_init(
                (entry.entry_id, subentry_type), context={"source": SOURCE_USER}
            )
            for subentry_type in entry.supported_subentry_types
        ]
    )
    shown.extend(
        [
            await entry.start_subentry_reconfigure_flow(hass, subentry.subentry_id)
            for subentry in entry.subentries.values()
        ]
    )
    # Text-to-speech asks for the voice once the model is chosen.
    speech = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_TTS), context={"source": SOURCE_USER}
    )
    shown.append(
        await hass.config_entries.subentries.async_configure(
            speech["flow_id"], {CONF_AUDIO_MODEL: "tts-1"}
        )
    )
    # An agent with an LLM API chooses its tools next.
    agent = await hass.config_entries.subentries.async_init(
        (entry.entry_id, SUBENTRY_CONVERSATION), context={"source": SOURCE_USER}
    )
    shown.append(
        await hass.config_entries.subentries.async_configure(
            agent["flow_id"],
            {
                CONF_CHAT_MODEL: "gpt-4o-mini",
                CONF_LLM_HASS_API: [llm.LLM_API_ASSIST],
                CONF_RECOMMENDED: True,
            },
        )
    )
    # Over the Responses API, a reasoning model's options follow the settings.
    hass.config_entries.async_update_entry(entry, options={CONF_API: WireApi.RESPONSES})
    await hass.async_block_till_done()
    for subentry in entry.subentries.values():
        if subentry.subentry_type in (SUBENTRY_CONVERSATION, SUBENTRY_AI_TASK):
            started = await entry.start_subentry_reconfigure_flow(
                hass, subentry.subentry_id
            )
            shown.append(
                await hass.config_entries.subentries.async_configure(
                    started["flow_id"], {CONF_CHAT_MODEL: "gpt-5-mini"}
                )
            )
    forms = []
    for result in shown:
        assert result["type"] is FlowResultType.FORM, result
        handler = result["handler"]
        section = (
            "config"
            if handler == DOMAIN
            else f"config_subentries.{handler[1]}"  # (entry id, subentry type)
        )
        fields = {str(key) for key in result["data_schema"].schema}
        placeholders = set(result["description_placeholders"] or {})
        forms.append((section, result["step_id"], fields, placeholders))
    return forms


@pytest.mark.usefixtures("ha_core")
async def test_every_step_and_field_is_shown(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_integration: MockConfigEntry
) -> None:
    """Each translated step is a form the flows show, with exactly its fields."""
    translated = {
        (section, step): set(texts.get("data", {}))
        for section, steps in [
            ("config", EN["config"]["step"]),
            *(
                (f"config_subentries.{kind}", flow["step"])
                for kind, flow in EN["config_subentries"].items()
            ),
        ]
        for step, texts in steps.items()
    }
    shown: dict[tuple[str, str], set[str]] = {}
    for section, step, fields, _ in await _shown_forms(
        hass, simulator, setup_integration
    ):
        shown.setdefault((section, step), set()).update(fields)
    assert shown == translated


@pytest.mark.usefixtures("ha_core")
async def test_every_placeholder_is_filled(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_integration: MockConfigEntry
) -> None:
    """A form fills each placeholder of its texts.

    Errors with placeholders are checked where they are raised (test_config_flow).
    """
    for section, step, _, given in await _shown_forms(
        hass, simulator, setup_integration
    ):
        flow: dict[str, Any] = EN
        for key in section.split("."):
            flow = flow[key]
        texts = _strings(flow["step"][step])
        wanted = {name for text in texts for name in re.findall(r"{(\w+)}", text)}
        assert wanted <= given, f"{section}.step.{step} lacks {wanted - given}"
