"""Run the simulator standalone: `python -m simulator --port 8099`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal

from . import OpenAISimulator


async def _serve(
    host: str,
    port: int,
    api_key: str | None,
    models: list[str] | None,
    transcript: str | None,
) -> None:
    """Serve until interrupted."""
    sim = OpenAISimulator(api_key=api_key, models=models)
    sim.settings.transcript = transcript
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    base_url = await sim.start(host=host, port=port)
    print(f"OpenAI-compatible simulator listening at {base_url}", flush=True)
    print("Note: this is a simulator, not a model; answers are scripted.", flush=True)
    try:
        await stop.wait()
    finally:
        await sim.stop()


def main() -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(
        prog="python -m simulator", description="Local OpenAI-compatible simulator."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--api-key", help="require this bearer key")
    parser.add_argument(
        "--model", action="append", dest="models", help="a model to list (repeatable)"
    )
    parser.add_argument(
        "--transcript", help="what every transcription says (default: its length)"
    )
    args = parser.parse_args()
    asyncio.run(
        _serve(args.host, args.port, args.api_key, args.models, args.transcript)
    )


if __name__ == "__main__":
    main()
