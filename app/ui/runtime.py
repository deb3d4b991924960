"""What a double-clicked Callisto needs before its window opens.

* **Folders**: the config, data (history, models) and log folders, created with platformdirs
  through :mod:`app.storage.paths` (``CALLISTO_HOME`` moves them all, e.g. for tests).
* **Logging**: the root logger writes to ``<log folder>/callisto.log``, rotated at
  :data:`LOG_MAX_BYTES` with :data:`LOG_BACKUPS` old files kept; Qt's own warnings go there too.
* **Unhandled exceptions** (main thread, Qt slots, worker threads) are logged with their
  traceback and shown in a dialog that names the log file, instead of the app vanishing.
* **Single instance**: one running Callisto per data folder (one engine, one writer of the
  history). A second launch connects to the first over a ``QLocalServer``, sends ``activate``,
  the first raises and focuses its window and answers ``ok``, and the second exits 0.

Usage (``app.ui.application.main``)::

    info = runtime.setup()                    # folders, logging, exception hook (no Qt app needed)
    app = QApplication(...)
    guard = runtime.SingleInstance()
    if guard.activate_running():              # another Callisto runs: it has been focused
        return 0
    window = MainWindow(...)
    guard.listen(window)
"""

from __future__ import annotations

import hashlib
import logging
import logging.handlers
import os
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QtMsgType, Signal, qInstallMessageHandler
from PySide6.QtNetwork import QLocalServer, QLocalSocket
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

__all__ = [
    "ACTIVATE_MESSAGE",
    "LOG_BACKUPS",
    "LOG_FILE_NAME",
    "LOG_MAX_BYTES",
    "RuntimeInfo",
    "SingleInstance",
    "handle_exception",
    "install_exception_hooks",
    "server_name",
    "setup",
    "setup_folders",
    "setup_logging",
]

LOG_FILE_NAME = "callisto.log"
LOG_MAX_BYTES = 2_000_000
LOG_BACKUPS = 3
ACTIVATE_MESSAGE = b"activate\n"
ACK_MESSAGE = b"ok\n"
_LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s [%(threadName)s] %(message)s"

log = logging.getLogger("callisto")


@dataclass(frozen=True)
class RuntimeInfo:
    config_dir: Path
    data_dir: Path
    log_dir: Path
    models_dir: Path
    log_path: Path
    first_run: bool


# --- folders ------------------------------------------------------------------------------------


def setup_folders() -> dict[str, Path]:
    """Create (if missing) and return the config, data, models and log folders."""
    from app.storage import paths

    return {
        "config": paths.config_dir(),
        "data": paths.data_dir(),
        "models": paths.models_dir(),
        "logs": paths.log_dir(),
    }


# --- logging ------------------------------------------------------------------------------------


class _CallistoFileHandler(logging.handlers.RotatingFileHandler):
    """Marks Callisto's handler so that ``setup_logging`` twice replaces it instead of doubling."""


def setup_logging(
    log_dir: Path, *, level: int = logging.INFO, max_bytes: int = LOG_MAX_BYTES, backups: int = LOG_BACKUPS
) -> Path:
    """Send the root logger (and Qt's messages) to a rotating ``callisto.log`` in ``log_dir``."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / LOG_FILE_NAME
    root = logging.getLogger()
    for h in list(root.handlers):
        if isinstance(h, _CallistoFileHandler):
            root.removeHandler(h)
            h.close()
    handler = _CallistoFileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)
    qInstallMessageHandler(_qt_message)
    return path


_QT_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}


def _qt_message(kind: Any, context: Any, message: str) -> None:
    logging.getLogger("qt").log(_QT_LEVELS.get(kind, logging.WARNING), "%s", message)


def current_log_path() -> Path | None:
    for h in logging.getLogger().handlers:
        if isinstance(h, _CallistoFileHandler):
            return Path(h.baseFilename)
    return None


# --- unhandled exceptions -----------------------------------------------------------------------


class _DialogBridge(QObject):
    """Carries an exception report from any thread to a dialog on the GUI thread."""

    sig_report = Signal(str, str)  # summary, log path


_bridge: _DialogBridge | None = None
_showing = threading.Lock()
#: The dialog currently shown (tests and the app read it; None when none is open).
current_dialog: QMessageBox | None = None


def _show_dialog(summary: str, log_path: str) -> None:
    global current_dialog
    if QApplication.instance() is None or not _showing.acquire(blocking=False):
        return  # no GUI yet, or a dialog is already open: the log has it
    try:
        box = QMessageBox()
        box.setIcon(QMessageBox.Icon.Critical)
        box.setWindowTitle("Callisto: unexpected error")
        box.setText(
            "Callisto hit an unexpected error. Your conversations are saved; you can keep "
            "working, or restart Callisto if something looks wrong."
        )
        box.setInformativeText(f"{summary}\n\nThe details are in the log file:\n{log_path}")
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setStandardButtons(QMessageBox.StandardButton.Ok)
        box.setObjectName("unhandledExceptionDialog")
        current_dialog = box
        box.exec()
    finally:
        current_dialog = None
        _showing.release()


def handle_exception(
    exc_type: type[BaseException], exc: BaseException, tb: Any, thread_name: str | None = None
) -> None:
    """Log an unhandled exception with its traceback and show the dialog naming the log file."""
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    where = f" in thread {thread_name}" if thread_name else ""
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    log.critical("Unhandled exception%s:\n%s", where, text.rstrip())
    path = current_log_path()
    log_path = str(path) if path is not None else "(no log file: logging is not set up)"
    if path is None and sys.stderr is not None:
        sys.stderr.write(text)
    summary = f"{exc_type.__name__}: {exc}"
    if QApplication.instance() is not None and threading.current_thread() is threading.main_thread():
        _show_dialog(summary, log_path)  # also works outside the event loop (start-up, shut-down)
    elif _bridge is not None:
        _bridge.sig_report.emit(summary, log_path)  # queued to the GUI thread from other threads


def install_exception_hooks() -> None:
    """Route ``sys.excepthook`` (which PySide6 uses for exceptions in slots) and
    ``threading.excepthook`` to :func:`handle_exception`. Safe to call again."""
    global _bridge
    sys.excepthook = handle_exception

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else None
        handle_exception(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback, name)

    threading.excepthook = thread_hook
    if _bridge is None and QApplication.instance() is not None:
        _bridge = _DialogBridge()
        _bridge.sig_report.connect(_show_dialog, Qt.ConnectionType.QueuedConnection)


# --- single instance ----------------------------------------------------------------------------


def server_name(data_dir: Path | None = None) -> str:
    """The local-socket name of the Callisto that owns ``data_dir`` (per user, per data folder)."""
    if data_dir is None:
        from app.storage.paths import data_dir as _data_dir

        data_dir = _data_dir()
    user = os.environ.get("USER") or os.environ.get("USERNAME") or ""
    digest = hashlib.sha256(f"{user}\0{Path(data_dir).resolve()}".encode()).hexdigest()[:16]
    return f"callisto-{digest}"


class SingleInstance(QObject):
    """The first Callisto listens; later launches ask it to show its window and then quit."""

    sig_activate = Signal()

    def __init__(self, name: str | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.name = name or server_name()
        self.server: QLocalServer | None = None
        self.window: QWidget | None = None
        self.activations = 0

    def activate_running(self, timeout_ms: int = 3000) -> bool:
        """True when another instance answered ``activate`` (then this process should exit)."""
        sock = QLocalSocket()
        sock.connectToServer(self.name)
        if not sock.waitForConnected(timeout_ms):
            return False
        sock.write(ACTIVATE_MESSAGE)
        sock.flush()
        answered = False
        while sock.waitForReadyRead(timeout_ms):
            if bytes(sock.readAll().data()).startswith(ACK_MESSAGE.strip()):
                answered = True
                break
        sock.disconnectFromServer()
        if answered:
            log.info("Another Callisto is running (%s): asked it to show its window; exiting", self.name)
        else:
            log.warning("Another Callisto holds %s but did not answer; starting anyway", self.name)
        return answered

    def listen(self, window: QWidget | None = None) -> bool:
        """Start answering later launches; ``window`` is raised and focused on each."""
        self.window = window
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.name):
            # A socket left by a crashed Callisto (nobody answered activate_running): reclaim it.
            QLocalServer.removeServer(self.name)
            if not server.listen(self.name):
                log.warning("Single-instance server %s could not listen: %s", self.name, server.errorString())
                return False
        server.newConnection.connect(self._on_connection)
        self.server = server
        log.info("Single-instance server listening on %s", self.name)
        return True

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None

    def _on_connection(self) -> None:
        assert self.server is not None
        while (sock := self.server.nextPendingConnection()) is not None:
            sock.readyRead.connect(lambda s=sock: self._on_ready(s))
            sock.disconnected.connect(sock.deleteLater)
            if sock.bytesAvailable():
                self._on_ready(sock)

    def _on_ready(self, sock: QLocalSocket) -> None:
        data = bytes(sock.readAll().data())
        if ACTIVATE_MESSAGE.strip() in data:
            self.activations += 1
            log.info("A second launch asked for the window: activating it (activation %d)", self.activations)
            self.activate_window()
            sock.write(ACK_MESSAGE)
            sock.flush()

    def activate_window(self) -> None:
        self.sig_activate.emit()
        w = self.window
        if w is None:
            return
        if w.isMinimized():
            w.showNormal()
        else:
            w.show()
        w.raise_()
        w.activateWindow()


# --- all together -------------------------------------------------------------------------------


def setup(*, level: int = logging.INFO) -> RuntimeInfo:
    """Folders, logging and the exception hooks. Call first thing in ``main`` (with or without a
    QApplication; call :func:`install_exception_hooks` again once one exists for the dialog)."""
    from app import __version__
    from app.storage import paths

    first_run = not paths.settings_path().exists()
    folders = setup_folders()
    try:
        log_path = setup_logging(folders["logs"], level=level)
    except OSError as exc:  # a read-only home: log to the temporary folder, never fail the start here
        import tempfile

        log_path = setup_logging(Path(tempfile.gettempdir()) / "Callisto-logs", level=level)
        log.warning(
            "The log folder %s cannot be written (%s); logging to %s",
            folders["logs"],
            exc.strerror or exc,
            log_path,
        )
    install_exception_hooks()
    log.info(
        "Callisto %s starting (%s, Python %s, %s)%s",
        __version__,
        "bundle" if getattr(sys, "frozen", False) else "source",
        sys.version.split()[0],
        sys.platform,
        " - first run" if first_run else "",
    )
    log.info(
        "Folders: config %s, data %s, models %s, logs %s",
        folders["config"],
        folders["data"],
        folders["models"],
        folders["logs"],
    )
    return RuntimeInfo(
        config_dir=folders["config"],
        data_dir=folders["data"],
        log_dir=folders["logs"],
        models_dir=folders["models"],
        log_path=log_path,
        first_run=first_run,
    )
