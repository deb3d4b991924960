"""``python -m app serve``: headless (no Qt imported), serves the model it was given, logs each
request on stderr, stops on Ctrl-C; a busy port is a clear error and exit status 1."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.server.conftest import TOOLS

REPO = Path(__file__).resolve().parents[2]
PROBE = (
    "import sys, runpy; sys.argv = ['app'] + sys.argv[1:]\n"
    "import app.server._app, app.server._openai, app.server._anthropic, app.server._ollama, app.cli\n"
    "assert 'PySide6' not in sys.modules, 'Qt was imported'\n"
    "runpy.run_module('app', run_name='__main__')\n"
)


def _interrupt(proc: subprocess.Popen) -> int | None:
    """Ctrl-C, then the exit status; a server that does not stop in 60 s is made to print every
    thread's stack (faulthandler, on SIGABRT) and the test fails with it."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            _out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            err = ""
        raise AssertionError(f"serve did not stop on Ctrl-C; its threads:\n{(err or '')[-6000:]}") from None


def _serve(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
    return subprocess.Popen(
        [sys.executable, "-c", PROBE, "serve", *args],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )


def test_serve_answers_and_stops(family_models):
    proc = _serve("--model", str(family_models["loop"]), "--port", "0", "--threads", "1")
    try:
        url = None
        for line in proc.stderr:
            m = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "the server did not say where it listens"
        r = httpx.post(
            url + "/v1/chat/completions",
            timeout=60,
            json={"model": "loop-hermes", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS},
        )
        assert r.status_code == 200 and r.json()["choices"][0]["finish_reason"] == "tool_calls"
        line = proc.stderr.readline()
        assert line.startswith("POST /v1/chat/completions 200 loop-hermes") and "1 call(s)" in line
        # a failed request's line says why, as its client was told
        r = httpx.post(url + "/v1/chat/completions", timeout=60, json={"model": "loop-hermes", "messages": 7})
        assert r.status_code == 400
        line = proc.stderr.readline()
        assert line.startswith("POST /v1/chat/completions 400 ")
        assert line.rstrip("\n").endswith(": " + r.json()["error"]["message"]), line
    finally:
        assert _interrupt(proc) == 0


def test_busy_port_is_a_clear_error(family_models):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = _serve("--model", str(family_models["loop"]), "--port", str(port))
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in err and "another server" in err


def test_unknown_model_name_lists_the_names(family_models):
    proc = _serve("--model", "no-such-model", "--port", "0")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "model 'no-such-model' not found; available models:" in err


def _url_of(proc: subprocess.Popen) -> str:
    for line in proc.stderr:
        m = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        if m:
            return m.group(1)
    raise AssertionError("the server did not say where it listens")


def _cached(url: str, model: str) -> int:
    r = httpx.post(
        url + "/v1/chat/completions",
        timeout=60,
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
    )
    assert r.status_code == 200, r.text
    return r.json()["usage"]["prompt_tokens_details"]["cached_tokens"]


def test_max_loaded_models_keeps_a_second_model_and_its_cache(family_models):
    """``--max-loaded-models 2``: after a request for another library model, the first one is still
    loaded with its KV cache (its prompt is reused); with the default of 1 it was closed and loads
    again from nothing."""
    from app.engine.models.library import Library

    Library().import_in_place(family_models["mistral"])  # a second model the library offers
    for n, kept in (("2", True), ("1", False)):
        proc = _serve("--model", str(family_models["loop"]), "--port", "0", "--max-loaded-models", n)
        try:
            url = _url_of(proc)
            _cached(url, "loop-hermes")
            assert _cached(url, "loop-hermes") > 5  # the same prompt again: its prefix is cached
            _cached(url, "call-mistral")
            assert (_cached(url, "loop-hermes") > 5) is kept, f"--max-loaded-models {n}"
        finally:
            assert _interrupt(proc) == 0


SIGNAL_ON_ANNOUNCE = (
    "import os, signal, sys\n"
    "import app.cli as cli\n"
    "say = cli._err\n"
    "def err(text):\n"
    "    say(text)\n"
    "    if ' on http://' in text:\n"
    "        os.kill(os.getpid(), getattr(signal, sys.argv[1]))\n"
    "cli._err = err\n"
    "sys.exit(cli.main(sys.argv[2:]))\n"
)


def test_a_signal_sent_the_moment_serve_says_where_it_listens_stops_it_cleanly(family_models):
    """The announcement is the first thing a supervisor can wait for, so a signal that follows it
    at once must find ``serve``'s handlers in place (a SIGTERM there once killed it outright, and
    an inherited SIG_IGN left Ctrl-C ignored). The signal is raised by the announcing call itself,
    so the test hits that moment every time."""

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    for stop in ("SIGTERM", "SIGINT"):
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                SIGNAL_ON_ANNOUNCE,
                stop,
                "serve",
                "--model",
                str(family_models["loop"]),
                "--port",
                "0",
            ],
            cwd=REPO,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=ignore_sigint,  # noqa: PLW1509 - an inherited SIG_IGN, as a shell's background job has
        )
        assert proc.returncode == 0, (stop, proc.stderr[-3000:])
        assert "Callisto API server on http://127.0.0.1:" in proc.stderr


def test_ctrl_c_and_sigterm_stop_serve_even_when_the_parent_ignored_sigint(family_models):
    """A parent that starts ``serve`` with SIGINT ignored (a background job of a shell script, a
    supervisor) leaves it ignored in Python; ``serve`` takes it back. SIGTERM stops it as cleanly."""

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    for stop in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen(
            [sys.executable, "-c", PROBE, "serve", "--model", str(family_models["loop"]), "--port", "0"],
            cwd=REPO,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            preexec_fn=ignore_sigint,  # noqa: PLW1509 - the point of the test: an inherited SIG_IGN
        )
        try:
            _url_of(proc)
            proc.send_signal(stop)
            assert proc.wait(60) == 0, stop
        finally:
            if proc.poll() is None:
                proc.kill()
