"""Issue 29, Must show 3: an MCP server and every process it started never outlive the app, even
when the app is killed (SIGKILL) or terminated (SIGTERM) without a chance to close anything.

A real parent process starts the real hostile server (``mcp_hostile_server.py``, with a plain child
and one in its own session) through :class:`McpManager`, then is signalled; everything it started
must be gone within a generous bound."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.mcp_servers import alive

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = str(Path(__file__).resolve().parent / "mcp_hostile_server.py")

PARENT = """
import sys, time
sys.path.insert(0, sys.argv[1])
from app.tools.mcp import McpManager, McpServerConfig
cfg = McpServerConfig("evil", sys.executable, (sys.argv[2],), env={"HOSTILE_STATE": sys.argv[3], "HOSTILE_CHILDREN": "1"})
m = McpManager([cfg], call_timeout_s=20)
print(m.start()[0].state, flush=True)
time.sleep(600)
"""

NAMES = ("server", "child_plain", "child_setsid")


def _wait_gone(pid: int, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals; Windows uses the job object")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_mcp_server_and_its_children_never_outlive_a_killed_app(tmp_path, sig):
    state = tmp_path / "s"
    state.mkdir()
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(ROOT), HOSTILE, str(state)],
        stdout=subprocess.PIPE,
        text=True,
    )
    pids: dict[str, int] = {}
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == "running"
        pids = {n: int((state / f"{n}.pid").read_text()) for n in NAMES}
        assert all(alive(p) for p in pids.values())
        os.kill(parent.pid, sig)
        assert parent.wait(timeout=60) == -sig
        assert {n: _wait_gone(p) for n, p in pids.items()} == dict.fromkeys(NAMES, True)
    finally:
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        parent.wait()
        for p in pids.values():  # leave nothing behind, even when the test fails
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)


FROZEN_PARENT = """
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
sys.frozen = True  # as in the bundle: sys.executable is the app itself, not a Python
sys.executable = sys.argv[2]
from app.tools.mcp_stdio import Guard
server = subprocess.Popen(["sleep", "600"], start_new_session=True)
Guard().start(server.pid)
print(server.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals; Windows uses the job object")
def test_a_frozen_bundle_runs_its_own_executable_as_the_mcp_guard(tmp_path):
    """Must show 3 in the shipped app: the bundle has no plain Python, so its guard is the app's own
    executable (``--mcp-guard PID``); a killed app still takes its MCP server with it."""
    exe = tmp_path / "callisto"  # stands for the bundle's executable: runs `python -m app` with its args
    exe.write_text(f'#!/bin/sh\ncd "{ROOT}" && exec "{sys.executable}" -m app "$@"\n')
    exe.chmod(0o755)
    app = subprocess.Popen(
        [sys.executable, "-c", FROZEN_PARENT, str(ROOT), str(exe)], stdout=subprocess.PIPE, text=True
    )
    server = 0
    try:
        assert app.stdout is not None
        server = int(app.stdout.readline())
        assert alive(server)
        # the guard reads the server's tree before the app dies: wait until it runs
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            if f"--mcp-guard {server}" in out:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the bundle's guard process never started")
        app.send_signal(signal.SIGKILL)
        app.wait()
        assert _wait_gone(server), "the MCP server outlived the killed app"
    finally:
        with contextlib.suppress(ProcessLookupError):
            app.kill()
        if server and alive(server):
            os.kill(server, signal.SIGKILL)
        app.wait()
