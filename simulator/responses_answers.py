"""The built-in answers to Responses API requests.

In order of precedence, when the last input item is the
user's message: an image when `image_generation` is forced or the user asks to
"draw ..."; a web search when `web_search` is offered and the user says
"search ..." (its answer cites a source inline); a run of code when
`code_interpreter` is offered and the user says "calculate A op B". Otherwise
chat_answers.py answers (a tool call, JSON, a summary of tool results, a label
with log-probabilities, an echo). Reasoning models begin with a reasoning item.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from . import chat_answers
from .models import is_reasoning_model
from .responses_as_chat import chat_body
from .responses_items import (
    Item,
    code_interpreter_item,
    function_call_item,
    image_generation_item,
    message_item,
    reasoning_item,
    response_object,
    usage_block,
    web_search_item,
)
from .tokens import count_tokens
from .window import prompt_tokens

if TYPE_CHECKING:
    from .settings import SimulatorSettings

_SEARCH = re.compile(
    r"^\s*(?:search(?: the web)?(?: for)?|look up)\s+(.+?)[.!?]*\s*$", re.IGNORECASE
)
_CALCULATE = re.compile(
    r"^\s*(?:calculate|compute)\s+(-?\d+)\s*([-+*/])\s*(-?\d+)", re.IGNORECASE
)
_DRAW = re.compile(r"^\s*draw\s+(.+?)[.!?]*\s*$", re.IGNORECASE)


def respond(body: dict[str, Any], settings: SimulatorSettings) -> dict[str, Any]:
    """Return the response object that answers a valid request."""
    chat_request = chat_body(body)
    output = _output(body, chat_request, settings)
    usage = _usage(chat_request, output)
    status, reason = "completed", None
    limit = body.get("max_output_tokens")
    if limit is not None and usage["output_tokens"] > limit:
        status, reason = "incomplete", "max_output_tokens"
    return response_object(
        output, model=body["model"], usage=usage, status=status, reason=reason
    )


def _output(
    body: dict[str, Any], chat_request: dict[str, Any], settings: SimulatorSettings
) -> list[Item]:
    """Return the output items: reasoning first, then the answer."""
    output: list[Item] = []
    include = body.get("include") or ()
    if is_reasoning_model(body["model"]):
        words = len(_user_text(body).split())
        wants_summary = (body.get("reasoning") or {}).get("summary") is not None
        output.append(
            reasoning_item(
                f"The user wrote {words} words. I will answer briefly."
                if wants_summary
                else None,
                encrypted="reasoning.encrypted_content" in include,
            )
        )
    hosted = _hosted_answer(body, include)
    if hosted is not None:
        return output + hosted
    result = chat_answers.answer(chat_request, settings)
    if result.text or not result.tool_calls:
        logprobs = result.tokens if "message.output_text.logprobs" in include else None
        output.append(message_item(result.text, logprobs=logprobs))
    output.extend(
        function_call_item(call_id, name, arguments)
        for call_id, name, arguments in result.tool_calls
    )
    return output


def _user_text(body: dict[str, Any]) -> str:
    """Return the text of the last input item when the user sent it, else ''."""
    request_input = body["input"]
    if isinstance(request_input, str):
        return request_input
    last = request_input[-1]
    if last.get("type", "message") != "message" or last.get("role") != "user":
        return ""
    content = last.get("content")
    if isinstance(content, str):
        return content
    return " ".join(
        part["text"] for part in content if isinstance(part.get("text"), str)
    )


def _hosted_answer(body: dict[str, Any], include: Any) -> list[Item] | None:
    """Return the answer a provider-run tool gives, if the request calls for one."""
    tools = {tool["type"]: tool for tool in body.get("tools") or ()}
    text = _user_text(body)
    choice = body.get("tool_choice")
    forced = choice.get("type") if isinstance(choice, dict) else None
    if "image_generation" in tools and (
        forced == "image_generation" or _DRAW.match(text)
    ):
        match = _DRAW.match(text)
        prompt = match[1] if match else text
        size = str(tools["image_generation"].get("size") or "256x256")
        size = "256x256" if size == "auto" else size
        image = image_generation_item(prompt, size)
        if match is None:
            return [image]
        return [image, message_item(f"Here is {prompt}.")]
    search = tools.get("web_search") or tools.get("web_search_preview")
    if search is not None and (match := _SEARCH.match(text)):
        return _web_search_answer(match[1], "web_search_call.action.sources" in include)
    if "code_interpreter" in tools and (match := _CALCULATE.match(text)):
        return _calculation_answer(
            int(match[1]),
            match[2],
            int(match[3]),
            "code_interpreter_call.outputs" in include,
        )
    return None


def _web_search_answer(query: str, with_sources: bool) -> list[Item]:
    """Search, then answer with one inline citation, the way OpenAI writes them."""
    slug = re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") or "result"
    url = f"https://example.com/{slug}?utm_source=openai"
    lead = f"Here is what I found about {query}"
    citation = f" ([example.com]({url}))"
    text = f"{lead}{citation}."
    annotation = {
        "type": "url_citation",
        "start_index": len(lead) + 1,
        "end_index": len(lead) + len(citation),
        "url": url,
        "title": f"{query} - Example",
    }
    return [
        web_search_item(query, [url] if with_sources else None),
        message_item(text, annotations=[annotation]),
    ]


def _calculation_answer(
    left: int, operator: str, right: int, with_logs: bool
) -> list[Item]:
    """Run a calculation in the 'container', then state its result."""
    if operator == "+":
        value: float = left + right
    elif operator == "-":
        value = left - right
    elif operator == "*":
        value = left * right
    else:
        value = left / right if right else math.nan
    shown = f"{value:g}"
    return [
        code_interpreter_item(
            f"print({left} {operator} {right})", shown if with_logs else None
        ),
        message_item(f"The result is {shown}."),
    ]


def _usage(chat_request: dict[str, Any], output: list[Item]) -> dict[str, Any]:
    """Return the usage block: input, output and reasoning tokens."""
    reasoning = sum(
        count_tokens(part["text"])
        for item in output
        if item["type"] == "reasoning"
        for part in item["summary"]
    )
    produced = reasoning
    for item in output:
        if item["type"] == "message":
            produced += sum(count_tokens(part["text"]) for part in item["content"])
        elif item["type"] == "function_call":
            produced += count_tokens(item["name"] + item["arguments"])
    prompt = prompt_tokens(chat_request)
    return usage_block(prompt, produced, reasoning=reasoning)
