"""ai_task.evaluate: probabilities for noul, choice and score questions.

Each question is answered one of three ways, chosen per server, model and
question; what a model refuses in general is learned (see capabilities.py),
and a question that one path cannot answer goes to the next:

1. ``decisions``: OpenAI's Decisions API, all eligible questions in one
   request (evaluate_decisions.py), where the preset may have it and the model
   is not known to refuse it. A missing route, a key without access to it, or
   an answer that is no Decision teaches that the model has none; a refusal
   of one request (its image, its questions) only sends this task on.
2. ``logprobs``: one chat request per question for a one-token label, read
   from the token's log-probabilities (evaluate_chat.py). A model that gives
   none, or refuses ``logprobs`` in general, is not asked again; reasoning
   models skip this path, as they cannot answer within one token.
3. ``stated``: the model states a probability per option in a JSON object,
   through the structured-output ladder (structured.py).

Every request goes through the entry's transport and the Chat Completions
adapter, at most `Provider.concurrency` at a time per entry. Every answer is
checked: probabilities are numbers in [0, 1], one per option, adding up to 1
within a tolerance before they are renormalised. Which path answered each
question, why others were skipped, and the raw distribution go to the debug
log and, inside a conversation, to its trace.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps

from .attachments import LoadedFile, async_load_attachments
from .chat_completions import attachment_part
from .const import LOGGER
from .errors import (
    InputError,
    ModelError,
    RequestRejectedError,
    ServerError,
    TranslatedError,
)
from .evaluate_chat import (
    MIN_LABEL_COVERAGE,
    REPAIRABLE,
    STATED_REPAIR,
    STATED_TOLERANCE,
    first_choice,
    held_label_masses,
    held_to_labels,
    label_masses,
    logprobs_body,
    stated_answer,
    stated_schema,
    stated_text,
    stated_weights,
    top_logprobs,
)
from .evaluate_decisions import (
    decisions_body,
    files_fit,
    is_decision,
    question_fits,
    read_decision,
)
from .evaluate_questions import (
    Outcome,
    Question,
    label_prompt,
    normalised,
    stated_prompt,
)
from .models.capabilities import ModelCapabilities
from .models.features import Feature
from .request import RequestSettings
from .strict_schema import strict_json_schema
from .structured import RUNG_NAMES, StructuredRequest, async_climb
from .transport import Budget, Transport
from .wire_api import Adapter

# More questions than this in one task are refused, not queued.
MAX_QUESTIONS: Final = 32
SYSTEM_PROMPT: Final = (
    "You evaluate evidence from a smart home: its state, given as JSON or text, "
    "and any attached images. Answer the question exactly in the form it asks for."
)


class Evaluation:
    """One evaluation task: the shared evidence and the paths it takes."""

    def __init__(
        self,
        task: ai_task.EvaluationTask,
        *,
        transport: Transport,
        adapter: Adapter,
        capabilities: ModelCapabilities,
        settings: RequestSettings,
        budget: Budget,
        slots: asyncio.Semaphore,
    ) -> None:
        """Keep what every request of the task shares; refuse too many questions."""
        if len(task.questions) > MAX_QUESTIONS:
            raise InputError(
                "evaluate_too_many_questions",
                count=str(len(task.questions)),
                limit=str(MAX_QUESTIONS),
            )
        self._task = task
        self._transport = transport
        self._adapter = adapter
        self._capabilities = capabilities
        self._settings = settings
        self._budget = budget
        self._slots = slots
        self._files: list[LoadedFile] = []
        self._evidence = _evidence_text(task)
        self.questions = [
            Question.from_task(key, question)
            for key, question in task.questions.items()
        ]
        # Why a question did not take an earlier path, per question key.
        self.skipped: dict[str, list[str]] = {q.key: [] for q in self.questions}

    async def async_run(self, hass: HomeAssistant) -> ai_task.EvaluationTaskResult:
        """Answer all questions: the Decisions API first, then chat completions."""
        if self._task.attachments:
            self._files = await async_load_attachments(hass, self._task.attachments)
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
        if self._capabilities.refuses(Feature.DECISIONS):
            self._skip_all("decisions: not offered by this server")
            return []
        if not files_fit(self._files):
            self._skip_all("decisions: the attachments are not all images, or too many")
            return []
        eligible: list[Question] = []
        for question in self.questions:
            if question_fits(question):
                eligible.append(question)
            else:
                self.skipped[question.key].append("decisions: too many levels")
        return eligible

    def _skip_all(self, reason: str) -> None:
        """Note for every question why a path was not taken."""
        for notes in self.skipped.values():
            notes.append(reason)

    async def _async_decisions(
        self, questions: list[Question]
    ) -> dict[str, Outcome] | None:
        """Ask the Decisions API; None when it does not answer this task."""
        sent = {Feature.DECISIONS}
        if self._files:
            sent.add(Feature.IMAGE_INPUT)
        try:
            async with self._slots:
                data = await self._transport.async_json(
                    "POST",
                    "/decisions",
                    budget=self._budget,
                    body=decisions_body(
                        self._settings.model, self._evidence, self._files, questions
                    ),
                    sent=frozenset(sent),
                )
        except RequestRejectedError as err:
            # Learned only when the answer says the route is missing.
            self._no_decisions(
                questions,
                f"refused ({err.status}): {err.server_message}",
                learn=err.feature is Feature.DECISIONS,
            )
            return None
        except ServerError as err:
            if err.translation_key not in ("permission_denied", "answer_not_json"):
                raise
            self._no_decisions(questions, str(err.translation_key), learn=True)
            return None
        if not is_decision(data):
            # A catch-all page (some proxies answer any path with 200).
            self._no_decisions(questions, "the answer is not a Decision", learn=True)
            return None
        self._capabilities.learn_proven(Feature.DECISIONS)
        return read_decision(data["answers"], questions)

    def _no_decisions(
        self, questions: list[Question], reason: str, learn: bool
    ) -> None:
        """Send the questions on; remember that the model has no Decisions API."""
        LOGGER.debug("Decisions API not used, using chat completions: %s", reason)
        if learn:
            self._capabilities.learn_refused(Feature.DECISIONS, reason)
        for question in questions:
            self.skipped[question.key].append(f"decisions: {reason}")

    # --- paths 2 and 3: chat completions --------------------------------------

    async def _async_chat(self, question: Question) -> Outcome:
        """Answer one question from log-probabilities, else stated probabilities."""
        labels = question.labels()
        if self._capabilities.refuses(Feature.LOGPROBS):
            self.skipped[question.key].append("logprobs: the server gives none")
        elif self._capabilities.reasoning:
            self.skipped[question.key].append("logprobs: reasoning model")
        elif labels is None:
            self.skipped[question.key].append("logprobs: too many options")
        elif outcome := await self._async_logprobs(question, labels):
            return outcome
        return await self._async_stated(question)

    async def _async_complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send one chat request when a slot is free; return its answer."""
        async with self._slots:
            return await self._adapter.async_complete(body)

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
        body = logprobs_body(
            self._settings.model,
            self._messages(label_prompt(question, labels)),
            self._settings.prompt_cache_key,
        )
        try:
            data = await self._async_complete(body)
        except RequestRejectedError as err:
            reason = f"refused: {err.server_message}"
            if err.feature is Feature.LOGPROBS and err.general:
                self._no_logprobs(question, reason)
            else:
                # About this request (the context, an attachment), not logprobs.
                self.skipped[question.key].append(f"logprobs: {reason}")
            return None
        top = top_logprobs(first_choice(data))
        if top is None:
            self._no_logprobs(question, "the server returned none")
            return None
        self._capabilities.learn_proven(Feature.LOGPROBS)
        raw = label_masses(top, labels)
        extra: dict[str, Any] = {}
        if sum(raw.values()) < MIN_LABEL_COVERAGE:
            self.skipped[question.key].append(
                "logprobs: the labels are not what the model answers "
                f"({', '.join(repr(token) for token in list(top)[:5])})"
            )
            held = await self._async_held(question, body, labels)
            if held is None and not any(raw.values()):
                return None
            if held is not None:
                raw, extra["held to the labels"] = held, True
        coverage = sum(raw.values())
        return Outcome(
            [raw[label] / coverage for label in labels],
            "logprobs",
            raw,
            {"coverage": coverage, **extra},
        )

    async def _async_held(
        self, question: Question, body: dict[str, Any], labels: list[str]
    ) -> dict[str, float] | None:
        """Ask again with the answer held to the labels; None when it tells nothing."""
        if self._capabilities.refuses(Feature.JSON_SCHEMA):
            return None
        try:
            held = held_to_labels(body, labels, self._capabilities.kind)
            data = await self._async_complete(held)
        except RequestRejectedError as err:
            # Not asked again: the schema it holds the labels by is refused.
            self._capabilities.learn_refused(Feature.JSON_SCHEMA, err.lesson_source)
            self.skipped[question.key].append(
                f"logprobs held to the labels: refused: {err.server_message}"
            )
            return None
        masses = held_label_masses(first_choice(data), labels)
        if masses is None:
            self.skipped[question.key].append("logprobs held to the labels: none")
        return masses

    def _no_logprobs(self, question: Question, reason: str) -> None:
        """Remember that the model gives no log-probabilities."""
        self._capabilities.learn_refused(Feature.LOGPROBS, reason)
        self.skipped[question.key].append(f"logprobs: {reason}")

    async def _async_stated(self, question: Question) -> Outcome:
        """Ask the model to state a probability per option, as JSON."""
        schema = stated_schema(question)

        async def attempt(request: StructuredRequest) -> dict[str, Any]:
            return await self._async_complete(self._stated_body(question, request))

        def on_rejected(request: StructuredRequest, err: RequestRejectedError) -> None:
            self.skipped[question.key].append(
                f"stated: {RUNG_NAMES[request.rung]} refused: {err.server_message}"
            )

        request, data = await async_climb(
            self._capabilities,
            "evaluation",
            schema,
            strict_json_schema(schema),
            attempt,
            on_rejected,
        )
        extra = {"format": RUNG_NAMES[request.rung]}
        answer = first_choice(data)
        try:
            return _stated_outcome(question, answer, extra)
        except ModelError as err:
            if err.translation_key not in REPAIRABLE:
                raise
            LOGGER.debug("Asking again for the probabilities: %s", err)
        body = self._stated_body(question, request, stated_text(answer, question))
        choice = first_choice(await self._async_complete(body))
        extra["repaired"] = "asked again"
        try:
            return _stated_outcome(question, choice, extra)
        except ModelError as err:
            if (
                err.translation_key not in REPAIRABLE
                or (weights := stated_weights(choice, question)) is None
            ):
                raise
        # Still out of range: the numbers are weights, a negative one none.
        extra["repaired"] = "read as weights"
        raw = dict(zip(question.names, weights, strict=True))
        return Outcome(weights, "stated", raw, extra)

    def _stated_body(
        self, question: Question, request: StructuredRequest, answer: str = ""
    ) -> dict[str, Any]:
        """Return the request for stated probabilities on one rung of the ladder.

        With the model's answer that did not fit, it asks once more.
        """
        prompt = stated_prompt(question)
        if request.instructions:
            prompt = f"{prompt}\n\n{request.instructions}"
        messages = self._messages(prompt)
        if answer:
            messages += [
                {"role": "assistant", "content": answer},
                {"role": "user", "content": STATED_REPAIR},
            ]
        body: dict[str, Any] = {
            "model": self._settings.model,
            "messages": messages,
            **self._settings.body(),
        }
        if request.response_format:
            body["response_format"] = request.response_format
        return body

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


def _stated_outcome(
    question: Question, choice: dict[str, Any], extra: dict[str, Any]
) -> Outcome:
    """Return the outcome of a stated answer; raise ModelError where it does not fit."""
    stated = stated_answer(choice, question)
    probabilities = normalised(
        question, [stated[n] for n in question.names], STATED_TOLERANCE
    )
    return Outcome(probabilities, "stated", stated, dict(extra))


def _evidence_text(task: ai_task.EvaluationTask) -> str:
    """Return the shared text: the task's name and its state (text or JSON)."""
    text = f"Task: {task.name}"
    if isinstance(task.state, str):
        text += f"\n\nState:\n{task.state}"
    elif task.state is not None:
        text += f"\n\nState (JSON):\n{json_dumps(task.state)}"
    return text


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
