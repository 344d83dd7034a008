"""The chat paths of an evaluation: token log-probabilities, else stated ones.

Every request goes through the Chat Completions adapter when a slot of the
entry is free. A model that gives no log-probabilities, or refuses them in
general, is learned not to; reasoning models skip that path, as they cannot
answer within one token. Stated probabilities go through the structured-output
ladder (structured/rungs.py) and are repaired once where they do not fit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, cast

from ..const import LOGGER
from ..errors import ModelError, RequestRejectedError
from ..features import Feature
from ..media.attachments import LoadedFile
from ..models.capabilities import ModelCapabilities
from ..net.request import RequestSettings
from ..net.shapes import ChatBody, ChatMessage, ChatPart, JsonObject
from ..structured.rungs import RUNG_NAMES, StructuredRequest, async_climb
from ..structured.strict_schema import strict_json_schema
from ..wire.chat_completions import attachment_part
from ..wire.route_fallback import Adapter
from .chat_answers import (
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
from .questions import Outcome, Question, label_prompt, normalised, stated_prompt

SYSTEM_PROMPT: Final = (
    "You evaluate evidence from a smart home: its state, given as JSON or text, "
    "and any attached images. Answer the question exactly in the form it asks for."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatPaths:
    """The chat paths of one evaluation task, sharing its evidence and slots.

    `skipped` is where the paths note why they were not taken, per question.
    """

    adapter: Adapter
    capabilities: ModelCapabilities
    settings: RequestSettings
    slots: asyncio.Semaphore
    evidence: str
    files: list[LoadedFile]
    skipped: dict[str, list[str]]

    async def async_answer(self, question: Question) -> Outcome:
        """Answer one question from log-probabilities, else stated probabilities."""
        labels = question.labels()
        if self.capabilities.refuses(Feature.LOGPROBS):
            self.skipped[question.key].append("logprobs: the server gives none")
        elif self.capabilities.reasoning:
            self.skipped[question.key].append("logprobs: reasoning model")
        elif labels is None:
            self.skipped[question.key].append("logprobs: too many options")
        elif outcome := await self._async_logprobs(question, labels):
            return outcome
        return await self._async_stated(question)

    async def _async_complete(self, body: ChatBody) -> JsonObject:
        """Send one chat request when a slot is free; return its answer."""
        async with self.slots:
            return await self.adapter.async_complete(body)

    def _messages(self, prompt: str) -> list[ChatMessage]:
        """Return the messages: evidence first (shared by all questions), then one."""
        if not self.files:
            text = f"{self.evidence}\n\n{prompt}"
            user: ChatMessage = {"role": "user", "content": text}
        else:
            parts: list[ChatPart] = [{"type": "text", "text": self.evidence}]
            parts.extend(attachment_part(file) for file in self.files)
            parts.append({"type": "text", "text": prompt})
            user = {"role": "user", "content": parts}
        return [{"role": "system", "content": SYSTEM_PROMPT}, user]

    async def _async_logprobs(
        self, question: Question, labels: list[str]
    ) -> Outcome | None:
        """Read the label distribution of a one-token answer; None to fall back."""
        body = logprobs_body(
            self.settings.model,
            self._messages(label_prompt(question, labels)),
            self.settings.prompt_cache_key,
        )
        try:
            data = await self._async_complete(body)
        except RequestRejectedError as err:
            # Else about this request (the context, an attachment), not logprobs.
            if err.feature is Feature.LOGPROBS and err.general:
                self.capabilities.learn_refused(Feature.LOGPROBS, err.lesson_source)
            self.skipped[question.key].append(
                f"logprobs: refused: {err.server_message}"
            )
            return None
        top = top_logprobs(first_choice(data))
        if top is None:
            self._no_logprobs(question, "the server returned none")
            return None
        self.capabilities.learn_proven(Feature.LOGPROBS)
        raw = label_masses(top, labels)
        extra: dict[str, object] = {}
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
        self, question: Question, body: ChatBody, labels: list[str]
    ) -> dict[str, float] | None:
        """Ask again with the answer held to the labels; None when it tells nothing."""
        if self.capabilities.refuses(Feature.JSON_SCHEMA):
            return None
        try:
            held = held_to_labels(body, labels, self.capabilities.kind)
            data = await self._async_complete(held)
        except RequestRejectedError as err:
            # Not asked again: the schema it holds the labels by is refused.
            self.capabilities.learn_refused(Feature.JSON_SCHEMA, err.lesson_source)
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
        self.capabilities.learn_refused(Feature.LOGPROBS, reason)
        self.skipped[question.key].append(f"logprobs: {reason}")

    async def _async_stated(self, question: Question) -> Outcome:
        """Ask the model to state a probability per option, as JSON."""
        schema = stated_schema(question)

        async def attempt(request: StructuredRequest) -> JsonObject:
            return await self._async_complete(self._stated_body(question, request))

        def on_rejected(request: StructuredRequest, err: RequestRejectedError) -> None:
            self.skipped[question.key].append(
                f"stated: {RUNG_NAMES[request.rung]} refused: {err.server_message}"
            )

        request, data = await async_climb(
            self.capabilities,
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
    ) -> ChatBody:
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
        body: JsonObject = {
            "model": self.settings.model,
            "messages": messages,
            **self.settings.body(),
        }
        if request.response_format:
            body["response_format"] = request.response_format
        return cast("ChatBody", body)


def _stated_outcome(
    question: Question, choice: JsonObject, extra: Mapping[str, object]
) -> Outcome:
    """Return the outcome of a stated answer; raise ModelError where it does not fit."""
    stated = stated_answer(choice, question)
    probabilities = normalised(
        question, [stated[n] for n in question.names], STATED_TOLERANCE
    )
    return Outcome(probabilities, "stated", stated, dict(extra))
