"""Cheap, deterministic PNG images, with or without Pillow."""

from __future__ import annotations

import hashlib
import io
import struct
import zlib

try:
    from PIL import Image, ImageDraw
except ImportError:  # pragma: no cover - Pillow is optional at run time
    HAVE_PILLOW = False
else:
    HAVE_PILLOW = True

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_IMAGE_SIGNATURES = (_PNG_SIGNATURE, b"\xff\xd8\xff", b"GIF87a", b"GIF89a")


def _colours(prompt: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Return a background colour derived from the prompt and its complement."""
    digest = hashlib.sha256(prompt.encode()).digest()
    background = (digest[0], digest[1], digest[2])
    return background, (255 - digest[0], 255 - digest[1], 255 - digest[2])


def draw_png(prompt: str, width: int, height: int) -> bytes:
    """Return a PNG of the given size: a prompt-coloured field with a shape on it."""
    if not HAVE_PILLOW:
        return draw_png_plain(prompt, width, height)
    background, foreground = _colours(prompt)
    image = Image.new("RGB", (width, height), background)
    ImageDraw.Draw(image).ellipse(
        (width // 4, height // 4, width - width // 4, height - height // 4),
        fill=foreground,
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def draw_png_plain(prompt: str, width: int, height: int) -> bytes:
    """Return the same kind of PNG, encoded by hand (a square instead of a circle)."""
    background, foreground = _colours(prompt)
    left, right = width // 4, width - width // 4
    plain_row = b"\x00" + bytes(background) * width
    shape_row = (
        b"\x00"
        + bytes(background) * left
        + bytes(foreground) * (right - left)
        + bytes(background) * (width - right)
    )
    rows = [
        shape_row if height // 4 <= y < height - height // 4 else plain_row
        for y in range(height)
    ]
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        _PNG_SIGNATURE
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(b"".join(rows), 1))
        + _png_chunk(b"IEND", b"")
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    """Return one length-prefixed, CRC-suffixed PNG chunk."""
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def is_image(data: bytes) -> bool:
    """Tell whether the bytes decode as an image (by signature without Pillow)."""
    if not HAVE_PILLOW:
        return data.startswith(_IMAGE_SIGNATURES) or (
            data[:4] == b"RIFF" and data[8:12] == b"WEBP"
        )
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except OSError, ValueError, Image.DecompressionBombError:
        return False
    return True
