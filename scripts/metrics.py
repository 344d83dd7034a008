"""The size targets of the integration, each with its figure and met or not met.

    scripts/metrics

A report, not a gate: it exits 0 whatever the figures say, and 1 only when a
figure cannot be measured (the turn's list in docs/architecture.md missing
or naming a module that does not exist, or the duplicates count failing).
"""

from __future__ import annotations

from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
import re
import shutil
import subprocess
import sys

from tests.test_layers import room_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path("custom_components") / "openai_compatible"
ARCHITECTURE = Path("docs") / "architecture.md"
TURN_START = "<!-- turn-modules:start -->"
TURN_END = "<!-- turn-modules:end -->"
_LISTED_MODULE = re.compile(r"^\s*(?:[-*]|\d+\.)\s+`([^`]+\.py)`", re.MULTILINE)
_PAIRS = re.compile(r"^(\d+) pairs\b")

INTEGRATION_LINES = 12_000
MODULE_LINES = 400
TURN_MODULES = 15
DUPLICATE_PAIRS = 10
README_LINES = 900


class MeasurementError(Exception):
    """A figure that could not be measured."""


@dataclass(frozen=True)
class Figure:
    """One target: what is measured, its figure, the target, and whether it holds."""

    name: str
    figure: str
    target: str
    met: bool | None  # None: skipped, the figure says why

    def line(self) -> str:
        """Return the report's line for this target."""
        if self.met is None:
            return f"{self.name}: {self.figure}"
        verdict = "met" if self.met else "not met"
        return f"{self.name}: {self.figure}; target {self.target}: {verdict}"


def _lines(path: Path) -> int:
    """Return the number of lines of a text file, as `wc -l` counts them."""
    return path.read_bytes().count(b"\n")


def module_lines(root: Path) -> dict[str, int]:
    """Return each module of the integration with its number of lines."""
    package = root / PACKAGE
    return {
        path.relative_to(package).as_posix(): _lines(path)
        for path in sorted(package.rglob("*.py"))
    }


def turn_modules(root: Path) -> list[str]:
    """Return the modules listed as a conversation turn's way; check each exists."""
    text = (root / ARCHITECTURE).read_text(encoding="utf-8")
    if TURN_START not in text or TURN_END not in text:
        raise MeasurementError(f"{ARCHITECTURE} has no {TURN_START} list")
    listed = _LISTED_MODULE.findall(text[text.index(TURN_START) : text.index(TURN_END)])
    if missing := [name for name in listed if not (root / PACKAGE / name).is_file()]:
        raise MeasurementError(
            f"{ARCHITECTURE} lists modules that do not exist: {', '.join(missing)}"
        )
    return list(dict.fromkeys(listed))


def room_circle(root: Path) -> list[str] | None:
    """Return a circle of rooms that import each other, or None."""
    try:
        TopologicalSorter(room_graph(root / PACKAGE)).prepare()
    except CycleError as err:
        return list(err.args[1])
    return None


def duplicate_pairs(root: Path, command: str = "duplicates") -> int | None:
    """Return the pairs of repeated code in the integration; None without the tool."""
    if (executable := shutil.which(command)) is None:
        return None
    output = subprocess.run(
        [executable, "--repo", str(root / PACKAGE), "--most", "1", "--seconds", "120"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    if any(line.startswith("incomplete:") for line in output.splitlines()):
        raise MeasurementError(f"{command} did not read the whole package")
    if output.startswith("no duplicates"):
        return 0
    if (match := _PAIRS.match(output)) is None:
        raise MeasurementError(f"{command} answered {output[:80]!r}")
    return int(match.group(1))


def figures(root: Path, duplicates: str = "duplicates") -> list[Figure]:
    """Measure every target."""
    modules = module_lines(root)
    total = sum(modules.values())
    biggest = max(modules, key=modules.__getitem__)
    over = sum(count > MODULE_LINES for count in modules.values())
    turn = turn_modules(root)
    circle = room_circle(root)
    pairs = duplicate_pairs(root, duplicates)
    readme = _lines(root / "README.md")
    return [
        Figure(
            f"integration lines ({PACKAGE}/**/*.py)",
            f"{total:,}",
            f"<= {INTEGRATION_LINES:,}",
            total <= INTEGRATION_LINES,
        ),
        Figure(
            "largest module",
            f"{biggest}, {modules[biggest]:,} lines ({over} over {MODULE_LINES})",
            f"none over {MODULE_LINES}",
            over == 0,
        ),
        Figure(
            f"modules on a conversation turn's way ({ARCHITECTURE})",
            str(len(turn)),
            f"<= {TURN_MODULES}",
            len(turn) <= TURN_MODULES,
        ),
        Figure(
            "import circles between rooms",
            "none" if circle is None else " -> ".join(circle),
            "none",
            circle is None,
        ),
        Figure(
            f"duplicate pairs in {PACKAGE}",
            f"skipped ({duplicates} not installed)" if pairs is None else str(pairs),
            f"<= {DUPLICATE_PAIRS}",
            None if pairs is None else pairs <= DUPLICATE_PAIRS,
        ),
        Figure(
            "README lines", f"{readme:,}", f"<= {README_LINES}", readme <= README_LINES
        ),
    ]


def main() -> int:
    """Print every target; exit 1 only when one could not be measured."""
    try:
        report = figures(ROOT)
    except (MeasurementError, OSError, subprocess.SubprocessError) as err:
        print(f"metrics: {err}", file=sys.stderr)
        return 1
    for figure in report:
        print(figure.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
