"""Image answers a broken or hostile server gives, while the other agent answers."""

from __future__ import annotations

from collections.abc import Callable
import gzip
from typing import Any

from homeassistant.exceptions import HomeAssistantError
import pytest

from custom_components.openai_compatible.const import CONF_TIMEOUT
from custom_components.openai_compatible.media import images
from custom_components.openai_compatible.media.images import (
    GENERATIONS_ROUTE,
    IMAGE_ANSWER_MAX_BYTES,
    IMAGE_FETCH_SECONDS,
    IMAGE_MAX_BASE64_CHARS,
    IMAGE_MAX_BYTES,
    IMAGE_MAX_REDIRECTS,
)
from custom_components.openai_compatible.server_errors.answers import MAX_ERROR_BYTES
from simulator import OpenAISimulator, Pause

from .conftest import FaultHarness, FaultHarnessFactory

PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)
# Seconds the deadline is shortened to, for the download that never ends.
SHORT_DEADLINE = 0.5

type Answer = Callable[[OpenAISimulator], dict[str, Any]]


def image_url(url: str) -> dict[str, Any]:
    """Return an Images API answer naming one image by URL."""
    return {"json": {"created": 1, "data": [{"url": url}]}}


def served(name: str, body: bytes = b"", **options: Any) -> Answer:
    """Return an answer naming a file the faulty server serves with these options."""
    return lambda server: image_url(server.serve_file(name, body, **options))


def redirects(count: int) -> Answer:
    """Return an answer naming a file reached through `count` redirects."""

    def answer(server: OpenAISimulator) -> dict[str, Any]:
        url = server.serve_file("image", PNG)
        for index in range(count):
            url = server.serve_file(
                f"hop{index}", status=302, headers={"Location": url}
            )
        return image_url(url)

    return answer


FAULTS: dict[str, tuple[Answer, str]] = {
    "other_scheme": (
        lambda _: image_url("file:///etc/passwd"),
        "the image could not be fetched: its address is not an http(s) URL",
    ),
    "private_address": (
        lambda _: image_url("http://10.0.0.1/image.png"),
        "the image could not be fetched: its address is on a private network",
    ),
    "redirect_to_link_local": (
        served(
            "hop",
            status=302,
            headers={"Location": "http://169.254.169.254/latest/meta-data/"},
        ),
        "the image could not be fetched: its address is on a link-local network",
    ),
    "redirect_loop": (
        redirects(IMAGE_MAX_REDIRECTS + 1),
        (
            "the image could not be fetched: it was redirected more than "
            f"{IMAGE_MAX_REDIRECTS} times"
        ),
    ),
    "too_large": (
        served("big", bytes(IMAGE_MAX_BYTES + 1)),
        "the image could not be fetched: it is larger than 32 MiB",
    ),
    "gzip_bomb": (
        served(
            "bomb",
            gzip.compress(bytes(IMAGE_MAX_BYTES + 1)),
            headers={"Content-Encoding": "gzip"},
        ),
        "the image could not be fetched: it is larger than 32 MiB",
    ),
    "jpeg_of_fill_bytes": (
        served("fill", b"\xff\xd8" + b"\xff" * (IMAGE_MAX_BYTES - 2)),
        "the server sent an image whose size cannot be read",
    ),
    "jpeg_of_empty_segments": (
        served(
            "segments", b"\xff\xd8" + b"\xff\xe0\x00\x02" * (IMAGE_MAX_BYTES // 4 - 1)
        ),
        "the server sent an image whose size cannot be read",
    ),
    "not_found": (
        served("gone", status=404),
        "the image could not be fetched: the server answered HTTP 404",
    ),
    "base64_too_large": (
        lambda _: {
            "json": {
                "created": 1,
                "data": [{"b64_json": "A" * (IMAGE_MAX_BASE64_CHARS + 4)}],
            }
        },
        "the image is larger than 32 MiB",
    ),
    "json_too_deep": (
        lambda _: {
            "raw": "[" * 1_000_000,
            "headers": {"Content-Type": "application/json"},
        },
        "the server sent an answer that is not JSON: ",
    ),
}


@pytest.mark.parametrize(("answer", "message"), FAULTS.values(), ids=FAULTS)
async def test_image_fault(
    fault_harness: FaultHarnessFactory, answer: Answer, message: str
) -> None:
    """Each fault ends in a translated error that names no URL, the loop free."""
    harness = await fault_harness()
    harness.faulty.enqueue("/images/generations", **answer(harness.faulty))

    assert_refused(await run_draw(harness), message)


async def test_image_that_never_ends(
    fault_harness: FaultHarnessFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A download that trickles on ends at the deadline (shortened here)."""
    assert IMAGE_FETCH_SECONDS == 60.0
    monkeypatch.setattr(images, "IMAGE_FETCH_SECONDS", SHORT_DEADLINE)
    harness = await fault_harness()
    answer = served("slow", PNG * 100, trickle=True)
    harness.faulty.enqueue("/images/generations", **answer(harness.faulty))

    assert_refused(
        await run_draw(harness),
        f"the image could not be fetched: it took longer than {SHORT_DEADLINE} s",
    )


async def test_images_server_that_trickles_meets_the_deadline(
    fault_harness: FaultHarnessFactory,
) -> None:
    """An answer that trickles on ends at the request's deadline."""
    harness = await fault_harness(options={CONF_TIMEOUT: 1})
    harness.faulty.enqueue(GENERATIONS_ROUTE, sse=[" ", Pause(0.1)] * 40, done=False)

    err = await run_draw(harness)

    assert err.translation_key == "timeout_answer"


async def test_images_answer_past_the_cap(fault_harness: FaultHarnessFactory) -> None:
    """An answer larger than 45 MiB is not read to its end."""
    assert IMAGE_ANSWER_MAX_BYTES == 45 * 1024 * 1024
    harness = await fault_harness()
    image = b"A" * IMAGE_ANSWER_MAX_BYTES
    harness.faulty.enqueue(
        GENERATIONS_ROUTE,
        raw=b'{"created": 1, "data": [{"b64_json": "' + image + b'"}]}',
        headers={"Content-Type": "application/json"},
    )

    err = await run_draw(harness)

    assert err.translation_key == "answer_too_large"
    assert err.translation_placeholders == {"limit": "45 MiB"}


async def test_images_error_body_is_read_only_in_part(
    fault_harness: FaultHarnessFactory,
) -> None:
    """An error body past the cap is cut: its words come before it ends, if ever."""
    harness = await fault_harness(options={CONF_TIMEOUT: 1})
    body = "x" * (4 * MAX_ERROR_BYTES)
    harness.faulty.enqueue(
        GENERATIONS_ROUTE, status=400, sse=[body, Pause(2)], done=False
    )

    err = await run_draw(harness)

    assert err.translation_key == "api_error"
    assert err.translation_placeholders is not None
    assert err.translation_placeholders["message"].startswith("xxxx")


async def test_images_rate_limit_is_waited_out(
    fault_harness: FaultHarnessFactory,
) -> None:
    """A 429 that says when is sent again, as every request is."""
    harness = await fault_harness()
    harness.faulty.enqueue(GENERATIONS_ROUTE, status=429, headers={"Retry-After": "0"})

    response = await harness.run(draw(harness))

    assert response["mime_type"] == "image/png"
    images = [r for r in harness.faulty.requests if r.path.endswith(GENERATIONS_ROUTE)]
    assert len(images) == 2


async def run_draw(harness: FaultHarness) -> HomeAssistantError:
    """Ask for an image through the harness; return the error it must end in."""
    with pytest.raises(HomeAssistantError) as err:
        await harness.run(draw(harness))
    return err.value


def assert_refused(err: HomeAssistantError, message: str) -> None:
    """Assert a translated image failure that starts so and shows no address."""
    assert err.translation_key == "image_generation_failed"
    assert err.translation_placeholders is not None
    shown = err.translation_placeholders["message"]
    assert shown.startswith(message)
    assert "://" not in shown
    assert "169.254" not in shown
    assert "10.0.0.1" not in shown


async def draw(harness: FaultHarness) -> dict[str, Any]:
    """Ask the faulty entry's task for an image."""
    response = await harness.hass.services.async_call(
        "ai_task",
        "generate_image",
        {
            "task_name": "Draw",
            "entity_id": harness.faulty_ai_task,
            "instructions": "A fox",
        },
        blocking=True,
        return_response=True,
    )
    assert isinstance(response, dict)
    return response
