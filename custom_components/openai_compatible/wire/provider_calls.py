"""Calls the provider ran itself: shown as external calls with their results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..net.readers import JSONObject

# A provider-run call as the chat log shows it: its arguments and its result.
type ProviderView = tuple[dict[str, Any], dict[str, Any]]

# The chat log's name of each provider-run tool, by the type of its call.
PROVIDER_CALLS: Final = {
    "web_search_call": "web_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
}
# What of each call goes back to the server.
_REPLAYED_KEYS: Final = {
    "web_search_call": ("type", "id", "status", "action"),
    "code_interpreter_call": (
        "type",
        "id",
        "status",
        "code",
        "container_id",
        "outputs",
    ),
    # A generated image goes back without its bytes.
    "image_generation_call": ("type", "id", "status"),
}
_CLEARED: Final = {"image_generation_call": {"result": None}}


def provider_view(kind: str, item: JSONObject) -> ProviderView:
    """Return the arguments and result of a provider-run call of this kind."""
    return _VIEWS[kind](item)


def replayed_call(kind: str, item: JSONObject) -> JSONObject:
    """Return a provider-run call as it goes back to the server."""
    kept = {key: item[key] for key in _REPLAYED_KEYS[kind] if key in item}
    return kept | _CLEARED.get(kind, {})


def _web_search_view(item: JSONObject) -> ProviderView:
    """Return the arguments and result of a web search, as the chat log shows them."""
    action = item.get("action")
    action = action if isinstance(action, dict) else {}
    sources = [
        source["url"]
        for source in action.get("sources") or ()
        if isinstance(source, dict) and isinstance(source.get("url"), str)
    ]
    arguments = {key: value for key, value in action.items() if key != "sources"}
    return arguments, {"sources": sources} if sources else {}


def _code_view(item: JSONObject) -> ProviderView:
    """Return the code that ran and what it printed or made."""
    outputs = item.get("outputs")
    return {"code": item.get("code")}, {
        "outputs": outputs if isinstance(outputs, list) else []
    }


def _image_view(item: JSONObject) -> ProviderView:
    """Return the prompt of a generated image, and its size; never its bytes."""
    arguments = {"prompt": item.get("revised_prompt")}
    return arguments, {
        key: item[key] for key in ("size", "output_format") if key in item
    }


_VIEWS: Final[dict[str, Callable[[JSONObject], ProviderView]]] = {
    "web_search_call": _web_search_view,
    "code_interpreter_call": _code_view,
    "image_generation_call": _image_view,
}
