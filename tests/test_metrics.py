"""scripts/metrics: every size target printed, measured from the repository."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
import sys
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = (
    "integration lines (custom_components/openai_compatible/**/*.py): ",
    "largest module: ",
    "modules on a conversation turn's way (docs/architecture.md): ",
    "import circles between rooms: ",
    "duplicate pairs in custom_components/openai_compatible: ",
    "README lines: ",
)


def _load_metrics() -> ModuleType:
    """Import scripts/metrics.py, which scripts/metrics runs."""
    spec = importlib.util.spec_from_file_location(
        "metrics", ROOT / "scripts" / "metrics.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("metrics", module)
    spec.loader.exec_module(module)
    return module


metrics = _load_metrics()


def test_the_report_prints_each_target_with_its_verdict(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One line per target, in order, with a figure and met or not met."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no duplicates command here
    assert metrics.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(TARGETS)
    for line, target in zip(lines, TARGETS, strict=True):
        assert line.startswith(target)
        if "duplicate" in target:
            assert line.endswith(": skipped (duplicates not installed)")
        else:
            assert line.endswith((": met", ": not met"))
    readme = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines[-1].startswith(f"README lines: {readme:,}; target <= 900: ")


def test_the_turn_list_counts_modules_that_exist(tmp_path: Path) -> None:
    """Listed modules are counted once; one that does not exist is an error."""
    package = tmp_path / "custom_components" / "openai_compatible"
    (package / "wire").mkdir(parents=True)
    (package / "entity.py").write_text("")
    (package / "wire" / "round_trip.py").write_text("")
    doc = tmp_path / "docs" / "architecture.md"
    doc.parent.mkdir()
    listed = "1. `entity.py`: a\n2. `wire/round_trip.py`: b\n- `entity.py`: again\n"
    doc.write_text(f"`outside.py`\n{metrics.TURN_START}\n{listed}{metrics.TURN_END}\n")
    assert metrics.turn_modules(tmp_path) == ["entity.py", "wire/round_trip.py"]
    doc.write_text(f"{metrics.TURN_START}\n1. `gone.py`: c\n{metrics.TURN_END}\n")
    with pytest.raises(metrics.MeasurementError, match="gone.py"):
        metrics.turn_modules(tmp_path)
    doc.write_text("no list\n")
    with pytest.raises(metrics.MeasurementError, match="turn-modules"):
        metrics.turn_modules(tmp_path)


def test_a_circle_of_rooms_is_named(tmp_path: Path) -> None:
    """Two rooms importing each other are reported as a circle."""
    package = tmp_path / "custom_components" / "openai_compatible"
    (package / "low").mkdir(parents=True)
    (package / "low" / "a.py").write_text("from ..high import b\n")
    (package / "high.py").write_text("from .low.a import x\n")
    assert metrics.room_circle(tmp_path) in (
        ["low", "high", "low"],
        ["high", "low", "high"],
    )
    (package / "low" / "a.py").write_text("")
    assert metrics.room_circle(tmp_path) is None


@pytest.mark.parametrize(
    ("answer", "pairs"),
    [
        (
            "7 pairs of places (3 files read), each sharing runs\nD1 a.py:1-6 ~ b.py:1-6",
            7,
        ),
        ("no duplicates (3 files read)", 0),
        ("2 pairs of places (1 files read)\nincomplete: 2 files not read", None),
    ],
)
def test_duplicate_pairs_are_read_from_the_tool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, answer: str, pairs: int | None
) -> None:
    """The count is its first line; an incomplete reading is no figure."""
    tool = tmp_path / "duplicates"
    tool.write_text(f"#!/bin/sh\ncat <<'END'\n{answer}\nEND\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    if pairs is None:
        with pytest.raises(metrics.MeasurementError, match="whole package"):
            metrics.duplicate_pairs(ROOT)
    else:
        assert metrics.duplicate_pairs(ROOT) == pairs
