"""MCP servers in the app: the real stdio test server of tests/tools, started by the worker from
the mcp.json named in the settings, its tools called by a real scripted model."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt, QThread

from app.storage.settings import Settings
from tests.support.mcp_servers import alive, mcp_entry

TIMEOUT = 60_000


def _settings(mcp_json: Path) -> Settings:
    s = Settings()
    s.sampling.max_tokens = 64
    s.tools.mcp_servers_path = str(mcp_json)
    return s


def test_mcp_tool_is_called_with_approval_shown_in_panel_and_failed_server_is_a_banner(
    qtbot, make_window, tool_model, tmp_path
):
    pidfile = tmp_path / "good.pid"
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "good": mcp_entry("good", MCP_TEST_PIDFILE=str(pidfile)),
                    "broken": mcp_entry("exit_on_start"),
                }
            }
        )
    )
    path = tool_model("remember", '{"note": "buy milk"}', answer="I stored it.")
    w = make_window(None, settings=_settings(mcp_json))
    notice_threads = []
    w.worker.sig_window_notice.connect(
        lambda *_a: notice_threads.append(QThread.currentThread()), Qt.ConnectionType.DirectConnection
    )
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        w.load_model(str(path))
    # the servers were started on the worker thread (off the UI thread) when the session was built
    assert w.worker.mcp is not None
    assert notice_threads and all(t is w.worker.thread_handle for t in notice_threads)
    names = w.worker.session.registry.names()
    assert {"calculator", "remember", "add"} <= set(names)  # built-ins and the server's tools together
    # the failed server: a banner naming it and its last words, linking to the MCP setting
    qtbot.waitUntil(lambda: any("broken" in t for t in w.window_notice_texts()), timeout=TIMEOUT)
    text = next(t for t in w.window_notice_texts() if "broken" in t)
    assert "fatal: missing API key" in text
    pid = int(pidfile.read_text())
    assert alive(pid)

    # the model calls the MCP tool; it has a side effect, so the approval dialog asks first
    w.compose.setPlainText("Remember to buy milk")
    assert w.send()
    qtbot.waitUntil(lambda: w.approval_dialog is not None and w.approval_dialog.isVisible(), timeout=TIMEOUT)
    dlg = w.approval_dialog
    assert dlg.tool_name == "remember"
    assert json.loads(dlg.args_view.toPlainText()) == {"note": "buy milk"}
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT) as blocker:
        qtbot.mouseClick(dlg.btn_once, Qt.MouseButton.LeftButton)
    assert blocker.args[0].finish_reason == "stop"
    reply = w.chat.current_assistant()
    assert reply.text().endswith("I stored it.")
    call_id = next(iter(reply.cards))
    qtbot.mouseClick(reply.cards[call_id].chip, Qt.MouseButton.LeftButton)
    assert w.tool_dock.isVisible() and w.tool_panel.selected_call_id() == call_id
    entry = w.tool_panel.entries[call_id]
    assert (entry.call.name, entry.outcome.content, entry.outcome.error, entry.outcome.approval) == (
        "remember",
        "stored: buy milk",
        None,
        "allowed_once",
    )
    assert "stored: buy milk" in w.tool_panel.detail_text()

    # quitting stops the server
    assert w.shutdown()
    qtbot.waitUntil(lambda: not alive(pid), timeout=TIMEOUT)


def test_broken_mcp_file_is_a_banner_and_the_chat_goes_on(qtbot, make_window, tool_model, tmp_path):
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text("{ not json")
    path = tool_model("calculator", '{"expression": "2*21"}', answer="42 it is.")
    w = make_window(path, settings=_settings(mcp_json))
    qtbot.waitUntil(lambda: any("MCP servers file" in t for t in w.window_notice_texts()), timeout=TIMEOUT)
    assert "not valid JSON" in next(t for t in w.window_notice_texts() if "MCP" in t)
    w.compose.setPlainText("Compute")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    assert w.chat.current_assistant().text().endswith("42 it is.")
    assert [e.outcome.content for e in w.tool_panel.entries.values()] == ["42"]


def test_editing_the_same_mcp_file_restarts_its_servers_when_settings_are_applied(
    qtbot, make_window, tool_model, tmp_path
):
    first_pid, second_pid = tmp_path / "first.pid", tmp_path / "second.pid"
    mcp_json = tmp_path / "mcp.json"
    mcp_json.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "tools": mcp_entry("good", MCP_TEST_PIDFILE=str(first_pid)),
                }
            }
        )
    )
    path = tool_model("remember", '{"note": "x"}')
    w = make_window(path, settings=_settings(mcp_json))
    assert "remember" in w.worker.session.registry.names()
    pid = int(first_pid.read_text())
    assert alive(pid)

    # applying the settings with the file unchanged keeps the running server
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        w.apply_settings(w.settings)
    assert alive(pid) and not second_pid.exists()

    # the same path, other contents: the old server stops, the new one starts, its tools replace the old ones
    mcp_json.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "tools": mcp_entry("other", MCP_TEST_PIDFILE=str(second_pid)),
                }
            }
        )
    )
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        w.apply_settings(w.settings)
    qtbot.waitUntil(lambda: not alive(pid), timeout=TIMEOUT)
    new_pid = int(second_pid.read_text())
    assert new_pid != pid and alive(new_pid)
    names = set(w.worker.session.registry.names())
    assert "remember" not in names and "add" in names
    assert w.shutdown()
    qtbot.waitUntil(lambda: not alive(new_pid), timeout=TIMEOUT)
