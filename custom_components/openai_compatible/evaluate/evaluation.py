"""ai_task.evaluate: probabilities for noul, choice and score questions.

Each question is answered one of three ways, chosen per server, model and
question; what a model refuses in general is learned (see capabilities.py),
and a question that one path cannot answer goes to the next:

1. ``decisions``: OpenAI's Decisions API, all eligible questions in one
   request (decisions_api.py), where the preset may have it and the model
   is not known to refuse it. A missing route, a key without access to it, or
   an answer that is no Decision teaches that the model has none; a refusal
   of one request (its image, its questions) only sends this task on.
2. ``logprobs``: one chat request per question for a one-token label, read
   from the token's log-probabilities (chat_answers.py, chat_paths.py). A model that gives
   none, or refuses ``logprobs`` in general, is not asked again; reasoning
   models skip this path, as they cannot answer within one token.
3. ``stated``: the model states a probability per option in a JSON object,
   through the structured-output ladder (structured/rungs.py).

Every request goes through the entry's transport and the Chat Completions
adapter, at most `Provider.concurrency` at a time per entry. Every answer is
checked: probabilities are numbers in [0, 1], one per option, adding up to 1
within a tolerance before they are renormalised. Which path answered each
question, why others were skipped, and the raw distribution go to the debug
log and, inside a conversation, to its trace.
"""

from __future__ import annotations

import asyncio
from typing import Final

from homeassistant.components import ai_task, conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers.json import json_dumps

from ..const import LOGGER
from ..errors import InputError, RequestRejectedError, ServerError, TranslatedError
from ..features import Feature
from ..media.attachments import async_load_attachments
from ..models.capabilities import ModelCapabilities
from ..net.request import RequestSettings
from ..net.transport import Budget, Transport, parse_json
from ..wire.route_fallback import Adapter
from .chat_paths import ChatPaths
from .decisions_api import (
    decisions_body,
    files_fit,
    is_decision,
    question_fits,
    read_decision,
)
from .questions import Outcome, Question

# More questions than this in one task are refused, not queued.
MAX_QUESTIONS: Final = 32


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
        self._budget = budget
        self.questions = [
            Question.from_task(key, question)
            for key, question in task.questions.items()
        ]
        # The chat paths hold what every path shares; the files come in the run.
        self._chat = ChatPaths(
            adapter=adapter,
            capabilities=capabilities,
            settings=settings,
            slots=slots,
            evidence=_evidence_text(task),
            files=[],
            skipped={q.key: [] for q in self.questions},
        )
        # Why a question did not take an earlier path, per question key.
        self.skipped = self._chat.skipped

    async def async_run(self, hass: HomeAssistant) -> ai_task.EvaluationTaskResult:
        """Answer all questions: the Decisions API first, then chat completions."""
        if self._task.attachments:
            files = await async_load_attachments(hass, self._task.attachments)
            self._chat.files.extend(files)
        outcomes: dict[str, Outcome] = {}
        if eligible := self._decisions_eligible():
            outcomes.update(await self._async_decisions(eligible) or {})
        rest = [q for q in self.questions if q.key not in outcomes]
        try:
            # One failed question fails the task: the others are cancelled.
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(self._chat.async_answer(q)) for q in rest]
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
        if self._chat.capabilities.refuses(Feature.DECISIONS):
            self._skip_all("decisions: not offered by this server")
            return []
        if not files_fit(self._chat.files):
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
        if self._chat.files:
            sent.add(Feature.IMAGE_INPUT)
        try:
            async with self._chat.slots:
                raw = await self._transport.async_read(
                    "POST",
                    "/decisions",
                    budget=self._budget,
                    body=decisions_body(
                        self._chat.settings.model,
                        self._chat.evidence,
                        self._chat.files,
                        questions,
                    ),
                    sent=frozenset(sent),
                )
            data = parse_json(raw)
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
        self._chat.capabilities.learn_proven(Feature.DECISIONS)
        return read_decision(data["answers"], questions)

    def _no_decisions(
        self, questions: list[Question], reason: str, learn: bool
    ) -> None:
        """Send the questions on; remember that the model has no Decisions API."""
        LOGGER.debug("Decisions API not used, using chat completions: %s", reason)
        if learn:
            self._chat.capabilities.learn_refused(Feature.DECISIONS, reason)
        for question in questions:
            self.skipped[question.key].append(f"decisions: {reason}")

    # --- trace ----------------------------------------------------------------

    def _trace(self, outcomes: dict[str, Outcome]) -> None:
        """Tell the debug log and an active conversation trace how it went."""
        detail = {
            "task_name": self._task.name,
            "model": self._chat.settings.model,
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
