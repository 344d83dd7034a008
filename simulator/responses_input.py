"""The input items of a Responses request, checked as OpenAI checks them."""

from __future__ import annotations

from typing import Any

from .sealed_reasoning import decrypt_reasoning
from .wire import (
    APIError,
    decode_data_url,
    empty_array,
    invalid_type,
    invalid_value,
    missing,
)

# Items a response gives back, which a request may send again as input.
OUTPUT_ITEMS = (
    "message",
    "function_call",
    "reasoning",
    "web_search_call",
    "code_interpreter_call",
    "image_generation_call",
)
ITEM_TYPES = (*OUTPUT_ITEMS, "function_call_output")
_INPUT_ROLES = ("user", "system", "developer", "assistant")
_PARTS = {
    "assistant": ("output_text", "refusal", "input_text"),
    "user": ("input_text", "input_image", "input_file"),
}
_TEXT_PARTS = ("input_text",)


def validate_input(request_input: Any, *, stored: bool) -> None:
    """Check the input items, the pairing of calls and their outputs included."""
    if isinstance(request_input, str):
        return
    if not isinstance(request_input, list):
        raise invalid_type("input", "a string or an array", request_input)
    if not request_input:
        raise empty_array("input")
    calls: set[str] = set()
    for index, item in enumerate(request_input):
        param = f"input[{index}]"
        if not isinstance(item, dict):
            raise invalid_type(param, "an object", item)
        kind = item.get("type", "message")
        if kind not in ITEM_TYPES:
            raise invalid_value(f"{param}.type", kind, ITEM_TYPES)
        if kind == "message":
            _validate_message(item, param)
        elif kind == "function_call":
            calls.add(_validate_call(item, param))
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                raise APIError(
                    "No tool call found for function call output with call_id "
                    f"{item.get('call_id')}.",
                    param="input",
                )
            if not isinstance(item.get("output"), (str, list)):
                raise missing(f"{param}.output")
        elif kind == "reasoning":
            _validate_reasoning_item(request_input, index, stored=stored)
        elif not isinstance(item.get("id"), str):
            raise missing(f"{param}.id")


def _validate_message(item: dict[str, Any], param: str) -> None:
    """Check a message: its role and its content parts."""
    role = item.get("role")
    if role not in _INPUT_ROLES:
        raise invalid_value(f"{param}.role", role, _INPUT_ROLES)
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise invalid_type(f"{param}.content", "a string or an array", content)
    allowed = _PARTS.get(str(role), _TEXT_PARTS)
    for number, part in enumerate(content):
        _validate_part(part, allowed, f"{param}.content[{number}]")


def _validate_part(part: Any, allowed: tuple[str, ...], param: str) -> None:
    """Check one content part; data URLs must decode."""
    if not isinstance(part, dict):
        raise invalid_type(param, "an object", part)
    kind = part.get("type")
    if kind not in allowed:
        raise invalid_value(f"{param}.type", kind, allowed)
    if kind in ("input_text", "output_text"):
        if not isinstance(part.get("text"), str):
            raise missing(f"{param}.text")
    elif kind == "refusal":
        if not isinstance(part.get("refusal"), str):
            raise missing(f"{param}.refusal")
    elif kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) and not isinstance(part.get("file_id"), str):
            raise missing(f"{param}.image_url")
        if isinstance(url, str) and not url.startswith(("http://", "https://")):
            decode_data_url(url, f"{param}.image_url", image=True)
        if part.get("detail", "auto") not in ("auto", "low", "high"):
            raise invalid_value(
                f"{param}.detail", part.get("detail"), ("auto", "low", "high")
            )
    else:
        _validate_file(part, param)


def _validate_file(part: dict[str, Any], param: str) -> None:
    """Check an input file: its data with a name, or a file id or URL."""
    data = part.get("file_data")
    if isinstance(data, str):
        if not isinstance(part.get("filename"), str):
            raise missing(f"{param}.filename")
        decode_data_url(data, f"{param}.file_data", image=False)
    elif not isinstance(part.get("file_id"), str) and not isinstance(
        part.get("file_url"), str
    ):
        raise missing(f"{param}.file_data")


def _validate_call(item: dict[str, Any], param: str) -> str:
    """Check a function call given back; return its call id."""
    for name in ("call_id", "name", "arguments"):
        if not isinstance(item.get(name), str):
            raise missing(f"{param}.{name}")
    return str(item["call_id"])


def _validate_reasoning_item(
    request_input: list[Any], index: int, *, stored: bool
) -> None:
    """Check a reasoning item: ours, with its content, followed by its output."""
    item = request_input[index]
    item_id = item.get("id")
    if not isinstance(item_id, str):
        raise missing(f"input[{index}].id")
    if not isinstance(item.get("summary"), list):
        raise missing(f"input[{index}].summary")
    encrypted = item.get("encrypted_content")
    if encrypted is None and not stored:
        raise APIError(
            f"Item with id '{item_id}' not found. Items are not persisted when "
            "`store` is set to false. Try again with `store` set to true, or remove "
            "this item from your input.",
            status=404,
            param="input",
        )
    if encrypted is not None and (
        not isinstance(encrypted, str) or decrypt_reasoning(item_id, encrypted) is None
    ):
        raise APIError(
            f"The encrypted content for item {item_id} could not be verified.",
            param="input",
            code="invalid_encrypted_content",
        )
    following = request_input[index + 1] if index + 1 < len(request_input) else None
    if not _is_output(following):
        raise APIError(
            f"Item '{item_id}' of type 'reasoning' was provided without its required "
            "following item.",
            param="input",
        )


def _is_output(item: Any) -> bool:
    """Tell whether an input item is one a model gave (not reasoning)."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in OUTPUT_ITEMS and kind != "reasoning"
