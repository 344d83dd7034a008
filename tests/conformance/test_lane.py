"""The lane's table and README section."""

from __future__ import annotations

import pytest

from conformance.lane import END_MARKER, START_MARKER, Running, replace_section, table
from conformance.recorder import RecordingProxy
from conformance.scenarios import SCENARIOS, Cell
from conformance.servers import CONFIGURATIONS


def test_table_has_a_row_per_configuration_and_a_column_per_scenario() -> None:
    """Cells show their verdict; pipes are escaped; missing cells say so."""
    run = Running(CONFIGURATIONS[0], RecordingProxy("x", "http://127.0.0.1:1"))
    run.cells[SCENARIOS[0].name] = Cell("clear", "no | tools")
    lines = table([run]).splitlines()
    assert len(lines) == 3
    assert lines[0].count("|") == len(SCENARIOS) + 4
    assert "clear error (no \\| tools)" in lines[2]
    assert "not run" in lines[2]


def test_replace_section_keeps_the_rest() -> None:
    """Only the text between the markers is replaced, however often."""
    text = f"intro\n{START_MARKER}\nold\n{END_MARKER}\noutro\n"
    once = replace_section(text, "new")
    assert once == f"intro\n{START_MARKER}\nnew\n{END_MARKER}\noutro\n"
    assert replace_section(once, "new") == once
    with pytest.raises(ValueError):
        replace_section("no markers", "x")
