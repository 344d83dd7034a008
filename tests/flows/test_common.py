"""Titles of entries and subentries."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from homeassistant.config_entries import ConfigSubentry
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import (
    CONF_BASE_URL,
    CONF_CHAT_MODEL,
    CONF_PROVIDER,
    CONF_SERVER_KIND,
    DEFAULT_AI_TASK_NAME,
    DEFAULT_CONVERSATION_NAME,
    SUBENTRY_AI_TASK,
    SUBENTRY_CONVERSATION,
)
from custom_components.openai_compatible.flows.common import (
    entry_title,
    followed_title,
    is_generated_entry_title,
    subentry_title,
)

OLLAMA = {CONF_PROVIDER: "ollama", CONF_BASE_URL: "http://192.168.1.20:11434/v1"}
CUSTOM = {CONF_PROVIDER: "custom", CONF_BASE_URL: "https://llm.home.arpa:8443/v1"}
CUSTOM_IP = {CONF_PROVIDER: "custom", CONF_BASE_URL: "http://127.0.0.1:8099/v1"}
QWEN = {CONF_CHAT_MODEL: "qwen3"}


def _followed(
    title: str,
    kind: str,
    entry_title: str,
    entry_data: dict[str, Any],
    old: Mapping[str, Any],
    new: Mapping[str, Any] = QWEN,
) -> str:
    """Return the title a subentry gets when its model changes from old to new."""
    subentry = ConfigSubentry(
        data=MappingProxyType(dict(old)),
        subentry_type=kind,
        title=title,
        unique_id=None,
    )
    entry = MockConfigEntry(
        domain="openai_compatible", title=entry_title, data=entry_data
    )
    return followed_title(subentry, entry, new)


@pytest.mark.parametrize(
    ("provider", "base_url", "title"),
    [
        ("openai", "https://api.openai.com/v1", "OpenAI"),
        ("openai", "https://proxy.example.com/v1", "OpenAI (proxy.example.com)"),
        ("ollama", "http://192.168.1.20:11434/v1", "Ollama"),
        ("litellm", "http://localhost:4000/v1", "LiteLLM proxy"),
        ("custom", "https://llm.home.arpa/v1", "llm.home.arpa"),
        ("custom", "http://127.0.0.1:8099/v1", "OpenAI-compatible server"),
        ("gone", "http://[::1]:8099/v1", "OpenAI-compatible server"),
    ],
)
def test_entry_title(provider: str, base_url: str, title: str) -> None:
    """Named after the server; a hosted service elsewhere shows where."""
    data = {CONF_PROVIDER: provider, CONF_BASE_URL: base_url}
    assert entry_title(data) == title


@pytest.mark.parametrize(
    ("kind", "title"),
    [
        ("llama_cpp", "llama.cpp server"),
        ("vllm", "vLLM"),
        ("ollama", "Ollama"),
        ("lm_studio", "LM Studio"),
        ("unheard_of", "OpenAI-compatible server"),
    ],
)
def test_custom_entry_named_after_its_software(kind: str, title: str) -> None:
    """A custom server recognised as some software is named after it, not its IP."""
    data = {**CUSTOM_IP, CONF_SERVER_KIND: kind}
    assert entry_title(data) == title
    agent = subentry_title(
        SUBENTRY_CONVERSATION, title, data, {CONF_CHAT_MODEL: "qwen3"}
    )
    assert agent == f"{title} · qwen3"


def test_address_only_to_tell_entries_apart() -> None:
    """The host is added where another entry already has the name."""
    assert entry_title(OLLAMA, taken={"OpenAI"}) == "Ollama"
    assert entry_title(OLLAMA, taken={"Ollama"}) == "Ollama (192.168.1.20:11434)"
    assert entry_title(CUSTOM_IP, taken={"OpenAI-compatible server"}) == (
        "OpenAI-compatible server (127.0.0.1:8099)"
    )


@pytest.mark.parametrize(
    ("title", "generated"),
    [
        ("OpenAI-compatible server", True),
        ("OpenAI-compatible server (127.0.0.1:8099)", True),
        ("Custom (127.0.0.1:8099)", True),
        ("Custom (127.0.0.1:9000)", False),
        ("My server", False),
    ],
)
def test_is_generated_entry_title(title: str, generated: bool) -> None:
    """Titles given now, with the address, and the old "Custom (…)" ones are ours."""
    assert is_generated_entry_title(title, CUSTOM_IP) is generated


@pytest.mark.parametrize(
    ("entry_data", "subentry_type", "subentry_data", "title"),
    [
        (OLLAMA, SUBENTRY_CONVERSATION, {CONF_CHAT_MODEL: "llama3.1:8b"}, "Ollama · llama3.1:8b"),
        (OLLAMA, SUBENTRY_AI_TASK, {CONF_CHAT_MODEL: "llama3.1:8b"}, "Ollama · llama3.1:8b · AI task"),
        (CUSTOM, SUBENTRY_CONVERSATION, {CONF_CHAT_MODEL: "qwen3"}, "llm.home.arpa · qwen3"),
        ({**CUSTOM, CONF_PROVIDER: "gone"}, SUBENTRY_CONVERSATION, {}, "llm.home.arpa"),
        (OLLAMA, SUBENTRY_AI_TASK, {}, "Ollama · AI task"),
    ],
)  # fmt: skip
def test_subentry_title(
    entry_data: dict[str, Any],
    subentry_type: str,
    subentry_data: dict[str, Any],
    title: str,
) -> None:
    """A subentry is named by server, model and, for a task, its kind."""
    assert subentry_title(subentry_type, "Any", entry_data, subentry_data) == title


@pytest.mark.parametrize(
    ("entry_title", "label"),
    [
        ("Ollama (192.168.1.20:11434)", "Ollama (192.168.1.20:11434)"),
        ("Ollama", "Ollama"),
        ("Attic server", "Ollama"),
    ],
)
def test_subentry_title_has_the_address_the_entry_title_has(
    entry_title: str, label: str
) -> None:
    """Where the entry's title tells it apart by its address, its subentries' do too."""
    model = {CONF_CHAT_MODEL: "llama3.1:8b"}
    agent = subentry_title(SUBENTRY_CONVERSATION, entry_title, OLLAMA, model)
    task = subentry_title(SUBENTRY_AI_TASK, entry_title, OLLAMA, model)
    assert agent == f"{label} · llama3.1:8b"
    assert task == f"{label} · llama3.1:8b · AI task"
    assert _followed(agent, SUBENTRY_CONVERSATION, entry_title, OLLAMA, model) != agent


@pytest.mark.parametrize(
    ("subentry_type", "title", "generated"),
    [
        (SUBENTRY_CONVERSATION, "Ollama · llama3.1:8b", True),
        (SUBENTRY_CONVERSATION, DEFAULT_CONVERSATION_NAME, True),
        (SUBENTRY_AI_TASK, DEFAULT_AI_TASK_NAME, True),
        (SUBENTRY_AI_TASK, DEFAULT_CONVERSATION_NAME, False),
        (SUBENTRY_AI_TASK, "Ollama · llama3.1:8b", False),
        (SUBENTRY_CONVERSATION, "Ollama · qwen3", False),
        (SUBENTRY_CONVERSATION, "Kitchen helper", False),
    ],
)
def test_only_a_generated_title_follows(
    subentry_type: str, title: str, generated: bool
) -> None:
    """Only the title the subentry would get now, or the old fixed one, is ours."""
    model = {CONF_CHAT_MODEL: "llama3.1:8b"}
    followed = _followed(title, subentry_type, "Ollama", OLLAMA, model)
    assert (followed != title) is generated


def test_host_named_subentry_of_a_custom_server_is_generated() -> None:
    """A custom server's agent once named after its IP still follows its model."""
    old = {CONF_CHAT_MODEL: "llama3.1:8b"}
    title = "127.0.0.1 · llama3.1:8b"
    entry_title = "OpenAI-compatible server"
    kind = SUBENTRY_CONVERSATION
    assert _followed(title, kind, entry_title, CUSTOM_IP, old) == (
        "OpenAI-compatible server · qwen3"
    )


@pytest.mark.parametrize(
    ("title", "followed"),
    [
        ("Ollama · llama3.1:8b", "Ollama · qwen3"),
        (DEFAULT_CONVERSATION_NAME, "Ollama · qwen3"),
        ("Kitchen helper", "Kitchen helper"),
    ],
)
def test_followed_title(title: str, followed: str) -> None:
    """A title the integration gave follows the new model; a given name stays."""
    old = {CONF_CHAT_MODEL: "llama3.1:8b"}
    assert _followed(title, SUBENTRY_CONVERSATION, "Ollama", OLLAMA, old) == followed


def test_title_named_before_the_address_follows_with_it() -> None:
    """An agent named after the server alone takes the address its entry has now."""
    old = {CONF_CHAT_MODEL: "llama3.1:8b"}
    entry_title = "Ollama (192.168.1.20:11434)"
    kind = SUBENTRY_CONVERSATION
    assert _followed("Ollama · llama3.1:8b", kind, entry_title, OLLAMA, old) == (
        "Ollama (192.168.1.20:11434) · qwen3"
    )
