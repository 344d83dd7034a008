"""The requests the simulator received, as tests read them back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class Headers(dict[str, str]):
    """Request headers under lower-case names, looked up regardless of case."""

    def __getitem__(self, key: str) -> str:
        """Return the header's value."""
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        """Tell whether the header was sent."""
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        """Return the header's value, or the default."""
        return super().get(key.lower(), default)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the simulator received it."""

    method: str
    path: str
    headers: Headers
    json: Any
    body: bytes
