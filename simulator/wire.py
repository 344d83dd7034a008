"""Shared wire helpers: OpenAI-style errors and data URL parsing."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
import email
import email.policy
import re
from typing import Any

_DATA_URL = re.compile(
    r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)(?:;[\w.+-]+=[^;,]*)*;base64,(?P<data>.*)$",
    re.DOTALL,
)


class APIError(Exception):
    """A request failure, answered with an OpenAI-style error body."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        type_: str = "invalid_request_error",
    ) -> None:
        """Keep the parts of the error body."""
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type_

    def body(self) -> dict[str, Any]:
        """Return the error body as OpenAI sends it."""
        return error_body(
            self.message, param=self.param, code=self.code, type_=self.type
        )


def error_body(
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    type_: str = "invalid_request_error",
) -> dict[str, Any]:
    """Return `{"error": {...}}` as OpenAI sends it."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def type_name(value: object) -> str:
    """Name a JSON value's type the way OpenAI's messages do."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def one_of(values: tuple[str, ...]) -> str:
    """Return "'a', 'b', and 'c'" for a list of supported values."""
    quoted = [f"'{value}'" for value in values]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return f"{', '.join(quoted[:-1])}, and {quoted[-1]}"


def invalid_type(param: str, expected: str, value: object) -> APIError:
    """Return the error for a value of the wrong JSON type."""
    return APIError(
        f"Invalid type for '{param}': expected {expected}, but got {type_name(value)} instead.",
        param=param,
        code="invalid_type",
    )


def invalid_value(param: str, value: object, supported: tuple[str, ...]) -> APIError:
    """Return the error for a value outside an enumeration."""
    return APIError(
        f"Invalid value: '{value}'. Supported values are: {one_of(supported)}.",
        param=param,
        code="invalid_value",
    )


def missing(param: str) -> APIError:
    """Return the error for a missing required parameter."""
    return APIError(
        f"Missing required parameter: '{param}'.",
        param=param,
        code="missing_required_parameter",
    )


def unknown_parameter(param: str) -> APIError:
    """Return the error for a parameter the endpoint does not know."""
    return APIError(
        f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter"
    )


def empty_array(param: str) -> APIError:
    """Return the error for an array that must not be empty."""
    return APIError(
        f"Invalid '{param}': empty array. Expected an array with minimum length 1, "
        "but got an empty array instead.",
        param=param,
        code="empty_array",
    )


def decode_data_url(url: str, param: str, *, image: bool) -> tuple[str, bytes]:
    """Return (MIME type, bytes) of a base64 data URL; raise APIError if malformed."""
    kind = "an image MIME type" if image else "a MIME type"
    expected = (
        f"Invalid '{param}'. Expected a base64-encoded data URL with {kind} "
        "(e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got "
    )
    match = _DATA_URL.match(url)
    if match is None:
        raise APIError(
            expected + "a value that is not a base64 data URL.",
            param=param,
            code="invalid_value",
        )
    mime = match["mime"].lower()
    if image and not mime.startswith("image/"):
        raise APIError(
            expected + f"unsupported MIME type '{mime}'.",
            param=param,
            code="invalid_value",
        )
    try:
        data = base64.b64decode(match["data"], validate=True)
    except binascii.Error:
        raise APIError(
            expected + "data that is not valid base64.",
            param=param,
            code="invalid_value",
        ) from None
    return mime, data


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """A file part of a multipart/form-data request."""

    field: str
    filename: str
    data: bytes


def require_multipart(content_type: str) -> None:
    """Raise APIError unless the request is multipart/form-data."""
    if content_type != "multipart/form-data":
        raise APIError(
            f"Invalid Content-Type header ({content_type}), expected "
            "multipart/form-data."
        )


def parse_multipart(
    content_type: str, body: bytes
) -> tuple[dict[str, str], list[UploadedFile]]:
    """Split a multipart/form-data body into text fields and files."""
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body,
        policy=email.policy.HTTP,
    )
    fields: dict[str, str] = {}
    files: list[UploadedFile] = []
    for part in message.iter_parts():
        name = str(part.get_param("name", header="content-disposition"))
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            payload = b""
        if (filename := part.get_filename()) is not None:
            files.append(UploadedFile(name, filename, payload))
        else:
            fields[name] = payload.decode()
    return fields, files
