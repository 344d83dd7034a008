"""What a model cannot take at all (tools, images, files), refused before any request."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from homeassistant.components import conversation

from ..const import Feature
from ..errors import InputError, ModelError, RequestRejectedError
from .capabilities import ModelCapabilities

_ALIASES: Final = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
# Tools estimated at fewer tokens than this say nothing about a prompt's size.
MIN_TOOL_TOKENS: Final = 500
# A prompt counted below this share of its tools' estimate cannot hold them.
_DROPPED_TOOLS_SHARE: Final = 0.8

_ERROR_KEYS: Final = {
    Feature.TOOLS: "model_takes_no_tools",
    Feature.IMAGE_INPUT: "model_takes_no_images",
    Feature.FILE_INPUT: "model_takes_no_files",
}


def normalise_mime_type(mime_type: str | None) -> str:
    """Return the canonical, lower-case form of a media type."""
    cleaned = (mime_type or "").split(";", 1)[0].strip().lower()
    return _ALIASES.get(cleaned, cleaned)


def attachment_feature(attachment: conversation.Attachment) -> Feature:
    """Return what an attachment asks of the model: to see an image, or read a file."""
    if normalise_mime_type(attachment.mime_type).startswith("image/"):
        return Feature.IMAGE_INPUT
    return Feature.FILE_INPUT


def chat_log_attachments(
    chat_log: conversation.ChatLog,
) -> Iterator[conversation.Attachment]:
    """Yield every attachment of the chat log: each is sent again with it."""
    for content in chat_log.content:
        if isinstance(content, conversation.UserContent):
            yield from content.attachments or ()


def check_model_takes(
    capabilities: ModelCapabilities,
    *,
    tools: bool,
    attachments: Iterable[conversation.Attachment],
) -> None:
    """Raise InputError when the model is known to refuse what the request holds."""
    wanted = {attachment_feature(attachment) for attachment in attachments}
    if tools:
        wanted.add(Feature.TOOLS)
    for feature, key in _ERROR_KEYS.items():
        if feature in wanted and capabilities.refuses(feature):
            raise InputError(key, model=capabilities.model)


@contextmanager
def learning_refusals(capabilities: ModelCapabilities) -> Iterator[None]:
    """Remember a general refusal of tools, images or files raised in the block."""
    try:
        yield
    except RequestRejectedError as err:
        if err.general and err.feature in _ERROR_KEYS:
            capabilities.learn_refused(err.feature, err.lesson_source)
        raise


def check_tools_kept(
    capabilities: ModelCapabilities, tool_tokens: int, prompt_tokens: Any
) -> None:
    """Raise when the prompt counted was too small for the tools sent, twice in a row.

    A chat template without a tool format drops `tools` and the model claims actions
    it never did; one count may be wrong, and a template may render tools far shorter
    than their schemas where the server says the model takes them.
    """
    lessons = capabilities.lessons
    if (
        capabilities.report.tools is True
        or tool_tokens < MIN_TOOL_TOKENS
        or not isinstance(prompt_tokens, int)
        or not 0 < prompt_tokens < tool_tokens * _DROPPED_TOOLS_SHARE
    ):
        lessons.tools_doubted = False
        return
    if not lessons.tools_doubted:
        lessons.tools_doubted = True
        return
    capabilities.learn_refused(
        Feature.TOOLS,
        f"{prompt_tokens} prompt tokens counted for about {tool_tokens} of tools",
    )
    raise ModelError("template_drops_tools", model=capabilities.model)
