"""Images from the Images API: base64 within its limit, URLs fetched, sizes read."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from PIL import Image
import pytest

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.media.image_fetch import IMAGE_MAX_BYTES
from custom_components.openai_compatible.media.images import (
    IMAGE_ANSWER_MAX_BYTES,
    IMAGE_MAX_BASE64_CHARS,
    GeneratedImage,
    async_generate_image,
    image_size,
)
from custom_components.openai_compatible.models.capabilities import (
    Capabilities,
    ModelCapabilities,
)
from custom_components.openai_compatible.models.providers import PROVIDERS
from custom_components.openai_compatible.models.server_info import ServerReport
from custom_components.openai_compatible.net.transport import Budget, Transport
from simulator import OpenAISimulator

PNG_START = b"\x89PNG\r\n\x1a\n"


def encode(kind: str, width: int, height: int, **options: Any) -> bytes:
    """Return a small image in a format Pillow writes."""
    buffer = io.BytesIO()
    mode = "P" if kind == "GIF" else "RGB"
    Image.new(mode, (width, height)).save(buffer, format=kind, **options)
    return buffer.getvalue()


# A whole PNG of 3 x 2 pixels: what follows it is never read.
PNG_HEADER = encode("PNG", 3, 2)
GENERATIONS = "/images/generations"


@pytest.fixture
def transport(hass: HomeAssistant, simulator: OpenAISimulator) -> Transport:
    """Return a transport to the simulator."""
    return Transport(hass, simulator.base_url, "sk-test")


@pytest.fixture
def capabilities(hass: HomeAssistant) -> Capabilities:
    """Return what an entry of a custom server knows: nothing yet."""
    return Capabilities(PROVIDERS["custom"], ServerReport())


async def generate(
    hass: HomeAssistant,
    transport: Transport,
    model: ModelCapabilities | None = None,
    attachments: list[conversation.Attachment] | None = None,
) -> GeneratedImage:
    """Ask for one image of the model (gpt-image-1 by default)."""
    if model is None:
        model = Capabilities(PROVIDERS["custom"], ServerReport()).model("gpt-image-1")
    return await async_generate_image(
        hass,
        transport,
        model,
        prompt="A fox",
        attachments=attachments,
        budget=Budget(30),
    )


async def test_missing_route_learned(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    transport: Transport,
    capabilities: Capabilities,
) -> None:
    """A server without the images route is asked once; then told without a request.

    Until the lessons are forgotten (the server changed or was reconfigured).
    """
    simulator.settings.images = False
    model = capabilities.model("sd-turbo")

    for _ in range(2):
        with pytest.raises(HomeAssistantError) as err:
            await generate(hass, transport, model)
        assert err.value.translation_key == "image_generation_unsupported"

    assert len(simulator.requests) == 1
    assert model.refuses(Feature.IMAGES_GENERATIONS)
    assert not capabilities.model("other").refuses(Feature.IMAGES_GENERATIONS)
    capabilities.forget()
    with pytest.raises(HomeAssistantError):
        await generate(hass, transport, capabilities.model("sd-turbo"))
    assert len(simulator.requests) == 2


async def test_edits_route_learned_apart(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    transport: Transport,
    capabilities: Capabilities,
    tmp_path: Path,
) -> None:
    """A server that draws but edits nothing keeps drawing."""
    picture = tmp_path / "cat.png"
    picture.write_bytes(PNG_START + bytes(16))
    attachment = conversation.Attachment(
        media_content_id="media-source://media_source/local/cat.png",
        mime_type="image/png",
        path=picture,
    )
    simulator.enqueue("/images/edits", status=404, raw="404 page not found")
    model = capabilities.model("gpt-image-1")

    with pytest.raises(HomeAssistantError) as err:
        await generate(hass, transport, model, [attachment])

    assert err.value.translation_key == "image_generation_unsupported"
    assert model.refuses(Feature.IMAGES_EDITS)
    assert (await generate(hass, transport, model)).mime_type == "image/png"
    assert not model.refuses(Feature.IMAGES_GENERATIONS)


@pytest.mark.parametrize(
    ("status", "body", "key"),
    [
        (404, {"error": {"message": "model 'sd-turbo' not found"}}, "model_not_found"),
        (500, {"error": {"message": "CUDA out of memory"}}, "api_error"),
        (400, {"error": {"message": "Your prompt was rejected"}}, "api_error"),
    ],
)
async def test_other_errors_not_learned(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    transport: Transport,
    capabilities: Capabilities,
    status: int,
    body: dict[str, Any],
    key: str,
) -> None:
    """An error that does not say the route is missing is told, and not learned."""
    simulator.enqueue(GENERATIONS, status=status, json=body)
    model = capabilities.model("sd-turbo")

    with pytest.raises(HomeAssistantError) as err:
        await generate(hass, transport, model)

    assert err.value.translation_key == key
    assert not model.lessons.refused


def test_base64_limit() -> None:
    """The base64 text of an image may be as long as that of 32 MiB."""
    assert IMAGE_MAX_BYTES == 32 * 1024 * 1024
    assert IMAGE_MAX_BASE64_CHARS == 44_739_244
    assert len(base64.b64encode(bytes(IMAGE_MAX_BYTES))) == IMAGE_MAX_BASE64_CHARS


def test_answer_limit() -> None:
    """An answer may be 45 MiB: the largest image's base64 text, and room around."""
    assert IMAGE_ANSWER_MAX_BYTES == 45 * 1024 * 1024
    assert IMAGE_ANSWER_MAX_BYTES - IMAGE_MAX_BASE64_CHARS > 2 * 1024 * 1024


async def test_base64_at_the_limit(
    hass: HomeAssistant, simulator: OpenAISimulator, transport: Transport
) -> None:
    """An image of exactly the limit is decoded."""
    data = PNG_HEADER + bytes(IMAGE_MAX_BYTES - len(PNG_HEADER))
    encoded = base64.b64encode(data).decode()
    simulator.enqueue(GENERATIONS, json={"created": 1, "data": [{"b64_json": encoded}]})

    image = await generate(hass, transport)

    assert image.data == data
    assert image.mime_type == "image/png"


@pytest.mark.parametrize("field", ["b64_json", "url"])
async def test_base64_over_the_limit(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    transport: Transport,
    field: str,
) -> None:
    """Base64 text past the limit is refused before it is decoded, data URLs too."""
    encoded = "A" * (IMAGE_MAX_BASE64_CHARS + 4)
    value = encoded if field == "b64_json" else f"data:image/png;base64,{encoded}"
    simulator.enqueue(GENERATIONS, json={"created": 1, "data": [{field: value}]})

    with pytest.raises(HomeAssistantError) as err:
        await generate(hass, transport)

    assert err.value.translation_key == "image_generation_failed"
    assert err.value.translation_placeholders == {
        "message": "the image is larger than 32 MiB"
    }


async def test_url_from_the_servers_network(
    hass: HomeAssistant, simulator: OpenAISimulator, transport: Transport
) -> None:
    """A URL on the base URL's own network is fetched, the server being local."""
    url = simulator.serve_file("fox", PNG_HEADER + bytes(16))
    simulator.enqueue(GENERATIONS, json={"created": 1, "data": [{"url": url}]})

    image = await generate(hass, transport)

    assert image.data == PNG_HEADER + bytes(16)
    assert (image.width, image.height) == (3, 2)
    fetched = [r for r in simulator.requests if r.path == "/files/fox.png"]
    assert len(fetched) == 1
    assert "Authorization" not in fetched[0].headers


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (encode("PNG", 33, 17), (33, 17)),
        (encode("GIF", 33, 17), (33, 17)),
        (encode("JPEG", 33, 17), (33, 17)),
        (encode("JPEG", 33, 17, progressive=True), (33, 17)),
        (encode("WEBP", 33, 17), (33, 17)),
        (encode("WEBP", 33, 17, lossless=True), (33, 17)),
        (encode("WEBP", 33, 17, exif=b"Exif\x00\x00MM"), (33, 17)),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00", None),
        (b"hello", None),
    ],
    ids=[
        "png",
        "gif",
        "jpeg",
        "jpeg_progressive",
        "webp_lossy",
        "webp_lossless",
        "webp_extended",
        "png_truncated",
        "unknown",
    ],
)
def test_image_size(data: bytes, size: tuple[int, int] | None) -> None:
    """Sizes are read from the headers of the common formats."""
    assert image_size(data) == size
