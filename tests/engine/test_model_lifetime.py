"""A LoadedModel owns its engine process: dropping the model (or closing it, once or twice) stops it,
so the number of live engine processes never exceeds the number of models held."""

from __future__ import annotations

import gc
import sys

import psutil
import pytest

from app.engine.llm import load_model

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="reads child command lines")


def engine_children() -> set[int]:
    """This process's live engine processes (``--engine-child`` in their command line)."""
    out = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "--engine-child" in child.cmdline():
                out.add(child.pid)
        except psutil.NoSuchProcess:
            continue
    return out


def test_dropped_models_stop_their_engine_processes(tiny_gguf):
    before = engine_children()  # engines other tests still hold (none, when they free theirs)
    paths = [tiny_gguf() for _ in range(3)]
    pids: list[int] = []

    # one model at a time, dropped without close(): never more than one engine of ours
    for path in paths:
        model = load_model(path, n_ctx=256, n_threads=1)
        pids.append(model.engine.pid)
        assert model.tokenize("hi")  # it works
        assert len(engine_children() - before) == 1
        del model  # the last reference: its engine process stops now
        assert not (engine_children() - before)
    assert len(set(pids)) == 3

    # a batch held at once: as many engines as models, and none once the batch is dropped
    held = [load_model(path, n_ctx=256, n_threads=1) for path in paths]
    assert engine_children() - before == {m.engine.pid for m in held}
    held[0].close()
    held[0].close()  # closing twice is harmless
    assert held[0].closed and len(engine_children() - before) == 2
    del held
    assert not (engine_children() - before)


def test_a_model_in_a_reference_cycle_stops_its_engine_when_collected(tiny_gguf):
    before = engine_children()
    model = load_model(tiny_gguf(), n_ctx=256, n_threads=1)
    pid = model.engine.pid
    holder: dict[str, object] = {"model": model}
    holder["self"] = holder  # only the cycle collector frees this
    del model, holder
    gc.collect()
    assert pid not in engine_children() and not (engine_children() - before)
