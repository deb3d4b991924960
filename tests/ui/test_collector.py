"""The window's cycle collector: a cycle that holds a Qt object is freed on the GUI thread, never
by the worker thread that happens to allocate past Python's threshold."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QObject

from app.ui.collector import MainThreadCollector


@pytest.fixture
def gc_restored() -> Iterator[None]:
    """Whatever a test does to the collector, the tests after it get Python's back as it was."""
    enabled = gc.isenabled()
    yield
    gc.collect()
    (gc.enable if enabled else gc.disable)()


class _Cycle:
    """Part of a reference cycle with a Qt object in it; says on which thread it was freed."""

    def __init__(self, freed_on: list[str]) -> None:
        self.me = self
        self.qt = QObject()
        self.freed_on = freed_on

    def __del__(self) -> None:
        self.freed_on.append(threading.current_thread().name)


def _drop_cycle() -> list[str]:
    freed_on: list[str] = []
    _Cycle(freed_on)  # unreachable at once: only the collector frees it
    return freed_on


def _allocate_in_a_worker() -> list[list[int]]:
    """Allocate far past Python's thresholds in a worker thread, as the engine bridge does, and
    keep what it made (a collection is due when more containers were made than freed)."""
    made: list[list[int]] = []

    def churn() -> None:
        made.extend([i] for i in range(200_000))  # tracked containers: each counts towards one

    worker = threading.Thread(target=churn, name="worker")
    worker.start()
    worker.join()
    return made


def test_without_the_collector_a_worker_thread_frees_the_cycle(gc_restored):
    """The hazard itself: with Python's automatic collection, the allocating worker frees it."""
    gc.enable()
    gc.collect()
    freed_on = _drop_cycle()
    made = _allocate_in_a_worker()  # this thread only waits meanwhile: it allocates nothing
    assert freed_on and freed_on[0] != threading.main_thread().name
    del made


def test_with_the_collector_the_gui_thread_frees_the_cycle(qtbot, gc_restored):
    collector = MainThreadCollector(interval_ms=20)
    gc.enable()
    gc.collect()
    collector.start()
    assert not gc.isenabled()
    freed_on = _drop_cycle()
    made = _allocate_in_a_worker()  # the GUI thread's timer cannot run while this thread waits
    assert freed_on == []
    qtbot.waitUntil(lambda: freed_on != [], timeout=10_000)
    del made
    assert freed_on == [threading.main_thread().name]
    assert sum(collector.collections) >= 1
    collector.close()
    assert gc.isenabled()  # given back as it was


def test_a_check_collects_only_past_the_thresholds(gc_restored):
    collector = MainThreadCollector()  # its timer never runs here: the checks are called
    gc.enable()
    collector.start()
    threshold0 = gc.get_threshold()[0]
    gc.collect()
    assert collector.check() is None  # nothing allocated since the collection
    keep = [[i] for i in range(threshold0 + 100)]
    assert gc.get_count()[0] > threshold0
    assert collector.check() == 0  # the youngest generation only
    assert gc.get_count()[0] < threshold0
    assert collector.collections[0] == 1
    del keep
    collector.close()
    collector.close()  # twice is harmless
    assert gc.isenabled()


def test_a_collector_started_with_collection_off_leaves_it_off(gc_restored):
    gc.disable()
    collector = MainThreadCollector()
    collector.start()
    collector.close()
    assert not gc.isenabled()
