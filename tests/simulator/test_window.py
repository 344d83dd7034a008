"""The simulated context window: counting, and overflows in servers' words."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from simulator import OpenAISimulator
from simulator.window import count_text, prompt_tokens

MODEL = "llama3.2:3b"


def messages(words: int) -> list[dict[str, Any]]:
    """Return a system prompt and a user message of about `words` tokens."""
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": " ".join(["light"] * words)},
    ]


def test_counting() -> None:
    """Words, digit groups, punctuation and line breaks each count."""
    assert count_text("") == 0
    assert count_text("Hello world") == 2
    assert count_text("temperature") == 2  # longer words take more tokens
    assert count_text("21.5 °C") == 5
    assert count_text("a:\n  b") == 4
    body = {"messages": messages(10)}
    # The priming, two messages with their wrapping, and their words.
    assert prompt_tokens(body) == 3 + 4 + 3 + 4 + 10
    tools = [{"type": "function", "function": {"name": "x"}}]
    assert prompt_tokens({**body, "tools": tools}) > prompt_tokens(body)
    calls = [{"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}]
    assert prompt_tokens({"messages": calls}) > 3 + 4


async def test_usage_counts_the_same_way(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """The usage of an answer reports the prompt as the window counts it."""
    answer = await client.chat.completions.create(model=MODEL, messages=messages(50))

    assert answer.usage is not None
    assert answer.usage.prompt_tokens == prompt_tokens({"messages": messages(50)})


async def test_no_window_no_limit(client: openai.AsyncOpenAI) -> None:
    """Without a window set, any prompt is taken."""
    answer = await client.chat.completions.create(model=MODEL, messages=messages(5000))

    assert answer.choices[0].message.content


async def test_within_the_window(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A prompt exactly as large as the window is answered."""
    sim.settings.context_window = prompt_tokens({"messages": messages(100)})

    answer = await client.chat.completions.create(model=MODEL, messages=messages(100))

    assert answer.choices[0].message.content


@pytest.mark.parametrize(
    ("style", "max_tokens", "message", "extra"),
    [
        (
            "openai",
            None,
            (
                "This model's maximum context length is 100 tokens. However, your "
                "messages resulted in 134 tokens. Please reduce the length of the "
                "messages."
            ),
            {"code": "context_length_exceeded", "param": "messages"},
        ),
        (
            "openai",
            50,
            (
                "This model's maximum context length is 100 tokens. However, you "
                "requested 184 tokens (134 in the messages, 50 in the completion). "
                "Please reduce the length of the messages or completion."
            ),
            {"code": "context_length_exceeded"},
        ),
        (
            "llama_cpp",
            50,
            (
                "request (134 tokens) exceeds the available context size (100 tokens), "
                "try increasing it"
            ),
            {"type": "exceed_context_size_error", "n_prompt_tokens": 134, "n_ctx": 100},
        ),
        (
            "litellm",
            None,
            (
                "litellm.ContextWindowExceededError: litellm.BadRequestError: "
                "ContextWindowExceededError: OpenAIException - This model's maximum "
                "context length is 100 tokens. However, your messages resulted in 134 "
                "tokens. Please reduce the length of the messages.\n"
                "model=local-model. Received Model Group=local-model\n"
                "Available Model Group Fallbacks=None"
            ),
            {"code": "400"},
        ),
    ],
)
async def test_overflow_wordings(
    sim: OpenAISimulator,
    client: openai.AsyncOpenAI,
    style: Any,
    max_tokens: int | None,
    message: str,
    extra: dict[str, Any],
) -> None:
    """Each server refuses an overflow with a 400 in its own words and shape."""
    sim.settings.context_window = 100
    sim.settings.overflow_style = style
    extra_body = {} if max_tokens is None else {"max_tokens": max_tokens}

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model=MODEL, messages=messages(120), stream=True, **extra_body
        )

    assert caught.value.status_code == 400
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == message
    for key, value in extra.items():
        assert caught.value.body[key] == value


async def test_vllm_wordings(sim: OpenAISimulator, client: openai.AsyncOpenAI) -> None:
    """The vLLM style answers without an `error` wrapper, about the prompt or max_tokens."""
    sim.settings.context_window = 150
    sim.settings.overflow_style = "vllm"

    with pytest.raises(openai.BadRequestError) as too_long:
        await client.chat.completions.create(model=MODEL, messages=messages(160))
    with pytest.raises(openai.BadRequestError) as too_much_answer:
        await client.chat.completions.create(
            model=MODEL, messages=messages(120), max_tokens=100
        )

    assert too_long.value.body == {
        "object": "error",
        "message": "This model's maximum context length is 150 tokens. However, "
        "your request has 174 input tokens. Please reduce the length of the input "
        "messages.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    assert isinstance(too_much_answer.value.body, dict)
    assert too_much_answer.value.body["message"] == (
        "'max_tokens' or 'max_completion_tokens' is too large: 100. This model's "
        "maximum context length is 150 tokens and your request has 134 input "
        "tokens (100 > 150 - 134)."
    )


async def test_lm_studio_wording(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """LM Studio puts a bare string under `error`; the answer's room is not counted."""
    sim.settings.context_window = 130
    sim.settings.overflow_style = "lm_studio"
    answer = await client.chat.completions.create(
        model=MODEL, messages=messages(100), max_tokens=500
    )
    assert answer.choices[0].message.content

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model=MODEL, messages=messages(120))

    assert caught.value.body == (
        "Trying to keep the first 134 tokens when context the overflows. "
        "However, the model is loaded with context length of only 130 tokens, which "
        "is not enough. Try to load the model with a larger context length, or "
        "provide a shorter input"
    )


async def test_scripted_answers_are_refused_too(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """A request over the window is refused before a scripted answer is used."""
    sim.settings.context_window = 100
    sim.enqueue("/chat/completions", json={"choices": []})

    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model=MODEL, messages=messages(120))
    answer = await client.chat.completions.with_raw_response.create(
        model=MODEL, messages=messages(10)
    )

    assert answer.http_response.json() == {"choices": []}


async def test_malformed_requests_still_get_their_validation_error(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """Odd fields do not break the count; validation names them as before."""
    sim.settings.context_window = 1000

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model=MODEL,
            messages=messages(10),
            extra_body={"max_tokens": "many", "tools": "none"},
        )

    assert caught.value.body is not None
    assert "tools" in str(caught.value.body)


async def test_models_report_the_window(
    sim: OpenAISimulator, client: openai.AsyncOpenAI
) -> None:
    """With a window set, model entries report it as hosted services do."""
    listed = await client.models.list()
    assert "context_length" not in (listed.data[0].model_extra or {})

    sim.settings.context_window = 8192
    listed = await client.models.list()
    one = await client.models.retrieve(MODEL)

    assert all(model.model_extra == {"context_length": 8192} for model in listed.data)
    assert one.model_extra == {"context_length": 8192}
