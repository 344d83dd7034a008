"""translations/en.json: complete, sorted, and covering every key the code uses."""

from __future__ import annotations

import json
from pathlib import Path
import re
from typing import Any

import pytest

from custom_components.openai_compatible.const import PROVIDERS

PACKAGE = Path(__file__).parent.parent / "custom_components" / "openai_compatible"
EN = json.loads((PACKAGE / "translations" / "en.json").read_text(encoding="utf-8"))

# A translated error raised anywhere in the package: ServerError("key", ...),
# its subclasses, or translation_key="key".
RAISED_KEY = re.compile(
    r"(?:\b[A-Z]\w*Error\(\s*|translation_key=)\"([a-z_]+)\"", re.MULTILINE
)

REQUIRED_EXCEPTIONS = {
    "api_error": {"message"},
    "cannot_connect": set(),
    "evaluate_failed": {"problem"},
    "image_generation_failed": {"message"},
    "invalid_auth": set(),
    "max_tool_rounds": {"rounds"},
    "rate_limited": set(),
    "rate_limited_retry": {"retry_after"},
    "reauth_started": set(),
    "structured_output_invalid": {"problem"},
    "timeout_connect": set(),
    "tools_unsupported": {"message"},
    "unsupported_attachment": {"mime_type"},
}


def _strings(node: Any) -> list[str]:
    """Return every string in a translation tree."""
    if isinstance(node, dict):
        return [text for value in node.values() for text in _strings(value)]
    return [node]


def _assert_sorted(node: Any, path: str = "") -> None:
    """Assert that keys are sorted at every level, as Home Assistant keeps them."""
    if isinstance(node, dict):
        assert list(node) == sorted(node), f"keys of {path or 'root'} not sorted"
        for key, value in node.items():
            _assert_sorted(value, f"{path}.{key}")


def test_sorted_and_self_contained() -> None:
    """Keys are sorted and no string refers to core's shared strings."""
    _assert_sorted(EN)
    for text in _strings(EN):
        assert isinstance(text, str)
        assert text.strip() == text
        assert text
        assert "[%key:" not in text


@pytest.mark.parametrize(("key", "placeholders"), REQUIRED_EXCEPTIONS.items())
def test_required_exceptions(key: str, placeholders: set[str]) -> None:
    """The exceptions that setup and the engine raise are all there."""
    message = EN["exceptions"][key]["message"]
    assert set(re.findall(r"{(\w+)}", message)) == placeholders


def test_every_raised_key_is_translated() -> None:
    """Each translation key raised in the package has an exceptions entry."""
    raised = {
        key
        for path in PACKAGE.glob("*.py")
        if path.name != "config_flow.py"
        for key in RAISED_KEY.findall(path.read_text(encoding="utf-8"))
    }
    assert raised
    missing = raised - set(EN["exceptions"])
    assert not missing, f"exceptions without a translation: {sorted(missing)}"


def test_provider_labels() -> None:
    """Every preset has a label in the provider dropdown."""
    assert set(EN["selector"]["provider"]["options"]) == set(PROVIDERS)


def test_flow_strings() -> None:
    """The config flow's steps, errors and aborts are all translated."""
    config = EN["config"]
    assert set(config["step"]) == {
        "user",
        "connect",
        "model",
        "reauth_confirm",
        "reconfigure",
    }
    assert set(config["error"]) >= {
        "cannot_connect",
        "invalid_auth",
        "invalid_url",
        "timeout_connect",
        "unknown",
        "not_compatible",
        "rate_limited",
        "api_error",
    }
    assert set(config["abort"]) >= {
        "already_configured",
        "reauth_successful",
        "reconfigure_successful",
    }
    for step in config["step"].values():
        assert set(step.get("data", {})) == set(step.get("data_description", {}))
    for kind in ("conversation", "ai_task_data"):
        subentry = EN["config_subentries"][kind]
        assert set(subentry["initiate_flow"]) == {"user", "reconfigure"}
        assert "entry_not_loaded" in subentry["abort"]
        init = subentry["step"]["init"]
        assert set(init["data"]) == set(init["data_description"])
