"""The lane's table and the page section it writes."""

from __future__ import annotations

import pytest

from conformance import servers
from conformance.lane import (
    END_MARKER,
    ROOT,
    START_MARKER,
    TABLE_PAGE,
    Running,
    replace_section,
    table,
)
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


def test_the_table_lives_in_the_benchmarks_page() -> None:
    """The page the lane writes holds the markers once; the README none."""
    page = TABLE_PAGE.read_text(encoding="utf-8")
    assert TABLE_PAGE == ROOT / "docs" / "benchmarks.md"
    assert page.count(START_MARKER) == page.count(END_MARKER) == 1
    assert page.index(START_MARKER) < page.index(END_MARKER)
    assert START_MARKER not in (ROOT / "README.md").read_text(encoding="utf-8")


def test_llama_server_configurations_serve_each_model() -> None:
    """Each llama-server setting runs with the tiny model and with Gemma."""
    by_name = {configuration.name: configuration for configuration in CONFIGURATIONS}
    assert len(by_name) == len(CONFIGURATIONS)
    for name in (
        "llama_server_jinja",
        "llama_server_small_window",
        "llama_server_two_slots",
    ):
        tiny, gemma = by_name[name], by_name[f"{name}_gemma"]
        assert (tiny.model, gemma.model) == ("tiny", "gemma")
        assert tiny.server_args == gemma.server_args
    gemma = by_name["llama_server_small_window_gemma"]
    command = servers.server_command(gemma, servers.Path("tiny.gguf"), 8123)
    assert command[0] == str(servers.LLAMA_SERVER.binary)
    assert command[command.index("--ctx-size") + 1] == str(servers.SMALL_CONTEXT)
    assert command[command.index("--alias") + 1] == servers.GEMMA_ALIAS
    assert "--jinja" in command
    assert command[command.index("--chat-template-file") + 1] == str(
        servers.GEMMA_TEMPLATE
    )


def test_llama_cpp_python_configurations_keep_their_command() -> None:
    """llama-cpp-python serves the tiny model under its alias with its chat format."""
    chatml = next(c for c in CONFIGURATIONS if c.name == "llama_cpp_python_chatml")
    command = servers.server_command(chatml, servers.Path("tiny.gguf"), 8124)
    assert command[:3] == [str(servers.LLAMA_PACKAGE.python), "-m", "llama_cpp.server"]
    assert command[command.index("--model") + 1] == "tiny.gguf"
    assert command[command.index("--model_alias") + 1] == servers.MODEL_ALIAS
    assert command[command.index("--chat_format") + 1] == "chatml"
