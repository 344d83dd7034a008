"""Calls the provider ran itself: shown as external calls with their results."""

from __future__ import annotations

from typing import Any, Final

from ..net.readers import JSONObject

# What of each provider-run call goes back to the server besides its type, id
# and status, by the type of its call (a generated image without its bytes).
_REPLAYED_KEYS: Final = {
    "web_search_call": ("action",),
    "code_interpreter_call": ("code", "container_id", "outputs"),
    "image_generation_call": (),
}
# The chat log's name of each provider-run tool, by the type of its call.
PROVIDER_CALLS: Final = {kind: kind.removesuffix("_call") for kind in _REPLAYED_KEYS}


def provider_view(kind: str, item: JSONObject) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the arguments and result of a provider-run call, as the chat log shows them.

    The code that ran and what it printed or made; a generated image's prompt
    and size, never its bytes; a web search's action and the sources it read.
    """
    if kind == "code_interpreter_call":
        outputs = item.get("outputs")
        return {"code": item.get("code")}, {
            "outputs": outputs if isinstance(outputs, list) else []
        }
    if kind == "image_generation_call":
        return {"prompt": item.get("revised_prompt")}, {
            key: item[key] for key in ("size", "output_format") if key in item
        }
    action = item.get("action")
    action = action if isinstance(action, dict) else {}
    sources = [
        source["url"]
        for source in action.get("sources") or ()
        if isinstance(source, dict) and isinstance(source.get("url"), str)
    ]
    arguments = {key: value for key, value in action.items() if key != "sources"}
    return arguments, {"sources": sources} if sources else {}


def replayed_call(kind: str, item: JSONObject) -> JSONObject:
    """Return a provider-run call as it goes back to the server."""
    keys = ("type", "id", "status", *_REPLAYED_KEYS[kind])
    kept = {key: item[key] for key in keys if key in item}
    if kind == "image_generation_call":
        kept["result"] = None
    return kept
