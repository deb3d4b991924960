"""The bench harness: rows, goals, the table, results.json, the README section; and a real
(tiny) run of the parser-cost and detection figures. No timing is asserted anywhere: only the
shape and consistency of what the harness writes."""

from __future__ import annotations

import json

import pytest

from bench import __main__ as bench_main
from bench.harness import (
    ROW_KEYS,
    Row,
    format_table,
    interleave,
    machine_info,
    median,
    meets_goal,
    read_results,
    row,
    write_results,
)


def test_row_has_exactly_the_schema_and_meets_follows_the_goal():
    r = row("x ratio", 0.98, "ratio", ">= 0.97")
    assert tuple(r.to_dict()) == ROW_KEYS
    assert r.meets is True
    assert row("x", 0.96, "ratio", ">= 0.97").meets is False
    assert row("y", 49.9, "ms", "< 50").meets is True
    assert row("y", 50.0, "ms", "< 50").meets is False
    assert row("z", 1.10, "ratio", "<= 1.10").meets is True
    assert row("n", None, "ms", "< 50").meets is False  # not measured never meets
    assert r.machine == machine_info() and "cores" in r.machine
    assert r.date[:4].isdigit() and "T" in r.date


def test_bad_goal_and_empty_name_are_clear_errors():
    with pytest.raises(ValueError, match="op one of"):
        meets_goal(1.0, "about 3")
    with pytest.raises(ValueError, match="needs a name"):
        row("", 1.0, "ms", "< 2")
    with pytest.raises(ValueError, match="no values"):
        median([])


def test_interleave_alternates_order_and_collects_each_side():
    calls: list[str] = []

    def a() -> float:
        calls.append("a")
        return 1.0

    def b() -> float:
        calls.append("b")
        return 2.0

    out = interleave([a, b], 3)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert out == [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    assert median([3, 1, 2]) == 2


def test_results_json_round_trip_and_table(tmp_path):
    rows = [
        row("1. gen | ratio", 0.99, "ratio", ">= 0.97"),
        row("5. detect", 80.0, "ms", "< 50"),
        row("1b. server", None, "ratio", ">= 0.95"),
    ]
    path = write_results(rows, tmp_path / "sub" / "results.json")
    data = json.loads(path.read_text())
    assert isinstance(data, list) and len(data) == 3
    assert all(list(d) == list(ROW_KEYS) for d in data)
    assert [d["meets"] for d in data] == [True, False, False]
    assert read_results(path) == rows
    table = format_table(rows).splitlines()
    assert table[0].startswith("| figure |") and len(table) == 2 + 3
    assert "\\|" in table[2]  # a pipe in a name does not break the table
    assert "**no**" in table[3] and "n/a" in table[4]


def test_read_results_rejects_rows_with_other_keys(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps([{"name": "x", "value": 1}]))
    with pytest.raises(ValueError, match="exactly the keys"):
        read_results(p)
    with pytest.raises(ValueError, match="unexpected|expected"):
        write_results([Row("x", 1.0, "ms", "< 2", True, "m", "d"), _Odd()], tmp_path / "o.json")


class _Odd(Row):
    def __init__(self):
        super().__init__("odd", 1.0, "ms", "< 2", True, "m", "d")

    def to_dict(self):
        return {"name": "odd", "value": 1.0}


def test_update_readme_replaces_only_the_marked_section(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# T\n\n## Benchmarks\n\n{bench_main.README_BEGIN}\nold\n{bench_main.README_END}\n\n## After\nkeep\n"
    )
    table = format_table([row("a", 1.0, "ms", "< 2")])
    assert bench_main.update_readme(table, "machine M", "2026-01-01", readme)
    text = readme.read_text()
    assert "old" not in text and table in text and "machine M" in text and text.endswith("## After\nkeep\n")
    other = tmp_path / "plain.md"
    other.write_text("# no markers\n")
    assert not bench_main.update_readme(table, "m", "d", other)
    assert other.read_text() == "# no markers\n"


def test_tiny_real_run_of_parser_and_detection_figures(tmp_path):
    """``python -m bench --only 4,5`` on tiny inputs: real parsers, real official templates."""
    from bench import detection, parser_cost

    rows = parser_cost.run(50.0, sizes=(200, 400), families=["hermes", "llama3"], log=lambda _m: None)
    assert len(rows) == 4
    assert all(r.value is not None and r.value > 0 for r in rows)
    assert {r.unit for r in rows} == {"ratio", "%"}
    text = parser_cost.reply_text(1000)
    assert len(text) == 1000
    from app.engine.formats import FORMATS

    reply = FORMATS["hermes"].parse(text, [], orphan_close=False)
    assert not reply.tool_calls  # the benchmark's reply is plain text for the parser

    det = detection.run(reps=1, log=lambda _m: None)
    assert len(det) == 2 and all(r.unit == "ms" and r.value > 0 for r in det)
    out = tmp_path / "results.json"
    write_results(rows + det, out)
    assert len(read_results(out)) == 6


def test_main_rejects_an_unknown_figure(capsys):
    with pytest.raises(SystemExit):
        bench_main.main(["--only", "99"])
    assert "unknown figure" in capsys.readouterr().err


def test_merge_replaces_only_the_rerun_figures_and_keeps_figure_order():
    old = [
        row("1. a", 1.0, "ratio", ">= 0.97"),
        row("1b. s", 0.5, "ratio", ">= 0.95"),
        row("5. d", 60.0, "ms", "< 50"),
        row("6. u", 3.0, "ms", "< 50"),
    ]
    new = [row("5. d again", 40.0, "ms", "< 50"), row("1b. s again", 1.0, "ratio", ">= 0.95")]
    merged = bench_main.merge_rows(old, new, {"1b", "5"})
    assert [r.name for r in merged] == ["1. a", "1b. s again", "5. d again", "6. u"]
    assert all(r.meets for r in merged)
