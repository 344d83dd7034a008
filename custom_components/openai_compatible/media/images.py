"""Image generation through the Images API, and cheap reading of image headers."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
import re
import struct
from typing import Final

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.util.json import json_loads

from ..errors import RequestRejectedError, ServerError
from ..features import Feature
from ..models.capabilities import ModelCapabilities
from ..net.sse import async_read_body
from ..net.transport import Budget, FormFiles, Transport
from .attachments import IMAGE_TYPES, async_load_attachments, sniff_mime_type
from .image_fetch import IMAGE_MAX_BYTES, async_fetch_image

IMAGE_MAX_BASE64_CHARS: Final = (IMAGE_MAX_BYTES + 2) // 3 * 4
# The base64 of the largest image taken (42.7 MiB), and room for the JSON around it.
IMAGE_ANSWER_MAX_BYTES: Final = 45 * 1024 * 1024
GENERATIONS_ROUTE: Final = "/images/generations"
EDITS_ROUTE: Final = "/images/edits"
# JPEG start-of-frame markers: baseline, progressive and the rarer codings.
_JPEG_FRAMES = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)
# JPEG markers without a length: TEM, RST0-7, SOI, EOI.
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xDA)})
# The fill bytes any JPEG marker may follow, skipped at once.
_JPEG_FILL = re.compile(rb"\xff+")
# The most markers read before the frame: a real header has a few dozen.
_JPEG_MAX_MARKERS = 256


@dataclass(frozen=True, slots=True)
class GeneratedImage:
    """One image as the server made it."""

    data: bytes
    mime_type: str
    width: int
    height: int
    revised_prompt: str | None


async def async_generate_image(
    hass: HomeAssistant,
    transport: Transport,
    capabilities: ModelCapabilities,
    *,
    prompt: str,
    attachments: list[conversation.Attachment] | None,
    budget: Budget,
) -> GeneratedImage:
    """Generate an image, or edit the attached ones; a refused route is learned."""
    files = (
        await async_load_attachments(hass, attachments, allowed=IMAGE_TYPES)
        if attachments
        else []
    )
    route = Feature.IMAGES_EDITS if files else Feature.IMAGES_GENERATIONS
    if capabilities.refuses(route):
        raise ServerError("image_generation_unsupported")
    uploads: FormFiles | None = None
    if files:
        # One image goes as a single file: older models and servers take no list.
        field = "image" if len(files) == 1 else "image[]"
        uploads = [(field, (file.name, file.data, file.mime_type)) for file in files]
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
    return await _async_read_image(hass, transport, raw)


async def _async_read_image(
    hass: HomeAssistant, transport: Transport, raw: bytes
) -> GeneratedImage:
    """Return the first usable image of the answer; raise image_generation_failed."""
    data, revised_prompt = await hass.async_add_executor_job(_read_answer, raw)
    if isinstance(data, str):
        data = await async_fetch_image(hass, data, transport.base_url)
    mime_type = sniff_mime_type(data)
    if mime_type is None or not mime_type.startswith("image/"):
        raise _failed("the server sent data that is no image")
    if (size := image_size(data)) is None:
        raise _failed("the server sent an image whose size cannot be read")
    return GeneratedImage(data, mime_type, *size, revised_prompt)


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
    images = [
        item
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict) and (_text(item, "b64_json") or _text(item, "url"))
    ]
    if not images:
        raise _failed("the server sent no image")
    item = images[0]
    revised_prompt = _text(item, "revised_prompt") or None
    if encoded := _text(item, "b64_json"):
        return _decode_base64(encoded), revised_prompt
    url = _text(item, "url")
    if url.startswith("data:"):
        return _decode_base64(url.partition(",")[2]), revised_prompt
    return url, revised_prompt


def _text(item: Mapping[str, object], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def _decode_base64(text: str) -> bytes:
    if len(text) > IMAGE_MAX_BASE64_CHARS:
        raise _failed(f"the image is larger than {IMAGE_MAX_BYTES // 2**20} MiB")
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError) as err:
        raise _failed(f"the image is not valid base64: {err}") from err


def image_size(data: bytes) -> tuple[int, int] | None:
    """Return (width, height) from a PNG, JPEG, WebP or GIF header, if readable."""
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if data[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", data[6:10])
            return int(width), int(height)
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp_size(data)
        if data.startswith(b"\xff\xd8"):
            return _jpeg_size(data)
    except struct.error:
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    """Return the canvas size of a lossy, lossless or extended WebP."""
    kind = data[12:16]
    if kind == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L" and data[20:21] == b"\x2f":
        (bits,) = struct.unpack("<I", data[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        if len(data) >= 30:
            return width, height
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Return the size in a JPEG's first start-of-frame, within _JPEG_MAX_MARKERS."""
    position = 2
    for _ in range(_JPEG_MAX_MARKERS):
        if (fill := _JPEG_FILL.match(data, position)) is None:
            return None
        position = fill.end() - 1
        if position + 4 > len(data):
            return None
        marker = data[position + 1]
        if marker in _JPEG_STANDALONE:
            position += 2
            continue
        (length,) = struct.unpack(">H", data[position + 2 : position + 4])
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", data[position + 5 : position + 9])
            return int(width), int(height)
        position += 2 + length
    return None
