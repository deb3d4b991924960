"""llama.cpp runs in an engine process of its own: real crashes, kills and errors, on tiny GGUFs.

The crashes are real: llama.cpp's own ``GGML_ASSERT`` on a layer count of 0 (the file check that
normally refuses it is skipped with ``check_limits=False``), and the operating system's SIGKILL
(what the out-of-memory killer sends) in the middle of a reply. The test process survives each,
gets a plain-words error naming the model and the stage, and can load a model again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.engine.chat import ChatSession
from app.engine.engine_process import describe_exit, plain_reason
from app.engine.errors import ContextOverflowError, EngineCrashedError, GrammarError, ModelLoadError
from app.engine.events import DoneEvent, TextEvent
from app.engine.generation import generate
from app.engine.llm import load_model

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(condition, timeout: float = 60.0) -> bool:  # returns as soon as it holds
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _wait_gone(pid: int, timeout: float = 30.0) -> bool:  # returns as soon as it is gone
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def model(tiny_gguf):
    m = load_model(tiny_gguf(), n_ctx=512, n_threads=1)
    yield m
    m.close()


def test_a_model_loads_in_a_child_process_and_answers_like_one_in_process(model, tiny_gguf):
    assert model.isolated and model.llm is None and model.engine.pid != os.getpid()
    assert _alive(model.engine.pid)
    inline = load_model(tiny_gguf(), n_ctx=512, n_threads=1, isolate=False)
    try:
        assert model.tokenize("hello world") == inline.tokenize("hello world")
        assert model.token_bytes(104) == inline.token_bytes(104)
        assert model.eog_ids == inline.eog_ids and model.n_vocab == inline.n_vocab
        greedy = {"temperature": 0.0, "seed": 3}
        a = generate(model, "hello", max_tokens=24, sampling=greedy)
        b = generate(inline, "hello", max_tokens=24, sampling=greedy)
        assert "".join(a) == "".join(b) and a.result.tokens == b.result.tokens
        assert a.result.finish_reason == b.result.finish_reason
    finally:
        inline.close()


def test_errors_come_back_with_their_types_before_anything_runs(model):
    with pytest.raises(GrammarError, match="no 'root' rule"):
        generate(model, "hi", grammar="x ::= [a]")
    with pytest.raises(ContextOverflowError, match="context holds 512"):
        generate(model, "word " * 600)
    assert model.engine.alive  # errors are answers, not crashes


def test_a_tokenize_call_from_another_thread_is_answered_while_a_reply_streams(model):
    g = generate(model, "hello", max_tokens=200, sampling={"seed": 1}, stop=())
    got: list[list[int]] = []
    it = iter(g)
    next(it)
    t = threading.Thread(target=lambda: got.append(model.tokenize("abc")))
    t.start()
    for _ in it:
        pass
    t.join(30)
    assert got == [[97, 98, 99]] and g.result.generated_tokens > 1


def test_cancel_stops_the_child_before_the_next_token(model):
    cancel = threading.Event()
    g = generate(model, "hello", max_tokens=400, sampling={"seed": 1}, cancel=cancel, stop=())
    pieces = 0
    for _ in g:
        pieces += 1
        if pieces == 5:
            cancel.set()
    assert g.result.finish_reason == "cancelled" and pieces == 5
    # the engine is idle and usable at once
    assert generate(model, "again", max_tokens=3).run().generated_tokens == 3


def test_h1_llama_cpp_abort_while_loading_is_an_error_not_a_dead_app(tiny_gguf):
    bad = tiny_gguf(block_count=0)
    with pytest.raises(ModelLoadError) as info:
        load_model(bad, n_ctx=256, n_threads=1, check_limits=False)
    msg = str(info.value)
    assert "crashed while loading" in msg and "layer count" in msg and "tiny-test-model" in msg
    if sys.platform != "win32":
        assert "SIGABRT" in msg and "GGML_ASSERT" in msg
    # the app's process is fine, and a sound model loads at once
    ok = load_model(tiny_gguf(), n_ctx=256, n_threads=1)
    try:
        assert generate(ok, "hi", max_tokens=2).run().generated_tokens == 2
    finally:
        ok.close()


@posix_only
def test_a_killed_engine_mid_reply_is_a_clear_error_and_a_fresh_engine_works(model, tiny_gguf):
    g = generate(model, "hello", max_tokens=100_000 // 256, sampling={"seed": 1}, stop=())
    seen = []
    with pytest.raises(EngineCrashedError) as info:
        for piece in g:
            seen.append(piece)
            if len(seen) == 3:
                os.kill(model.engine.pid, signal.SIGKILL)
    err = info.value
    assert err.stage == "generating" and "SIGKILL" in err.exit
    assert str(err).startswith("The model tiny-test-model crashed while generating: it was killed")
    assert len(seen) == 3 and model.crash is err
    # every later call says the same, at once; close is safe
    with pytest.raises(EngineCrashedError, match="crashed while generating"):
        model.tokenize("hi")
    model.close()
    again = load_model(tiny_gguf(), n_ctx=256, n_threads=1)
    try:
        assert generate(again, "hi", max_tokens=2).run().generated_tokens == 2
    finally:
        again.close()


@posix_only
def test_a_chat_turn_keeps_what_was_shown_when_the_engine_dies(model):
    session = ChatSession(model, tool_format="none", grammar='root ::= "' + "a" * 60 + '"')
    events = []
    pid = model.engine.pid
    for ev in session.send("hi"):
        events.append(ev)
        if isinstance(ev, TextEvent) and sum(isinstance(e, TextEvent) for e in events) == 4:
            os.kill(pid, signal.SIGKILL)
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "error" and done.engine_crashed
    assert "crashed while generating" in (done.error or "")
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == "a" * 4


def _kill_an_app_with_its_engine(path, env=None) -> tuple[int, Path]:
    """An app (a Python process) loads ``path`` in an engine process and is killed (SIGKILL) once
    it has; asserts its engine goes with it. Returns the app's pid and its engine's log path."""
    code = (
        "import sys, time\n"
        "from app.engine.llm import load_model\n"
        f"m = load_model({str(path)!r}, n_ctx=256, n_threads=1)\n"
        "print(m.engine.pid, m.engine._stderr_path, flush=True)\n"
        "time.sleep(120)\n"
    )
    app = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        child, log = app.stdout.readline().split()
        assert _alive(int(child))
        app.kill()
        app.wait(10)
        assert _wait_gone(int(child)), "the engine process outlived the app"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    return app.pid, Path(log)


@posix_only
def test_the_engine_exits_when_the_app_dies(tiny_gguf):
    _kill_an_app_with_its_engine(tiny_gguf())


@posix_only
def test_the_log_a_killed_app_leaves_is_deleted_by_the_next_app_and_no_other_file(tiny_gguf, tmp_path):
    """An app killed with its engine running never closes it: its stderr log stays in the temp
    folder. The next app's first engine deletes it, and keeps a running app's log, its own and
    every file that is not an engine log."""
    path = tiny_gguf()
    env = dict(os.environ, TMPDIR=str(tmp_path))
    killed, left_behind = _kill_an_app_with_its_engine(path, env)
    assert left_behind.parent == tmp_path and left_behind.name.startswith(f"callisto-engine-{killed}-")
    assert left_behind.exists(), "the killed app's log should be there for the next app to find"
    running = tmp_path / f"callisto-engine-{os.getpid()}-abc123.log"  # this test's process runs
    others = [tmp_path / "callisto-engine-notes.log", tmp_path / "notes.txt"]
    for f in (running, *others):
        f.write_text("kept")
    code = (
        "from app.engine.llm import load_model\n"
        f"m = load_model({str(path)!r}, n_ctx=256, n_threads=1)\n"
        "print(m.engine._stderr_path, flush=True)\n"
        "m.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    own = Path(out.stdout.split()[0])
    assert not left_behind.exists(), "the next app's engine should delete the killed app's log"
    assert running.read_text() == "kept" and all(f.read_text() == "kept" for f in others)
    assert not own.exists(), "an engine closed in order deletes its own log"
    left_now = sorted(p.name for p in tmp_path.iterdir() if p != path)  # (the model is there too)
    assert left_now == sorted(p.name for p in (running, *others))


def test_the_sweep_passes_over_a_name_it_cannot_read_and_deletes_the_orphans_after_it(tmp_path):
    """A file named like a log with a pid no operating system has, or one that is a folder, is
    left as it is, and the sweep goes on to the orphans after it."""
    from app.engine.engine_process import sweep_orphan_logs

    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    orphans = [tmp_path / f"callisto-engine-{done.pid}-{k}x.log" for k in range(3)]
    odd = [tmp_path / f"callisto-engine-{'9' * 40}-a.log", tmp_path / f"callisto-engine-{done.pid}-dir.log"]
    for f in orphans + odd[:1]:
        f.write_text("log")
    odd[1].mkdir()
    assert sorted(sweep_orphan_logs(tmp_path)) == sorted(orphans)
    assert sorted(tmp_path.iterdir()) == sorted(odd)


def test_closing_stops_the_child(tiny_gguf):
    m = load_model(tiny_gguf(), n_ctx=256, n_threads=1)
    pid = m.engine.pid
    m.close()
    assert _wait_gone(pid) and m.closed
    m.close()  # twice is fine
    with pytest.raises(Exception, match="closed"):
        generate(m, "hi")


def test_exit_descriptions_are_plain_words():
    if sys.platform != "win32":
        assert describe_exit(-signal.SIGABRT) == "llama.cpp aborted (SIGABRT)"
        assert describe_exit(-signal.SIGSEGV) == "llama.cpp crashed (SIGSEGV)"
        assert describe_exit(-signal.SIGKILL).startswith("it was killed (SIGKILL: out of memory")
    assert describe_exit(7) == "it exited with code 7"
    assert describe_exit(None) == "it stopped answering"
    assert (
        plain_reason("GGML_ASSERT(hparams.n_layer_all > 0) failed", "x")
        == "llama.cpp rejected its layer count"
    )
    assert plain_reason(None, "llama.cpp aborted (SIGABRT)") == "llama.cpp aborted (SIGABRT)"


@pytest.fixture
def shared_host():
    """The engine host the server and the window share, one model at a time; stopped after."""
    from app.engine.host import EngineHost

    host = EngineHost(max_loaded=1, queue_size=4)
    host.start()
    yield host
    host.stop()


@posix_only
def test_the_shared_host_starts_a_fresh_engine_after_a_crash(tiny_gguf, shared_host):
    path, host = tiny_gguf(), shared_host
    first = host.call(lambda m: m, model=path)

    def killed_under_the_request(m):
        # the engine dies while this request holds it (killed inside the job, so the host
        # cannot have seen the death before the request ran): the request gets the error
        os.kill(m.engine.pid, signal.SIGKILL)
        return generate(m, "hi", max_tokens=4).run()

    with pytest.raises(EngineCrashedError):
        host.call(killed_under_the_request, model=path)
    # the next request names the same model: the host drops the dead one and loads it again
    again = host.call(lambda m: m, model=path)
    assert again is not first and first.closed and again.crash is None
    assert host.call(lambda m: generate(m, "hi", max_tokens=2).run().generated_tokens, model=path) == 2


@posix_only
def test_an_engine_that_died_while_idle_is_replaced_before_the_next_request(tiny_gguf, shared_host):
    path, host = tiny_gguf(), shared_host
    first = host.call(lambda m: m, model=path)
    os.kill(first.engine.pid, signal.SIGKILL)
    assert _wait_for(lambda: first.crash is not None)  # the host's reader saw it die
    # nobody was using it: the next request is not failed for it, it gets a fresh engine
    assert host.call(lambda m: generate(m, "hi", max_tokens=2).run().generated_tokens, model=path) == 2
    assert host.model(path) is not first and first.closed


@posix_only
def test_the_cli_says_the_engine_crashed_and_exits_3(tmp_path):
    import psutil

    from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

    path = write_scripted_gguf(
        tmp_path / "stream.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "chat",
            "--model",
            str(path),
            "--max-tokens",
            "100000",
            "--tools",
            "none",
            "go",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert cli.stdout.read(40)  # the reply is streaming
        (engine,) = [
            c
            for c in psutil.Process(cli.pid).children(recursive=True)
            if "--engine-child" in " ".join(c.cmdline())
        ]
        engine.kill()
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 3, err[-500:]
    assert "crashed while generating: it was killed" in err and "Traceback" not in err


def test_a_fresh_engine_imports_what_its_first_request_runs_while_it_loads():
    # the engine process starts importing the formats and the constraint compiler when it is told
    # to load (on a thread, while llama.cpp loads without the GIL), so a fresh engine's first
    # request (a conversation reopened after a restart) does not wait for those imports
    code = (
        "import sys\n"
        "from app.engine import engine_child as c\n"
        "assert 'app.engine.constraints.compiler' not in sys.modules\n"
        "c._import_for_requests()\n"
        "assert 'app.engine.constraints.compiler' in sys.modules\n"
        "assert any(m.startswith('app.engine.formats.') for m in sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
