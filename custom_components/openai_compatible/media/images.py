"""Image generation through the Images API, and the image a server names by URL.

That URL is not trusted: only http(s), to addresses resolved once and all checked
(private ones only where the base URL is private), each redirect too; capped, timed,
without credentials.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from dataclasses import dataclass
import io
import ipaddress
import socket
from typing import Final
import zlib

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.httpx_client import create_async_httpx_client
from homeassistant.util.hass_dict import HassKey
from homeassistant.util.json import json_loads
import httpx2
import PIL.Image

from ..const import DOMAIN, Feature
from ..errors import RequestRejectedError, ServerError
from ..models.capabilities import ModelCapabilities
from ..net.readers import async_read_body, string_or_none
from ..net.transport import Budget, FormFiles, Transport
from .attachments import IMAGE_TYPES, async_load_attachments, sniff_mime_type

GENERATIONS_ROUTE: Final = "/images/generations"
EDITS_ROUTE: Final = "/images/edits"
IMAGE_MAX_BYTES: Final = 32 * 1024 * 1024
IMAGE_FETCH_SECONDS: Final = 60.0
IMAGE_MAX_REDIRECTS: Final = 3
IMAGE_MAX_BASE64_CHARS: Final = (IMAGE_MAX_BYTES + 2) // 3 * 4
# The base64 of the largest image taken (42.7 MiB), and room for the JSON around it.
IMAGE_ANSWER_MAX_BYTES: Final = 45 * 1024 * 1024

type _Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_CLIENT: HassKey[httpx2.AsyncClient] = HassKey(f"{DOMAIN}_image_client")
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_PUBLIC: Final = "public"
_ENCODINGS: Final = frozenset({"identity", "gzip", "deflate"})


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


async def async_fetch_image(hass: HomeAssistant, url: str, base_url: str) -> bytes:
    """Return the bytes at an image URL the server gave; errors never repeat the URL."""
    try:
        async with asyncio.timeout(IMAGE_FETCH_SECONDS):
            # Images may come from public networks, and from the base URL's.
            try:
                addresses = await _async_addresses(hass, httpx2.URL(base_url))
            except OSError, UnicodeError:
                addresses = []
            networks = {_PUBLIC} | {kind for kind in map(_network, addresses) if kind}
            current = _parsed(url)
            for _ in range(IMAGE_MAX_REDIRECTS + 1):
                fetched = await _async_download(hass, current, networks)
                if isinstance(fetched, bytes):
                    return fetched
                current = fetched
    except TimeoutError as err:
        raise _unfetched(f"it took longer than {IMAGE_FETCH_SECONDS:g} s") from err
    raise _unfetched(f"it was redirected more than {IMAGE_MAX_REDIRECTS} times")


def _unfetched(reason: str) -> ServerError:
    return _failed(f"the image could not be fetched: {reason}")


def _parsed(url: str) -> httpx2.URL:
    try:
        parsed = httpx2.URL(url)
    except httpx2.InvalidURL as err:
        raise _unfetched("its address is not a valid URL") from err
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise _unfetched("its address is not an http(s) URL")
    if not 0 < (parsed.port or 80) < 2**16:
        raise _unfetched("its address is not a valid URL")
    return parsed


def _network(address: _Address) -> str | None:
    """Return the kind of network an address is on; None for one never fetched."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address.is_loopback or address.is_unspecified:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast or address.is_reserved:
        return None
    return _PUBLIC if address.is_global else "private"


async def _async_addresses(hass: HomeAssistant, url: httpx2.URL) -> list[_Address]:
    host = url.raw_host.decode("ascii")
    port = url.port or (443 if url.scheme == "https" else 80)
    infos = await hass.loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


async def _async_download(
    hass: HomeAssistant, url: httpx2.URL, networks: set[str]
) -> bytes | httpx2.URL:
    """Download from the first address that connects, all allowed; a redirect's URL."""
    try:
        addresses = await _async_addresses(hass, url)
    except (OSError, UnicodeError) as err:
        raise _unfetched("its host name could not be resolved") from err
    for address in addresses:
        if (kind := _network(address)) not in networks:
            raise _unfetched(f"its address is on a {kind or 'reserved'} network")
    if (client := hass.data.get(_CLIENT)) is None:
        # A client of its own: no shared cookies.
        client = hass.data[_CLIENT] = create_async_httpx_client(hass)
    error: httpx2.HTTPError | None = None
    for address in addresses:
        try:
            # The URL from one address, naming the host as the URL does.
            async with client.stream(
                "GET",
                url.copy_with(host=str(address)),
                headers={
                    "Host": url.netloc.decode("ascii"),
                    "Accept-Encoding": "gzip, deflate",
                    "Connection": "close",
                },
                # TLS names and checks the host of the URL, not the address.
                extensions={"sni_hostname": url.raw_host.decode("ascii")},
                timeout=IMAGE_FETCH_SECONDS,
            ) as response:
                if response.status_code in _REDIRECTS and (
                    location := response.headers.get("Location")
                ):
                    return _parsed(str(url.join(location)))
                if response.status_code != 200:
                    raise _unfetched(f"the server answered HTTP {response.status_code}")
                return await _async_read_capped(response)
        except httpx2.ConnectError as err:
            error = err
        except httpx2.HTTPError as err:
            raise _unfetched(f"the download failed ({type(err).__name__})") from err
    raise _unfetched("the connection failed") from error


async def _async_read_capped(response: httpx2.Response) -> bytes:
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in _ENCODINGS:
        raise _unfetched(f"it came in the unsupported encoding {encoding!r}")
    # Header detection takes gzip and zlib alike.
    inflater = None if encoding == "identity" else zlib.decompressobj(47)
    body = bytearray()
    async for raw in response.aiter_raw():
        room = IMAGE_MAX_BYTES - len(body) + 1
        try:
            body += raw if inflater is None else inflater.decompress(raw, room)
        except zlib.error as err:
            raise _unfetched("it could not be decompressed") from err
        if len(body) > IMAGE_MAX_BYTES:
            raise _unfetched(f"it is larger than {IMAGE_MAX_BYTES // 2**20} MiB")
    return bytes(body)
