"""First-run runtime of a launched Callisto: folders, rotating log, the unhandled-exception
dialog, and single instance with two real processes (offscreen Qt)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from app.ui import runtime

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def restore_hooks():
    """Put back the interpreter's hooks and the root logger after a test that installs ours."""
    root = logging.getLogger()
    saved = (sys.excepthook, threading.excepthook, list(root.handlers), root.level)
    yield
    sys.excepthook, threading.excepthook = saved[0], saved[1]
    for h in list(root.handlers):
        if h not in saved[2]:
            root.removeHandler(h)
            h.close()
    root.setLevel(saved[3])


def test_first_run_creates_the_folders_and_logs_into_the_log_folder(tmp_path, monkeypatch, restore_hooks):
    home = tmp_path / "fresh"
    monkeypatch.setenv("CALLISTO_HOME", str(home))
    assert not home.exists()
    info = runtime.setup()
    assert info.first_run
    for d in (info.config_dir, info.data_dir, info.models_dir, info.log_dir):
        assert d.is_dir() and home in d.parents
    assert info.log_path == info.log_dir / "callisto.log"
    logging.getLogger("callisto.test").warning("hello from the test")
    text = info.log_path.read_text(encoding="utf-8")
    assert "Callisto" in text and "first run" in text and "hello from the test" in text
    assert str(info.data_dir) in text  # the log says where things live
    # a second setup replaces the handler instead of writing every line twice
    runtime.setup()
    logging.getLogger("callisto.test").warning("once only")
    assert info.log_path.read_text(encoding="utf-8").count("once only") == 1


def test_log_rotates_and_keeps_a_bounded_number_of_files(tmp_path, restore_hooks):
    path = runtime.setup_logging(tmp_path / "logs", max_bytes=2_000, backups=2)
    lg = logging.getLogger("callisto.rotate")
    for i in range(400):
        lg.warning("line %04d %s", i, "x" * 40)
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["callisto.log", "callisto.log.1", "callisto.log.2"]
    assert all((path.parent / f).stat().st_size <= 2_000 for f in files)
    assert "line 0399" in path.read_text(encoding="utf-8")


class _Raiser(QObject):
    sig = Signal()

    def boom(self) -> None:
        raise RuntimeError("boom in a slot")


def _close_dialog_soon(seen: list[str]) -> None:
    def poll() -> None:
        box = runtime.current_dialog
        if box is None:
            QTimer.singleShot(20, poll)
            return
        seen.append(box.informativeText())
        box.accept()

    QTimer.singleShot(0, poll)


@pytest.mark.qt_no_exception_capture
def test_exception_in_a_slot_is_logged_and_shown_with_the_log_path(qtbot, tmp_path, restore_hooks):
    log_path = runtime.setup_logging(tmp_path / "logs")
    runtime.install_exception_hooks()
    raiser = _Raiser()
    raiser.sig.connect(raiser.boom)
    seen: list[str] = []
    _close_dialog_soon(seen)
    raiser.sig.emit()  # PySide6 reports the slot's exception through sys.excepthook
    qtbot.waitUntil(lambda: bool(seen), timeout=30_000)
    assert str(log_path) in seen[0]
    assert "RuntimeError: boom in a slot" in seen[0]
    text = log_path.read_text(encoding="utf-8")
    assert "Unhandled exception" in text and "boom in a slot" in text and "Traceback" in text
    assert runtime.current_dialog is None  # closed, the app goes on


@pytest.mark.qt_no_exception_capture
def test_exception_in_a_worker_thread_reaches_the_dialog_on_the_gui_thread(qtbot, tmp_path, restore_hooks):
    log_path = runtime.setup_logging(tmp_path / "logs")
    runtime.install_exception_hooks()
    seen: list[str] = []
    _close_dialog_soon(seen)

    def work() -> None:
        raise ValueError("bad thing in a worker")

    t = threading.Thread(target=work, name="engine-worker")
    t.start()
    t.join()
    qtbot.waitUntil(lambda: bool(seen), timeout=30_000)
    assert "ValueError: bad thing in a worker" in seen[0] and str(log_path) in seen[0]
    assert "in thread engine-worker" in log_path.read_text(encoding="utf-8")


def test_single_instance_in_one_process_activates_the_window(qtbot, tmp_path):
    name = runtime.server_name(tmp_path / "data")
    first = runtime.SingleInstance(name)
    window = QWidget()
    qtbot.addWidget(window)
    window.showMinimized()
    assert first.listen(window)
    try:
        second = runtime.SingleInstance(name)
        # the first one answers from its event loop, which this blocking call holds: only the
        # activation is checked here (the two-process test below checks the answer)
        QTimer.singleShot(0, lambda: second.activate_running(timeout_ms=100))
        qtbot.waitUntil(lambda: first.activations == 1, timeout=30_000)
        assert not window.isMinimized()
    finally:
        first.close()
    # nobody listens any more: a launch now starts normally
    assert runtime.SingleInstance(name).activate_running(timeout_ms=200) is False


def test_server_name_is_per_data_folder(tmp_path):
    a, b = runtime.server_name(tmp_path / "a"), runtime.server_name(tmp_path / "b")
    assert a != b and a == runtime.server_name(tmp_path / "a") and a.startswith("callisto-")


def _launch(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "CALLISTO_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.Popen(
        [sys.executable, "-m", "app", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.slow
def test_second_launch_focuses_the_first_and_exits_without_an_engine(tmp_path, tiny_gguf):
    home = tmp_path / "home"
    model = tiny_gguf(chat_template="{% for m in messages %}{{ m.content }}{% endfor %}")
    first = _launch(home, "--model", str(model), "--quit-after", "120")
    log_path = home / "logs" / "callisto.log"
    try:
        # wait (bounded) for the first instance to listen: it writes that to its log
        for _ in range(600):
            if log_path.exists() and "Single-instance server listening" in log_path.read_text("utf-8"):
                break
            if first.poll() is not None:
                pytest.fail(f"the first Callisto exited early:\n{first.stdout.read()}")
            threading.Event().wait(0.1)
        else:
            pytest.fail("the first Callisto never started listening")
        second = _launch(home, "--model", str(model))
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0, out
        text = log_path.read_text("utf-8")
        assert "asked it to show its window; exiting" in text  # the second one's line
        assert "activating it (activation 1)" in text  # the first one's line
        assert text.count("Single-instance server listening") == 1  # only one server/engine started
        assert first.poll() is None  # the first keeps running
    finally:
        first.kill()
        first.communicate(timeout=60)


def test_dialog_is_not_stacked_when_errors_repeat(qtbot, tmp_path, restore_hooks):
    """While one error dialog is open, further errors are logged but open no second dialog."""
    log_path = runtime.setup_logging(tmp_path / "logs")
    runtime.install_exception_hooks()
    boxes: list[QMessageBox] = []

    def during() -> None:
        box = runtime.current_dialog
        if box is None:
            QTimer.singleShot(20, during)
            return
        boxes.append(box)
        try:
            raise KeyError("second error while the dialog is open")
        except KeyError:
            runtime.handle_exception(*sys.exc_info())
        QApplication.processEvents()
        boxes.append(runtime.current_dialog)
        box.accept()

    QTimer.singleShot(0, during)
    try:
        raise OSError("first error")
    except OSError:
        runtime.handle_exception(*sys.exc_info())
    qtbot.waitUntil(lambda: len(boxes) == 2, timeout=30_000)
    assert boxes[0] is boxes[1]  # still the first dialog; none stacked on top
    text = log_path.read_text("utf-8")
    assert "first error" in text and "second error while the dialog is open" in text
