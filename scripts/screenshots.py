"""A tour of the integration in headless Chromium, saved as PNGs for the README.

Run by ``scripts/screenshots``, which installs Chromium and Playwright first.
It starts the simulator and Home Assistant with the develop configuration of
scripts/dev_hass.py, in a temporary config folder on free ports, creates the
owner and sets the country through the API, and then does in the browser what
a user does:

1. adds the integration: the list of servers, the connect step, the error for
   a server that does not answer, then the simulator;
2. opens the entry's page, with its conversation agent and AI task;
3. opens the conversation agent's form;
4. says "turn on the kitchen light" in the Assist dialog, whose preferred
   pipeline is our agent (set as scripts/develop does), and opens the details
   with the tool call;
5. performs ``ai_task.generate_data`` in Developer tools and shows the response.

Each step saves a PNG (see SHOTS). The tour fails, with a non-zero exit, when
a page shows a raw translation key, a toast, an error where none belongs, or
when a step does not show what it should; the config folder and a picture of
the failing page are then kept for a look.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
import contextlib
from dataclasses import dataclass
from pathlib import Path
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import dev_hass
from playwright.sync_api import (
    BrowserContext,
    Error,
    Page,
    Playwright,
    ViewportSize,
    sync_playwright,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = ViewportSize(width=1280, height=900)
STEP_TIMEOUT_MS = 90_000  # two slow cores: the first page of a panel is slow
START_TIMEOUT = 300.0
STOP_TIMEOUT = 60.0
# Nothing listens on the discard port: the connect step's error.
UNREACHABLE_URL = "http://127.0.0.1:9/v1"
COMMAND = "turn on the kitchen light"
TOOL = "HassTurnOn"
GENERATE_DATA = """\
action: ai_task.generate_data
data:
  task_name: Dinner idea
  instructions: Suggest a dinner for tonight.
  structure:
    dish:
      description: The dish
      required: true
      selector:
        text:
"""

# The file of each step, in docs/images/.
SHOTS = {
    "servers": "add-integration-servers.png",
    "connect": "add-integration-connect.png",
    "error": "add-integration-error.png",
    "entry": "entry-page.png",
    "agent_form": "conversation-agent-form.png",
    "assist": "assist-kitchen-light.png",
    "generate_data": "ai-task-generate-data.png",
}

# Text a page must never show: translation keys that found no text.
RAW_KEYS = re.compile(
    r"component\.openai_compatible\.|\[%key:|(?<![\w.])config_subentries\."
    r"|(?<![\w.])ui\.(?:panel|dialogs|components|common)\.[\w.]+"
)

# Every toast the frontend shows goes through this event; keep them all, as a
# toast may be gone before the next look.
RECORD_TOASTS = """
window.__toasts = [];
window.addEventListener("hass-notification", (event) => {
  window.__toasts.push(String((event.detail && event.detail.message) || ""));
}, true);
"""

# The text of the page, shadow roots included, without scripts and styles.
DEEP_TEXT = """
() => {
  const parts = [];
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      parts.push(node.textContent);
      return;
    }
    if (node.nodeName === "SCRIPT" || node.nodeName === "STYLE") return;
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.childNodes) walk(child);
  };
  walk(document.body);
  return parts.join(" ").replace(/\\s+/g, " ");
}
"""

# The texts of the error alerts on the page, shadow roots included.
ERROR_ALERTS = """
() => {
  const found = [];
  const walk = (root) => {
    for (const element of root.querySelectorAll("*")) {
      if (element.localName === "ha-alert"
          && element.getAttribute("alert-type") === "error") {
        found.push(element.textContent.trim());
      }
      if (element.shadowRoot) walk(element.shadowRoot);
    }
  };
  walk(document);
  return found;
}
"""


class TourError(Exception):
    """A step of the tour did not show what it should."""


@dataclass(slots=True)
class Tour:
    """The browser page, Home Assistant's API and where the pictures go."""

    page: Page
    api: dev_hass.HomeAssistantAPI
    url: str
    simulator_url: str
    out: Path

    def shoot(self, step: str, *, errors_expected: int = 0) -> None:
        """Check the page, then save it as the step's PNG."""
        self.page.wait_for_timeout(800)  # let dialogs and ripples settle
        check_page(self.page, errors_expected)
        self.page.screenshot(path=self.out / SHOTS[step])
        print(f"screenshots: {SHOTS[step]}")


def check_page(page: Page, errors_expected: int = 0) -> None:
    """Raise TourError for a raw translation key, a toast or an error alert."""
    text: str = page.evaluate(DEEP_TEXT)
    if match := RAW_KEYS.search(text):
        context = text[max(0, match.start() - 80) : match.end() + 80]
        raise TourError(f"a raw translation key shows: …{context}…")
    toasts: list[str] | None = page.evaluate("() => window.__toasts")
    if toasts is None:
        raise TourError("the page was opened without the toast recorder")
    if toasts:
        raise TourError(f"a toast showed: {toasts}")
    alerts: list[str] = page.evaluate(ERROR_ALERTS)
    if len(alerts) != errors_expected:
        raise TourError(
            f"{len(alerts)} error alerts, {errors_expected} expected: {alerts}"
        )


# --- the steps ----------------------------------------------------------------


def log_in(tour: Tour) -> None:
    """Log in as the developer, as on any first visit."""
    page = tour.page
    page.goto(tour.url)
    page.get_by_label("Username").fill(dev_hass.DEV_USERNAME)
    page.get_by_label("Password", exact=True).fill(dev_hass.DEV_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("button", name="Assist (A)").wait_for()


def add_integration(tour: Tour) -> str:
    """Add the integration in the UI; return the new entry's id."""
    page = tour.page
    page.goto(f"{tour.url}/config/integrations/dashboard")
    page.get_by_role("button", name="Add integration").click()
    page.get_by_text("Select brand").wait_for()
    page.keyboard.type("OpenAI Compatible")  # the search field has the focus
    page.get_by_text("OpenAI Compatible", exact=True).last.click()
    # The list of servers, opened.
    page.locator("dialog-data-entry-flow ha-picker-field").first.click()
    page.locator("ha-dropdown-item").last.wait_for()
    tour.shoot("servers")
    # The last one: any other OpenAI-compatible server.
    page.locator("ha-dropdown-item").last.click()
    page.get_by_role("button", name="Submit").click()
    base_url = page.locator('input[name="base_url"]')
    base_url.wait_for()
    tour.shoot("connect")
    base_url.fill(UNREACHABLE_URL)
    page.get_by_role("button", name="Submit").click()
    page.locator("ha-dialog ha-alert[alert-type=error]").wait_for()
    tour.shoot("error", errors_expected=1)
    before = {entry["entry_id"] for entry in _entries(tour.api)}
    base_url.fill(tour.simulator_url)
    page.get_by_role("button", name="Submit").click()
    page.get_by_role("button", name=re.compile("^(Finish|Skip and finish)$")).click()
    new = [entry for entry in _entries(tour.api) if entry["entry_id"] not in before]
    if len(new) != 1 or new[0]["state"] != "loaded":
        raise TourError(f"the flow did not add one loaded entry: {new}")
    return str(new[0]["entry_id"])


def _entries(api: dev_hass.HomeAssistantAPI) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = api.get(
        f"/api/config/config_entries/entry?domain={dev_hass.DOMAIN}"
    )
    return entries


def entry_page(tour: Tour) -> None:
    """Show the integration's page: the entry with its agent and AI task."""
    page = tour.page
    page.goto(f"{tour.url}/config/integrations/integration/{dev_hass.DOMAIN}")
    page.get_by_role("button", name="Reconfigure conversation agent").wait_for()
    page.get_by_role("button", name="Reconfigure AI task").wait_for()
    tour.shoot("entry")


def agent_form(tour: Tour) -> None:
    """Open the conversation agent's form from the entry's page."""
    page = tour.page
    page.set_viewport_size(ViewportSize(width=VIEWPORT["width"], height=1250))
    page.get_by_role("button", name="Reconfigure conversation agent").click()
    # The agent controls the home, so its tools step follows: "Next".
    page.get_by_role("button", name="Next").wait_for()
    tour.shoot("agent_form")
    page.keyboard.press("Escape")
    page.set_viewport_size(VIEWPORT)


def assist(tour: Tour) -> None:
    """Say the command in the Assist dialog; open the details of the answer."""
    page = tour.page
    page.goto(f"{tour.url}/home")
    page.get_by_role("button", name="Assist (A)").wait_for()
    # A phone's screen: the dialog fills it, so the details and the answer fit.
    page.set_viewport_size(ViewportSize(width=430, height=820))
    page.keyboard.press("a")  # the Assist shortcut
    page.get_by_text(dev_hass.PIPELINE_NAME, exact=True).first.wait_for()
    page.keyboard.type(COMMAND)
    page.keyboard.press("Enter")
    page.get_by_text("Show details").click()
    page.locator(".tool-name", has_text=TOOL).wait_for()
    if tour.api.state(dev_hass.KITCHEN_LIGHT)["state"] != "on":
        raise TourError("the kitchen light is not on after the command")
    tour.shoot("assist")
    page.keyboard.press("Escape")
    page.set_viewport_size(VIEWPORT)


def generate_data(tour: Tour) -> None:
    """Perform ai_task.generate_data in Developer tools, in YAML mode."""
    page = tour.page
    page.set_viewport_size(ViewportSize(width=VIEWPORT["width"], height=1000))
    page.goto(f"{tour.url}/developer-tools/action")
    page.get_by_text("YAML mode", exact=True).click()
    page.locator(".cm-content").first.click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(GENERATE_DATA)
    page.get_by_role("button", name="Perform action").click()
    page.get_by_text("Response", exact=True).wait_for()
    page.get_by_text("conversation_id", exact=False).first.wait_for()
    tour.shoot("generate_data")
    page.set_viewport_size(VIEWPORT)


# --- running it -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stack:
    """Where Home Assistant and the simulator answer."""

    url: str
    simulator_url: str
    hass: subprocess.Popen[bytes]


@contextlib.contextmanager
def running_stack(config_dir: Path) -> Iterator[Stack]:
    """Run the simulator and Home Assistant with the develop configuration."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        port = dev_hass.free_port()
        dev_hass.prepare_config(config_dir, port=port, host="127.0.0.1")
        sim_output = config_dir / "simulator.log"
        started.append(
            dev_hass.start_module(
                "simulator", ["--host", "127.0.0.1", "--port", "0"], sim_output
            )
        )
        simulator_url = dev_hass.simulator_url(started[0], sim_output)
        hass = dev_hass.start_module(
            "homeassistant",
            ["--config", str(config_dir), "--log-no-color"],
            config_dir / "hass.out",
        )
        started.append(hass)
        yield Stack(f"http://127.0.0.1:{port}", simulator_url, hass)
    finally:
        for process in reversed(started):
            dev_hass.stop_process(process, STOP_TIMEOUT)


def _set_up(api: dev_hass.HomeAssistantAPI, hass_alive: Callable[[], bool]) -> None:
    """Wait for Home Assistant, create the owner and set the country."""
    api.wait_until_up(START_TIMEOUT, hass_alive)
    api.sign_in()
    api.wait_until_running(START_TIMEOUT)
    api.set_country(dev_hass.DEV_COUNTRY)


def tour(stack: Stack, out: Path, failure_shot: Path) -> None:
    """Walk through the integration in Chromium, saving the pictures in `out`."""
    with (
        dev_hass.HomeAssistantAPI(stack.url) as api,
        tempfile.TemporaryDirectory(prefix="chromium-") as profile,
    ):
        _set_up(api, lambda: stack.hass.poll() is None)
        with sync_playwright() as playwright:
            _walk(playwright, api, stack, Path(profile), out, failure_shot)


def _walk(
    playwright: Playwright,
    api: dev_hass.HomeAssistantAPI,
    stack: Stack,
    profile: Path,
    out: Path,
    failure_shot: Path,
) -> None:
    """Drive Chromium through the steps."""
    browser: BrowserContext = playwright.chromium.launch_persistent_context(
        profile,
        executable_path=CHROMIUM,
        args=CHROMIUM_FLAGS,
        headless=True,
        viewport=VIEWPORT,
        locale="en-US",
    )
    browser.add_init_script(RECORD_TOASTS)
    page = browser.pages[0] if browser.pages else browser.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    walk = Tour(page, api, stack.url, stack.simulator_url, out)
    try:
        log_in(walk)
        entry_id = add_integration(walk)
        # The WebSocket client runs an event loop: not in Playwright's thread.
        with ThreadPoolExecutor(1) as executor:
            executor.submit(api.prefer_entry, entry_id).result()
        entry_page(walk)
        agent_form(walk)
        assist(walk)
        generate_data(walk)
    except TourError, Error:
        page.screenshot(path=failure_shot)
        raise
    finally:
        browser.close()


def main() -> int:
    """Run the tour; return the exit status."""
    parser = argparse.ArgumentParser(prog="scripts/screenshots")
    parser.add_argument(
        "--out",
        type=Path,
        default=dev_hass.REPO_ROOT / "docs" / "images",
        help="where the PNGs go (default: docs/images)",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="openai-compatible-screenshots-"))
    config_dir = work / "config"
    try:
        with running_stack(config_dir) as stack:
            print(
                f"screenshots: Home Assistant at {stack.url},"
                f" simulator at {stack.simulator_url}"
            )
            tour(stack, args.out, work / "failure.png")
    except (TourError, Error, dev_hass.HomeAssistantError, dev_hass.StartError) as err:
        print(f"screenshots: FAILED: {err}", file=sys.stderr)
        print(
            f"screenshots: kept {work} (config/home-assistant.log, failure.png)",
            file=sys.stderr,
        )
        return 1
    shutil.rmtree(work)
    print(f"screenshots: {len(SHOTS)} pictures in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
