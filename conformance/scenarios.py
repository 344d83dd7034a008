"""What a user does, through a real Home Assistant, and how each outcome is judged.

Every scenario ends in one of four verdicts:

- ``ok``: a correct result (a spoken answer; text; data of the structure; an
  image; probabilities that are numbers adding up to 1) and the server
  refused nothing on the way;
- ``fallback``: a correct result after the server refused a way of asking;
  which ways were refused and which one answered is read from the requests
  the recording proxy saw during the scenario;
- ``clear``: one of the integration's own translated errors whose text holds
  no raw server dump (what a user should see for what the server cannot do);
- ``fail``: anything else: wrong data, a raw validation dump, an untranslated
  error, an error logged by the integration, a time-out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
import json
from pathlib import Path
import re
import time
from typing import Any, Literal

from .recorder import Exchange, RecordingProxy

type Verdict = Literal["ok", "fallback", "clear", "fail"]

INTEGRATION = (
    Path(__file__).resolve().parents[1] / "custom_components" / ("openai_compatible")
)
DOMAIN = "openai_compatible"
# Signs that a server's own error text reached the user.
RAW_DUMP = re.compile(
    r"validation error|literal_error|Traceback|\{'|\{\"|\[\{|<html|<!doctype"
    r"|Exception -|Error code: \d|BadRequestError|OpenAIException|litellm\.",
    re.IGNORECASE,
)
# Home Assistant's own words for a feature an entity does not offer.
HOME_ASSISTANT_CLEAR = re.compile(r"AI Task entity \S+ does not support \w+")
# Records of Home Assistant reporting a failed call that the lane judges itself.
REPORTED_CALL = "[homeassistant.components.websocket_api"
# A translated error that passes a server's words on instead of naming a problem.
GENERIC_KEYS = frozenset({"api_error"})
# The request features that tell one way of asking from another.
KEY_FEATURES = (
    "decisions",
    "images_generations",
    "json_schema_strict",
    "json_schema",
    "json_object",
    "logprobs",
    "tools",
    "stream",
)
# How much of a message a table cell shows (details.json has all of it).
CELL_TEXT = 160
MAX_TOKENS = {"conversation": 128, "ai_task_data": 512}

STRUCTURE = {
    "name": {
        "description": "The person's name",
        "required": True,
        "selector": {"text": {}},
    },
    "age": {"description": "Age in years", "selector": {"number": {}}},
    "pet": {"required": True, "selector": {"select": {"options": ["cat", "dog"]}}},
}
QUESTIONS = {
    "left_on": {"type": "noul", "instructions": "Was the kitchen light left on?"},
    "action": {
        "type": "choice",
        "instructions": "What should happen to the light?",
        "criteria": {"keep": "Leave it on.", "off": "Turn it off."},
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent is it to act?",
        "criteria": ["not urgent", "somewhat urgent", "urgent"],
    },
}


@dataclass
class Cell:
    """The outcome of one scenario against one server configuration."""

    verdict: Verdict
    text: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """Return the cell as the table shows it: one line, its text cut short."""
        text = " ".join(self.text.split())
        if len(text) > CELL_TEXT:
            text = text[: CELL_TEXT - 1] + "…"
        return {
            "ok": f"✓ ({text})" if text else "✓",
            "fallback": f"✓ via fallback ({text})",
            "clear": f"clear error ({text})",
            "fail": f"✗ {text}",
        }[self.verdict]


@dataclass
class Entry:
    """An entry of the integration for one server configuration."""

    entry_id: str
    conversation: str
    ai_task: str


@dataclass
class Outcome:
    """What Home Assistant answered: a result or an error."""

    result: Any = None
    error: dict[str, Any] | None = None


# --- judging --------------------------------------------------------------------


def _templates() -> dict[str, re.Pattern[str]]:
    """Return a pattern per translated exception message of the integration."""
    texts = json.loads((INTEGRATION / "translations" / "en.json").read_text())
    patterns = {}
    for key, value in texts.get("exceptions", {}).items():
        # Home Assistant drops a message's closing period in some places (the
        # speech of a conversation's error): match without it.
        parts = re.split(r"\{(\w+)\}", value["message"].rstrip("."))
        pattern = "".join(
            f"(?P<{part}>.*)" if index % 2 else re.escape(part)
            for index, part in enumerate(parts)
        )
        patterns[key] = re.compile(pattern, re.DOTALL)
    return patterns


TEMPLATES = _templates()


def translated_key(message: str) -> tuple[str, dict[str, str]] | None:
    """Return the translation key and placeholders a message was made from."""
    for key, pattern in TEMPLATES.items():
        if match := pattern.fullmatch(message.strip().rstrip(".")):
            return key, match.groupdict()
    return None


def judge_error(error: dict[str, Any]) -> Cell:
    """Judge an error Home Assistant returned: clear, or a failure."""
    message = str(error.get("message", ""))
    key = error.get("translation_key")
    placeholders = error.get("translation_placeholders") or {}
    if HOME_ASSISTANT_CLEAR.search(message):
        return Cell("clear", message, error)
    if error.get("translation_domain") != DOMAIN or not key:
        found = translated_key(message)
        if found is None:
            return Cell("fail", f"untranslated error: {message[:300]}", error)
        key, placeholders = found
    if key in GENERIC_KEYS:
        return Cell("fail", f"server's words passed on ({key}): {message[:300]}", error)
    if RAW_DUMP.search(" ".join(map(str, placeholders.values()))):
        return Cell("fail", f"raw server dump ({key}): {message[:300]}", error)
    return Cell("clear", message, error)


def key_features(exchange: Exchange) -> str:
    """Name a request by the features that tell ways of asking apart."""
    names = [name for name in KEY_FEATURES if name in exchange.features]
    if "json_schema_strict" in names:
        names.remove("json_schema")
    return "+".join(names) or "plain chat"


def fallbacks(exchanges: list[Exchange]) -> str | None:
    """Describe refusals on the way to an answer, or None when there were none."""
    refused = [exchange for exchange in exchanges if exchange.rejected]
    if not refused:
        return None
    accepted = [exchange for exchange in exchanges if not exchange.rejected]
    answered = key_features(accepted[-1]) if accepted else "nothing"
    steps = ", ".join(
        f"{key_features(exchange)} → {exchange.status}" for exchange in refused
    )
    return f"{answered} after {steps}"


def tool_rounds(exchanges: list[Exchange], result: Any) -> str:
    """Say how many rounds of an Assist turn carried tool results back."""
    rounds = sum("tool_result_message" in e.features for e in exchanges)
    if rounds:
        return f"{rounds} tool rounds"
    # A one-round answer: Home Assistant's sentence, no second request.
    done = result["response"]["data"].get("success")
    return (
        "one round: " + ", ".join(t["name"] for t in done) if done else "no tool called"
    )


def judge(
    outcome: Outcome, check: Callable[[Any], str | None], exchanges: list[Exchange]
) -> Cell:
    """Judge a scenario from its outcome and the requests the server saw."""
    detail = {"exchanges": len(exchanges)}
    if outcome.error is not None:
        cell = judge_error(outcome.error)
        cell.detail |= detail
        return cell
    if problem := check(outcome.result):
        return Cell("fail", problem, {"result": outcome.result, **detail})
    if way := fallbacks(exchanges):
        return Cell("fallback", way, {"result": outcome.result, **detail})
    return Cell("ok", "", {"result": outcome.result, **detail})


# --- checks of correct results ------------------------------------------------------


def check_speech(result: Any) -> str | None:
    """Check a conversation result: a spoken answer."""
    response = result["response"]
    if response["response_type"] == "error":
        return None  # judged as an error instead
    speech = response["speech"].get("plain", {}).get("speech")
    if not isinstance(speech, str) or not speech.strip():
        return f"no spoken answer: {response}"
    if speech.lstrip().startswith(("{", "[", "<", "```")):
        return f"spoke JSON or markup: {speech[:200]}"
    return None


def check_text(result: Any) -> str | None:
    """Check generate_data without a structure: text."""
    data = result.get("data")
    if not isinstance(data, str) or not data.strip():
        return f"no text: {result}"
    return None


def check_structure(result: Any) -> str | None:
    """Check generate_data with STRUCTURE: data that fits it."""
    data = result.get("data")
    if not isinstance(data, dict):
        return f"not an object: {data!r}"[:300]
    if not isinstance(data.get("name"), str):
        return f"name is not text: {data!r}"[:300]
    if data.get("pet") not in ("cat", "dog"):
        return f"pet is not cat or dog: {data!r}"[:300]
    if not set(data) <= set(STRUCTURE):
        return f"keys outside the structure: {sorted(data)}"
    if "age" in data and (
        isinstance(data["age"], bool) or not isinstance(data["age"], int | float)
    ):
        return f"age is not a number: {data!r}"[:300]
    return None


def check_image(result: Any) -> str | None:
    """Check generate_image: an image stored at a URL."""
    if not str(result.get("mime_type", "")).startswith("image/") or not result.get(
        "url"
    ):
        return f"no image: {result}"[:300]
    return None


def _distribution(values: list[Any], count: int) -> str | None:
    if len(values) != count:
        return f"{len(values)} probabilities for {count} options"
    if not all(isinstance(value, int | float) and 0 <= value <= 1 for value in values):
        return f"probabilities that are not numbers from 0 to 1: {values}"
    if abs(sum(values) - 1) > 0.01:
        return f"probabilities add up to {sum(values)}"
    return None


def check_evaluation(result: Any) -> str | None:
    """Check evaluate: an answer per question, with sound probabilities."""
    answers = result.get("answers")
    if not isinstance(answers, dict) or set(answers) != set(QUESTIONS):
        return f"answers for other questions: {result}"[:300]
    noul = answers["left_on"]
    if noul.get("type") != "noul" or not 0 <= noul.get("noul", -1) <= 1:
        return f"noul answer: {noul}"
    choice = answers["action"]
    probabilities = choice.get("probabilities") or {}
    if choice.get("choice") not in ("keep", "off") or set(probabilities) != {
        "keep",
        "off",
    }:
        return f"choice answer: {choice}"
    if problem := _distribution(list(probabilities.values()), 2):
        return f"choice: {problem}"
    score = answers["urgency"]
    if problem := _distribution(list(score.get("probabilities") or []), 3):
        return f"score: {problem}"
    if not 0 <= score.get("score", -1) <= 2:
        return f"score answer: {score}"
    return None


# --- Home Assistant -----------------------------------------------------------------


class Lab:
    """Home Assistant with one entry per server configuration."""

    def __init__(self, real_hass: Any, home_assistant: Any) -> None:
        """Use a running Home Assistant (real_hass.HomeAssistantProcess)."""
        self.real_hass = real_hass
        self.home_assistant = home_assistant
        self.api = home_assistant.api

    def add_entry(self, base_url: str) -> Entry:
        """Add the integration for a server and tune its subentries for the lane."""
        outcome = self.api.add_integration(base_url=base_url)
        if not outcome.created:
            raise RuntimeError(f"Adding the integration failed: {outcome.message}")
        entry_id = outcome.result["result"]["entry_id"]
        self._wait_until_loaded(entry_id)
        for subentry in self._command(
            {"type": "config_entries/subentries/list", "entry_id": entry_id}
        ):
            self._tune(entry_id, subentry)
            # A changed subentry reloads the entry.
            self._wait_until_loaded(entry_id)
        entities = {
            item["entity_id"].split(".")[0]: item["entity_id"]
            for item in self._command({"type": "config/entity_registry/list"})
            if item.get("config_entry_id") == entry_id
        }
        return Entry(entry_id, entities["conversation"], entities["ai_task"])

    def _wait_until_loaded(self, entry_id: str, timeout: float = 120) -> None:
        """Wait until the entry is set up (it loads after the flow has ended)."""
        deadline = time.monotonic() + timeout
        while True:
            entries = self.api.get(f"/api/config/config_entries/entry?domain={DOMAIN}")
            state = next(e["state"] for e in entries if e["entry_id"] == entry_id)
            if state == "loaded":
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"The entry is {state}, not loaded")
            time.sleep(0.5)

    def _tune(self, entry_id: str, subentry: dict[str, Any]) -> None:
        """Turn Recommended off and cap the answer length (a tiny model rambles)."""
        kind = subentry["subentry_type"]
        path = "/api/config/config_entries/subentries/flow"
        step = self.api.post(
            path,
            {
                "handler": [entry_id, kind],
                "source": "reconfigure",
                "subentry_id": subentry["subentry_id"],
            },
        )
        if step.get("type") != "form":
            raise RuntimeError(f"Reconfiguring the {kind} subentry: {step}")
        values = {
            item["name"]: item["description"]["suggested_value"]
            for item in step.get("data_schema", [])
            if (item.get("description") or {}).get("suggested_value") is not None
        }
        values |= {"recommended": False, "max_tokens": MAX_TOKENS[kind]}
        done = self.api.post(f"{path}/{step['flow_id']}", values)
        # The agent's tools step (with an LLM API chosen): all tools, as before.
        if done.get("type") == "form" and done.get("step_id") == "tools":
            done = self.api.post(f"{path}/{step['flow_id']}", {})
        if (
            done.get("type") != "abort"
            or done.get("reason") != "reconfigure_successful"
        ):
            raise RuntimeError(f"Tuning the {kind} subentry failed: {done}")

    def _command(self, command: dict[str, Any]) -> Any:
        (answer,) = self.real_hass.websocket_answers(self.api, command)
        if not answer["success"]:
            raise RuntimeError(f"{command['type']}: {answer['error']}")
        return answer["result"]

    def diagnostics(self, entry_id: str) -> Any:
        """Return the entry's diagnostics (what the integration learned)."""
        return self.api.get(f"/api/diagnostics/config_entry/{entry_id}")["data"]

    def converse(self, entry: Entry, text: str) -> Outcome:
        """Say something to the entry's conversation agent."""
        (answer,) = self.real_hass.websocket_answers(
            self.api,
            {
                "type": "conversation/process",
                "text": text,
                "agent_id": entry.conversation,
                "language": "en",
            },
        )
        if not answer["success"]:
            return Outcome(error=answer["error"])
        response = answer["result"]["response"]
        if response["response_type"] == "error":
            return Outcome(
                error={"message": response["speech"]["plain"]["speech"], **response}
            )
        return Outcome(result=answer["result"])

    def action(self, service: str, data: dict[str, Any]) -> Outcome:
        """Call an AI task action and return its response or error."""
        (answer,) = self.real_hass.websocket_answers(
            self.api,
            {
                "type": "call_service",
                "domain": "ai_task",
                "service": service,
                "service_data": data,
                "return_response": True,
            },
        )
        if not answer["success"]:
            return Outcome(error=answer["error"])
        return Outcome(result=answer["result"]["response"])


@dataclass(frozen=True)
class Scenario:
    """A feature, as a user uses it."""

    name: str
    run: Callable[[Lab, Entry], Outcome]
    check: Callable[[Any], str | None]


SCENARIOS = (
    Scenario(
        "Assist",
        lambda lab, entry: lab.converse(entry, "Turn on the kitchen light"),
        check_speech,
    ),
    Scenario(
        "generate_data",
        lambda lab, entry: lab.action(
            "generate_data",
            {
                "task_name": "greeting",
                "entity_id": entry.ai_task,
                "instructions": "Say hello to the household.",
            },
        ),
        check_text,
    ),
    Scenario(
        "generate_data structure",
        lambda lab, entry: lab.action(
            "generate_data",
            {
                "task_name": "person",
                "entity_id": entry.ai_task,
                "instructions": "Invent a person.",
                "structure": STRUCTURE,
            },
        ),
        check_structure,
    ),
    Scenario(
        "generate_image",
        lambda lab, entry: lab.action(
            "generate_image",
            {
                "task_name": "kitchen",
                "entity_id": entry.ai_task,
                "instructions": "A small drawing of a kitchen light.",
            },
        ),
        check_image,
    ),
    Scenario(
        "evaluate",
        lambda lab, entry: lab.action(
            "evaluate",
            {
                "task_name": "kitchen check",
                "entity_id": entry.ai_task,
                "state": {"kitchen_light": "on", "time": "23:30"},
                "questions": QUESTIONS,
            },
        ),
        check_evaluation,
    ),
)


def run_scenario(
    lab: Lab, entry: Entry, proxy: RecordingProxy, scenario: Scenario
) -> tuple[Cell, list[Exchange]]:
    """Run a scenario; judge it by its outcome and what the server saw."""
    proxy.label = f"scenario:{scenario.name}"
    seen = len(proxy.exchanges)
    log_start = len(lab.home_assistant.log_text())
    try:
        outcome = scenario.run(lab, entry)
    except Exception as err:  # noqa: BLE001 - any failure of the lane is a ✗ cell
        outcome = Outcome(error={"message": f"{type(err).__name__}: {err}"})
    finally:
        proxy.label = ""
    exchanges = proxy.since(seen)
    cell = judge(outcome, scenario.check, exchanges)
    if scenario.name == "Assist" and cell.verdict == "ok":
        cell.text = tool_rounds(exchanges, outcome.result)
    log = lab.home_assistant.log_text()[log_start:]
    if problems := integration_problems(lab.real_hass, log):
        cell = Cell("fail", f"the integration logged an error: {problems[0][:300]}")
    cell.detail["log"] = [line for line in log.splitlines() if DOMAIN in line][:200]
    return cell, exchanges


def integration_problems(real_hass: Any, log: str) -> list[str]:
    """Return errors the integration logged, less failed calls the lane judges."""
    return [
        problem
        for problem in real_hass.integration_problems(log)
        if REPORTED_CALL not in problem.split("\n", 1)[0]
    ]
