"""Issue 29 (N18 class): mcp.json is read like every other file Callisto reads: a FIFO, a device, an
oversized or too deeply nested file gives a clear McpConfigError, never a hang or a traceback."""

from __future__ import annotations

import contextlib
import os
import sys
import threading

import pytest

from app.tools.mcp import MAX_CONFIG_BYTES, McpConfigError, load_mcp_config


def _load_in_thread(path):
    out: dict = {}

    def run():
        try:
            out["value"] = load_mcp_config(path)
        except BaseException as exc:  # noqa: BLE001 - the test inspects what came out
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
def test_n18_an_mcp_config_that_is_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "mcp.json"
    os.mkfifo(fifo)
    t, out = _load_in_thread(fifo)
    t.join(timeout=60)
    finished = not t.is_alive()
    if not finished:  # unblock the reader so that no thread is left waiting
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(timeout=10)
    assert finished
    assert isinstance(out.get("error"), McpConfigError)
    assert "not a regular file" in str(out["error"])


def test_n18_an_oversized_mcp_config_is_refused(tmp_path):
    big = tmp_path / "mcp.json"
    big.write_text('{"mcpServers": {}, "pad": "' + "x" * MAX_CONFIG_BYTES + '"}')
    with pytest.raises(McpConfigError, match="limit"):
        load_mcp_config(big)


def test_n18_a_deeply_nested_mcp_config_is_a_clear_error(tmp_path):
    deep = tmp_path / "mcp.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(McpConfigError, match="nested too deeply"):
        load_mcp_config(deep)
