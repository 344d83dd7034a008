"""A server's models page, read whole or up to its cap; whether it holds a model."""

from __future__ import annotations

import json

import pytest

from custom_components.openai_compatible.models.listing import (
    MAX_LISTED_MODELS,
    MAX_PATTERNS,
    is_listed,
    listed_models,
    read_listing,
)


def test_a_whole_page_gives_its_models_in_order() -> None:
    """Entries without a usable id are left out."""
    page = {"data": [{"id": "b"}, {"id": "a"}, {"id": ""}, {"name": "c"}, "d"]}

    listing = read_listing(json.dumps(page).encode())

    assert listing is not None
    assert listing.ids == ["a", "b"]
    assert not listing.cut


@pytest.mark.parametrize("raw", [b"<html>", b'{"data": {}}', b"[1, 2]"])
def test_what_is_no_models_page_gives_none(raw: bytes) -> None:
    """A web page, a data that is no list, a bare list: no models page."""
    assert read_listing(raw) is None


PAGE = json.dumps(
    {
        "object": "list",
        "data": [{"id": "a", "meta": {"k": [1]}}, {"id": "b"}, {"id": "cé"}],
    },
    ensure_ascii=False,
).encode()


@pytest.mark.parametrize(
    ("cut", "ids"),
    [
        (PAGE.index("é".encode()) + 1, ["a", "b"]),  # in a multi-byte character
        (PAGE.index(b', {"id": "c') + 1, ["a", "b"]),  # between two entries
        (PAGE.index(b'"b"'), ["a"]),  # in an entry
        (PAGE.index(b"[1]") + 1, []),  # in the first entry's nested list
    ],
)
def test_a_cut_page_gives_the_whole_entries_before_the_cut(
    cut: int, ids: list[str]
) -> None:
    """Wherever the cut falls, the entries before it and only those are read."""
    listing = read_listing(PAGE[:cut], cut=True)

    assert listing is not None
    assert listing.ids == ids
    assert listing.cut


def test_a_cut_page_without_data_gives_none() -> None:
    """A cut page whose entries never started is no models page."""
    assert read_listing(b'{"object": "list", "padding": "xxxx', cut=True) is None


def test_a_page_over_the_model_cap_gives_the_first_models() -> None:
    """A page that lists more models than the cap gives the first ones, cut."""
    names = [f"m{index:05d}" for index in range(MAX_LISTED_MODELS + 1)]
    page = json.dumps({"data": [{"id": name} for name in names]}).encode()

    listing = read_listing(page)

    assert listing is not None
    assert listing.ids == names[:MAX_LISTED_MODELS]
    assert listing.cut
    # Just as many is no cut.
    assert not read_listing(page.replace(b', {"id": "m10000"}', b"")).cut


@pytest.mark.parametrize(
    ("model", "listed", "expected"),
    [
        ("gpt-4o-mini", ["gpt-4o-mini", "gpt-5"], True),
        ("gpt-4o", ["gpt-4o-mini"], False),
        # Gemini lists "models/<name>" and takes the bare name, and the other way.
        ("gemini-2.5-flash", ["models/gemini-2.5-flash"], True),
        ("models/gemini-2.5-flash", ["gemini-2.5-flash"], True),
        ("gemini-2.5-pro", ["models/gemini-2.5-flash"], False),
        # Ollama lists the default tag; a bare name means it.
        ("llama3.2", ["llama3.2:latest"], True),
        ("llama3.2:1b", ["llama3.2:latest", "llama3.2:3b"], False),
        # OpenRouter's routing variants are taken on any listed model.
        ("openai/gpt-5:nitro", ["openai/gpt-5"], True),
        ("openai/gpt-5:floor", ["openai/gpt-5"], True),
        ("openai/gpt-5:exacto", ["openai/gpt-5"], True),
        ("openai/gpt-5:online", ["openai/gpt-5"], True),
        ("openai/gpt-5:nitro", ["openai/gpt-4o"], False),
        # Catalog variants are listed on their own.
        ("openai/gpt-5:free", ["openai/gpt-5"], False),
        # LiteLLM lists its wildcard routes as configured.
        ("openai/gpt-5", ["openai/*"], True),
        ("anthropic/claude", ["openai/*"], False),
        ("anything", ["*"], True),
        ("gpt-5", [], False),
    ],
)
def test_is_listed(model: str, listed: list[str], expected: bool) -> None:
    """A model counts as listed under any name the server takes for it."""
    assert is_listed(model, listed_models(listed)) is expected


def test_only_the_first_patterns_count() -> None:
    """A list of many patterns is matched by its first MAX_PATTERNS only."""
    patterns = [f"{index}/*" for index in range(MAX_PATTERNS + 1)]
    listed = listed_models(patterns)
    assert is_listed(f"{MAX_PATTERNS - 1}/model", listed)
    assert not is_listed(f"{MAX_PATTERNS}/model", listed)
