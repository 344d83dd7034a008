"""Reconcile the test harness with Home Assistant 2026.11.

pytest-homeassistant-custom-component 0.13.375 was generated from Home
Assistant 2026.10 and is installed here with ``homeassistant==2026.11.0`` as an
override (see requirements_override.txt). Three things then go wrong before a
single test runs; this plugin fixes them. It is loaded first, with
``-p tests.harness_skews`` in the pytest ``addopts`` of pyproject.toml, i.e.
before any plugin registered through entry points (the harness, respx, ...).
``tests`` must be importable at that point: scripts/test exports
``PYTHONPATH=<repo>`` and scripts/setup drops a ``.pth`` file with the
repository path into ``.venv``, so a bare ``.venv/bin/pytest`` works too.

The plugin must not import ``custom_components.openai_compatible``: pytest-cov
starts measuring after plugins are loaded, and code imported here would be
reported as not covered.

1. httpx aliasing. Home Assistant 2026.11 calls ``httpx2.alias_httpx()`` in
   ``homeassistant/__init__.py`` so that ``import httpx`` yields httpx2, and
   that call raises ``RuntimeError`` when ``httpx`` was imported before. The
   harness (``import respx`` in its plugins.py) and respx's own pytest plugin
   import httpx before anything imports homeassistant. Fix: alias first.

2. ``_clear_logger_overwrites``. The harness's common.py does
   ``from homeassistant.components.logger import _clear_logger_overwrites``;
   in 2026.11 that helper lives in ``logger/helpers.py`` and is no longer
   re-exported, so loading the harness fails with ImportError. Fix: when
   ``homeassistant.components.logger`` is imported, give it the name: the
   helper from ``logger.helpers`` if present, a no-op otherwise. This is done
   by an import hook, not by importing the logger now, because the harness
   must patch ``homeassistant.helpers.json`` and time functions before the
   bulk of Home Assistant is imported.

3. ``custom_components`` shadowing. The harness ships
   ``testing_config/custom_components/__init__.py`` and uses
   ``testing_config`` as the config dir of the ``hass`` fixture; Home
   Assistant's loader then imports that regular package as the top-level
   ``custom_components``, which hides our ``custom_components/`` folder (a
   namespace package) unless a test module happened to import ours first, and
   the integration is "not found". Fix: register the top-level
   ``custom_components`` package now, with our folder first on its
   ``__path__`` and the harness's folder after it.

4. Sockets (no code here). The harness disables sockets (pytest-socket) except
   to localhost through its own event-loop hooks. A test that talks to a real
   local server (the simulator) takes the ``socket_enabled`` fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import importlib.abc
import importlib.machinery
import importlib.util
from pathlib import Path
import sys
from types import ModuleType
from typing import Any

import httpx2

REPO_ROOT = Path(__file__).resolve().parent.parent
OUR_CUSTOM_COMPONENTS = REPO_ROOT / "custom_components"

# --- 1. alias httpx to httpx2 before anybody imports httpx ------------------
httpx2.alias_httpx()


# --- 2. patch homeassistant.components.logger when it gets imported ---------
class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Run a callback on a module right after it is executed."""

    def __init__(self, fullname: str, patch: Callable[[ModuleType], None]) -> None:
        self._fullname = fullname
        self._patch = patch

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._fullname:
            return None
        # Let the other finders locate the real module, then wrap its loader.
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        real_exec = spec.loader.exec_module
        patch = self._patch

        def exec_module(module: ModuleType) -> None:
            real_exec(module)
            patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _add_clear_logger_overwrites(logger: ModuleType) -> None:
    if hasattr(logger, "_clear_logger_overwrites"):
        return  # a Home Assistant that still exports it
    helpers = sys.modules.get(f"{logger.__name__}.helpers")
    real = getattr(helpers, "_clear_logger_overwrites", None)

    def _noop(hass: Any) -> None:
        """Stand-in for the helper the harness expects (nothing to clear)."""

    logger._clear_logger_overwrites = real or _noop  # type: ignore[attr-defined]


if "homeassistant.components.logger" in sys.modules:  # pragma: no cover
    _add_clear_logger_overwrites(sys.modules["homeassistant.components.logger"])
else:
    sys.meta_path.insert(
        0,
        _PatchAfterImport(
            "homeassistant.components.logger", _add_clear_logger_overwrites
        ),
    )


# --- 3. our custom_components folder first on custom_components.__path__ ----
def _install_custom_components() -> None:
    paths = [str(OUR_CUSTOM_COMPONENTS)]
    harness = importlib.util.find_spec("pytest_homeassistant_custom_component")
    harness_dirs = harness.submodule_search_locations if harness else None
    harness_cc = (
        Path(harness_dirs[0]) / "testing_config" / "custom_components"
        if harness_dirs
        else None
    )
    existing = sys.modules.get("custom_components")
    if existing is not None:  # pragma: no cover - imported before us
        if paths[0] not in list(existing.__path__):
            existing.__path__.insert(0, paths[0])  # type: ignore[attr-defined]
        return
    init = harness_cc / "__init__.py" if harness_cc else None
    if harness_cc is not None and init is not None and init.is_file():
        paths.append(str(harness_cc))
        spec = importlib.util.spec_from_file_location(
            "custom_components", init, submodule_search_locations=paths
        )
    else:  # pragma: no cover - harness layout changed
        spec = importlib.machinery.ModuleSpec(
            "custom_components", None, is_package=True
        )
        spec.submodule_search_locations = paths
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_components"] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)


_install_custom_components()
