"""Image generation and editing: real PNGs, as base64 or served URLs."""

from __future__ import annotations

import base64
import gzip
import io

import aiohttp
import openai
from PIL import Image
import pytest

from simulator import OpenAISimulator, imagegen


def png(width: int = 8, height: int = 8) -> bytes:
    """Return a small PNG."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 20, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


def decode(data: bytes) -> Image.Image:
    """Open image bytes with Pillow."""
    return Image.open(io.BytesIO(data))


async def test_generate_gpt_image_base64(client: openai.AsyncOpenAI) -> None:
    """GPT image models answer base64 PNGs with usage, without revised prompts."""
    result = await client.images.generate(model="gpt-image-1", prompt="a red fox")

    assert result.data is not None
    (item,) = result.data
    assert item.url is None
    assert item.revised_prompt is None
    picture = decode(base64.b64decode(item.b64_json or ""))
    assert picture.format == "PNG"
    assert picture.size == (1024, 1024)
    assert result.size == "1024x1024"
    assert result.output_format == "png"
    assert result.usage is not None
    assert result.usage.total_tokens > 0


async def test_generate_url_is_served(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """With response_format url the image is served by the simulator."""
    result = await client.images.generate(
        model="dall-e-3",
        prompt="a red fox",
        size="256x128",
        response_format="url",
        n=2,
    )

    assert result.data is not None
    assert [item.revised_prompt for item in result.data] == ["a red fox"] * 2
    pictures = []
    async with aiohttp.ClientSession() as session:
        for item in result.data:
            assert item.url is not None
            assert item.url.startswith(sim.base_url.removesuffix("/v1") + "/files/")
            async with session.get(item.url) as response:
                assert response.content_type == "image/png"
                pictures.append(decode(await response.read()))
    assert [p.size for p in pictures] == [(256, 128)] * 2
    assert pictures[0].getpixel((0, 0)) != pictures[1].getpixel((0, 0))
    assert result.usage is None


async def test_url_servers(sim: OpenAISimulator, client: openai.AsyncOpenAI) -> None:
    """A server set to answer URLs does so for any model by default."""
    sim.settings.image_response = "url"

    result = await client.images.generate(model="gpt-image-1", prompt="a fox")

    assert result.data is not None
    assert result.data[0].url is not None
    assert result.data[0].b64_json is None


async def test_served_files(sim: OpenAISimulator) -> None:
    """Tests serve files of their own: bytes, redirects, encoded bodies, errors."""
    image = sim.serve_file("image", png())
    moved = sim.serve_file("moved", status=302, headers={"Location": image})
    packed = sim.serve_file(
        "packed", gzip.compress(png()), headers={"Content-Encoding": "gzip"}
    )
    gone = sim.serve_file("gone", b"Gone", status=410)
    base = sim.base_url.removesuffix("/v1")
    assert image == f"{base}/files/image.png"

    async with aiohttp.ClientSession() as session:
        async with session.get(image) as response:
            assert response.content_type == "image/png"
            assert await response.read() == png()
        async with session.get(moved, allow_redirects=False) as response:
            assert response.status == 302
            assert response.headers["Location"] == image
        async with session.get(packed, auto_decompress=False) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(await response.read()) == png()
        async with session.get(gone) as response:
            assert (response.status, await response.read()) == (410, b"Gone")
        async with session.get(f"{base}/files/unknown.png") as response:
            assert response.status == 404
    assert [request.path for request in sim.requests] == [
        "/files/image.png",
        "/files/moved.png",
        "/files/packed.png",
        "/files/gone.png",
        "/files/unknown.png",
    ]


async def test_trickled_file(sim: OpenAISimulator) -> None:
    """A trickled file comes in pieces, the whole of it in the end."""
    url = sim.serve_file("slow", b"abc", trickle=True)

    async with aiohttp.ClientSession() as session, session.get(url) as response:
        pieces = [piece async for piece in response.content.iter_any()]

    assert b"".join(pieces) == b"abc"
    assert len(pieces) > 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"model": "gpt-image-1", "response_format": "b64_json"},
            "Unknown parameter: 'response_format'.",
        ),
        ({"size": "huge"}, "Invalid value: 'huge'."),
        ({"n": 11}, "Invalid 'n': integer out of range."),
        ({"prompt": ""}, "Missing required parameter: 'prompt'."),
    ],
)
async def test_generate_rejected(
    client: openai.AsyncOpenAI, fields: dict[str, object], message: str
) -> None:
    """Bad parameters are rejected as OpenAI does."""
    request: dict[str, object] = {"prompt": "a fox", **fields}
    with pytest.raises(openai.BadRequestError) as err:
        await client.images.generate(**request)  # type: ignore[call-overload]
    assert message in err.value.body["message"]


async def test_edit_single_and_several_images(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Edits take one image or a list (image[]) and answer a PNG."""
    single = await client.images.edit(
        model="gpt-image-1", image=("in.png", png(), "image/png"), prompt="make it blue"
    )
    several = await client.images.edit(
        model="gpt-image-1",
        image=[("a.png", png(), "image/png"), ("b.png", png(16, 16), "image/png")],
        prompt="combine",
        size="1024x1536",
    )

    assert single.data is not None and several.data is not None
    assert decode(base64.b64decode(single.data[0].b64_json or "")).size == (1024, 1024)
    assert decode(base64.b64decode(several.data[0].b64_json or "")).size == (1024, 1536)
    assert sim.requests[0].json is None
    assert b"make it blue" in sim.requests[0].body


async def test_edit_rejects_undecodable_image(client: openai.AsyncOpenAI) -> None:
    """An edit whose image does not decode is a 400."""
    with pytest.raises(openai.BadRequestError) as err:
        await client.images.edit(
            model="gpt-image-1",
            image=("in.png", b"not an image", "image/png"),
            prompt="x",
        )
    assert err.value.body["message"].startswith(
        "Invalid image file or mode for image 1"
    )


def test_plain_png_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Pillow the hand-written PNG has the same size and colours."""
    monkeypatch.setattr(imagegen, "HAVE_PILLOW", False)

    data = imagegen.draw_png("a fox", 40, 20)
    picture = decode(data)

    assert picture.size == (40, 20)
    assert picture.getpixel((0, 0)) == decode(
        imagegen.draw_png_plain("a fox", 4, 4)
    ).getpixel((0, 0))
    assert picture.getpixel((0, 0)) != picture.getpixel((20, 10))
    assert imagegen.is_image(data)
    assert not imagegen.is_image(b"text")
