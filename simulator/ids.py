"""Random ids, such as those OpenAI gives its answers, calls and requests."""

from __future__ import annotations

import random
import string

_ALPHANUMERIC = string.ascii_letters + string.digits


def new_id(prefix: str, length: int = 24) -> str:
    """Return an id such as `call_` followed by random letters and digits."""
    return prefix + "".join(random.choices(_ALPHANUMERIC, k=length))
