"""The tools benchmark, run by bench/tools.py through pytest.

Not a test: its function is named `bench_*` and bench/tools.py collects it
with `-o python_functions=bench_*`; `scripts/test` only collects tests/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
import logging
import socket
import threading
import time
from typing import Any

import aiohttp
from homeassistant.components import conversation
from homeassistant.config_entries import ConfigSubentryData
from homeassistant.const import CONF_LLM_HASS_API, CONF_URL
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import llm
from mcp.server import MCPServer
from pytest_homeassistant_custom_component.common import MockConfigEntry  # type: ignore[import-untyped]
import uvicorn

from bench._context_pytest import SimControl, _agent_ids
from bench._conversation_pytest import (
    KITCHEN_LIGHT,
    async_setup_home,
    prefix,
    sim_url,  # noqa: F401  (the fixture)
)
from custom_components.openai_compatible import const as ours_const
from simulator.window import prompt_tokens

MCP_TOOLS = 70
TURNS = ("turn on the kitchen light", "turn off the kitchen light")
AGENTS = {"all tools": {}, "on demand": {ours_const.CONF_TOOLS_ON_DEMAND: True}}
_SUBJECTS = (
    "invoice",
    "ticket",
    "calendar",
    "playlist",
    "repository",
    "backup",
    "printer",
)
_VERBS = (
    "create",
    "list",
    "archive",
    "search",
    "export",
    "share",
    "rename",
    "delete",
    "restore",
    "summarize",
)


def _mcp_server() -> MCPServer[Any]:
    """Return an MCP server with 70 tools of a busy office, none for the house."""
    server: MCPServer[Any] = MCPServer("Office")
    for index in range(MCP_TOOLS):
        verb, subject = _VERBS[index % 10], _SUBJECTS[index // 10]

        def tool(target: str, note: str = "") -> str:
            return f"done: {target} {note}".strip()

        server.add_tool(
            tool,
            name=f"{verb}_{subject}",
            description=f"{verb.capitalize()} a {subject} of the office by its "
            f"name or number; the note is kept with the {subject}.",
        )
    return server


@contextmanager
def serve_mcp() -> Iterator[str]:
    """Serve the MCP server on 127.0.0.1; yield its URL."""
    listening = socket.create_server(("127.0.0.1", 0))
    runner = uvicorn.Server(
        uvicorn.Config(
            _mcp_server().streamable_http_app(), log_level="warning", lifespan="on"
        )
    )
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [listening]})
    thread.start()
    try:
        while not runner.started:
            assert thread.is_alive()
            time.sleep(0.01)
        yield f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"
    finally:
        runner.should_exit = True
        thread.join(10)
        listening.close()


async def async_setup_agents(
    hass: HomeAssistant, base_url: str, mcp_url: str
) -> dict[str, str]:
    """Set up the MCP API and one agent per way of offering tools."""
    mcp = MockConfigEntry(domain="mcp", title="Office", data={CONF_URL: mcp_url})
    mcp.add_to_hass(hass)
    assert await hass.config_entries.async_setup(mcp.entry_id)
    apis = [llm.LLM_API_ASSIST, f"mcp-{mcp.entry_id}"]
    ours = MockConfigEntry(
        domain=ours_const.DOMAIN,
        title="Benchmark",
        data={
            ours_const.CONF_PROVIDER: "ollama",
            ours_const.CONF_BASE_URL: base_url,
        },
        subentries_data=[
            ConfigSubentryData(
                data={
                    ours_const.CONF_CHAT_MODEL: "llama3.2:3b",
                    ours_const.CONF_RECOMMENDED: True,
                    CONF_LLM_HASS_API: apis,
                    **options,
                },
                subentry_type=ours_const.SUBENTRY_CONVERSATION,
                title=name,
                unique_id=None,
            )
            for name, options in AGENTS.items()
        ],
    )
    ours.add_to_hass(hass)
    assert await hass.config_entries.async_setup(ours.entry_id)
    await hass.async_block_till_done()
    return _agent_ids(hass, ours)


async def async_run(
    hass: HomeAssistant, control: SimControl, agent_id: str
) -> list[str]:
    """Hold the conversation with one agent; return its lines of figures."""
    lines = [" turn.round  tools  prompt tokens  prefix share  light"]
    conversation_id: str | None = None
    previous: dict[str, Any] | None = None
    for turn, text in enumerate(TURNS, start=1):
        result = await conversation.async_converse(
            hass, text, conversation_id, Context(), agent_id=agent_id
        )
        conversation_id = result.conversation_id
        light = hass.states.get(KITCHEN_LIGHT)
        for index, body in enumerate(await control.async_new_chat_bodies(), start=1):
            share = "-" if previous is None else f"{prefix(previous, body).share:.1%}"
            lines.append(
                f"{turn:>5}.{index:<5}{len(body.get('tools') or ()):>6}"
                f"{prompt_tokens(body):>15}{share:>14}"
                f"  {light.state if light else 'missing'}"
            )
            previous = body
    return lines


async def bench_tools(
    hass: HomeAssistant,
    enable_custom_integrations: None,
    socket_enabled: None,
    sim_url: str,  # noqa: F811
) -> None:
    """Talk to both agents; print each request's tools, tokens and prefix share."""
    asyncio.get_running_loop().set_debug(False)
    logging.getLogger().setLevel(logging.WARNING)
    await async_setup_home(hass, 2)
    report = [
        (
            f"Tools benchmark: Assist and an MCP server of {MCP_TOOLS} tools; "
            f"turns: {' / '.join(TURNS)}"
        )
    ]
    with serve_mcp() as mcp_url:
        agents = await async_setup_agents(hass, sim_url, mcp_url)
        async with aiohttp.ClientSession() as session:
            control = SimControl(session, sim_url)
            await control.async_new_chat_bodies()  # skip the setup requests
            for name in AGENTS:
                report += [
                    "",
                    f"{name}:",
                    *await async_run(hass, control, agents[name]),
                ]
    print("\n".join(report), flush=True)
