"""Check the integration's metadata: manifest.json, hacs.json, icons and brand images.

And what HACS users expect of the repository: a changelog naming the
manifest's version, CI workflows and issue templates.
"""

from __future__ import annotations

import ast
from importlib import metadata
import json
from pathlib import Path
import re
import sys
from typing import Any

from awesomeversion import AwesomeVersion
import homeassistant
from homeassistant.const import Platform, __version__ as HA_VERSION
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.icon import async_get_icons
from homeassistant.loader import async_get_integration
from packaging.requirements import Requirement
from PIL import Image
import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry
import yaml

from custom_components.openai_compatible import PLATFORMS

from .conftest import SetupEntry

REPO_ROOT = Path(__file__).resolve().parent.parent
INTEGRATION_DIR = REPO_ROOT / "custom_components" / "openai_compatible"
DOMAIN = "openai_compatible"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(name="manifest")
def manifest_fixture() -> dict[str, Any]:
    """Return the parsed manifest.json."""
    manifest: dict[str, Any] = _read_json(INTEGRATION_DIR / "manifest.json")
    return manifest


def test_manifest_key_order(manifest: dict[str, Any]) -> None:
    """Home Assistant wants domain, name, then the other keys sorted."""
    keys = list(manifest)
    assert keys[:2] == ["domain", "name"]
    assert keys[2:] == sorted(keys[2:])


def test_imports_are_home_assistants() -> None:
    """Every package the integration imports at run time is one Home Assistant requires."""
    required = {
        Requirement(item).name.lower()
        for item in metadata.requires("homeassistant") or []
    }
    distributions = metadata.packages_distributions()
    for module in _third_party(type_only=False):
        names = {name.lower() for name in distributions.get(module, [])}
        assert names & required, f"{module} is not a requirement of Home Assistant"


def test_type_only_imports_are_pinned_for_tests() -> None:
    """A package imported only for type checking is pinned where mypy runs."""
    pinned = {
        Requirement(line).name.lower()
        for line in (REPO_ROOT / "requirements_test.txt").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "-"))
    }
    type_only = _third_party(type_only=True) - _third_party(type_only=False)
    assert type_only == {"openai"}
    assert type_only <= pinned


def _third_party(*, type_only: bool) -> set[str]:
    """Return the top-level packages imported at run time, or for type checking."""
    imported = {
        name.split(".")[0]
        for path in INTEGRATION_DIR.rglob("*.py")
        for name in _imported_modules(path, type_only=type_only)
    }
    third_party = imported - set(sys.stdlib_module_names) - {"homeassistant"}
    assert third_party
    return third_party


def _imported_modules(path: Path, *, type_only: bool) -> list[str]:
    """Return the absolute modules a file imports: at run time, or for types only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    checking = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for statement in block.body
        for node in ast.walk(statement)
    }
    modules: list[str] = []
    for node in ast.walk(tree):
        if (id(node) in checking) is not type_only:
            continue
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.append(node.module)
    return modules


def test_manifest_categories(manifest: dict[str, Any]) -> None:
    """The categories are core's AI model one, and speech for the voice platforms."""
    generated = Path(homeassistant.__file__).parent / "generated"
    known = {
        f"{category['slug']}.{sub['slug']}"
        for category in _read_json(generated / "integration_categories.json")
        for sub in category["subcategories"]
    }
    assert manifest["categories"][0] == "ai_voice.ai_models"
    assert set(manifest["categories"]) <= known
    speaks = {Platform.STT, Platform.TTS} <= set(PLATFORMS)
    assert ("ai_voice.speech" in manifest["categories"]) == speaks


def test_hacs_json(manifest: dict[str, Any]) -> None:
    """HACS shows the manifest's name and asks for no newer Home Assistant than ours."""
    hacs = _read_json(REPO_ROOT / "hacs.json")
    assert hacs["name"] == manifest["name"]
    assert AwesomeVersion(hacs["homeassistant"]) <= AwesomeVersion(HA_VERSION)


@pytest.mark.parametrize(
    ("name", "size"),
    [("icon.png", (256, 256)), ("icon@2x.png", (512, 512)), ("logo.png", None)],
)
def test_brand_images(name: str, size: tuple[int, int] | None) -> None:
    """The brand folder holds PNG images of the expected sizes."""
    with Image.open(INTEGRATION_DIR / "brand" / name) as image:
        assert image.format == "PNG"
        if size is not None:
            assert image.size == size
        else:
            width, height = image.size
            assert height in (128, 256)
            assert width >= height


def test_package_is_ours() -> None:
    """``custom_components.openai_compatible`` comes from this repository.

    The harness ships its own ``custom_components`` package; tests/harness_skews
    puts our folder first on its ``__path__``.
    """
    import custom_components.openai_compatible as integration  # noqa: PLC0415

    assert integration.__file__ is not None
    assert Path(integration.__file__).resolve().parent == INTEGRATION_DIR


async def test_loader_finds_our_integration(hass: HomeAssistant) -> None:
    """Home Assistant's loader resolves the domain to this repository's folder."""
    integration = await async_get_integration(hass, DOMAIN)
    assert not integration.is_built_in
    assert Path(integration.file_path).resolve() == INTEGRATION_DIR
    assert integration.version is not None
    assert str(integration.version) == integration.manifest["version"]
    # Nothing is installed for the integration (see the imports' test).
    assert integration.requirements == []


async def test_page_does_not_say_requires_internet(hass: HomeAssistant) -> None:
    """Most servers are the user's own: the integration polls locally, as core's Ollama.

    Home Assistant's integration page says "Requires Internet" for a cloud class.
    """
    integration = await async_get_integration(hass, DOMAIN)
    assert integration.iot_class == "local_polling"


async def test_setup_loads_the_declared_dependencies(
    hass: HomeAssistant, setup_integration: MockConfigEntry
) -> None:
    """Setting up an entry sets up every integration the manifest depends on."""
    integration = await async_get_integration(hass, DOMAIN)
    assert {"conversation", "ai_task"} <= set(integration.dependencies)
    assert set(integration.dependencies) <= hass.config.components
    assert DOMAIN in hass.config.components


async def test_every_entity_has_an_icon(
    hass: HomeAssistant, setup_voice: SetupEntry
) -> None:
    """icons.json loads and names an icon for each entity's translation key."""
    entry = await setup_voice(stt={}, tts={})
    icons = (await async_get_icons(hass, "entity", [DOMAIN]))[DOMAIN]
    entries = er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
    assert entries
    for entry in entries:
        assert entry.translation_key, entry.entity_id
        icon = icons[entry.domain][entry.translation_key]["default"]
        assert re.fullmatch(r"mdi:[a-z0-9-]+", icon), icon
    used = {(entry.domain, entry.translation_key) for entry in entries}
    listed = {(domain, key) for domain, keys in icons.items() for key in keys}
    assert listed <= used, f"icons for no entity: {sorted(listed - used)}"


# --- what HACS users expect in the repository ----------------------------------

GITHUB = REPO_ROOT / ".github"


def _read_yaml(path: Path) -> Any:
    """Return a YAML file's content as GitHub reads it."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_changelog_names_the_manifest_version(manifest: dict[str, Any]) -> None:
    """The newest release in CHANGELOG.md is the version HACS shows."""
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.MULTILINE)
    assert versions
    assert versions[0] == manifest["version"]
    assert AwesomeVersion(versions[0]).simple


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    """Return every step of a workflow's jobs."""
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def test_workflows_validate_and_test() -> None:
    """CI runs hassfest, HACS's check of an integration, and the tests as a developer does."""
    validate = _read_yaml(GITHUB / "workflows" / "validate.yml")
    uses = {step.get("uses", "").split("@")[0]: step for step in _steps(validate)}
    assert "home-assistant/actions/hassfest" in uses
    assert uses["hacs/action"]["with"]["category"] == "integration"

    tests = _read_yaml(GITHUB / "workflows" / "tests.yml")
    # YAML 1.1 reads the key "on" as True.
    assert "pull_request" in tests[True]
    runs = [step["run"] for step in _steps(tests) if "run" in step]
    assert runs == ["scripts/setup", "scripts/test"]


def test_bug_report_asks_for_server_model_and_diagnostics() -> None:
    """A bug report names the server software, the model and attaches diagnostics."""
    template = _read_yaml(GITHUB / "ISSUE_TEMPLATE" / "bug_report.yml")
    required = {
        field["id"]
        for field in template["body"]
        if field.get("validations", {}).get("required")
    }
    assert {"server", "model", "diagnostics"} <= required
    config = _read_yaml(GITHUB / "ISSUE_TEMPLATE" / "config.yml")
    assert config["blank_issues_enabled"] is False
