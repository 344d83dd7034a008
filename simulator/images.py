"""Image generations and edits: checked as OpenAI checks them, answered with PNGs."""

from __future__ import annotations

import base64
import re
import time
from typing import Any
import uuid

from aiohttp import web

from .imagegen import draw_png, is_image
from .served_files import ServedFile
from .tokens import count_tokens
from .wire import (
    APIError,
    invalid_type,
    invalid_value,
    missing,
    parse_multipart,
    require_multipart,
    unknown_parameter,
)

_SIZE = re.compile(r"^(\d{2,4})x(\d{2,4})$")
_IMAGE_FORMATS = ("url", "b64_json")


async def edit_fields(request: web.Request) -> dict[str, Any]:
    """Return the fields of a multipart edit request, after checking its images decode."""
    require_multipart(request.content_type)
    fields, files = parse_multipart(
        request.headers["Content-Type"], await request.read()
    )
    images = [file.data for file in files if file.field in ("image", "image[]")]
    if not images:
        raise missing("image")
    for index, data in enumerate(images, start=1):
        if not is_image(data):
            raise APIError(
                f"Invalid image file or mode for image {index}, please check your "
                "image file.",
                param="image",
                code="invalid_image_file",
            )
    for file in files:
        if file.field == "mask" and not is_image(file.data):
            raise APIError(
                "Invalid mask image file.", param="mask", code="invalid_image_file"
            )
    return fields


def generate(
    request: web.Request,
    fields: dict[str, Any],
    *,
    default_format: str,
    files: dict[str, ServedFile],
) -> web.Response:
    """Validate image parameters and answer with freshly drawn PNGs.

    Images asked for as URLs are added to `files`, served under /files/.
    """
    prompt = fields.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise missing("prompt")
    gpt_image = str(fields.get("model") or "dall-e-2").startswith("gpt-image")
    count = _image_count(fields.get("n", 1))
    width, height = _image_size(fields.get("size"))
    response_format = _response_format(fields, gpt_image=gpt_image) or default_format
    data: list[dict[str, Any]] = []
    for index in range(count):
        png = draw_png(f"{prompt}#{index}" if index else prompt, width, height)
        if response_format == "url":
            name = uuid.uuid4().hex
            files[name] = ServedFile(png)
            item = {"url": f"{request.scheme}://{request.host}/files/{name}.png"}
        else:
            item = {"b64_json": base64.b64encode(png).decode()}
        if not gpt_image:
            item["revised_prompt"] = prompt
        data.append(item)
    result: dict[str, Any] = {"created": int(time.time()), "data": data}
    if gpt_image:
        result |= _gpt_image_fields(prompt, f"{width}x{height}", count)
    return web.json_response(result)


def _response_format(fields: dict[str, Any], *, gpt_image: bool) -> str | None:
    """Return the response_format asked for, if any; GPT image models take none."""
    response_format = fields.get("response_format")
    if response_format is None:
        return None
    if gpt_image:
        raise unknown_parameter("response_format")
    if response_format not in _IMAGE_FORMATS:
        raise invalid_value("response_format", response_format, _IMAGE_FORMATS)
    return str(response_format)


def _gpt_image_fields(prompt: str, size: str, count: int) -> dict[str, Any]:
    """Return what a GPT image model's answer adds: its settings and usage."""
    prompt_tokens = count_tokens(prompt)
    return {
        "background": "opaque",
        "output_format": "png",
        "quality": "medium",
        "size": size,
        "usage": {
            "input_tokens": prompt_tokens,
            "input_tokens_details": {
                "text_tokens": prompt_tokens,
                "image_tokens": 0,
            },
            "output_tokens": 1056 * count,
            "total_tokens": prompt_tokens + 1056 * count,
        },
    }


def _image_count(value: Any) -> int:
    """Return `n`, from JSON or a form field, checked to lie within 1 to 10."""
    try:
        count = int(value)
    except TypeError, ValueError:
        raise invalid_type("n", "an integer", value) from None
    if not 1 <= count <= 10:
        raise APIError(
            f"Invalid 'n': integer out of range. Expected a value between 1 and 10, "
            f"but got {count} instead.",
            param="n",
            code="integer_out_of_range",
        )
    return count


def _image_size(value: Any) -> tuple[int, int]:
    """Return (width, height) for `size`; "auto" and none mean 1024x1024."""
    if value in (None, "auto"):
        return 1024, 1024
    match = _SIZE.match(str(value))
    if match is None or not all(16 <= int(side) <= 4096 for side in match.groups()):
        raise invalid_value(
            "size", value, ("1024x1024", "1024x1536", "1536x1024", "auto")
        )
    return int(match[1]), int(match[2])
