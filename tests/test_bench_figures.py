"""Figures 9, 10, 10b and 11 of ``python -m bench`` (issue 31): a smoke run of each on SmolLM2 with tiny
sizes, through the real paths (``python -m app serve --parallel`` and llama-server as processes,
the openai SDK as the client; engine processes loaded with the draft and KV settings). Only the
rows' shape and their consistency are checked, never a timing."""

from __future__ import annotations

import re

import pytest

from bench import __main__ as bench_main
from bench.harness import ROW_KEYS, Row
from bench.kv_store import kv_buffer_mib

# a row's "N of M" count, which its value must equal as a fraction
_COUNT = re.compile(r"(\d+) of (\d+)(?: prompts)?[,;)]")


def _check(rows: list[Row], figure: str, n: int) -> None:
    assert len(rows) == n, [r.name for r in rows]
    for r in rows:
        assert tuple(r.to_dict()) == ROW_KEYS
        assert bench_main.figure_of(r) == figure, r.name
        assert r.unit == "ratio" and r.goal.split()[0] in (">=", "<=")
        assert r.value is None or r.value >= 0, r


def _fraction_matches_its_count(r: Row) -> None:
    m = _COUNT.search(r.name)
    assert m is not None, r.name
    k, n = int(m.group(1)), int(m.group(2))
    assert 0 <= k <= n and n > 0
    assert r.value == pytest.approx(k / n), r


def test_the_new_figures_are_registered_in_order():
    assert bench_main.FIGURES[-4:] == ("9", "10", "10b", "11")
    assert bench_main.FIGURES.index("8") < bench_main.FIGURES.index("9")


def test_kv_buffer_size_is_the_sum_of_llama_cpp_s_kv_buffers():
    log = (
        "llama_kv_cache_iswa: creating non-SWA KV cache, size = 4096 cells\n"
        "llama_kv_cache:        CPU KV buffer size =    12.00 MiB\n"
        "llama_kv_cache: size =   12.00 MiB (  4096 cells,   3 layers,  1/1 seqs)\n"
        "llama_kv_cache:        CPU KV buffer size =    60.50 MiB\n"
    )
    assert kv_buffer_mib(log) == pytest.approx(72.5)
    assert kv_buffer_mib("llama_model_loader: nothing about the cache\n") is None


@pytest.mark.live
def test_figure_10_smoke_run_gives_well_formed_rows(smollm2_path):
    from bench import speculative

    rows = speculative.run(
        [("SmolLM2-135M", smollm2_path)],
        pairs=1,
        max_tokens=8,
        n_prompts=3,
        identical_tokens=6,
        log=lambda _m: None,
    )
    _check(rows, "10", 4)
    assert all(r.value is not None and r.value > 0 for r in rows)
    assert [r.goal for r in rows] == [">= 1.5", ">= 1.5", ">= 0.97", ">= 1"]
    assert all("drafted accepted" in r.name for r in rows)
    _fraction_matches_its_count(rows[-1])


@pytest.mark.live
def test_figure_10b_smoke_run_gives_well_formed_rows(smollm2_path, monkeypatch):
    from bench import speculative

    monkeypatch.setenv(
        "CALLISTO_DRAFT_ALPHA", "0.35"
    )  # a fixed draft cost: drafts are sized the same on any load
    (r,) = speculative.run_prediction(
        [("SmolLM2-135M", smollm2_path)], pairs=1, max_tokens=24, log=lambda _m: None
    )
    _check([r], "10b", 1)
    assert r.value is not None and r.value > 0 and r.goal == ">= 1.5"
    # n-gram drafting is off: what was drafted came from the prediction
    m = re.search(r"(\d+) of (\d+) drafted accepted", r.name)
    assert m is not None
    accepted, drafted = int(m.group(1)), int(m.group(2))
    assert 0 <= accepted <= drafted and drafted > 0


@pytest.mark.live
def test_figure_11_smoke_run_gives_well_formed_rows(smollm2_path):
    from bench import kv_store

    rows = kv_store.run(
        [("SmolLM2-135M", smollm2_path)],
        reps=1,
        conversation_tokens=300,
        n_prompts=2,
        identical_tokens=4,
        log=lambda _m: None,
    )
    _check(rows, "11", 3)
    reopen, memory, same = rows
    assert reopen.value is not None and reopen.value > 0 and "-token conversation" in reopen.name
    # measured from llama.cpp's own log: q8_0 blocks are 34 bytes per 32 values, f16 2 bytes a value
    assert memory.value == pytest.approx(34 / 64, abs=0.01), memory.name
    _fraction_matches_its_count(same)


@pytest.mark.live
def test_figure_9_smoke_run_gives_well_formed_rows(smollm2_path):
    from bench import parallel

    rows = parallel.run(
        [("SmolLM2-135M", smollm2_path)], reps=1, max_tokens=6, clients=2, log=lambda _m: None
    )
    _check(rows, "9", 5)
    aggregate, versus, finished, equal, ttft = rows
    assert aggregate.value is not None and aggregate.value > 0 and "--parallel 2" in aggregate.name
    assert versus.value is None or versus.value > 0
    assert ttft.value is not None and ttft.value > 0 and "while 1 stream" in ttft.name
    _fraction_matches_its_count(finished)
    _fraction_matches_its_count(equal)
    if versus.value is not None:  # llama-server ran: its streams were checked the same way
        assert re.search(r"; llama-server (\d+) of (\d+)\)$", equal.name), equal.name
