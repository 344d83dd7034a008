"""docs/architecture.md's list of a turn's modules is the modules whose code runs on one."""

from __future__ import annotations

from pathlib import Path
import sys
from types import FrameType
from typing import Any

from homeassistant.const import CONF_LLM_HASS_API
from homeassistant.core import HomeAssistant
from homeassistant.helpers import llm

from simulator import OpenAISimulator, sse_text, sse_tool_calls

from .conftest import SetupEntry, converse
from .test_metrics import ROOT, metrics

PACKAGE = ROOT / "custom_components" / "openai_compatible"


async def test_the_listed_modules_are_those_a_turn_runs(
    hass: HomeAssistant,
    simulator: OpenAISimulator,
    setup_entry: SetupEntry,
    kitchen_light: str,
) -> None:
    """A turn that calls one tool over Chat Completions runs the listed modules."""
    await setup_entry(conversation={CONF_LLM_HASS_API: [llm.LLM_API_ASSIST]})
    # A first turn, so that what only the first one does is not counted.
    simulator.enqueue("/chat/completions", sse=sse_text("Hello."))
    await converse(hass, "Hello")
    simulator.enqueue(
        "/chat/completions",
        sse=sse_tool_calls(
            [("call_light1", "intent__HassTurnOn", {"name": "Kitchen light"})]
        ),
    )
    simulator.enqueue("/chat/completions", sse=sse_text("The kitchen light is on."))
    ran: set[str] = set()

    def profile(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(str(PACKAGE)):
            ran.add(Path(frame.f_code.co_filename).relative_to(PACKAGE).as_posix())

    sys.setprofile(profile)
    try:
        await converse(hass, "Turn on the kitchen light")
    finally:
        sys.setprofile(None)

    assert hass.states.get(kitchen_light).state == "on"
    assert ran == set(metrics.turn_modules(ROOT))
