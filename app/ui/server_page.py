"""The Server page: the local API server (``app.server``) on/off, its address, port and API key,
the loaded model, a live log of requests and ready-to-copy snippets for the SDKs and curl.

The server runs on the window's engine (``host``, the worker's :class:`app.engine.host.EngineHost`):
its requests and the window's turns wait in one queue and use the same loaded models. It offers
the window's current model and the library's; a request for another one loads it (the window
follows when its own model is closed for it).

While it runs, every model is loaded with ``server.parallel`` slots (:mod:`app.ui.server_slots`:
"Parallel requests", its KV memory, "Active slots"): the window's model is loaded again with them
when it starts (the conversation kept) and with one slot when it stops.

The page reads the settings through the window's one
:class:`~app.storage.settings_store.SettingsStore` and hears its changes (a tool format set in
Settings reaches a running server at once); it keeps no copy of them. Its fields are saved when
they change. The API key lives in the system keychain (:mod:`app.ui.server_key`); a key the person
chose is never dropped, and a server whose key cannot be read does not start without it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.storage.settings_store import SettingsStore
from app.ui.labels import FormNote, wrapped_label
from app.ui.server_key import KeychainUnavailable, delete_server_key, load_server_key, store_server_key
from app.ui.server_log import LOG_COLUMNS, RequestLog
from app.ui.server_slots import ServerSlots, SlotsSources, load_fields, spin_box
from app.ui.server_snippets import snippets

__all__ = ["LOG_COLUMNS", "ServerPage", "snippets"]


class ServerPage(QWidget):
    sig_request = Signal(object)  # RequestLogEntry, from the server's thread (queued to this one)
    sig_state_changed = Signal(bool)  # running

    def __init__(
        self,
        settings: Any,
        *,
        model_path: Callable[[], str | None] = lambda: None,
        save: Callable[[], None] = lambda: None,
        n_ctx: int | None = None,
        n_threads: int | None = None,
        use_library: bool = True,
        host: Any = None,
        library: Any = None,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.setObjectName("serverPage")
        if isinstance(settings, SettingsStore):
            self.store = settings
        else:  # a page of its own (tests, tools): a store over these settings, saved with ``save``
            self.store = SettingsStore(settings, save=lambda _s: save())
        self._model_path = model_path
        self._key_problem: str | None = None
        self._showing_key = self._stored_key()
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._use_library = use_library
        self.host = host  # the window's engine (None: the server gets one of its own)
        self.library = library  # the window's Library (None: the server reads the manifest itself)
        self.server: Any = None
        cfg = self.settings.server

        layout = QVBoxLayout(self)
        layout.addWidget(
            wrapped_label(
                "<h2>Local API server</h2>OpenAI, Anthropic, Ollama and llama-server APIs for your "
                "agents, editors and scripts, on this computer's models: chat, completions, fill in "
                "the middle, embeddings and reranking. Tool calls are returned to the client, which "
                "runs its tools."
            )
        )

        form = QFormLayout()
        row = QHBoxLayout()
        self.toggle = QPushButton("Start server")
        self.toggle.setCheckable(True)
        self.toggle.clicked.connect(self._on_toggle)
        row.addWidget(self.toggle)
        self.status = QLabel("Stopped")
        self.status.setObjectName("serverStatus")
        self.status.setWordWrap(True)
        row.addWidget(self.status, 1)
        form.addRow("Server", row)

        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(int(cfg.port))
        self.port.valueChanged.connect(self._on_port)
        form.addRow("Port", self.port)

        addr = QHBoxLayout()
        self.address = QLineEdit()
        self.address.setReadOnly(True)
        self.address.setPlaceholderText("starts when the server runs")
        addr.addWidget(self.address, 1)
        self.copy = QPushButton("Copy")
        self.copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.address.text()))
        addr.addWidget(self.copy)
        form.addRow("Address", addr)

        keyrow = QHBoxLayout()
        self.api_key = QLineEdit(self._showing_key or "")
        self.api_key.setPlaceholderText("none: any program on this computer may use the server")
        self.api_key.editingFinished.connect(self._on_key)
        keyrow.addWidget(self.api_key, 1)
        self.new_key = QPushButton("New key")
        self.new_key.clicked.connect(self._on_new_key)
        keyrow.addWidget(self.new_key)
        form.addRow("API key", keyrow)

        self.max_loaded = spin_box(
            "serverMaxLoaded",
            (1, 8, int(cfg.max_loaded_models)),
            "How many models stay loaded at a time; a request for another closes the least recently used",
            self._on_max_loaded,
        )
        form.addRow("Models loaded at a time", self.max_loaded)
        self.idle_ttl = spin_box(
            "serverIdleTtl",
            (0, 7 * 24 * 3600, int(cfg.idle_ttl_s)),
            "A model the server loaded is unloaded once idle this long, and loaded again by the next "
            "request (a request's keep_alive or ttl wins); the chat's own model stays",
            self._on_idle_ttl,
        )
        self.idle_ttl.setSuffix(" s")
        self.idle_ttl.setSpecialValueText("never")
        form.addRow("Unload idle models after", self.idle_ttl)
        if host is not None:
            host.max_loaded = int(cfg.max_loaded_models)

        self.model_label = QLabel("-")
        self.model_label.setObjectName("serverModel")
        form.addRow("Loaded model", self.model_label)
        sources = SlotsSources(
            save=lambda n: self._persist(parallel=n),
            host=self._host,
            shared=lambda: self.host,
            server=lambda: self.server,
            model_path=self._model_path,
            n_ctx=lambda: int(self._load_fields()["n_ctx"]),
            kv_type=lambda: str(self._load_fields()["kv_type"]),
        )
        slots = self.slots = ServerSlots(form, int(cfg.parallel), sources, self)  # Parallel requests…
        self.parallel, self.parallel_note, self.slots_label = slots.box, slots.note, slots.active
        security = FormNote(
            "Listens on 127.0.0.1 only; requests must name this computer in their Host header; "
            "web pages are refused unless their origin is allowed (server.cors_origins)."
        )
        security.setObjectName("serverSecurity")
        form.addRow("", security)
        layout.addLayout(form)

        tabs = QTabWidget()
        self.log_table = RequestLog()
        tabs.addTab(self.log_table, "Requests")
        self.snippet_tabs = QTabWidget()
        self.snippet_views: dict[str, QPlainTextEdit] = {}
        for name in snippets("http://127.0.0.1:8453", None, "MODEL"):
            view = QPlainTextEdit()
            view.setReadOnly(True)
            self.snippet_views[name] = view
            self.snippet_tabs.addTab(view, name)
        tabs.addTab(self.snippet_tabs, "Snippets")
        layout.addWidget(tabs, 1)

        self.sig_request.connect(self._add_row, Qt.ConnectionType.QueuedConnection)
        self._refresh_snippets()
        self._unsubscribe = self.store.subscribe(self._on_settings_changed)
        self.destroyed.connect(lambda *_: self._unsubscribe())
        if self._key_problem is not None:
            self._show_problem(self._key_problem)
        if cfg.enabled:  # it was on when the window last closed: the chat's model loads with its slots
            self.slots.started()
            QTimer.singleShot(0, self.start)

    # -- public ------------------------------------------------------------------------------------

    @property
    def settings(self) -> Any:
        """The window's settings, as they are now (never a copy)."""
        return self.store.settings

    @property
    def running(self) -> bool:
        return self.server is not None and self.server.running

    def start(self) -> bool:
        """Start on the chosen port; a busy port (or any failure) shows why and returns False."""
        if self.running:
            return True
        from app.server import ApiServer, ServerConfig

        cfg = self.settings.server
        key = self._key() or None
        if key is None and cfg.require_key:  # never less protection than the person chose
            self._show_problem(
                "Not started: the server needs the API key you set, and "
                + (self._key_problem or "it could not be read")
                + ". Type the key again, or press New key, then start."
            )
            self.toggle.setChecked(False)
            self.toggle.setText("Start server")
            self.slots.stopped()  # (slots given at the window's start)
            return False
        path = self._model_path()
        config = ServerConfig(
            host=cfg.host,
            port=int(self.port.value()),
            api_key=key,
            cors_origins=list(cfg.cors_origins),
            models=[path] if path else [],
            use_library=self._use_library,
            tool_format=self.settings.chat.tool_format,
            max_loaded=int(self.max_loaded.value()),
            idle_ttl_s=float(self.idle_ttl.value()),
            parallel=self.slots.value,
            **self._load_fields(),  # what the chat's model loads with (the models the server loads, too)
        )
        server = ApiServer(
            config,
            on_request=self.sig_request.emit,
            host=self.host,
            library=self.library,
            held=self._model_path,
        )
        try:
            server.start()
        except OSError as exc:
            busy = "in use" in str(exc).lower() or "another server" in str(exc)
            self.status.setText(
                f"Port {config.port} is already in use by another program: choose another port and start again."
                if busy
                else f"The server could not start: {exc}"
            )
            self.status.setProperty("error", True)
            self.toggle.setChecked(False)
            self.toggle.setText("Start server")
            self.slots.stopped()  # (slots given at the window's start)
            return False
        self.server = server
        self.slots.started()  # the window's model is loaded again with the slots
        self.status.setProperty("error", False)
        self.status.setText(f"Running: {self.pending_text()}" + self._key_note())
        self.address.setText(server.url)
        self.toggle.setChecked(True)
        self.toggle.setText("Stop server")
        self.port.setEnabled(False)
        self._persist(enabled=True)
        self._update_model()
        self._refresh_snippets()
        self.sig_state_changed.emit(True)
        return True

    def stop(self) -> None:
        """Stop serving; the models are loaded again with one slot (their KV memory freed)."""
        self._stop_serving()
        self.slots.stopped()

    def _stop_serving(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.stop()
        self.status.setText("Stopped")
        self.address.clear()
        self.toggle.setChecked(False)
        self.toggle.setText("Start server")
        self.port.setEnabled(True)
        self._persist(enabled=False)
        self.sig_state_changed.emit(False)

    def shutdown(self) -> None:
        """The window closes: stop serving but remember that the server was on."""
        was = self.running
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.settings.server.enabled != was:
            with self.store.edit() as s:
                s.server.enabled = was

    def pending_text(self) -> str:
        return (
            "answers on 127.0.0.1 only"
            if self.settings.server.host in ("127.0.0.1", "localhost")
            else f"listening on {self.settings.server.host}"
        )

    # -- internals ---------------------------------------------------------------------------------

    def _key(self) -> str:
        return self.api_key.text().strip()

    def _stored_key(self) -> str | None:
        """The key the person chose: the keychain's; a key an older version wrote into the settings
        file moves to the keychain; where no keychain is, the settings file's."""
        cfg = self.settings.server
        try:
            stored = load_server_key()
        except KeychainUnavailable as exc:
            self._key_problem = str(exc)
            return cfg.api_key or None
        if cfg.api_key:  # written by an older version, or where no keychain was: into the keychain now
            key = cfg.api_key
            try:
                store_server_key(key)
            except KeychainUnavailable as exc:
                self._key_problem = str(exc)
                return key
            with self.store.edit() as s:
                s.server.api_key = None
                s.server.require_key = True
            return key
        if stored is None and cfg.require_key:
            self._key_problem = "the system keychain has no key for it"
        return stored or None

    def _key_note(self) -> str:
        if self._key() and self.settings.server.api_key:
            return " (no system keychain: the key is kept in settings.json)"
        return ""

    def _show_problem(self, text: str) -> None:
        self.status.setText(text)
        self.status.setProperty("error", True)
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)

    def _save_key(self, key: str | None) -> str | None:
        """Keep ``key`` (None: no key); returns what goes in the settings file (None: the keychain has it)."""
        try:
            if key:
                store_server_key(key)
            else:
                delete_server_key()
        except KeychainUnavailable as exc:
            self._key_problem = str(exc)
            return key
        self._key_problem = None
        return None

    def _persist(self, **changes: Any) -> None:
        key = self._key() or None
        in_file = self._save_key(key) if key != self._showing_key else self.settings.server.api_key
        self._showing_key = key
        with self.store.edit() as s:
            cfg = s.server
            for k, v in changes.items():
                setattr(cfg, k, v)
            cfg.port = int(self.port.value())
            cfg.api_key = in_file
            cfg.require_key = key is not None

    def _on_settings_changed(self, sections: frozenset[str]) -> None:
        """Another part changed the settings: the fields show them, a running server serves them."""
        cfg = self.settings.server
        if "server" in sections:
            if not self.running and self.port.value() != cfg.port:
                self.port.blockSignals(True)
                self.port.setValue(int(cfg.port))
                self.port.blockSignals(False)
            for box, value in ((self.max_loaded, cfg.max_loaded_models), (self.idle_ttl, cfg.idle_ttl_s)):
                if box.value() != value:
                    box.setValue(int(value))
            self.slots.set_value(int(cfg.parallel))
        if self.server is not None:
            config = self.server.state.config
            config.idle_ttl_s = float(cfg.idle_ttl_s)  # the next sweep unloads by it
            config.tool_format = self.settings.chat.tool_format
            for name, value in self._load_fields().items():
                setattr(config, name, value)
            self.server.state.load_settings = config.load_settings()  # the next model it loads
        self._refresh_snippets()

    def _load_fields(self) -> dict[str, Any]:
        return load_fields(self.settings, self._model_path(), n_ctx=self._n_ctx, n_threads=self._n_threads)

    def _on_toggle(self, checked: bool) -> None:
        if checked:
            self.start()
        else:
            self.stop()

    def _on_max_loaded(self, value: int) -> None:
        self._persist(max_loaded_models=int(value))
        host = self._host()
        if host is not None:
            host.set_max_loaded(int(value))  # models past it are closed now, the least recently used first

    def _host(self) -> Any:
        return self.host if self.host is not None else (self.server.host if self.server is not None else None)

    def _on_idle_ttl(self, value: int) -> None:
        self._persist(idle_ttl_s=int(value))  # a running server hears it (_on_settings_changed)

    def _on_port(self, _value: int) -> None:
        self._persist()
        self._refresh_snippets()

    def _on_key(self) -> None:
        self._persist()
        self._refresh_snippets()
        if self.running:  # a new key takes effect at once (the models keep their slots)
            self._stop_serving()
            self.slots.stopped(restart=True)
            self.start()

    def _on_new_key(self) -> None:
        self.api_key.setText("cal-" + secrets.token_urlsafe(24))
        self._on_key()

    def _loaded_entry(self) -> Any:
        return self.server.state.loaded_entry() if self.server is not None else None

    def _model_id(self) -> str:
        entry = self._loaded_entry()
        if entry is not None:
            return entry.id
        path = self._model_path()
        if path:
            from pathlib import Path

            return Path(path).name.removesuffix(".gguf")
        return "MODEL"

    def _update_model(self) -> None:
        entry = self._loaded_entry()
        if entry is not None:
            self.model_label.setText(entry.id)
        else:
            self.model_label.setText(
                f"{self._model_id()} (loads on the first request)"
                if self._model_id() != "MODEL"
                else "none yet (loads on the first request)"
            )

    def _refresh_snippets(self) -> None:
        url = self.server.url if self.server is not None else f"http://127.0.0.1:{self.port.value()}"
        for name, text in snippets(url, self._key() or None, self._model_id()).items():
            self.snippet_views[name].setPlainText(text)

    def _add_row(self, entry: Any) -> None:
        self.log_table.add(entry)
        self._update_model()
        self.slots.refresh()
