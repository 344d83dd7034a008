"""Attachments: size and type checked before reading, read off the event loop."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
import os
from pathlib import Path
import threading

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
import pytest

from custom_components.openai_compatible.errors import InputError
from custom_components.openai_compatible.media.attachments import (
    ATTACHMENT_MAX_BYTES,
    ATTACHMENTS_MAX_TOTAL_BYTES,
    IMAGE_TYPES,
    PDF_TYPE,
    SNIFF_BYTES,
    LoadedFile,
    async_load_attachments,
)

PNG_START = b"\x89PNG\r\n\x1a\n"
WEBP_START = b"RIFF\x00\x00\x00\x00WEBPVP8 "
# Seconds a pipe's writer waits for the reader before it closes the pipe.
PIPE_PATIENCE = 10


async def load(
    hass: HomeAssistant,
    path: Path,
    mime_type: str,
    allowed: frozenset[str] = IMAGE_TYPES | {PDF_TYPE},
) -> LoadedFile:
    """Load one attachment the way the entities do."""
    attachment = conversation.Attachment(
        media_content_id=f"media-source://media_source/local/{path.name}",
        mime_type=mime_type,
        path=path,
    )
    (loaded,) = await async_load_attachments(hass, [attachment], allowed)
    return loaded


async def load_all(hass: HomeAssistant, paths: list[Path]) -> list[LoadedFile]:
    """Load PNG attachments together, as one message's."""
    attachments = [
        conversation.Attachment(
            media_content_id=f"media-source://media_source/local/{path.name}",
            mime_type="image/png",
            path=path,
        )
        for path in paths
    ]
    return await async_load_attachments(hass, attachments)


def sparse(path: Path, size: int) -> Path:
    """Make `path` a file of `size` zero bytes, without writing them."""
    with path.open("wb") as file:
        file.truncate(size)
    return path


@contextmanager
def pipe_feeding(path: Path, data: bytes, *, close: bool) -> Iterator[None]:
    """Make `path` a pipe that a thread writes `data` into.

    A pipe's size is 0 to stat(), and its reader sees only what is written.
    With `close` false the writer keeps the pipe open until the block ends,
    so a reader that wanted more than `data` would still be waiting then: the
    block fails if the writer had to give up waiting instead.
    """
    os.mkfifo(path)
    released = threading.Event()
    waited: list[bool] = []

    def write() -> None:
        with suppress(BrokenPipeError), path.open("wb") as pipe:
            pipe.write(data)
            pipe.flush()
            if not close:
                waited.append(released.wait(PIPE_PATIENCE))

    writer = threading.Thread(target=write)
    writer.start()
    try:
        yield
    finally:
        released.set()
        writer.join(PIPE_PATIENCE)
    assert waited == ([] if close else [True]), "the reader wanted more"


def test_limits() -> None:
    """An attachment may be 20 MiB; 16 bytes are enough to tell every type."""
    assert ATTACHMENT_MAX_BYTES == 20 * 1024 * 1024
    assert SNIFF_BYTES == 16
    assert len(WEBP_START) <= SNIFF_BYTES


async def test_at_the_limit(hass: HomeAssistant, tmp_path: Path) -> None:
    """A file of exactly the limit is read whole and encoded."""
    path = tmp_path / "big.png"
    data = PNG_START + bytes(ATTACHMENT_MAX_BYTES - len(PNG_START))
    path.write_bytes(data)

    loaded = await load(hass, path, "image/png")

    assert loaded.mime_type == "image/png"
    assert loaded.data == data
    assert loaded.data_url.startswith("data:image/png;base64,iVBORw0KGgo")


async def test_over_the_limit_is_not_read(hass: HomeAssistant, tmp_path: Path) -> None:
    """A file past the limit is refused by its size: a huge one is never read."""
    path = tmp_path / "huge.png"
    with path.open("wb") as file:
        file.truncate(64 * 2**30)  # sparse: 64 GiB that reading would take

    with pytest.raises(InputError) as err:
        await load(hass, path, "image/png")

    assert err.value.translation_key == "attachment_too_large"
    assert err.value.translation_placeholders == {
        "name": "huge.png",
        "limit": "20 MiB",
    }


async def test_one_byte_over_the_limit(hass: HomeAssistant, tmp_path: Path) -> None:
    """The limit is exact."""
    path = tmp_path / "big.png"
    path.write_bytes(PNG_START + bytes(ATTACHMENT_MAX_BYTES + 1 - len(PNG_START)))

    with pytest.raises(InputError) as err:
        await load(hass, path, "image/png")

    assert err.value.translation_key == "attachment_too_large"


async def test_grown_past_the_limit(hass: HomeAssistant, tmp_path: Path) -> None:
    """A file larger than stat() said is read one byte past the limit, no more."""
    path = tmp_path / "growing.png"
    data = PNG_START + bytes(ATTACHMENT_MAX_BYTES + 2**20)

    with pipe_feeding(path, data, close=True), pytest.raises(InputError) as err:
        await load(hass, path, "image/png")

    assert err.value.translation_key == "attachment_too_large"


async def test_the_total_is_exact(hass: HomeAssistant, tmp_path: Path) -> None:
    """Attachments of exactly the total go; one byte more is refused, by name."""
    rest = ATTACHMENTS_MAX_TOTAL_BYTES - 2 * ATTACHMENT_MAX_BYTES
    paths = [sparse(tmp_path / f"{n}.png", ATTACHMENT_MAX_BYTES) for n in "ab"]
    paths.append(sparse(tmp_path / "c.png", rest))
    assert sum(len(f.data) for f in await load_all(hass, paths)) == (
        ATTACHMENTS_MAX_TOTAL_BYTES
    )

    with pytest.raises(InputError) as err:
        await load_all(hass, [*paths, sparse(tmp_path / "d.png", 1)])

    assert err.value.translation_key == "attachments_too_large"
    assert err.value.translation_placeholders == {"name": "d.png", "limit": "50 MiB"}


async def test_grown_past_the_total(hass: HomeAssistant, tmp_path: Path) -> None:
    """A file larger than stat() said is read one byte past the room left, no more."""
    room = 2**20
    rest = ATTACHMENTS_MAX_TOTAL_BYTES - room - 2 * ATTACHMENT_MAX_BYTES
    paths = [sparse(tmp_path / f"{n}.png", ATTACHMENT_MAX_BYTES) for n in "ab"]
    paths.append(sparse(tmp_path / "c.png", rest))
    path = tmp_path / "growing.png"
    data = PNG_START + bytes(room + 1000)

    with pipe_feeding(path, data, close=False), pytest.raises(InputError) as err:
        await load_all(hass, [*paths, path])

    assert err.value.translation_key == "attachments_too_large"


async def test_refused_type_is_not_read(hass: HomeAssistant, tmp_path: Path) -> None:
    """A type that will not do is refused from the first bytes, before the rest."""
    path = tmp_path / "notes.txt"

    with (
        pipe_feeding(path, b"just some text, and more", close=False),
        pytest.raises(InputError) as err,
    ):
        await load(hass, path, "text/plain")

    assert err.value.translation_key == "unsupported_attachment"
    assert err.value.translation_placeholders == {
        "mime_type": "text/plain",
        "name": "notes.txt",
    }


@pytest.mark.parametrize(
    ("declared", "content", "mime_type"),
    [
        ("image/png", PNG_START, "image/png"),
        ("image/JPG; charset=binary", b"\xff\xd8\xff\xe0", "image/jpeg"),
        ("application/octet-stream", WEBP_START, "image/webp"),
        ("", b"GIF89a", "image/gif"),
        ("", b"%PDF-1.7", PDF_TYPE),
    ],
    ids=["declared", "alias", "sniffed_webp", "sniffed_gif", "sniffed_pdf"],
)
async def test_types(
    hass: HomeAssistant,
    tmp_path: Path,
    declared: str,
    content: bytes,
    mime_type: str,
) -> None:
    """The declared type is used when it will do, else the one the bytes show."""
    path = tmp_path / "file"
    path.write_bytes(content + b"rest of the file")

    loaded = await load(hass, path, declared)

    assert loaded.mime_type == mime_type
    assert loaded.data == content + b"rest of the file"


@pytest.mark.parametrize(
    ("declared", "allowed", "shown"),
    [
        ("", IMAGE_TYPES, "unknown"),
        ("application/octet-stream", IMAGE_TYPES, "application/octet-stream"),
        ("application/pdf", IMAGE_TYPES, "application/pdf"),
    ],
)
async def test_unsupported(
    hass: HomeAssistant,
    tmp_path: Path,
    declared: str,
    allowed: frozenset[str],
    shown: str,
) -> None:
    """A file of a type the server cannot take names the type it has."""
    path = tmp_path / "file"
    path.write_bytes(b"%PDF-1.7" if declared == PDF_TYPE else b"plain words")

    with pytest.raises(InputError) as err:
        await load(hass, path, declared, allowed)

    assert err.value.translation_key == "unsupported_attachment"
    assert err.value.translation_placeholders == {"mime_type": shown, "name": "file"}


@pytest.mark.parametrize("kind", ["missing", "folder"])
async def test_unreadable(hass: HomeAssistant, tmp_path: Path, kind: str) -> None:
    """A path that cannot be read as a file is a translated error naming it."""
    path = tmp_path / "photo.png"
    if kind == "folder":
        path.mkdir()

    with pytest.raises(InputError) as err:
        await load(hass, path, "image/png")

    assert err.value.translation_key == "attachment_unreadable"
    assert err.value.translation_placeholders == {"name": "photo.png"}
