"""ai_task.evaluate: probabilities for noul, choice and score questions.

Each question ends up as a distribution over its options (noul: yes and no; a
choice: its alternatives; a score: its levels, lowest first), found one of
three ways, chosen per server, model and question: what a server rejects is
remembered per model (``RuntimeData.quirks_for``), and a question that one path
cannot answer goes to the next:

1. ``decisions``: OpenAI's Decisions API (``POST /decisions``), all eligible
   questions in one request. Tried for the OpenAI and Azure presets and for
   custom servers (which may be a proxy in front of OpenAI) until the server
   rejects the route or the request (400/404/405/415/422/501) or answers with
   something that is no Decision; then the entry remembers
   ``quirks.decisions = False`` for the model and does not ask again until it
   is reloaded. Scores of more than 10 levels, PDFs and over 128 images are not
   sent there.
2. ``logprobs``: one Chat Completions request per question, concurrently, asking
   for a one-token label (Yes/No; a letter per alternative; a digit per level)
   with ``max_tokens`` 1, ``logprobs`` and ``top_logprobs``. The probability of
   each label is read from the distribution of that token, with case, space and
   punctuation variants folded together (" Yes", "YES", "yes."), and
   renormalised over the labels; a label missing from the top tokens gets 0.
   When no label is among them, that question goes to path 3. A server that
   gives no top log-probabilities, or rejects a request naming ``logprobs``,
   makes the entry remember ``quirks.logprobs = False`` for the model (never
   back to True until it is reloaded); a rejection for another reason (the
   context, an attachment) sends only that question to path 3. Reasoning
   models skip this path: they cannot answer within one token.
3. ``stated``: the model states a probability per option in a JSON object,
   through the structured-output ladder (strict ``json_schema``, plain
   ``json_schema``, ``json_object``, instructions only) that generate_data
   walks too (see structured.py): a rung is left when the server rejects the
   request, and the rung is remembered for the model in
   ``quirks.structured_output_rung`` when the rejections named the format.

Every answer is checked: probabilities are numbers in [0, 1], each option has
exactly one, and a distribution must add up to 1 within a tolerance (0.01 for
the Decisions API, which computes them; 0.05 for stated ones, which a model
rounds, typically to two decimals each) before it is renormalised.

There is no chat log in an evaluation. Which path answered each question, why
others were skipped, and the raw distribution over the labels go to the debug
log and, when the evaluation runs inside a conversation (a script called by an
agent), into that conversation's trace as an ``agent_detail`` event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
import math
import string
from typing import TYPE_CHECKING, Any, Final, Literal

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps
import openai
from openai.resources.decisions import AsyncDecisions
from openai.types import decision_create_params
from openai.types.decision_input_message_param import DecisionInputMessageParam
from openai.types.decision_input_part_union_param import DecisionInputPartUnionParam

from .api import (
    MISSING_ENDPOINT_STATUSES,
    ServerQuirks,
    map_error,
    server_message,
    translate_errors,
)
from .attachments import LoadedFile, async_load_attachments
from .chat_completions import RequestSettings, attachment_part
from .const import CONF_PROVIDER, LOGGER, PROVIDER_CUSTOM
from .errors import (
    AuthError,
    ModelError,
    RequestRejectedError,
    ServerError,
    TranslatedError,
)
from .json_answer import StructureMismatch, parse_json_answer
from .strict_schema import strict_json_schema
from .structured import RUNG_NAMES, StructuredRequest, async_climb

if TYPE_CHECKING:
    from . import OpenAICompatibleConfigEntry

type Path = Literal["decisions", "logprobs", "stated"]
type Kind = Literal["noul", "choice", "score"]

# Presets that may serve OpenAI's Decisions API; custom servers may be a proxy.
DECISIONS_PROVIDERS: Final = frozenset({"openai", "azure", PROVIDER_CUSTOM})
DECISIONS_MAX_LEVELS: Final = 10
DECISIONS_MAX_IMAGES: Final = 128
DECISIONS_TOLERANCE: Final = 0.01
STATED_TOLERANCE: Final = 0.05
TOP_LOGPROBS: Final = 20
# One-token labels exist for this many options.
MAX_LETTERS: Final = 26
MAX_DIGITS: Final = 10

SYSTEM_PROMPT: Final = (
    "You evaluate evidence from a smart home: its state, given as JSON or text, "
    "and any attached images. Answer the question exactly in the form it asks for."
)
_PUNCTUATION: Final = ".,:;!?()[]\"'`*"


@dataclass(frozen=True, slots=True)
class Question:
    """One question with its options in order: yes/no, alternatives or levels."""

    key: str
    kind: Kind
    instructions: str
    # (name, description): noul ("yes", ""), ("no", ""); a choice its keys; a
    # score its levels as ("0", criterion), ("1", criterion), ...
    options: tuple[tuple[str, str], ...]

    @classmethod
    def from_task(cls, key: str, question: ai_task.EvaluationQuestion) -> Question:
        """Return the question in the form every path uses."""
        if question["type"] == "noul":
            return cls(key, "noul", question["instructions"], (("yes", ""), ("no", "")))
        if question["type"] == "choice":
            return cls(
                key,
                "choice",
                question["instructions"],
                tuple(question["criteria"].items()),
            )
        return cls(
            key,
            "score",
            question["instructions"],
            tuple(
                (str(index), text) for index, text in enumerate(question["criteria"])
            ),
        )

    @property
    def names(self) -> list[str]:
        """Return the option names: the keys of stated answers."""
        return [name for name, _ in self.options]

    def labels(self) -> list[str] | None:
        """Return the one-token labels of the options, if there are enough."""
        if self.kind == "noul":
            return ["Yes", "No"]
        if self.kind == "choice":
            count = len(self.options)
            return (
                list(string.ascii_uppercase[:count]) if count <= MAX_LETTERS else None
            )
        if len(self.options) <= MAX_DIGITS:
            return self.names
        return None

    def answer(self, probabilities: list[float]) -> ai_task.EvaluationAnswer:
        """Return Home Assistant's answer for a distribution over the options."""
        if self.kind == "noul":
            return ai_task.NoulAnswer(noul=probabilities[0])
        if self.kind == "choice":
            best = max(range(len(probabilities)), key=probabilities.__getitem__)
            return ai_task.ChoiceAnswer(
                choice=self.names[best],
                probabilities=dict(zip(self.names, probabilities, strict=True)),
            )
        return ai_task.ScoreAnswer(
            score=sum(index * p for index, p in enumerate(probabilities)),
            probabilities=probabilities,
        )


@dataclass(slots=True)
class Outcome:
    """How one question was answered: the distribution and where it came from."""

    probabilities: list[float]
    path: Path
    # The distribution as the server or model gave it, per label, before checks.
    raw: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict)


async def async_evaluate(
    hass: HomeAssistant,
    entry: OpenAICompatibleConfigEntry,
    settings: RequestSettings,
    task: ai_task.EvaluationTask,
) -> ai_task.EvaluationTaskResult:
    """Answer every question of the task with probabilities."""
    files = (
        await async_load_attachments(hass, task.attachments) if task.attachments else []
    )
    evaluation = Evaluation(
        entry.runtime_data.client,
        entry.runtime_data.quirks_for(settings.model),
        settings,
        entry.data.get(CONF_PROVIDER, PROVIDER_CUSTOM),
        task,
        files,
    )
    return await evaluation.async_run()


class Evaluation:
    """One evaluation task: the shared evidence and the paths it takes."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        quirks: ServerQuirks,
        settings: RequestSettings,
        provider: str,
        task: ai_task.EvaluationTask,
        files: list[LoadedFile],
    ) -> None:
        """Keep what every request of the task shares."""
        self._client = client
        self._quirks = quirks
        self._settings = settings
        self._provider = provider
        self._task = task
        self._files = files
        self._evidence = _evidence_text(task)
        self.questions = [
            Question.from_task(key, question)
            for key, question in task.questions.items()
        ]
        # Why a question did not take an earlier path, per question key.
        self.skipped: dict[str, list[str]] = {q.key: [] for q in self.questions}

    async def async_run(self) -> ai_task.EvaluationTaskResult:
        """Answer all questions: the Decisions API first, then chat completions."""
        outcomes: dict[str, Outcome] = {}
        if eligible := self._decisions_eligible():
            outcomes.update(await self._async_decisions(eligible) or {})
        rest = [q for q in self.questions if q.key not in outcomes]
        try:
            # One failed question fails the task: the others are cancelled.
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._async_chat(q)) for q in rest]
        except ExceptionGroup as errors:
            if (error := _first_translated_error(errors)) is None:
                raise
            # Its own cause, not the group, is what explains it.
            raise error from error.__cause__
        outcomes.update(
            (q.key, task.result()) for q, task in zip(rest, tasks, strict=True)
        )
        self._trace(outcomes)
        return ai_task.EvaluationTaskResult(
            answers={
                q.key: q.answer(outcomes[q.key].probabilities) for q in self.questions
            }
        )

    # --- path 1: the Decisions API ------------------------------------------

    def _decisions_eligible(self) -> list[Question]:
        """Return the questions to ask the Decisions API, if it is worth asking."""
        if self._quirks.decisions is False:
            self._skip_all("decisions: the server has no Decisions API")
            return []
        if self._provider not in DECISIONS_PROVIDERS:
            self._skip_all("decisions: the server is not OpenAI's")
            return []
        if len(self._files) > DECISIONS_MAX_IMAGES or any(
            not file.mime_type.startswith("image/") for file in self._files
        ):
            self._skip_all("decisions: the attachments are not all images, or too many")
            return []
        eligible: list[Question] = []
        for question in self.questions:
            if (
                question.kind == "score"
                and len(question.options) > DECISIONS_MAX_LEVELS
            ):
                self.skipped[question.key].append(
                    f"decisions: more than {DECISIONS_MAX_LEVELS} levels"
                )
            else:
                eligible.append(question)
        return eligible

    def _skip_all(self, reason: str) -> None:
        """Note for every question why a path was not taken."""
        for notes in self.skipped.values():
            notes.append(reason)

    async def _async_decisions(
        self, questions: list[Question]
    ) -> dict[str, Outcome] | None:
        """Ask the Decisions API; None when the server rejects route or request."""
        content: list[DecisionInputPartUnionParam] = [
            {"type": "input_text", "text": self._evidence}
        ]
        content.extend(
            {"type": "input_image", "image_url": file.data_url} for file in self._files
        )
        message: DecisionInputMessageParam = {"role": "user", "content": content}
        # Imported with this module: the client would import it in the event loop.
        decisions: AsyncDecisions = self._client.decisions
        try:
            response = await decisions.with_raw_response.create(
                model=self._settings.model,
                input=[message],
                questions=[_decision_question(q) for q in questions],
            )
        except openai.APIStatusError as err:
            mapped = map_error(err)
            # A key without access to the Decisions API still serves chat.
            if (
                err.status_code not in MISSING_ENDPOINT_STATUSES
                or isinstance(mapped, AuthError)
            ) and mapped.translation_key != "permission_denied":
                raise mapped from err
            self._no_decisions(
                questions, f"rejected ({err.status_code}): {server_message(err)}"
            )
            return None
        except openai.OpenAIError as err:
            raise map_error(err) from err
        try:
            data = response.http_response.json()
        except ValueError, RecursionError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
            # A catch-all page (some proxies answer any path with 200), not a Decision.
            self._no_decisions(questions, "the answer is not a Decision")
            return None
        self._quirks.decisions = True
        return _read_decision(data["answers"], questions)

    def _no_decisions(self, questions: list[Question], reason: str) -> None:
        """Remember that the server has no Decisions API for us."""
        LOGGER.debug("No Decisions API here, using chat completions: %s", reason)
        self._quirks.decisions = False
        for question in questions:
            self.skipped[question.key].append(f"decisions: {reason}")

    # --- paths 2 and 3: chat completions --------------------------------------

    async def _async_chat(self, question: Question) -> Outcome:
        """Answer one question from log-probabilities, else stated probabilities."""
        labels = question.labels()
        if self._quirks.logprobs is False:
            self.skipped[question.key].append("logprobs: the server gives none")
        elif self._settings.reasoning_model:
            self.skipped[question.key].append("logprobs: reasoning model")
        elif labels is None:
            self.skipped[question.key].append("logprobs: too many options")
        elif outcome := await self._async_logprobs(question, labels):
            return outcome
        return await self._async_stated(question)

    def _messages(self, prompt: str) -> list[dict[str, Any]]:
        """Return the messages: evidence first (shared by all questions), then one."""
        if not self._files:
            text = f"{self._evidence}\n\n{prompt}"
            user: dict[str, Any] = {"role": "user", "content": text}
        else:
            parts: list[dict[str, Any]] = [{"type": "text", "text": self._evidence}]
            parts.extend(attachment_part(file) for file in self._files)
            parts.append({"type": "text", "text": prompt})
            user = {"role": "user", "content": parts}
        return [{"role": "system", "content": SYSTEM_PROMPT}, user]

    async def _async_logprobs(
        self, question: Question, labels: list[str]
    ) -> Outcome | None:
        """Read the label distribution of a one-token answer; None to fall back."""
        body: dict[str, Any] = {
            "model": self._settings.model,
            "messages": self._messages(_label_prompt(question, labels)),
            "max_tokens": 1,
            # The model's own distribution, not one sharpened by a server default.
            "temperature": 1.0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        if self._settings.prompt_cache_key:
            body["prompt_cache_key"] = self._settings.prompt_cache_key
        try:
            data = await self._async_chat_request(body)
        except RequestRejectedError as err:
            reason = f"rejected: {err.server_message}"
            if "logprobs" in err.server_message.casefold():
                self._no_logprobs(question, reason)
            else:
                # About this request (the context, an attachment), not logprobs.
                self.skipped[question.key].append(f"logprobs: {reason}")
            return None
        top = _top_logprobs(_first_choice(data))
        if top is None:
            self._no_logprobs(question, "the server returned none")
            return None
        if self._quirks.logprobs is None:
            # Not back to True: a concurrent question may have learned False.
            self._quirks.logprobs = True
        raw = _label_masses(top, labels)
        coverage = sum(raw.values())
        if coverage <= 0:
            self.skipped[question.key].append(
                "logprobs: no label among the top tokens "
                f"({', '.join(repr(token) for token in list(top)[:5])})"
            )
            return None
        return Outcome(
            [raw[label] / coverage for label in labels],
            "logprobs",
            raw,
            {"coverage": coverage},
        )

    def _no_logprobs(self, question: Question, reason: str) -> None:
        """Remember that the server gives no log-probabilities."""
        if self._quirks.logprobs is not False:
            LOGGER.debug(
                "No log-probabilities here (%s); asking for stated ones", reason
            )
        self._quirks.logprobs = False
        self.skipped[question.key].append(f"logprobs: {reason}")

    async def _async_stated(self, question: Question) -> Outcome:
        """Ask the model to state a probability per option, as JSON."""
        names = question.names
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                name: {"type": "number", "minimum": 0, "maximum": 1} for name in names
            },
            "required": names,
            "additionalProperties": False,
        }

        async def attempt(request: StructuredRequest) -> dict[str, Any]:
            return await self._async_chat_request(self._stated_body(question, request))

        def on_rejected(request: StructuredRequest, err: RequestRejectedError) -> None:
            self.skipped[question.key].append(
                f"stated: {RUNG_NAMES[request.rung]} rejected: {err.server_message}"
            )

        request, data = await async_climb(
            self._quirks,
            "evaluation",
            schema,
            strict_json_schema(schema),
            attempt,
            on_rejected,
        )
        stated = _stated_answer(_first_choice(data), question)
        probabilities = _normalised(
            question, [stated[n] for n in names], STATED_TOLERANCE
        )
        return Outcome(
            probabilities, "stated", stated, {"format": RUNG_NAMES[request.rung]}
        )

    def _stated_body(
        self, question: Question, request: StructuredRequest
    ) -> dict[str, Any]:
        """Return the request for stated probabilities on one rung of the ladder."""
        prompt = _stated_prompt(question)
        if request.instructions:
            prompt = f"{prompt}\n\n{request.instructions}"
        body: dict[str, Any] = {
            "model": self._settings.model,
            "messages": self._messages(prompt),
            **self._settings.body(),
        }
        if request.response_format:
            body["response_format"] = request.response_format
        return body

    async def _async_chat_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send one non-streamed chat completion; return its JSON body."""
        with translate_errors():
            response = await self._client.chat.completions.with_raw_response.create(
                **body
            )
        return _json_body(response.http_response)

    # --- trace ----------------------------------------------------------------

    def _trace(self, outcomes: dict[str, Outcome]) -> None:
        """Tell the debug log and an active conversation trace how it went."""
        detail = {
            "task_name": self._task.name,
            "model": self._settings.model,
            "questions": {
                q.key: {
                    "path": outcomes[q.key].path,
                    "raw": outcomes[q.key].raw,
                    **outcomes[q.key].extra,
                    "probabilities": dict(
                        zip(q.names, outcomes[q.key].probabilities, strict=True)
                    ),
                    "skipped": self.skipped[q.key],
                }
                for q in self.questions
            },
        }
        LOGGER.debug("Evaluation: %s", detail)
        conversation.async_conversation_trace_append(
            conversation.ConversationTraceEventType.AGENT_DETAIL,
            {"evaluation": detail},
        )


# --- the evidence and the prompts ---------------------------------------------


def _evidence_text(task: ai_task.EvaluationTask) -> str:
    """Return the shared text: the task's name and its state (text or JSON)."""
    text = f"Task: {task.name}"
    if isinstance(task.state, str):
        text += f"\n\nState:\n{task.state}"
    elif task.state is not None:
        text += f"\n\nState (JSON):\n{json_dumps(task.state)}"
    return text


def _label_prompt(question: Question, labels: list[str]) -> str:
    """Return the question asking for a one-token label."""
    head = f"Question: {question.instructions}\n\n"
    if question.kind == "noul":
        return f"{head}Answer Yes or No."
    if question.kind == "choice":
        lines = "\n".join(
            f"{label}) {name}: {description}"
            for label, (name, description) in zip(labels, question.options, strict=True)
        )
        return f"{head}Options:\n{lines}\n\nAnswer with the letter of the option only."
    return (
        f"{head}{_levels(question)}\n\n"
        f"Answer with the number of the level only, from 0 to {len(labels) - 1}."
    )


def _stated_prompt(question: Question) -> str:
    """Return the question asking for a JSON object of probabilities."""
    head = f"Question: {question.instructions}\n\n"
    ask = "as probabilities from 0 to 1 that add up to 1, in a JSON object"
    if question.kind == "noul":
        return (
            f"{head}State how likely the answer is yes and how likely it is no, "
            f'{ask} with the keys "yes" and "no".'
        )
    if question.kind == "choice":
        lines = "\n".join(f"- {name}: {text}" for name, text in question.options)
        return (
            f"{head}Options:\n{lines}\n\nState how likely each option is the answer, "
            f"{ask} with the name of each option as its key."
        )
    return (
        f"{head}{_levels(question)}\n\nState how likely each level is, "
        f"{ask} with the number of each level as its key."
    )


def _levels(question: Question) -> str:
    """Return the levels of a score question, lowest first, with their numbers."""
    lines = "\n".join(f"{name}: {text}" for name, text in question.options)
    return f"Levels, from lowest to highest:\n{lines}"


# --- reading answers ------------------------------------------------------------


def _first_translated_error(
    errors: ExceptionGroup[Exception],
) -> TranslatedError | None:
    """Return the first translated error among those of failed questions."""
    for error in errors.exceptions:
        found = (
            _first_translated_error(error)
            if isinstance(error, ExceptionGroup)
            else error
        )
        if isinstance(found, TranslatedError):
            return found
    return None


def _json_body(response: Any) -> dict[str, Any]:
    """Return the JSON object a server answered with."""
    try:
        data = response.json()
    except (ValueError, RecursionError) as err:
        raise ServerError(
            "evaluate_failed", problem="the server's answer is not JSON"
        ) from err
    if not isinstance(data, dict):
        raise ServerError(
            "evaluate_failed", problem="the server's answer is not a JSON object"
        )
    return data


def _first_choice(data: dict[str, Any]) -> dict[str, Any]:
    """Return the first choice of a chat completion."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError("no_answer")
    return choices[0]


def _top_logprobs(choice: dict[str, Any]) -> dict[str, float] | None:
    """Return the first answer token's alternatives and their log-probabilities.

    None when the server gave no log-probabilities, or only the chosen token's.
    """
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[0], dict):
        return None
    first: dict[str, Any] = content[0]
    alternatives = first.get("top_logprobs")
    if not isinstance(alternatives, list) or not alternatives:
        return None
    top: dict[str, float] = {}
    for entry in [*alternatives, first]:
        if not isinstance(entry, dict):
            continue
        token, logprob = entry.get("token"), entry.get("logprob")
        if (
            isinstance(token, str)
            and isinstance(logprob, int | float)
            and not isinstance(logprob, bool)
            and math.isfinite(logprob)
        ):
            top.setdefault(token, min(float(logprob), 0.0))
    return top


def fold(token: str) -> str:
    """Return the label a token spells, whatever its case, spaces or punctuation."""
    return token.strip().strip(_PUNCTUATION).strip().casefold()


def _label_masses(top: dict[str, float], labels: list[str]) -> dict[str, float]:
    """Return the probability of each label, adding up the tokens that spell it."""
    masses = dict.fromkeys(labels, 0.0)
    by_folded = {fold(label): label for label in labels}
    for token, logprob in top.items():
        if (label := by_folded.get(fold(token))) is not None:
            masses[label] += math.exp(logprob)
    return masses


def _stated_answer(choice: dict[str, Any], question: Question) -> dict[str, float]:
    """Return the stated probability per option name, checked one by one."""
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    text = message.get("content")
    if not isinstance(text, str) or not text.strip():
        if message.get("refusal"):
            raise ModelError("evaluate_refused", question=question.key)
        raise ModelError("no_answer")
    try:
        value = parse_json_answer(text)
    except StructureMismatch as err:
        raise ModelError("evaluate_failed", problem=err.problem) from err
    if not isinstance(value, dict):
        raise ModelError(
            "evaluate_failed", problem="the stated probabilities are not a JSON object"
        )
    if set(value) != set(question.names):
        raise ModelError("evaluate_wrong_options", question=question.key)
    return {name: _probability(value[name], question) for name in question.names}


def _probability(value: Any, question: Question) -> float:
    """Return a probability, refusing anything but a number from 0 to 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= 1
    ):
        raise ModelError(
            "evaluate_probability_out_of_range", question=question.key, value=str(value)
        )
    return float(value)


def _normalised(
    question: Question, probabilities: list[float], tolerance: float
) -> list[float]:
    """Return the distribution scaled to add up to 1; refuse one far from it."""
    total = sum(probabilities)
    if abs(total - 1) > tolerance:
        raise ModelError(
            "evaluate_not_normalized", question=question.key, total=f"{total:g}"
        )
    return [p / total for p in probabilities]


def _decision_question(question: Question) -> decision_create_params.Question:
    """Return the Decisions API form of a question."""
    if question.kind == "noul":
        return {
            "type": "predicate",
            "name": question.key,
            "instructions": question.instructions,
        }
    if question.kind == "choice":
        return {
            "type": "choice",
            "name": question.key,
            "instructions": question.instructions,
            "choices": [
                {"value": name, "description": text} for name, text in question.options
            ],
        }
    return {
        "type": "score",
        "name": question.key,
        "instructions": question.instructions,
        "levels": [{"label": text} for _, text in question.options],
    }


def _read_decision(
    answers: list[Any], questions: Sequence[Question]
) -> dict[str, Outcome]:
    """Return the outcome of each question from a Decision, refusing bad ones."""
    if not all(isinstance(answer, dict) for answer in answers):
        raise ModelError(
            "evaluate_failed", problem="an answer of the decision is not an object"
        )
    asked = {q.key: q for q in questions}
    by_key: dict[str, dict[str, Any]] = {}
    for position, answer in enumerate(answers):
        name = answer.get("name")
        if name is None and position < len(questions):
            name = questions[position].key  # unnamed: answers come in order
        if not isinstance(name, str) or name not in asked:
            raise ModelError("evaluate_unknown_answer", name=str(name))
        if name in by_key:
            raise ModelError("evaluate_duplicate_answer", question=name)
        by_key[name] = answer
    outcomes: dict[str, Outcome] = {}
    for question in questions:
        if (answer := by_key.get(question.key)) is None:
            raise ModelError("evaluate_missing_answer", question=question.key)
        outcomes[question.key] = _decision_outcome(question, answer)
    return outcomes


_DECISION_TYPES: Final[dict[Kind, str]] = {
    "noul": "predicate",
    "choice": "choice",
    "score": "score",
}


def _decision_outcome(question: Question, answer: dict[str, Any]) -> Outcome:
    """Return one question's outcome from its Decisions API answer."""
    kind = answer.get("type")
    if kind == "refusal":
        raise ModelError("evaluate_refused", question=question.key)
    if kind != _DECISION_TYPES[question.kind]:
        raise ModelError(
            "evaluate_wrong_answer_type", question=question.key, type=str(kind)
        )
    if question.kind == "noul":
        yes = _probability(answer.get("probability"), question)
        return Outcome([yes, 1 - yes], "decisions", {"yes": yes})
    entries = answer.get("probabilities")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ModelError("evaluate_wrong_options", question=question.key)
    if question.kind == "choice":
        keys = [
            value if isinstance(value := entry.get("value"), str) else None
            for entry in entries
        ]
    else:
        keys = [_level_key(question, entry) for entry in entries]
    if len(keys) != len(question.names) or set(keys) != set(question.names):
        raise ModelError("evaluate_wrong_options", question=question.key)
    raw = {
        str(key): _probability(entry.get("probability"), question)
        for key, entry in zip(keys, entries, strict=True)
    }
    probabilities = _normalised(
        question, [raw[name] for name in question.names], DECISIONS_TOLERANCE
    )
    return Outcome(probabilities, "decisions", raw)


def _level_key(question: Question, entry: dict[str, Any]) -> str | None:
    """Return the option name of a score level the server answered for, if ours."""
    value = entry.get("value")
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 0 <= value < len(question.options)
        and entry.get("label") == question.options[value][1]
    ):
        return question.options[value][0]
    return None
