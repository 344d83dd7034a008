"""Images from the Images API: base64 within its limit, URLs fetched (or refused), sizes read."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
import gzip
import io
from pathlib import Path
import socket
from typing import Any
import zlib

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from PIL import Image
import pytest

from custom_components.openai_compatible.const import Feature
from custom_components.openai_compatible.errors import ServerError
from custom_components.openai_compatible.media import images
from custom_components.openai_compatible.media.images import (
    IMAGE_ANSWER_MAX_BYTES,
    IMAGE_FETCH_SECONDS,
    IMAGE_MAX_BASE64_CHARS,
    IMAGE_MAX_BYTES,
    IMAGE_MAX_REDIRECTS,
    GeneratedImageInfo,
    async_fetch_image,
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
) -> tuple[bytes, GeneratedImageInfo]:
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
    assert (await generate(hass, transport, model))[1].mime_type == "image/png"
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

    image, info = await generate(hass, transport)

    assert image == data
    assert info.mime_type == "image/png"


async def test_first_usable_image(
    hass: HomeAssistant, simulator: OpenAISimulator, transport: Transport
) -> None:
    """Items that are no objects, or hold no image, are passed over."""
    encoded = base64.b64encode(PNG_HEADER).decode()
    items = ["junk", {"url": ""}, {"b64_json": encoded, "revised_prompt": "A fox"}]
    simulator.enqueue(GENERATIONS, json={"created": 1, "data": items})

    image, info = await generate(hass, transport)

    assert image == PNG_HEADER
    assert info.revised_prompt == "A fox"


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

    image, info = await generate(hass, transport)

    assert image == PNG_HEADER + bytes(16)
    assert (info.width, info.height) == (3, 2)
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


# Image URLs from the server, fetched over HTTP from the simulator, or refused.

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
# A base URL on the public internet: images may then come from there only.
PUBLIC_BASE = "http://8.8.8.8/v1"


async def fetch_error(
    hass: HomeAssistant, url: str, base_url: str, simulator: OpenAISimulator
) -> str:
    """Fetch an image that must fail; return why, checked not to show the URL."""
    with pytest.raises(ServerError) as err:
        await async_fetch_image(hass, url, base_url)
    assert err.value.translation_key == "image_generation_failed"
    message = err.value.translation_placeholders["message"]
    assert url not in message
    assert message.startswith("the image could not be fetched: ")
    return message.removeprefix("the image could not be fetched: ")


@dataclass
class FakeDNS:
    """Names with the addresses they answer in turn; the names looked up, in order."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> FakeDNS:
    """Give names addresses, for tests of lookups; Home Assistant's tests allow none.

    A name answers its lists of addresses in turn, the last one from then on;
    other names do not exist, and IP addresses and localhost resolve as always.
    """
    fake = FakeDNS()
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        host.encode("idna")  # the codec check the real lookup makes first
        if (answers := fake.answers.get(host)) is None:
            if host == "localhost" or host.replace(".", "").isdigit() or ":" in host:
                return real(host, port, *args, **kwargs)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        fake.asked.append(host)
        addresses = answers.pop(0) if len(answers) > 1 else answers[0]
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
            for address in addresses
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return fake


def files_fetched(simulator: OpenAISimulator) -> list[str]:
    """Return the paths of the files the simulator served, in order."""
    return [r.path for r in simulator.requests if r.path.startswith("/files/")]


def test_limits() -> None:
    """Images of up to 32 MiB, in a minute, through at most 3 redirects."""
    assert IMAGE_MAX_BYTES == 32 * 1024 * 1024
    assert IMAGE_FETCH_SECONDS == 60.0
    assert IMAGE_MAX_REDIRECTS == 3


async def test_fetch(hass: HomeAssistant, simulator: OpenAISimulator) -> None:
    """An image is fetched without credentials, naming its host as the URL does."""
    url = simulator.serve_file("photo", PNG)

    assert await async_fetch_image(hass, url, simulator.base_url) == PNG

    (request,) = simulator.requests
    assert request.path == "/files/photo.png"
    assert "Authorization" not in request.headers
    assert request.headers["Host"] == url.split("/")[2]
    assert request.headers["Accept-Encoding"] == "gzip, deflate"


async def test_fetch_by_name(hass: HomeAssistant, simulator: OpenAISimulator) -> None:
    """A host name is resolved and checked; the request keeps the name as Host."""
    url = simulator.serve_file("photo", PNG).replace("127.0.0.1", "localhost")

    assert await async_fetch_image(hass, url, simulator.base_url) == PNG

    (request,) = simulator.requests
    assert request.headers["Host"].startswith("localhost:")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://127.0.0.1/photo.png", "its address is not an http(s) URL"),
        ("file:///etc/passwd", "its address is not an http(s) URL"),
        ("http://[zz]/photo.png", "its address is not a valid URL"),
        ("http://127.0.0.1:99999/photo.png", "its address is not a valid URL"),
        ("http://10.1.2.3/photo.png", "its address is on a private network"),
        ("http://[::ffff:10.1.2.3]/photo.png", "its address is on a private network"),
        ("http://[fd00::1]/photo.png", "its address is on a private network"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "its address is on a link-local network",
        ),
        ("http://[fe80::1]/photo.png", "its address is on a link-local network"),
        ("http://224.0.0.1/photo.png", "its address is on a reserved network"),
    ],
)
async def test_refused(
    hass: HomeAssistant, simulator: OpenAISimulator, url: str, reason: str
) -> None:
    """Other schemes and other local networks than the base URL's are refused."""
    assert await fetch_error(hass, url, simulator.base_url, simulator) == reason
    assert simulator.requests == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0.0.0.0"])
async def test_public_base_refuses_loopback(
    hass: HomeAssistant, simulator: OpenAISimulator, host: str
) -> None:
    """A server on the internet cannot send Home Assistant to its own host."""
    url = simulator.serve_file("photo", PNG).replace("127.0.0.1", host)

    reason = await fetch_error(hass, url, PUBLIC_BASE, simulator)

    assert reason == "its address is on a loopback network"
    assert simulator.requests == []


@pytest.mark.usefixtures("dns")
@pytest.mark.parametrize("host", ["no-such-host.example", f"{'a' * 64}.example"])
async def test_unresolvable(
    hass: HomeAssistant, simulator: OpenAISimulator, host: str
) -> None:
    """A host name that does not resolve, or cannot be looked up, is named so."""
    url = f"http://{host}/photo.png"

    reason = await fetch_error(hass, url, simulator.base_url, simulator)

    assert reason == "its host name could not be resolved"


@pytest.mark.parametrize(
    ("addresses", "reason"),
    [
        (["10.0.0.5"], "its address is on a private network"),
        (["127.0.0.1", "10.0.0.5"], "its address is on a private network"),
        (["127.0.0.1", "169.254.169.254"], "its address is on a link-local network"),
    ],
)
async def test_every_address_is_checked(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    dns: FakeDNS,
    addresses: list[str],
    reason: str,
) -> None:
    """A name with any address on a network the base URL is not on is refused."""
    dns.answers["images.example"] = [addresses]
    url = simulator.serve_file("photo", PNG).replace("127.0.0.1", "images.example")

    assert await fetch_error(hass, url, simulator.base_url, simulator) == reason
    assert simulator.requests == []


async def test_address_checked_is_the_one_connected(
    hass: HomeAssistant, simulator: OpenAISimulator, dns: FakeDNS
) -> None:
    """A name is looked up once: a second answer (DNS rebinding) is never used."""
    dns.answers["images.example"] = [["127.0.0.1"], ["169.254.169.254"]]
    url = simulator.serve_file("photo", PNG).replace("127.0.0.1", "images.example")

    assert await async_fetch_image(hass, url, simulator.base_url) == PNG

    assert dns.asked == ["images.example"]
    (request,) = simulator.requests
    assert request.headers["Host"] == url.split("/")[2]


@pytest.mark.usefixtures("dns")
async def test_unresolvable_base_allows_public_only(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A base URL whose host does not resolve lends no local network."""
    url = simulator.serve_file("photo", PNG)

    reason = await fetch_error(hass, url, "http://no-such-host.example/v1", simulator)

    assert reason == "its address is on a loopback network"


async def test_redirects(hass: HomeAssistant, simulator: OpenAISimulator) -> None:
    """Redirects are followed, each checked, absolute or relative, up to the limit."""
    target = simulator.serve_file("photo", PNG)
    hop = simulator.serve_file("hop0", status=302, headers={"Location": target})
    for index in range(1, IMAGE_MAX_REDIRECTS):
        hop = simulator.serve_file(
            f"hop{index}",
            status=307,
            headers={"Location": f"/files/hop{index - 1}.png"},
        )

    assert await async_fetch_image(hass, hop, simulator.base_url) == PNG
    assert len(files_fetched(simulator)) == IMAGE_MAX_REDIRECTS + 1

    once_more = simulator.serve_file("more", status=301, headers={"Location": hop})
    reason = await fetch_error(hass, once_more, simulator.base_url, simulator)
    assert reason == f"it was redirected more than {IMAGE_MAX_REDIRECTS} times"


async def test_redirect_checked_again(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A redirect to a network the first URL could not name is refused."""
    url = simulator.serve_file(
        "hop", status=302, headers={"Location": "http://169.254.169.254/latest/"}
    )

    reason = await fetch_error(hass, url, simulator.base_url, simulator)

    assert reason == "its address is on a link-local network"
    assert files_fetched(simulator) == ["/files/hop.png"]


@pytest.mark.parametrize(
    ("status", "headers"), [(404, {}), (500, {}), (302, {}), (204, {})]
)
async def test_error_status(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    status: int,
    headers: dict[str, str],
) -> None:
    """Anything but a 200 (or a redirect with a place to go) names its status."""
    url = simulator.serve_file("photo", b"", status=status, headers=headers)

    reason = await fetch_error(hass, url, simulator.base_url, simulator)

    assert reason == f"the server answered HTTP {status}"


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (bytes(IMAGE_MAX_BYTES), "identity"),
        (gzip.compress(PNG), "gzip"),
        (zlib.compress(PNG), "deflate"),
    ],
    ids=["at_the_limit", "gzip", "deflate"],
)
async def test_sizes_and_encodings(
    hass: HomeAssistant, simulator: OpenAISimulator, body: bytes, encoding: str
) -> None:
    """Images up to the limit come through, compressed or not."""
    url = simulator.serve_file("photo", body, headers={"Content-Encoding": encoding})

    data = await async_fetch_image(hass, url, simulator.base_url)

    assert data == (body if encoding == "identity" else PNG)


@pytest.mark.parametrize(
    ("body", "encoding", "reason"),
    [
        (bytes(IMAGE_MAX_BYTES + 1), "identity", "it is larger than 32 MiB"),
        (
            gzip.compress(bytes(IMAGE_MAX_BYTES + 1)),
            "gzip",
            "it is larger than 32 MiB",
        ),
        (PNG, "br", "it came in the unsupported encoding 'br'"),
        (b"not gzip at all", "gzip", "it could not be decompressed"),
    ],
    ids=["too_large", "gzip_bomb", "unsupported_encoding", "broken_gzip"],
)
async def test_refused_bodies(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    body: bytes,
    encoding: str,
    reason: str,
) -> None:
    """Too much data, counted after decompression, or unreadable data is refused."""
    url = simulator.serve_file("photo", body, headers={"Content-Encoding": encoding})

    assert await fetch_error(hass, url, simulator.base_url, simulator) == reason


async def test_deadline(
    hass: HomeAssistant, simulator: OpenAISimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A download that trickles on is stopped at the deadline."""
    monkeypatch.setattr(images, "IMAGE_FETCH_SECONDS", 0.3)
    url = simulator.serve_file("photo", PNG * 10, trickle=True)

    reason = await fetch_error(hass, url, simulator.base_url, simulator)

    assert reason == "it took longer than 0.3 s"


async def test_connection_refused(
    hass: HomeAssistant, simulator: OpenAISimulator
) -> None:
    """A host that takes no connection fails after its addresses are tried."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]

    reason = await fetch_error(
        hass, f"http://127.0.0.1:{port}/photo.png", simulator.base_url, simulator
    )

    assert reason == "the connection failed"


async def test_cut_download(hass: HomeAssistant, simulator: OpenAISimulator) -> None:
    """A body cut short of its announced length is a failed download."""
    url = simulator.serve_file(
        "photo", PNG, headers={"Content-Length": "1000"}, trickle=True
    )

    reason = await fetch_error(hass, url, simulator.base_url, simulator)

    assert reason == "the download failed (RemoteProtocolError)"
