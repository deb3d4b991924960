"""The stdio MCP test servers of ``tests/tools`` and how the tests start and watch them.

``mcp_test_server.py [good|other|hang_on_start|exit_on_start|http PORT]`` (its pid goes to
``$MCP_TEST_PIDFILE`` when set) and ``mcp_raw_server.py`` (hand-written JSON-RPC).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["RAW_SERVER", "SERVER", "alive", "mcp_entry", "server_argv"]

_TOOLS = Path(__file__).resolve().parents[1] / "tools"
SERVER = str(_TOOLS / "mcp_test_server.py")
RAW_SERVER = str(_TOOLS / "mcp_raw_server.py")


def server_argv(mode: str = "good", *extra: str) -> list[str]:
    """The command line that starts the test server in ``mode`` with this Python."""
    return [sys.executable, SERVER, mode, *extra]


def mcp_entry(mode: str = "good", **env: str) -> dict[str, Any]:
    """The test server as an ``mcpServers`` entry of an mcp.json (``env`` only when given)."""
    argv = server_argv(mode)
    entry: dict[str, Any] = {"command": argv[0], "args": argv[1:]}
    if env:
        entry["env"] = env
    return entry


def alive(pid: int) -> bool:
    """Whether process ``pid`` is running (a zombie has exited too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
