"""The window is made of cohesive parts over shared core objects: one models Library for the picker
and the Models page, pages registered once, no attribute probing, and notices that come from the
core alone (the window does not filter the tool-format notice: the core raises none with tools off)."""

from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest

from app.engine.models.library import Library
from app.engine.models.tiny import write_tiny_gguf

UI = Path(__file__).resolve().parents[2] / "app" / "ui"
WINDOW_PARTS = [
    "main_window.py",
    "model_bar.py",
    "remote_models.py",
    *sorted(p.name for p in UI.glob("window_*.py")),
]


def _libraries_over(manifest: Path) -> list[Library]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, Library) and o.manifest_path == manifest]


def test_the_picker_and_the_models_page_share_one_library(qtbot, make_window, tmp_path):
    w = make_window(None)
    page = w.models_page()
    assert page.manager is w.model_bar.model_manager and page.manager.library is w.library
    assert len(_libraries_over(w.library.manifest_path)) == 1
    qtbot.waitUntil(lambda: w.tasks.pending == 0 and page.tasks.pending == 0, timeout=30_000)
    assert page.library_table.rowCount() == 0

    model = write_tiny_gguf(tmp_path / "elsewhere" / "Picked-Here.gguf", chat_template="{{ messages }}")
    with qtbot.waitSignal(w.sig_library_refreshed, timeout=30_000):
        assert w.model_bar.add_to_library(model)  # the model bar's import, in place
    assert page.library_row("Picked-Here") == 0  # the open Models page lists it, no Refresh pressed
    assert str(model) in [w.model_picker.itemData(i) for i in range(w.model_picker.count())]
    assert len(_libraries_over(w.library.manifest_path)) == 1

    assert not w.model_bar.add_to_library(tmp_path / "missing.gguf")  # never fatal: said in the status bar
    assert "missing.gguf could not be added" in w.statusBar().currentMessage()


def test_a_page_registers_once_and_its_entry_sits_before_settings(qtbot, make_window):
    from PySide6.QtWidgets import QLabel

    w = make_window(None)
    page = w.page_stack.add_page("extra", "Extra", lambda: QLabel("extra page"), tooltip="An extra page")
    actions = w.sidebar.actions()
    assert actions.index(page.action) < actions.index(w.act_settings)
    assert page.action in w.view_menu.actions()
    with pytest.raises(ValueError, match="already registered"):
        w.page_stack.add_page("extra", "Again", QLabel)
    assert w.page_stack.built_page("extra") is None  # built the first time it is shown
    shown = w.show_page("extra")
    assert (
        w.page_stack.current_page() == "extra"
        and w.page_stack.built_page("extra") is shown
        and page.action.isChecked()
    )


def test_each_window_part_stays_small_and_probes_no_attributes():
    for name in WINDOW_PARTS:
        text = (UI / name).read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 400, f"{name} has {len(text.splitlines())} lines"
        probes = re.findall(r"\b(?:getattr|hasattr|setattr)\(", text)
        assert probes == [], f"{name} probes attributes: {probes}"


def test_the_window_and_its_worker_are_composed_of_parts_not_mixed():
    """No mixins: the window and the worker inherit only from Qt (the worker from its signals) and
    hold their parts as attributes; every UI file stays under 500 lines, every class under 30
    methods."""
    import ast

    from PySide6.QtWidgets import QMainWindow

    from app.ui.main_window import MainWindow
    from app.ui.worker import EngineWorker
    from app.ui.worker_signals import WorkerSignals

    assert MainWindow.__bases__ == (QMainWindow,)
    assert EngineWorker.__bases__ == (WorkerSignals,)
    for path in sorted(UI.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 500, f"{path.name} has {len(text.splitlines())} lines"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                methods = [n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                assert len(methods) <= 30, f"{path.name}: {node.name} has {len(methods)} methods"


@pytest.mark.parametrize(("tool_format", "notices"), [("auto", ["no_tool_format"]), ("none", [])])
def test_the_tool_format_notice_comes_from_the_core_alone(
    qtbot, make_window, streaming_model, tool_format, notices
):
    from app.storage.settings import Settings

    s = Settings()
    s.chat.tool_format = tool_format
    w = make_window(streaming_model, settings=s)  # ChatML without tools: "auto" finds no format
    w.chat_ctl.last_done = None
    assert w.send("Hello")
    qtbot.waitUntil(lambda: "abc" in (w.chat.current_assistant().text() or ""), timeout=30_000)
    w.stop()
    qtbot.waitUntil(lambda: w.last_done is not None, timeout=30_000)
    assert [b.code for b in w.chat.current_assistant().banners] == notices


def test_the_in_window_server_lists_models_through_the_windows_one_library(qtbot, make_window, tmp_path):
    import socket

    import httpx

    from app.storage.settings import Settings

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s = Settings()
    s.server.port = port
    w = make_window(None, settings=s)
    model = write_tiny_gguf(tmp_path / "elsewhere" / "Served-Here.gguf", chat_template="{{ messages }}")
    with qtbot.waitSignal(w.sig_library_refreshed, timeout=30_000):
        assert w.model_bar.add_to_library(model)
    page = w.show_page("server")
    assert page.start(), page.status.text()
    try:
        assert page.server.catalog._library is w.library
        ids = [m["id"] for m in httpx.get(page.server.url + "/v1/models", timeout=30).json()["data"]]
        assert "Served-Here" in ids
        assert len(_libraries_over(w.library.manifest_path)) == 1
    finally:
        page.stop()
