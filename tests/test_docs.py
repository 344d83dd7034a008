"""The documents link to files and headings that exist, and show every picture."""

from __future__ import annotations

from pathlib import Path
import re

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (
    "README.md",
    "CONTRIBUTING.md",
    "docs/architecture.md",
    "docs/benchmarks.md",
)
_LINK = re.compile(r"\]\(([^)\s]+)\)|<img src=\"([^\"]+)\"")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _anchors(path: Path) -> set[str]:
    """Return the anchors GitHub gives the headings of a markdown file."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {
        re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        for line in text.splitlines()
        if line.startswith("#")
    }


def _links(document: Path) -> list[str]:
    """Return the links of a document that stay in the repository."""
    text = _FENCE.sub("", document.read_text(encoding="utf-8"))
    return [
        link
        for match in _LINK.finditer(text)
        if not (link := match.group(1) or match.group(2)).startswith(
            ("http://", "https://", "mailto:")
        )
    ]


def test_links_reach_files_and_headings() -> None:
    """Every relative link names a file that exists, and a heading it has."""
    broken = []
    for name in DOCUMENTS:
        document = ROOT / name
        for link in _links(document):
            path, _, anchor = link.partition("#")
            target = (document.parent / path).resolve() if path else document
            if not target.exists() or (
                anchor and target.suffix == ".md" and anchor not in _anchors(target)
            ):
                broken.append(f"{name}: {link}")
    assert not broken


def test_every_picture_is_shown() -> None:
    """Each picture in docs/images is shown by the README."""
    shown = {Path(link).name for link in _links(ROOT / "README.md")}
    pictures = {path.name for path in (ROOT / "docs" / "images").glob("*.png")}
    assert pictures
    assert pictures <= shown
