"""The opaque content of reasoning items: sealed when issued, checked when sent back."""

from __future__ import annotations

import base64
import binascii

_ENCRYPTED_PREFIX = "gAAAAsim"


def encrypt_reasoning(item_id: str, summary: str) -> str:
    """Return the opaque content of a reasoning item, as this server issues it."""
    return (
        _ENCRYPTED_PREFIX + base64.b64encode(f"{item_id}\n{summary}".encode()).decode()
    )


def decrypt_reasoning(item_id: str, encrypted: str) -> str | None:
    """Return the summary hidden in a reasoning item's content; None if not ours."""
    if not encrypted.startswith(_ENCRYPTED_PREFIX):
        return None
    try:
        text = base64.b64decode(encrypted[len(_ENCRYPTED_PREFIX) :], validate=True)
    except binascii.Error:
        return None
    owner, _, summary = text.decode(errors="replace").partition("\n")
    return summary if owner == item_id else None
