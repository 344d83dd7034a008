"""Extra request fields and the thinking switch, as the server receives them."""

from __future__ import annotations

from typing import Any

from homeassistant.core import HomeAssistant
import pytest

from custom_components.openai_compatible.const import (
    CONF_API,
    CONF_CHAT_MODEL,
    CONF_EXTRA_FIELDS,
    CONF_RECOMMENDED,
    CONF_THINKING,
)
from custom_components.openai_compatible.models.capabilities import WireApi
from simulator import OpenAISimulator

from ..conftest import SetupEntry, converse, speech
from ..test_ai_task import generate_data

EXTRA = {"min_p": 0.05, "top_k": 40, "chat_template_kwargs": {"enable_thinking": False}}
THINKING_KEYS = ("chat_template_kwargs", "reasoning_effort", "reasoning", "think")


def _advanced(**data: Any) -> dict[str, Any]:
    """Return a subentry's data with the recommended settings off."""
    return {CONF_RECOMMENDED: False, **data}


async def test_extra_fields_sent_over_chat_completions(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """Every request of the agent and of the task carries the extra fields."""
    extra = _advanced(**{CONF_EXTRA_FIELDS: EXTRA})
    await setup_entry(conversation=extra, ai_task=extra)

    assert speech(await converse(hass, "Hi")) == "You said: Hi"
    await generate_data(hass, instructions="Say hi")

    for body in simulator.chat_requests():
        assert {key: body[key] for key in EXTRA} == EXTRA
        assert body["stream"] is True or "stream" not in body


async def test_extra_fields_sent_over_responses(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The Responses API gets the same fields beside its own."""
    await setup_entry(
        provider="openai",
        options={CONF_API: WireApi.RESPONSES},
        conversation=_advanced(**{CONF_EXTRA_FIELDS: {"top_k": 40}}),
    )

    assert speech(await converse(hass, "Hi")) == "You said: Hi"

    (body,) = simulator.responses_requests()
    assert body["top_k"] == 40
    assert body["store"] is False


async def test_a_refused_extra_field_is_dropped_and_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """A 400 naming top_k: sent again without it, and not sent again after."""
    simulator.settings.refused_fields = ("top_k",)
    entry = await setup_entry(
        conversation=_advanced(**{CONF_EXTRA_FIELDS: {"min_p": 0.05, "top_k": 40}})
    )

    assert speech(await converse(hass, "Hi")) == "You said: Hi"
    assert speech(await converse(hass, "Again")) == "You said: Again"

    refused, answered, learned = simulator.chat_requests()
    assert refused["top_k"] == 40
    assert "top_k" not in answered and answered["min_p"] == 0.05
    assert "top_k" not in learned and learned["min_p"] == 0.05
    model = entry.runtime_data.capabilities.model("gpt-4o-mini")
    assert model.refused_fields() == {"top_k"}
    assert "top_k" in model.lessons.diagnostics()["fields"]


async def test_a_refused_field_is_learned_again_after_a_reload(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The lesson lives while the entry is loaded: a reload sends top_k once more."""
    simulator.settings.refused_fields = ("top_k",)
    entry = await setup_entry(
        conversation=_advanced(**{CONF_EXTRA_FIELDS: {"top_k": 1}})
    )
    await converse(hass, "Hi")
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()

    await converse(hass, "Again")

    sent = ["top_k" in body for body in simulator.chat_requests()]
    assert sent == [True, False, True, False]


@pytest.mark.parametrize(
    ("provider", "model", "sent"),
    [
        ("vllm", "gpt-4o-mini", {"chat_template_kwargs": {"enable_thinking": False}}),
        (
            "llama_cpp",
            "gpt-4o-mini",
            {"chat_template_kwargs": {"enable_thinking": False}},
        ),
        ("ollama", "llama3.2:3b", {"reasoning_effort": "none"}),
        ("openai", "gpt-5-mini", {"reasoning_effort": "minimal"}),
    ],
)
async def test_thinking_off_by_server_kind(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
    model: str,
    sent: dict[str, Any],
) -> None:
    """Each kind of server gets the field it reads to turn thinking off."""
    await setup_entry(
        provider=provider,
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        conversation=_advanced(**{CONF_CHAT_MODEL: model, CONF_THINKING: "off"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.chat_requests()
    assert {key: body[key] for key in THINKING_KEYS if key in body} == sent


async def test_thinking_on_merges_into_the_extra_fields(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The switch goes into the user's chat_template_kwargs, over what it says."""
    kwargs = {"chat_template_kwargs": {"enable_thinking": False, "x": 1}}
    await setup_entry(
        provider="vllm",
        conversation=_advanced(**{CONF_EXTRA_FIELDS: kwargs, CONF_THINKING: "on"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.chat_requests()
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "x": 1}


async def test_thinking_off_over_responses_is_the_reasoning_effort(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """The Responses API takes the effort in its reasoning object."""
    await setup_entry(
        provider="openai",
        options={CONF_API: WireApi.RESPONSES},
        conversation=_advanced(**{CONF_CHAT_MODEL: "gpt-5-mini", CONF_THINKING: "off"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.responses_requests()
    assert body["reasoning"]["effort"] == "minimal"
    assert "reasoning_effort" not in body


@pytest.mark.parametrize("provider", ["vllm", "ollama", "openai"])
async def test_server_default_sends_nothing(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    provider: str,
) -> None:
    """Without a switch or extra fields, no thinking field is sent."""
    await setup_entry(
        provider=provider,
        options={CONF_API: WireApi.CHAT_COMPLETIONS},
        conversation=_advanced(**{CONF_CHAT_MODEL: "gpt-5-mini"}),
    )

    await converse(hass, "Hi")

    (body,) = simulator.chat_requests()
    assert not set(THINKING_KEYS) & set(body)
