"""No engine call waits forever, and no engine process outlives its owner (review 2: N2, and the
issue's "no process outlives its owner"): real engine processes, stopped with a real SIGSTOP,
real CLI and server processes stopped with real SIGINT / SIGTERM / SIGKILL.

The watchdog's bound is lowered for these tests with ``CALLISTO_ENGINE_STALL_S`` (the default is
``engine_process.STALL_S``, 30 s); every wait is bounded with a generous margin that still fails
when the bound is missing (the call would then wait forever)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from app.engine.engine_process import STALL_S
from app.engine.errors import EngineCrashedError
from app.engine.generation import generate
from app.engine.llm import load_model
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals (SIGSTOP)")

ROOT = Path(__file__).resolve().parents[2]
BOUND_S = 120.0  # how long a test waits for what the watchdog must do in a few seconds


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_gone(pid: int, timeout: float = BOUND_S) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _kill_left(pid: int) -> None:
    """Cleanup after a failed assertion: a stopped process is continued and killed."""
    try:
        p = psutil.Process(pid)
        p.kill()
        p.resume()
    except psutil.Error:
        pass


def _engines_of(pid: int) -> list[psutil.Process]:
    out = []
    for c in psutil.Process(pid).children(recursive=True):
        try:
            if "--engine-child" in " ".join(c.cmdline()):
                out.append(c)
        except psutil.Error:
            continue
    return out


def _engine_of(pid: int) -> psutil.Process:
    end = time.monotonic() + BOUND_S
    while time.monotonic() < end:
        found = _engines_of(pid)
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"process {pid} started no engine process")


@pytest.fixture
def endless(tmp_path) -> Path:
    """A model that writes the alphabet round and round, never an end of text."""
    return write_scripted_gguf(
        tmp_path / "endless.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )


@pytest.fixture
def short_stall(monkeypatch):
    monkeypatch.setenv("CALLISTO_ENGINE_STALL_S", "3")
    return 3.0


def _in_thread(fn) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


# -- N2: a stopped engine is ended, with a clear error, and the next load works ----------------------


def test_n2_a_stopped_engine_ends_the_reply_with_a_clear_error(endless, short_stall):
    assert STALL_S == 30.0  # the documented default
    model = load_model(endless, n_ctx=256, n_threads=1)
    pid = model.engine.pid
    pieces: list[str] = []

    def consume():
        for piece in generate(model, "go", max_tokens=100_000, stop=()):
            pieces.append(piece)
            if len(pieces) == 3:
                os.kill(pid, signal.SIGSTOP)

    try:
        t, out = _in_thread(consume)
        t.join(BOUND_S)
        assert not t.is_alive(), "the reply waits forever on a stopped engine"
        err = out.get("error")
        assert isinstance(err, EngineCrashedError), out
        assert "stopped answering for 3 s" in str(err) and err.stage == "generating"
        assert len(pieces) == 3 and model.crash is err
        assert _wait_gone(pid), "the stopped engine process was left behind"
        with pytest.raises(EngineCrashedError, match="stopped answering"):
            model.tokenize("hi")  # at once: it is known dead
    finally:
        _kill_left(pid)
        model.close()
    again = load_model(endless, n_ctx=256, n_threads=1)
    try:
        assert generate(again, "go", max_tokens=3, stop=()).run().generated_tokens == 3
    finally:
        again.close()


def test_n2_a_call_to_a_stopped_idle_engine_fails_clearly(endless, short_stall):
    model = load_model(endless, n_ctx=256, n_threads=1)
    pid = model.engine.pid
    try:
        os.kill(pid, signal.SIGSTOP)
        t, out = _in_thread(lambda: model.tokenize("hello"))
        t.join(BOUND_S)
        assert not t.is_alive(), "a tokenize call waits forever on a stopped engine"
        assert isinstance(out.get("error"), EngineCrashedError) and "stopped answering" in str(out["error"])
        assert _wait_gone(pid)
    finally:
        _kill_left(pid)
        model.close()


def test_n2_a_slow_reader_is_not_mistaken_for_a_stopped_engine(endless, short_stall):
    """The child waits for the reader between two pieces (idle, no CPU): its heartbeat keeps it."""
    model = load_model(endless, n_ctx=256, n_threads=1)
    try:
        pieces = 0
        g = generate(model, "go", max_tokens=6, stop=())
        for _ in g:
            pieces += 1
            if pieces <= 2:
                time.sleep(short_stall * 2.5)  # far past the stall bound, twice
        assert pieces == 6 and g.result.finish_reason == "length" and model.crash is None
    finally:
        model.close()


def test_n2_the_shared_host_serves_again_after_a_stopped_engine(endless, short_stall):
    """``serve`` and the window run their turns on the EngineHost: a stopped engine fails the turn
    that waits on it, the queue moves on, and the next turn gets a fresh engine."""
    from app.engine.host import EngineHost

    host = EngineHost(max_loaded=1, queue_size=4)
    host.start()
    stopped = None
    try:
        first = host.call(lambda m: m, model=endless)
        stopped = first.engine.pid

        def turn(m):
            for n, _piece in enumerate(generate(m, "go", max_tokens=100_000, stop=()), 1):
                if n == 2:
                    os.kill(stopped, signal.SIGSTOP)

        t, out = _in_thread(lambda: host.call(turn, model=endless))
        t.join(BOUND_S)
        assert not t.is_alive(), "the host's queue is held forever by a stopped engine"
        assert isinstance(out.get("error"), EngineCrashedError)
        n = host.call(
            lambda m: generate(m, "go", max_tokens=2, stop=()).run().generated_tokens, model=endless
        )
        assert n == 2 and host.model(endless) is not first
        assert _wait_gone(stopped)
    finally:
        if stopped is not None:
            _kill_left(stopped)
        host.stop()


# -- N2: Ctrl-C and SIGTERM end the CLI, and leave no engine ------------------------------------------

_WITH_SIGINT = (
    "import os, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"  # a background job may inherit it ignored
    "os.execv(sys.executable, [sys.executable, '-m', 'app', *sys.argv[1:]])\n"
)


def _start_chat(model: Path, stall: str) -> subprocess.Popen:
    env = dict(os.environ, CALLISTO_ENGINE_STALL_S=stall, PYTHONPATH=str(ROOT))
    args = [
        "chat",
        "--model",
        str(model),
        "--tools",
        "none",
        "--max-tokens",
        "100000",
        "--threads",
        "1",
        "go",
    ]
    return subprocess.Popen(
        [sys.executable, "-c", _WITH_SIGINT, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_n2_ctrl_c_and_sigterm_end_the_cli_and_its_stopped_engine(endless, sig, code):
    # the watchdog's bound is far away: what ends the CLI here is the signal, not the watchdog
    cli = _start_chat(endless, stall="600")
    engine = None
    try:
        assert cli.stdout.read(30)  # the reply streams
        engine = _engine_of(cli.pid)
        engine.suspend()  # SIGSTOP: the engine cannot answer a cancel or a close
        cli.send_signal(sig)
        try:
            rc = cli.wait(25)  # before: 30 s waiting for the cancel's answer, then 5 s for the close
        except subprocess.TimeoutExpired:
            pytest.fail(f"the CLI is still running 25 s after {sig.name}")
        assert rc == code
        stderr = cli.stderr.read()
        assert "Traceback" not in stderr
        assert _wait_gone(engine.pid, 10), "the stopped engine process was left behind"
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        if engine is not None:
            _kill_left(engine.pid)


# -- no process outlives its owner --------------------------------------------------------------------


def test_a_batch_of_loads_and_drops_never_holds_more_engines_than_models(tiny_gguf):
    mine = lambda: {p.pid for p in _engines_of(os.getpid())} - before  # noqa: E731
    before = {p.pid for p in _engines_of(os.getpid())}
    path = tiny_gguf()
    rng = random.Random(29)
    held: list = []
    most = 0
    for _ in range(10):
        if held and (len(held) >= 3 or rng.random() < 0.4):
            held.pop(rng.randrange(len(held)))  # dropped, never closed
        else:
            held.append(load_model(path, n_ctx=256, n_threads=1))
        live = mine()
        most = max(most, len(live))
        assert live == {m.engine.pid for m in held}, "an engine process outlived its model"
    held.clear()
    assert not mine() and most >= 2


def test_the_engine_exits_when_its_parent_dies_even_while_the_pipe_stays_open(endless):
    """A process the app forked (multiprocessing's default on Linux) keeps the engine's pipe open
    after the app is killed: the engine sees its parent gone all the same."""
    code = (
        "import multiprocessing, sys, time\n"
        "from app.engine.llm import load_model\n"
        f"m = load_model({str(endless)!r}, n_ctx=256, n_threads=1)\n"
        "ctx = multiprocessing.get_context('fork')\n"
        "p = ctx.Process(target=time.sleep, args=(300,), daemon=False)\n"
        "p.start()\n"
        "print(m.engine.pid, p.pid, flush=True)\n"
        "time.sleep(300)\n"
    )
    app = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    engine = forked = None
    try:
        engine, forked = (int(x) for x in app.stdout.readline().split())
        assert _alive(engine) and _alive(forked)
        app.kill()
        app.wait(30)
        assert _wait_gone(engine), "the engine process outlived the app"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        for pid in (engine, forked):
            if pid is not None:
                _kill_left(pid)


def test_serve_stopped_by_sigterm_leaves_no_engine(endless):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    serve = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--model", str(endless), "--port", "0", "--threads", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    engine = None
    try:
        engine = _engine_of(serve.pid)
        while "Callisto API server on" not in (serve.stderr.readline() or "Callisto API server on"):
            pass
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(60)
        except subprocess.TimeoutExpired:
            pytest.fail("serve is still running 60 s after SIGTERM")
        assert _wait_gone(engine.pid, 30), "serve left its engine process behind"
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        if engine is not None:
            _kill_left(engine.pid)


def test_an_engine_still_loading_when_the_app_exits_is_stopped(endless):
    """The app exits while a model loads on another thread and its engine process is stopped (the
    load never ends, no model exists yet to be finalized): the exit stops it all the same."""
    code = (
        "import os, signal, sys, threading, time, psutil\n"
        "from app.engine.llm import load_model\n"
        f"threading.Thread(target=load_model, args=({str(endless)!r},), daemon=True).start()\n"
        # the engine once it runs (its argv holds the flag); a child just forked still has this
        # script's argv, whose source names the flag too, and suspending it before its exec would
        # leave the load waiting on a process the app never got to know
        "def engine(c):\n"
        "    try:\n"
        "        return '--engine-child' in c.cmdline()\n"
        "    except psutil.Error:\n"
        "        return False\n"
        "while True:\n"
        "    kids = [c for c in psutil.Process().children() if engine(c)]\n"
        "    if kids:\n"
        "        break\n"
        "    time.sleep(0.001)\n"
        "kids[0].suspend()\n"
        "print(kids[0].pid, flush=True)\n"
    )
    app = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    engine = None
    try:
        engine = int(app.stdout.readline())
        assert app.wait(60) == 0
        assert _wait_gone(engine, 30), "the engine process outlived the app that exited"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        if engine is not None:
            _kill_left(engine)


def test_ctrl_c_to_the_whole_terminal_group_cancels_and_is_not_a_crash(endless):
    """A terminal sends Ctrl-C to every process of the foreground group, the engine too: the engine
    leaves it to the CLI, which cancels the reply, stops the engine and exits 130."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = [
        "chat",
        "--model",
        str(endless),
        "--tools",
        "none",
        "--max-tokens",
        "100000",
        "--threads",
        "1",
        "go",
    ]
    cli = subprocess.Popen(
        [sys.executable, "-c", _WITH_SIGINT, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    engine = None
    try:
        assert cli.stdout.read(30)
        engine = _engine_of(cli.pid)
        os.killpg(cli.pid, signal.SIGINT)
        rc = cli.wait(60)
        stderr = cli.stderr.read()
        assert rc == 130, stderr
        assert "[cancelled]" in stderr and "crashed" not in stderr and "Traceback" not in stderr
        assert _wait_gone(engine.pid, 30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        if engine is not None:
            _kill_left(engine.pid)
