"""The package's rooms import downwards: no two rooms import each other.

A room is a top-level module or a subpackage (docs/architecture.md). Imports
under `TYPE_CHECKING` are left out: they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "custom_components" / "openai_compatible"


def _room(parts: list[str]) -> str:
    """Return the room a module path (relative to the package) is in."""
    if not parts or parts == ["__init__"]:
        return "__init__"
    return parts[0]


def _type_only(tree: ast.Module) -> set[int]:
    """Return the ids of the nodes under an `if TYPE_CHECKING:`."""
    return {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }


def _imported_rooms(package_root: Path, path: Path) -> Iterator[str]:
    """Yield the rooms one module imports at run time, relatively."""
    module = list(path.relative_to(package_root).with_suffix("").parts)
    package = module[:-1]
    tree = ast.parse(path.read_text())
    type_only = _type_only(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level
            and id(node) not in type_only
        ):
            base = package[: len(package) - node.level + 1]
            yield _room(base + (node.module.split(".") if node.module else []))


def room_graph(package: Path) -> dict[str, set[str]]:
    """Return each room with the other rooms it imports."""
    graph: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        room = _room(list(path.relative_to(package).with_suffix("").parts))
        imported = graph.setdefault(room, set())
        imported.update(
            other for other in _imported_rooms(package, path) if other != room
        )
    return graph


def test_rooms_import_downwards() -> None:
    """The rooms can be ordered so that each imports only rooms below it."""
    graph = room_graph(PACKAGE)
    assert {"net", "wire", "models", "errors"} <= graph.keys()
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as err:
        pytest.fail(f"rooms that import each other: {err.args[1]}")
    assert order.index("net") < order.index("models") < order.index("wire")


def test_a_room_that_imports_back_is_found(tmp_path: Path) -> None:
    """Two rooms importing each other make a circle the check sees."""
    (tmp_path / "low").mkdir()
    (tmp_path / "low" / "a.py").write_text("from ..high import b\n")
    (tmp_path / "high.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from .low.a import x\n"
        "if TYPE_CHECKING:\n"
        "    from . import Entry\n"
    )
    assert room_graph(tmp_path) == {"low": {"high"}, "high": {"low"}}
