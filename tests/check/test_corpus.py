"""The scenario corpus: it loads, it is big enough, every scenario explains itself, bad files are refused."""

from __future__ import annotations

import shutil
import unicodedata

import pytest

from app.check.corpus import CATEGORIES, CorpusError, default_scenarios_dir, load_corpus
from app.json_schema import schema_problem


def test_corpus_loads_with_every_category_and_a_rationale_each():
    corpus = load_corpus()
    assert len(corpus.scenarios) >= 60
    assert {s.category for s in corpus.scenarios} == set(CATEGORIES)
    for s in corpus.scenarios:
        assert len(s.rationale.split()) >= 8, s.id  # says what it asserts and why
        assert s.prompt.strip() and s.tools, s.id
    assert len({s.id for s in corpus.scenarios}) == len(corpus.scenarios)
    # a turn is found by its prompt: only a scenario's thinking variants share one (same turns)
    by_prompt: dict[str, set] = {}
    for s in corpus.scenarios:
        by_prompt.setdefault(s.prompt, set()).add(repr((s.turns, s.tools, s.history, s.tool_choice)))
    assert all(len(v) == 1 for v in by_prompt.values())
    variants = [s for s in corpus.scenarios if s.thinking is not None]
    assert {s.thinking for s in variants} == {"on", "off"}  # the reasoning dimension
    assert all(s.category == "reasoning" and s.id.endswith(f"-thinking-{s.thinking}") for s in variants)


def test_thinking_takes_on_off_or_both(tmp_path):
    d = tmp_path / "corpus"
    shutil.copytree(default_scenarios_dir(), d)
    path = d / "reasoning.toml"
    original = path.read_text(encoding="utf-8")
    for bad in ('"maybe"', '["on", "on"]', "[]", "1"):
        path.write_text(original.replace('thinking = ["on", "off"]', f"thinking = {bad}"), encoding="utf-8")
        with pytest.raises(CorpusError, match="thinking must be"):
            load_corpus(d)
    path.write_text(original.replace('thinking = ["on", "off"]', 'thinking = "off"'), encoding="utf-8")
    (only,) = [s for s in load_corpus(d).scenarios if s.thinking is not None]
    assert (only.id, only.thinking) == ("reason-switch", "off")


def test_every_expected_value_fits_its_tool_and_exact_strings_are_in_the_prompt():
    """A scenario no correct model can pass is a bug: each expectation must fit the schema, and an
    exact string value must be written in the prompt or come from a tool result the harness feeds."""
    corpus = load_corpus()
    for s in corpus.scenarios:
        fed = " ".join(r.content for t in s.turns for r in t.results) + " ".join(
            m.get("content", "") for m in s.history
        )
        source = unicodedata.normalize("NFC", s.prompt + " " + fed)
        for turn in s.turns:
            for e in turn.expect:
                assert schema_problem(e.arguments, s.tool_schema(e.name), partial=e.match != "exact") is None
                if e.match == "ignore":
                    continue
                stack = [e.arguments]
                while stack:
                    v = stack.pop()
                    if isinstance(v, dict):
                        stack.extend(v.values())
                    elif isinstance(v, list):
                        stack.extend(v)
                    elif isinstance(v, str) and v not in ("UTC",):
                        assert unicodedata.normalize("NFC", v) in source, (s.id, v)


def test_categories_cover_the_argument_shapes():
    corpus = load_corpus()
    types = set()
    for s in corpus.select(["single"]):
        for e in s.turns[0].expect:
            for v in e.arguments.values():
                types.add(type(v).__name__)
            if not e.arguments:
                types.add("empty")
    assert {"str", "int", "float", "bool", "list", "dict", "empty"} <= types
    choices = {s.tool_choice_label for s in corpus.select(["tool_choice"])}
    assert {"auto", "none", "required"} <= choices and any(c.startswith("named:") for c in choices)
    assert all(s.stream for s in corpus.select(["streaming"]))
    assert all(len(s.turns) > 1 or s.history for s in corpus.select(["multi_turn"]))
    negative = corpus.select(["negative"])
    assert sum(1 for s in negative if not s.turns[0].expect) >= 4
    assert any(len(e.arguments.get("token", "")) == 256 for s in negative for e in s.turns[0].expect)


def _copy(tmp_path):
    d = tmp_path / "scenarios"
    shutil.copytree(default_scenarios_dir(), d)
    return d


@pytest.mark.parametrize(
    "edit, problem",
    [
        (
            lambda t: t.replace('rationale = "A string argument copied', 'note = "A string argument copied'),
            "rationale is required",
        ),
        (
            lambda t: t.replace(
                'tools = ["fetch_record", "search_docs"]', 'tools = ["fetch_record", "no_such_tool"]', 1
            ),
            "unknown tool",
        ),
        (lambda t: t.replace('match = "subset" }', 'match = "loose" }', 1), "match must be one of"),
        (
            lambda t: t.replace("arguments = { minutes = 25 }", 'arguments = { minutes = "25" }'),
            "do not fit its schema",
        ),
        (lambda t: t + "\n[[scenario]]" + t.split("[[scenario]]")[1], "duplicate scenario id"),
        (lambda t: t.replace('category = "single"', 'category = "misc"'), "category must be one of"),
        (lambda t: t + "\n[[scenario\n", "not valid TOML"),
    ],
)
def test_a_bad_scenario_file_is_refused_with_a_clear_error(tmp_path, edit, problem):
    d = _copy(tmp_path)
    f = d / "single.toml"
    f.write_text(edit(f.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(CorpusError, match=problem) as info:
        load_corpus(d)
    assert "single.toml" in str(info.value)


def test_select_by_category_and_unknown_category(tmp_path):
    corpus = load_corpus()
    assert {s.category for s in corpus.select(["parallel", "negative"])} == {"parallel", "negative"}
    with pytest.raises(CorpusError, match="unknown category"):
        corpus.select(["nope"])
    d = _copy(tmp_path)
    for f in d.glob("*.toml"):
        if f.name != "parallel.toml":
            f.unlink()
    small = load_corpus(d)
    assert {s.category for s in small.scenarios} == {"parallel"}
    assert small.sha256 != corpus.sha256
