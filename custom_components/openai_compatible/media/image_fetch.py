"""Downloading an image the server names by URL, without trusting the URL.

Only http(s), to addresses resolved once and all checked (private ones only where
the base URL is private), each redirect too; capped, timed, without credentials.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Final
import zlib

from homeassistant.core import HomeAssistant
from homeassistant.helpers.httpx_client import create_async_httpx_client
from homeassistant.util.hass_dict import HassKey
import httpx2

from ..const import DOMAIN
from ..errors import ServerError

IMAGE_MAX_BYTES: Final = 32 * 1024 * 1024
IMAGE_FETCH_SECONDS: Final = 60.0
IMAGE_MAX_REDIRECTS: Final = 3

type _Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_CLIENT: HassKey[httpx2.AsyncClient] = HassKey(f"{DOMAIN}_image_client")
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_PUBLIC: Final = "public"
_ENCODINGS: Final = frozenset({"identity", "gzip", "deflate"})


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
        raise _failed(f"it took longer than {IMAGE_FETCH_SECONDS:g} s") from err
    raise _failed(f"it was redirected more than {IMAGE_MAX_REDIRECTS} times")


def _failed(reason: str) -> ServerError:
    return ServerError(
        "image_generation_failed", message=f"the image could not be fetched: {reason}"
    )


def _parsed(url: str) -> httpx2.URL:
    try:
        parsed = httpx2.URL(url)
    except httpx2.InvalidURL as err:
        raise _failed("its address is not a valid URL") from err
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise _failed("its address is not an http(s) URL")
    if not 0 < (parsed.port or 80) < 2**16:
        raise _failed("its address is not a valid URL")
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
    """Download from the first address that connects, all on allowed networks."""
    try:
        addresses = await _async_addresses(hass, url)
    except (OSError, UnicodeError) as err:
        raise _failed("its host name could not be resolved") from err
    for address in addresses:
        if (kind := _network(address)) not in networks:
            raise _failed(f"its address is on a {kind or 'reserved'} network")
    error: httpx2.HTTPError | None = None
    for address in addresses:
        try:
            return await _async_get(hass, url, address)
        except httpx2.ConnectError as err:
            error = err
    raise _failed("the connection failed") from error


async def _async_get(
    hass: HomeAssistant, url: httpx2.URL, address: _Address
) -> bytes | httpx2.URL:
    """GET the URL from one address, naming the host as the URL does; a redirect's URL."""
    if (client := hass.data.get(_CLIENT)) is None:
        # A client of its own: no shared cookies.
        client = hass.data[_CLIENT] = create_async_httpx_client(hass)
    try:
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
                raise _failed(f"the server answered HTTP {response.status_code}")
            return await _async_read_capped(response)
    except httpx2.ConnectError:
        raise
    except httpx2.HTTPError as err:
        raise _failed(f"the download failed ({type(err).__name__})") from err


async def _async_read_capped(response: httpx2.Response) -> bytes:
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in _ENCODINGS:
        raise _failed(f"it came in the unsupported encoding {encoding!r}")
    # Header detection takes gzip and zlib alike.
    inflater = None if encoding == "identity" else zlib.decompressobj(47)
    body = bytearray()
    async for raw in response.aiter_raw():
        room = IMAGE_MAX_BYTES - len(body) + 1
        try:
            body += raw if inflater is None else inflater.decompress(raw, room)
        except zlib.error as err:
            raise _failed("it could not be decompressed") from err
        if len(body) > IMAGE_MAX_BYTES:
            raise _failed(f"it is larger than {IMAGE_MAX_BYTES // 2**20} MiB")
    return bytes(body)
