"""The prompt form: each wire API's messages tagged with what they are to fitting."""

from __future__ import annotations

from custom_components.openai_compatible.window.prompt_fit import split_turns
from custom_components.openai_compatible.window.prompt_items import (
    CallRef,
    ItemKind,
    chat_items,
    responses_items,
    wire_messages,
)

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Lights?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "function": {"name": "GetLiveContext", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "all off"},
    {"role": "assistant", "content": "All off."},
]
RESPONSES = [
    {"type": "message", "role": "developer", "content": "Be brief."},
    {"type": "message", "role": "user", "content": "Lights?"},
    {
        "type": "reasoning",
        "summary": [{"text": "Look."}, "x"],
        "encrypted_content": "e",
    },
    {
        "type": "function_call",
        "call_id": "c1",
        "name": "GetLiveContext",
        "arguments": "{}",
    },
    {"type": "function_call_output", "call_id": "c1", "output": "all off"},
    {"type": "message", "role": "assistant", "content": "All off."},
]
KINDS = [ItemKind.INSTRUCTIONS, ItemKind.USER, ItemKind.REPLY, ItemKind.RESULT]


def test_both_wire_apis_read_as_the_same_conversation() -> None:
    """Instructions, a turn with a call and its result: the same turns either way."""
    for items in (chat_items(CHAT), responses_items(RESPONSES)):
        head, turns = split_turns(items)
        assert [item.kind for item in head] == [ItemKind.INSTRUCTIONS]
        assert len(turns) == 1
        assert {item.kind for item in turns[0]} == set(KINDS[1:])
        calls = [call for item in items for call in item.calls]
        assert calls == [CallRef("c1", "GetLiveContext", "{}")]
        (result,) = (item for item in items if item.kind is ItemKind.RESULT)
        assert (result.answers, result.text) == ("c1", "all off")


def test_a_reasoning_summary_is_read_and_the_rest_kept_as_sent() -> None:
    """Only the text parts of a summary count; the items go out as they came."""
    items = responses_items(RESPONSES)

    assert items[2].summary == ("Look.",)
    assert wire_messages(items) == RESPONSES


def test_a_result_with_other_text_keeps_its_field() -> None:
    """A cut result says its new text where its wire API holds it."""
    chat = chat_items(CHAT)[3].with_text("cut")
    responses = responses_items(RESPONSES)[4].with_text("cut")

    assert chat.wire == {**CHAT[3], "content": "cut"}
    assert responses.wire == {**RESPONSES[4], "output": "cut"}
    assert CHAT[3]["content"] == "all off"
