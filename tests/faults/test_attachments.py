"""Attachments at their limits, sent or refused through the AI task service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.setup import async_setup_component
import pytest

from custom_components.openai_compatible.media.attachments import (
    ATTACHMENT_MAX_BYTES,
    ATTACHMENTS_MAX_TOTAL_BYTES,
)
from simulator import sse_text

from .conftest import FaultHarness, FaultHarnessFactory

PNG_START = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
async def harness(
    hass: HomeAssistant, fault_harness: FaultHarnessFactory, media_dir: Path
) -> FaultHarness:
    """Return a harness whose tasks can take files of the local media folder."""
    assert await async_setup_component(hass, "media_source", {})
    return await fault_harness()


async def describe(harness: FaultHarness, *names: str) -> dict[str, Any]:
    """Ask the faulty entry's task to describe PNGs of the media folder."""
    response = await harness.hass.services.async_call(
        "ai_task",
        "generate_data",
        {
            "task_name": "Describe",
            "entity_id": harness.faulty_ai_task,
            "instructions": "What is this?",
            "attachments": [
                {
                    "media_content_id": f"media-source://media_source/local/{name}",
                    "media_content_type": "image/png",
                }
                for name in names
            ],
        },
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response


async def test_attachment_at_the_limit_is_sent(
    harness: FaultHarness, media_dir: Path
) -> None:
    """A file of exactly the limit is read, encoded and sent off the event loop."""
    data = PNG_START + bytes(ATTACHMENT_MAX_BYTES - len(PNG_START))
    (media_dir / "big.png").write_bytes(data)
    harness.faulty.enqueue("/chat/completions", sse=sse_text("A big picture."))

    response = await harness.run(describe(harness, "big.png"))

    assert response["data"] == "A big picture."
    (body,) = harness.faulty.chat_requests()
    image = body["messages"][-1]["content"][1]["image_url"]["url"]
    assert image.startswith("data:image/png;base64,iVBORw0KGgo")
    assert len(image) == len("data:image/png;base64,") + (len(data) + 2) // 3 * 4


async def test_attachment_over_the_limit_is_refused(
    harness: FaultHarness, media_dir: Path
) -> None:
    """A huge file is refused by its size, unread, and nothing is sent.

    The refusal comes before any request, so there is no fault to run the
    healthy agent against.
    """
    with (media_dir / "huge.png").open("wb") as file:
        file.truncate(64 * 2**30)

    with pytest.raises(HomeAssistantError) as err:
        await describe(harness, "huge.png")

    assert err.value.translation_key == "attachment_too_large"
    assert err.value.translation_placeholders == {
        "name": "huge.png",
        "limit": "20 MiB",
    }
    assert harness.faulty.chat_requests() == []


async def test_attachments_over_the_total_are_refused(
    harness: FaultHarness, media_dir: Path
) -> None:
    """Files each within the limit but together past the total send nothing.

    The file that goes past the total is refused by its size, unread.
    """
    names = [f"part{n}.png" for n in range(3)]
    for name in names:
        with (media_dir / name).open("wb") as file:
            file.truncate(ATTACHMENT_MAX_BYTES)
    assert 3 * ATTACHMENT_MAX_BYTES > ATTACHMENTS_MAX_TOTAL_BYTES

    with pytest.raises(HomeAssistantError) as err:
        await describe(harness, *names)

    assert err.value.translation_key == "attachments_too_large"
    assert err.value.translation_placeholders == {
        "name": "part2.png",
        "limit": "50 MiB",
    }
    assert harness.faulty.chat_requests() == []
