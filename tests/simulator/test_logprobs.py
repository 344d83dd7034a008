"""Answers with log-probabilities: a label token and its alternatives."""

from __future__ import annotations

import openai
import pytest

from simulator import OpenAISimulator
from tests.simulator.chat_client import MODEL, collect, streamed_text, user


@pytest.mark.parametrize(
    ("prompt", "token", "alternative"),
    [
        ('Is the door open? Answer "yes" or "no".', "yes", "no"),
        ("Is it on? Answer Yes or No only.", "Yes", "No"),
        ("Which room?\nA) kitchen\nB) garage\nC) attic", "A", "B"),
        ("Rate the comfort from 1 to 5.", "1", "2"),
        ("Pick 'cold', 'warm' or 'hot'.", "cold", "warm"),
    ],
)
async def test_logprobs_single_label(
    client: openai.AsyncOpenAI, prompt: str, token: str, alternative: str
) -> None:
    """A classification prompt gets one label token with realistic alternatives."""
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user(prompt),
        logprobs=True,
        top_logprobs=8,
        max_completion_tokens=1,
    )

    choice = answer.choices[0]
    assert choice.message.content == token
    assert choice.logprobs is not None and choice.logprobs.content is not None
    (entry,) = choice.logprobs.content
    assert entry.token == token
    assert entry.bytes == list(token.encode())
    assert entry.logprob < 0
    tops = [top.token for top in entry.top_logprobs]
    assert len(tops) == 8
    assert tops[0] == token
    assert f" {token}" in tops
    assert alternative in tops
    logprobs = [top.logprob for top in entry.top_logprobs]
    assert logprobs == sorted(logprobs, reverse=True)


async def test_logprobs_streamed_and_echo(client: openai.AsyncOpenAI) -> None:
    """Streamed logprobs ride on the chunk choices, one per token."""
    chunks = await collect(
        client, messages=user("Something to echo"), logprobs=True, top_logprobs=2
    )

    entries = [
        entry
        for c in chunks
        if c.choices and c.choices[0].logprobs
        for entry in c.choices[0].logprobs.content or ()
    ]
    assert "".join(e.token for e in entries) == "You said: Something to echo"
    assert all(len(e.top_logprobs) == 2 for e in entries)
    assert streamed_text(chunks) == "You said: Something to echo"


async def test_logprobs_switched_off(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A server without logprobs ignores the request fields."""
    sim.settings.logprobs = False
    answer = await client.chat.completions.create(
        model=MODEL,
        messages=user('Answer "yes" or "no".'),
        logprobs=True,
        top_logprobs=3,
    )
    assert answer.choices[0].logprobs is None
    assert answer.choices[0].message.content == 'You said: Answer "yes" or "no".'
