"""Reading and encoding task and chat attachments, off the event loop."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant

from ..errors import InputError
from ..net.readers import mebibytes

ATTACHMENT_MAX_BYTES: Final = 20 * 1024 * 1024
# As OpenAI takes in one request; the file that goes past it is refused unread.
ATTACHMENTS_MAX_TOTAL_BYTES: Final = 50 * 1024 * 1024
SNIFF_BYTES: Final = 16

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/webp", "image/gif"})
PDF_TYPE = "application/pdf"
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", PDF_TYPE),
)
_MIME_ALIASES: Final = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """One attachment's bytes with its real media type."""

    name: str
    mime_type: str
    data: bytes
    # Encoded once, in the executor: requests may embed it several times.
    data_url: str


def normalise_mime_type(mime_type: str | None) -> str:
    """Return the canonical, lower-case form of a media type."""
    cleaned = (mime_type or "").split(";", 1)[0].strip().lower()
    return _MIME_ALIASES.get(cleaned, cleaned)


def sniff_mime_type(data: bytes) -> str | None:
    """Return the media type the bytes announce, if we know it."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    known = (mime for signature, mime in _SIGNATURES if data.startswith(signature))
    return next(known, None)


def _read(path: Path, declared: str, allowed: frozenset[str], room: int) -> LoadedFile:
    """Read one file, size and type checked first; `room`: what the total leaves."""
    try:
        _check_size(path, path.stat().st_size, room)
        with path.open("rb") as file:
            mime_type = normalise_mime_type(declared)
            head = b""
            if mime_type not in allowed:
                head = file.read(SNIFF_BYTES)
                mime_type = sniff_mime_type(head) or mime_type
            if mime_type not in allowed:
                raise InputError(
                    "unsupported_attachment",
                    mime_type=mime_type or "unknown",
                    name=path.name,
                )
            # One byte past the limit at most: the file may have grown since.
            rest = min(ATTACHMENT_MAX_BYTES, room) + 1 - len(head)
            data = head + file.read(max(rest, 0))
    except OSError as err:
        raise InputError("attachment_unreadable", name=path.name) from err
    _check_size(path, len(data), room)
    encoded = base64.b64encode(data).decode("ascii")
    return LoadedFile(path.name, mime_type, data, f"data:{mime_type};base64,{encoded}")


def _check_size(path: Path, size: int, room: int) -> None:
    if size > ATTACHMENT_MAX_BYTES:
        raise InputError(
            "attachment_too_large",
            name=path.name,
            limit=mebibytes(ATTACHMENT_MAX_BYTES),
        )
    if size > room:
        raise InputError(
            "attachments_too_large",
            name=path.name,
            limit=mebibytes(ATTACHMENTS_MAX_TOTAL_BYTES),
        )


async def async_load_attachments(
    hass: HomeAssistant,
    attachments: list[conversation.Attachment] | None,
    allowed: frozenset[str] = IMAGE_TYPES | {PDF_TYPE},
) -> list[LoadedFile]:
    """Read attachments in the executor; refuse types the server cannot take."""
    if not attachments:
        return []

    def read_all() -> list[LoadedFile]:
        loaded: list[LoadedFile] = []
        for attachment in attachments:
            room = ATTACHMENTS_MAX_TOTAL_BYTES - sum(len(file.data) for file in loaded)
            loaded.append(_read(attachment.path, attachment.mime_type, allowed, room))
        return loaded

    return await hass.async_add_executor_job(read_all)
