"""Tool calls assembled from fragments, named, and answered when they cannot run."""

from __future__ import annotations

from itertools import count
from typing import Any

from homeassistant.helpers import llm
import pytest

from custom_components.openai_compatible.errors import ModelError, ServerError
from custom_components.openai_compatible.net.transport import ToolSet
from custom_components.openai_compatible.wire.tool_calls import (
    MAX_TOOL_CALLS,
    PendingCall,
    ToolCallAssembler,
    call_input,
    checked_calls,
)

NAMES = {
    "intent__HassTurnOn": "HassTurnOn",
    "intent__HassTurnOff": "HassTurnOff",
    **{name: name for name in ("a", "b", "c", "d", "e", "f", "other")},
}


def assemble(*fragments: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """Assemble the fragments; return (id, name, arguments) of each call."""
    assembler = ToolCallAssembler()
    for fragment in fragments:
        assembler.add(fragment)
    numbers = count()
    calls = assembler.named_calls()
    inputs = [
        call_input(call, call.call_id or f"new{next(numbers)}", NAMES)[0]
        for call in calls
    ]
    return [(call.id, call.tool_name, call.tool_args) for call in inputs]


def fragment(
    index: int | None = 0,
    call_id: str | None = None,
    name: str | None = None,
    arguments: Any = None,
) -> dict[str, Any]:
    """Return one `tool_calls` fragment as servers send it."""
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    result: dict[str, Any] = {"function": function}
    if index is not None:
        result["index"] = index
    if call_id is not None:
        result["id"] = call_id
    return result


def test_fragments_merge_by_index_and_names_map_back() -> None:
    """Fragments of one index form one call; wire names map to tool names."""
    assert assemble(
        fragment(0, "c1", "intent__HassTurnOn", ""),
        fragment(0, arguments='{"name": '),
        fragment(0, arguments='"Kitchen"}'),
        fragment(1, "c2", "other", {"a": 1}),
    ) == [
        ("c1", "HassTurnOn", {"name": "Kitchen"}),
        ("c2", "other", {"a": 1}),
    ]


def test_calls_sharing_an_index() -> None:
    """A new id, or a new name after complete arguments, starts a call."""
    assert assemble(
        fragment(0, name="a", arguments="{}"),
        fragment(0, name="b", arguments='{"x": 1}'),
        fragment(0, name="b"),  # a trailing fragment repeating the name
        fragment(0, name="e", arguments={"y": 2}),
        fragment(0, name="f", arguments="{}"),
        fragment(1, "id1", "c"),
        fragment(1, "id2", "d", {}),
    ) == [
        ("new0", "a", {}),
        ("new1", "b", {"x": 1}),
        ("new2", "e", {"y": 2}),
        ("new3", "f", {}),
        ("id1", "c", {}),
        ("id2", "d", {}),
    ]


def test_calls_without_index_and_double_encoded_arguments() -> None:
    """Calls without an index each stand alone; string-encoded JSON is decoded."""
    assert assemble(
        fragment(None, "1", "a", '"{}"'),
        fragment(None, "2", "b", "null"),
        fragment(None, "3", arguments="{}"),
        fragment(None, "4", "e", "[1]"),
    ) == [("1", "a", {}), ("2", "b", {}), ("4", "e", {})]


def test_repeated_call_ids_are_dropped() -> None:
    """A call id seen before is a repeat: it runs once."""
    assert assemble(
        fragment(0, "same", "a", "{}"),
        fragment(1, "same", "a", "{}"),
        fragment(2, "other", "b", "{}"),
    ) == [("same", "a", {}), ("other", "b", {})]


def test_at_most_max_calls() -> None:
    """One answer asks for at most MAX_TOOL_CALLS calls."""
    assert MAX_TOOL_CALLS == 32
    fragments = [fragment(i, f"c{i}", "a", "{}") for i in range(MAX_TOOL_CALLS)]
    assert len(assemble(*fragments)) == MAX_TOOL_CALLS
    with pytest.raises(ModelError) as err:
        assemble(*fragments, fragment(MAX_TOOL_CALLS, "last", "a", "{}"))
    assert err.value.translation_key == "too_many_tool_calls"
    assert err.value.translation_placeholders == {"limit": "32"}


@pytest.mark.parametrize(
    ("bad", "part"),
    [
        ("call", "tool_calls"),
        ({"index": 0, "function": "a"}, "tool_calls.function"),
        ({"index": 0, "id": 7}, "tool_calls.id"),
        (fragment(0, name={"n": 1}), "tool_calls.function.name"),  # type: ignore[arg-type]
        (fragment(0, name="a", arguments=12), "tool_calls.function.arguments"),
        (fragment(0, name="a", arguments=[1]), "tool_calls.function.arguments"),
    ],
)
def test_fragments_of_the_wrong_shape(bad: Any, part: str) -> None:
    """A fragment of the wrong shape is an unreadable answer, naming the part."""
    with pytest.raises(ServerError) as err:
        assemble(bad)
    assert err.value.translation_key == "answer_malformed"
    assert err.value.translation_placeholders == {"part": part}


@pytest.mark.parametrize(
    "arguments", ["{oops", "[" * 100_000, '{"a":' * 300 + "1" + "}" * 300]
)
def test_unusable_arguments_are_answered(arguments: str) -> None:
    """Arguments that are not JSON, too deep to parse or to write back: answered."""
    assembler = ToolCallAssembler()
    assembler.add(fragment(0, "x", "intent__HassTurnOn", arguments))
    (pending,) = assembler.named_calls()
    call, answer = call_input(pending, "x", NAMES)
    assert answer is not None
    assert (call.tool_name, call.external) == ("HassTurnOn", True)
    assert answer["result"].data["error"] == "invalid_tool_arguments"
    with pytest.raises(ModelError) as err:
        PendingCall("x", "a", [arguments]).arguments()
    assert err.value.translation_key == "invalid_tool_arguments"


def test_raw_control_characters_in_arguments_are_taken() -> None:
    """A control character written raw inside a JSON string is read as it is."""
    assert PendingCall("x", "a", ['{"name": "Kitchen\x01 light\n"}']).arguments() == {
        "name": "Kitchen\x01 light\n"
    }


def test_calls_of_tools_not_offered_are_answered() -> None:
    """A call of a tool that was not offered is answered with the offered names."""
    assembler = ToolCallAssembler()
    assembler.add(fragment(0, "x", "intent__HassDance", "{}"))
    (pending,) = assembler.named_calls()
    call, answer = call_input(pending, "x", NAMES)
    assert answer is not None
    assert call.external
    assert answer["result"].data["error"] == "unknown_tool"
    assert "intent__HassTurnOn, intent__HassTurnOff" in str(answer["result"].data)


def test_completeness_checks_back_off() -> None:
    """A failed check is repeated only after the arguments have doubled."""
    call = PendingCall("c", "a")
    call.add_arguments('{"a": ')
    assert not call.arguments_complete()
    call.add_arguments("1}")
    assert not call.arguments_complete()  # 8 characters, not yet 2 * 6 + 1
    call.add_arguments(" " * 5)
    assert call.arguments_complete()


TOOL_SET = ToolSet(
    [
        {
            "type": "function",
            "function": {
                "name": "wire_count",
                "parameters": {
                    "type": "object",
                    "properties": {"label": {"type": "string"}},
                    "required": ["label"],
                },
            },
        },
        {"type": "function", "function": {"name": "free"}},
    ],
    {"count": "wire_count", "free": "free"},
    {"wire_count": "count", "free": "free"},
)


@pytest.mark.parametrize("arguments", [{"labels": 1}, {"label": None}])
def test_a_call_without_a_required_key_is_answered(arguments: dict[str, Any]) -> None:
    """A call without a required key (or with it null) gets an error naming it."""
    result = checked_calls(TOOL_SET)(llm.ToolInput("count", arguments))

    assert result is not None
    assert result.error
    assert result.data["error"] == "invalid_tool_arguments"
    assert "'label'" in str(result.data["error_text"])


def test_fitting_calls_go_to_the_set_own_calls() -> None:
    """Calls with the required keys reach the set's own answer, whatever their types.

    Tools coerce what they take (Home Assistant's intents take one domain for
    a list of domains), so only a missing key is answered here.
    """
    seen: list[str] = []

    def own(call: llm.ToolInput) -> llm.ToolResult | None:
        seen.append(call.tool_name)
        return None

    checked = checked_calls(
        ToolSet(TOOL_SET.tools, TOOL_SET.to_wire, TOOL_SET.from_wire, own)
    )

    assert checked(llm.ToolInput("count", {"label": "a\x01"})) is None
    assert checked(llm.ToolInput("count", {"label": 5, "extra": True})) is None
    assert checked(llm.ToolInput("free", {"any": 1})) is None
    assert seen == ["count", "count", "free"]
    assert checked_calls(TOOL_SET)(llm.ToolInput("count", {"label": "a"})) is None
