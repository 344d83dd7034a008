"""What a model cannot take (window/context_window.py): told before any request, as reported or learned."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from freezegun.api import FrozenDateTimeFactory
from homeassistant.components import conversation
from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import intent, llm
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.errors import InputError, RequestRejectedError
from custom_components.openai_compatible.models.capabilities import (
    Capabilities,
    ModelCapabilities,
)
from custom_components.openai_compatible.models.providers import PROVIDERS
from custom_components.openai_compatible.models.server_info import (
    ModelReport,
    ServerReport,
)
from custom_components.openai_compatible.window.context_window import (
    check_model_takes,
    learning_refusals,
)
from simulator import OpenAISimulator
from tests.conftest import SetupEntry, converse, press_forget, speech

MODEL = "gpt-4o-mini"
ENTITY = "ai_task.openai_compatible_ai_task"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)
PDF = b"%PDF-1.4\n%%EOF\n"
# llama-cpp-python's answer when a text-only chat template gets content parts.
LIST_CONTENT_REFUSED = {
    "error": {
        "message": 'can only concatenate str (not "list") to str',
        "type": "internal_server_error",
    }
}


def model_with(report: ModelReport, hass: HomeAssistant) -> ModelCapabilities:
    """Return a model of a custom server that reports `report` about it."""
    server = ServerReport(models={MODEL: report})
    return Capabilities(PROVIDERS["custom"], server).model(MODEL)


def attachment(name: str, mime_type: str) -> conversation.Attachment:
    """Return an attachment as Home Assistant hands it over."""
    return conversation.Attachment(
        media_content_id=f"media-source://media_source/local/{name}",
        mime_type=mime_type,
        path=Path(name),
    )


def learned_refusals(entry: MockConfigEntry) -> set[Feature]:
    """Return what the entry learned the model refuses, and still holds."""
    lessons = entry.runtime_data.capabilities.model(MODEL).lessons
    return {feature for feature in lessons.refused if lessons.refuses(feature)}


def chat_paths(simulator: OpenAISimulator) -> list[str]:
    """Return the paths of the chat requests sent, in order."""
    return [r.path for r in simulator.requests if r.path.endswith("/completions")]


# ---------------------------------------------------------------------------
# Units
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("report", "tools", "attachments", "key"),
    [
        (ModelReport(tools=False), True, [], "model_takes_no_tools"),
        (ModelReport(tools=False), False, [], None),
        (ModelReport(tools=None), True, [], None),
        (
            ModelReport(vision=False),
            False,
            [attachment("a.jpg", "image/JPG")],
            "model_takes_no_images",
        ),
        (
            ModelReport(vision=False),
            False,
            [attachment("a.pdf", "application/pdf")],
            None,
        ),
        (ModelReport(vision=None), False, [attachment("a.png", "image/png")], None),
        (
            ModelReport(vision=True, tools=True),
            True,
            [attachment("a.png", "image/png")],
            None,
        ),
    ],
)
def test_reported(
    hass: HomeAssistant,
    report: ModelReport,
    tools: bool,
    attachments: list[conversation.Attachment],
    key: str | None,
) -> None:
    """What the server says a model lacks is told; what it does not say is not."""
    model = model_with(report, hass)
    if key is None:
        check_model_takes(model, tools=tools, attachments=attachments)
        return
    with pytest.raises(InputError) as err:
        check_model_takes(model, tools=tools, attachments=attachments)
    assert err.value.translation_key == key
    assert err.value.translation_placeholders == {"model": MODEL}


def test_learned_files(hass: HomeAssistant) -> None:
    """A model that refused files is told so for a file, not for an image."""
    model = model_with(ModelReport(), hass)
    model.learn_refused(Feature.FILE_INPUT, "HTTP 400: refused")

    check_model_takes(model, tools=True, attachments=[attachment("a.png", "image/png")])
    with pytest.raises(InputError) as err:
        check_model_takes(
            model, tools=False, attachments=[attachment("a.pdf", "application/pdf")]
        )
    assert err.value.translation_key == "model_takes_no_files"


@pytest.mark.parametrize(
    ("error", "refused"),
    [
        (RequestRejectedError("no", Feature.IMAGE_INPUT, general=True), True),
        (RequestRejectedError("no", Feature.TOOLS, general=True), True),
        # About this one image (too large), not images in general.
        (RequestRejectedError("no", Feature.IMAGE_INPUT, general=False), False),
        # Refusals of what can be dropped are the adapters' to learn.
        (RequestRejectedError("no", Feature.LOGPROBS, general=True), False),
        (RequestRejectedError("no", None, general=True), False),
    ],
)
def test_learning_refusals(
    hass: HomeAssistant, error: RequestRejectedError, refused: bool
) -> None:
    """Only a general refusal of tools, images or files is learned; all are raised."""
    model = model_with(ModelReport(), hass)

    with pytest.raises(RequestRejectedError), learning_refusals(model):
        raise error

    assert bool(model.lessons.refused) is refused


# ---------------------------------------------------------------------------
# Agents and tasks against the simulator
# ---------------------------------------------------------------------------


async def test_refused_tools_are_learned(
    hass: HomeAssistant, simulator: OpenAISimulator, setup_entry: SetupEntry
) -> None:
    """After the server refused tools, the next turn is told at once, unsent."""
    entry = await setup_entry()
    simulator.settings.supports_tools = False

    first = await converse(hass, "Turn on the light")
    second = await converse(hass, "Turn on the light")

    assert speech(first).startswith("The model cannot call tools: ")
    assert second.response.response_type is intent.IntentResponseType.ERROR
    assert speech(second).startswith(
        f"The model {MODEL} cannot call tools, so nothing was sent to it. Choose "
        "No control in the agent's Control Home Assistant option, or choose a "
        "model that supports tool calling"
    )
    assert len(simulator.chat_requests()) == 1
    assert learned_refusals(entry) == {Feature.TOOLS}


# Ollama's answer for a model without tool support.
NO_TOOLS = {
    "error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools"}
}


@pytest.mark.parametrize("heal", ["an hour passes", "reload", "button"])
async def test_refused_tools_are_asked_again(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    freezer: FrozenDateTimeFactory,
    heal: str,
) -> None:
    """One refusal blocks tools for a while only: the request goes out again.

    The turn refused unsent says how to ask again; after an hour, a reload or
    the button, the next turn reaches the server (now fixed) and is answered.
    """
    entry = await setup_entry()
    simulator.enqueue("/chat/completions", status=400, json=NO_TOOLS)
    await converse(hass, "Turn on the light")
    blocked = await converse(hass, "Turn on the light")
    assert "Relearn capabilities" in speech(blocked)
    assert len(chat_paths(simulator)) == 1

    if heal == "an hour passes":
        freezer.tick(timedelta(minutes=61))
    elif heal == "reload":
        assert await hass.config_entries.async_reload(entry.entry_id)
    else:
        await press_forget(hass, entry)
    await hass.async_block_till_done()
    result = await converse(hass, "Turn on the light")

    assert result.response.response_type is not intent.IntentResponseType.ERROR
    assert len(chat_paths(simulator)) > 1
    assert not learned_refusals(entry)


@pytest.mark.parametrize(("apis", "requests"), [([llm.LLM_API_ASSIST], 0), ([], 1)])
async def test_reported_no_tools(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    apis: list[str],
    requests: int,
) -> None:
    """Ollama says the model has no tools: an agent that controls the home is told.

    An agent without control talks as ever; tools are never dropped silently.
    """
    simulator.settings.native = "ollama"
    simulator.settings.supports_tools = False
    await setup_entry(provider="ollama", conversation={CONF_LLM_HASS_API: apis})

    result = await converse(hass, "Hello")

    assert len(simulator.chat_requests()) == requests
    said = speech(result)
    assert ("cannot call tools" in said) is (requests == 0)


async def generate_data(hass: HomeAssistant, **data: Any) -> dict[str, Any]:
    """Call ai_task.generate_data on our entity and return its response."""
    response = await hass.services.async_call(
        "ai_task",
        "generate_data",
        {"task_name": "Test task", "entity_id": ENTITY, **data},
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response


def media(name: str, mime_type: str) -> dict[str, str]:
    """Return an attachment of the local media folder, as the media selector gives it."""
    return {
        "media_content_id": f"media-source://media_source/local/{name}",
        "media_content_type": mime_type,
    }


async def test_reported_no_vision(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """Ollama says the model sees no images: an image is told at once, a PDF goes."""
    (media_dir / "photo.png").write_bytes(PNG)
    (media_dir / "note.pdf").write_bytes(PDF)
    simulator.settings.native = "ollama"
    await setup(provider="ollama")

    with pytest.raises(HomeAssistantError) as err:
        await generate_data(
            hass, instructions="Describe", attachments=[media("photo.png", "image/png")]
        )
    assert err.value.translation_key == "model_takes_no_images"
    assert chat_paths(simulator) == []

    await generate_data(
        hass,
        instructions="Summarize",
        attachments=[media("note.pdf", "application/pdf")],
    )
    assert len(chat_paths(simulator)) == 1


@pytest.mark.parametrize(
    ("name", "content", "mime_type", "refused", "keys"),
    [
        (
            "photo.png",
            PNG,
            "image/png",
            Feature.IMAGE_INPUT,
            ("image_input_refused", "model_takes_no_images"),
        ),
        (
            "note.pdf",
            PDF,
            "application/pdf",
            Feature.FILE_INPUT,
            ("file_input_refused", "model_takes_no_files"),
        ),
    ],
)
async def test_attachment_refused_at_500_is_learned(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
    name: str,
    content: bytes,
    mime_type: str,
    refused: Feature,
    keys: tuple[str, str],
) -> None:
    """llama-cpp-python's 500 for a text-only template is told, then learned.

    Its words reach the user in our message; the next such attachment is not
    sent, while a task without one still is.
    """
    (media_dir / name).write_bytes(content)
    entry = await setup()
    simulator.enqueue("/chat/completions", status=500, json=LIST_CONTENT_REFUSED)
    attached = [media(name, mime_type)]

    with pytest.raises(HomeAssistantError) as first:
        await generate_data(hass, instructions="Describe", attachments=attached)
    with pytest.raises(HomeAssistantError) as second:
        await generate_data(hass, instructions="Describe", attachments=attached)

    assert (first.value.translation_key, second.value.translation_key) == keys
    assert first.value.translation_placeholders == {
        "message": 'can only concatenate str (not "list") to str'
    }
    assert len(chat_paths(simulator)) == 1
    assert learned_refusals(entry) == {refused}
    await generate_data(hass, instructions="Say hi")
    assert len(chat_paths(simulator)) == 2


async def test_evaluate_image_on_a_blind_model(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup: SetupEntry,
    media_dir: Path,
) -> None:
    """An evaluation with an image, for a model that sees none, sends nothing."""
    (media_dir / "garage.png").write_bytes(PNG)
    simulator.settings.native = "ollama"
    await setup(provider="ollama")
    simulator.requests.clear()

    with pytest.raises(HomeAssistantError) as err:
        await hass.services.async_call(
            "ai_task",
            "evaluate",
            {
                "task_name": "Check the garage",
                "entity_id": ENTITY,
                "questions": {"door": {"type": "noul", "instructions": "Open?"}},
                "attachments": [media("garage.png", "image/png")],
            },
            blocking=True,
            return_response=True,
        )

    assert err.value.translation_key == "model_takes_no_images"
    assert [r for r in simulator.requests if r.method == "POST"] == []
