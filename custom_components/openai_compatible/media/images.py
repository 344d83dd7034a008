"""Image generation through the Images API."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
import io
from typing import Final

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.util.json import json_loads
import PIL.Image

from ..errors import RequestRejectedError, ServerError
from ..features import Feature
from ..models.capabilities import ModelCapabilities
from ..net.readers import string_or_none
from ..net.sse import async_read_body
from ..net.transport import Budget, FormFiles, Transport
from .attachments import IMAGE_TYPES, async_load_attachments, sniff_mime_type
from .image_fetch import IMAGE_MAX_BYTES, async_fetch_image

GENERATIONS_ROUTE: Final = "/images/generations"
EDITS_ROUTE: Final = "/images/edits"
IMAGE_MAX_BASE64_CHARS: Final = (IMAGE_MAX_BYTES + 2) // 3 * 4
# The base64 of the largest image taken (42.7 MiB), and room for the JSON around it.
IMAGE_ANSWER_MAX_BYTES: Final = 45 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class GeneratedImageInfo:
    """What the chat log keeps of a generated image: a description, no bytes."""

    model: str
    mime_type: str
    width: int | None
    height: int | None
    revised_prompt: str | None


async def async_generate_image(
    hass: HomeAssistant,
    transport: Transport,
    capabilities: ModelCapabilities,
    *,
    prompt: str,
    attachments: list[conversation.Attachment] | None,
    budget: Budget,
) -> tuple[bytes, GeneratedImageInfo]:
    """Generate an image, or edit the attached ones; a refused route is learned."""
    files = await async_load_attachments(hass, attachments, allowed=IMAGE_TYPES)
    route = Feature.IMAGES_EDITS if files else Feature.IMAGES_GENERATIONS
    if capabilities.refuses(route):
        raise ServerError("image_generation_unsupported")
    # One image goes as a single file: older models and servers take no list.
    field = "image" if len(files) == 1 else "image[]"
    uploads: FormFiles | None = [
        (field, (file.name, file.data, file.mime_type)) for file in files
    ] or None
    try:
        async with transport.async_open(
            "POST",
            EDITS_ROUTE if files else GENERATIONS_ROUTE,
            budget=budget,
            body={"model": capabilities.model, "prompt": prompt},
            files=uploads,
            sent=frozenset({route}),
        ) as opened:
            raw = await async_read_body(opened.aiter_bytes(), IMAGE_ANSWER_MAX_BYTES)
    except RequestRejectedError as err:
        if err.feature is not route:
            raise
        capabilities.learn_refused(route, err.lesson_source)
        raise ServerError("image_generation_unsupported") from err
    # The first usable image of the answer, else image_generation_failed.
    data, revised_prompt = await hass.async_add_executor_job(_read_answer, raw)
    if isinstance(data, str):
        data = await async_fetch_image(hass, data, transport.base_url)
    mime_type = sniff_mime_type(data)
    if mime_type is None or not mime_type.startswith("image/"):
        raise _failed("the server sent data that is no image")
    if (size := await hass.async_add_executor_job(image_size, data)) is None:
        raise _failed("the server sent an image whose size cannot be read")
    info = GeneratedImageInfo(capabilities.model, mime_type, *size, revised_prompt)
    return data, info


def _failed(message: str) -> ServerError:
    return ServerError("image_generation_failed", message=message)


def _read_answer(raw: bytes) -> tuple[bytes | str, str | None]:
    """Return the answer's first image (decoded when inline, else its URL) and prompt."""
    try:
        answer = json_loads(raw)
    except (ValueError, RecursionError) as err:
        # An empty body, a web page, JSON nested past the decoder's depth.
        raise _failed(f"the server sent an answer that is not JSON: {err}") from err
    if not isinstance(answer, dict):
        raise _failed("the server sent an answer that is no image response")
    items = answer.get("data")
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        revised_prompt = string_or_none(item.get("revised_prompt")) or None
        if encoded := string_or_none(item.get("b64_json")):
            return _decode_base64(encoded), revised_prompt
        if url := string_or_none(item.get("url")):
            if url.startswith("data:"):
                return _decode_base64(url.partition(",")[2]), revised_prompt
            return url, revised_prompt
    raise _failed("the server sent no image")


def _decode_base64(text: str) -> bytes:
    if len(text) > IMAGE_MAX_BASE64_CHARS:
        raise _failed(f"the image is larger than {IMAGE_MAX_BYTES // 2**20} MiB")
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError) as err:
        raise _failed(f"the image is not valid base64: {err}") from err


def image_size(data: bytes) -> tuple[int, int] | None:
    """Return (width, height) from the image's header, if Pillow can read it."""
    try:
        with PIL.Image.open(io.BytesIO(data)) as image:
            return image.size
    # Pillow reports a broken or unknown header in many ways.
    except Exception:  # noqa: BLE001
        return None
