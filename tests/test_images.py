"""Images from the Images API: base64 within its limit, URLs fetched from the server."""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
import openai
import pytest

from custom_components.openai_compatible.image_fetch import IMAGE_MAX_BYTES
from custom_components.openai_compatible.images import (
    IMAGE_MAX_BASE64_CHARS,
    GeneratedImage,
    async_generate_image,
)
from simulator import OpenAISimulator

PNG_START = b"\x89PNG\r\n\x1a\n"
GENERATIONS = "/images/generations"


@pytest.fixture
async def client(simulator: OpenAISimulator) -> AsyncGenerator[openai.AsyncOpenAI]:
    """Return an OpenAI client for the simulator, without retries."""
    async with openai.AsyncOpenAI(
        base_url=simulator.base_url, api_key="sk-test", max_retries=0
    ) as api:
        yield api


async def generate(hass: HomeAssistant, client: openai.AsyncOpenAI) -> GeneratedImage:
    """Ask for one image, without attachments."""
    return await async_generate_image(
        hass, client, model="gpt-image-1", prompt="A fox", attachments=None
    )


def test_base64_limit() -> None:
    """The base64 text of an image may be as long as that of 32 MiB."""
    assert IMAGE_MAX_BYTES == 32 * 1024 * 1024
    assert IMAGE_MAX_BASE64_CHARS == 44_739_244
    assert len(base64.b64encode(bytes(IMAGE_MAX_BYTES))) == IMAGE_MAX_BASE64_CHARS


async def test_base64_at_the_limit(
    hass: HomeAssistant, simulator: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """An image of exactly the limit is decoded."""
    data = PNG_START + bytes(IMAGE_MAX_BYTES - len(PNG_START))
    encoded = base64.b64encode(data).decode()
    simulator.enqueue(GENERATIONS, json={"created": 1, "data": [{"b64_json": encoded}]})

    image = await generate(hass, client)

    assert image.data == data
    assert image.mime_type == "image/png"


@pytest.mark.parametrize("field", ["b64_json", "url"])
async def test_base64_over_the_limit(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    client: openai.AsyncOpenAI,
    field: str,
) -> None:
    """Base64 text past the limit is refused before it is decoded, data URLs too."""
    encoded = "A" * (IMAGE_MAX_BASE64_CHARS + 4)
    value = encoded if field == "b64_json" else f"data:image/png;base64,{encoded}"
    simulator.enqueue(GENERATIONS, json={"created": 1, "data": [{field: value}]})

    with pytest.raises(HomeAssistantError) as err:
        await generate(hass, client)

    assert err.value.translation_key == "image_generation_failed"
    assert err.value.translation_placeholders == {
        "message": "the image is larger than 32 MiB"
    }


async def test_url_from_the_servers_network(
    hass: HomeAssistant, simulator: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A URL on the base URL's own network is fetched, the server being local."""
    url = simulator.serve_file("fox", PNG_START + bytes(16))
    simulator.enqueue(GENERATIONS, json={"created": 1, "data": [{"url": url}]})

    image = await generate(hass, client)

    assert image.data == PNG_START + bytes(16)
    fetched = [r for r in simulator.requests if r.path == "/files/fox.png"]
    assert len(fetched) == 1
    assert "Authorization" not in fetched[0].headers
