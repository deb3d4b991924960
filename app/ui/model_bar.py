"""The window's model picker, load progress and tool-format badge (a part of the main window).

The picker lists the library's models (scanned off the UI thread), the last used, the demo model
and the models made over the API (``app.ui.made_models``). Loading goes through the worker: the
current model stays loaded until the new one has loaded, so a failed load puts the picker, badge and
Send back on the model that still works.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QLabel, QProgressBar

from app.engine.remote.keys import parse_remote_key
from app.ui import made_models
from app.ui.format_badge import format_badge_text
from app.ui.labels import ElidedComboBox
from app.ui.remote_models import ADD_REMOTE, MANAGE_REMOTE
from app.ui.window_part import WindowKit, WindowPart
from app.ui.window_state import path_key

if TYPE_CHECKING:
    from PySide6.QtWidgets import QToolBar

    from app.engine.models.library import Library
    from app.engine.models.manager import ModelManager
    from app.ui.remote_models import RemoteEngines
    from app.ui.worker import ModelInfo

__all__ = ["DOWNLOAD", "OPEN_FILE", "RECENT_MODELS", "ModelBar"]

OPEN_FILE = "__open__"
DOWNLOAD = "__download__"  # "Download a model…": the Models page (U16)
RECENT_MODELS = 8  # how many recently loaded files the picker keeps


class ModelBar(WindowPart):
    """Owns the model picker, the tool-format badge, the load progress, the one models
    :attr:`library` (and the Models page's :attr:`model_manager` over it) and the library's usable
    models; loads models through the worker and follows its load events."""

    sig_model_ready = Signal(object)  # ModelInfo, after the picker shows the loaded model
    sig_library_refreshed = Signal()  # the picker lists the library's models again
    sig_state_changed = Signal()  # a load began, ended or failed: Send follows

    def __init__(self, kit: WindowKit, *, toolbar: QToolBar, remote: RemoteEngines) -> None:
        super().__init__(kit)
        self.remote = remote
        self.library_models: list[Any] = []  # usable LocalModels of the last library scan
        #: The one :class:`~app.engine.models.library.Library` over the manifest: the picker scans it, the
        #: Models page's :attr:`model_manager` holds it (None: the models folder cannot be used).
        self.library: Library | None = None
        self._model_manager: ModelManager | None = None
        self._open_library()
        self._build(toolbar)
        self.worker.sig_load_progress.connect(self._on_load_progress)
        self.worker.sig_loaded.connect(self._on_loaded)
        self.worker.sig_load_failed.connect(self._on_load_failed)
        self._made_stamp = self.state.presets.file_stamp()  # (one stat a poll, nothing read)
        self.made_timer = QTimer(self)
        self.made_timer.timeout.connect(self._check_made)
        self.made_timer.start(made_models.MADE_POLL_MS)

    def _check_made(self) -> None:  # a model made or deleted by a server joins or leaves the picker
        stamp = self.state.presets.file_stamp()
        if stamp != self._made_stamp and not self.state.shut:
            self._made_stamp = stamp
            self.refresh_made()

    def _build(self, tb: QToolBar) -> None:
        """The model picker, the tool-format badge and the load progress, in the top toolbar."""
        self.model_picker = ElidedComboBox()  # a long name: "Qwen3-Coder-30…UD-Q4_K_XL"
        self.model_picker.setObjectName("modelPicker")
        self.model_picker.setMinimumWidth(160)
        self.model_picker.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.model_picker.setMinimumContentsLength(26)  # room for a whole name (U15)
        self.model_picker.setToolTip("The model you chat with")
        self.model_picker.activated.connect(self._on_model_picker_activated)
        tb.addWidget(self.model_picker)
        self.format_badge = QLabel("")
        self.format_badge.setObjectName("formatBadge")
        self.badge_action = tb.addWidget(self.format_badge)  # a toolbar shows/hides the action
        self.badge_action.setVisible(False)
        self.load_progress = QProgressBar()
        self.load_progress.setObjectName("loadProgress")
        self.load_progress.setMaximumWidth(140)
        self.load_progress.setRange(0, 100)
        self.progress_action = tb.addWidget(self.load_progress)  # a toolbar shows/hides the action
        self.progress_action.setVisible(False)
        self.load_label = QLabel("")
        tb.addWidget(self.load_label)

    # -- the library ---------------------------------------------------------------------------------
    def _open_library(self) -> None:
        """The window's one library (cheap: reads nothing until a scan); never fatal."""
        try:
            from app.engine.models.library import Library

            self.library = Library()
        except Exception as exc:  # noqa: BLE001 - the picker still offers last/demo/open file
            self.library = None
            self.window.statusBar().showMessage(f"The models library cannot be read: {exc}", 8000)

    @property
    def model_manager(self) -> ModelManager:
        """Hub, downloads and :attr:`library` for the Models page; made the first time it is asked for
        (its download thread starts then), shut down with the window."""
        if self._model_manager is None:
            from app.engine.models.manager import ModelManager

            self._model_manager = ModelManager(library=self.library)
        return self._model_manager

    def shutdown(self) -> None:
        """The Models page's downloads stop (their parts are kept for next time)."""
        if self._model_manager is not None:
            self._model_manager.shutdown()

    def startup_model(self) -> str | None:
        """The model the window loads when it opens: the last used, else the demo model."""
        last = self.state.settings.model.last_model_path
        if last and Path(last).is_file():
            return last
        demo = self._demo_model()
        if demo is not None:
            self.add_to_library(demo, refresh=False)  # the window scans the library next
            return str(demo)
        return None

    @staticmethod
    def _demo_model() -> Path | None:
        from app.engine.models.demo import demo_model_path

        try:
            return demo_model_path()
        except OSError:  # an unreadable .venv: the picker offers the library and "Open a GGUF file…"
            return None

    def add_to_library(self, path: str | Path, *, refresh: bool = True) -> bool:
        """Record a model file in the library where it is (no copy), e.g. the demo model; the
        picker and, when it is open, the Models page list it (``refresh``: scan now; the window's
        start scans once after). Never fatal: False, with the reason in the status bar."""
        if self.library is None:
            return False
        try:
            self.library.import_in_place(path)
        except Exception as exc:  # noqa: BLE001 - the chat works without a library entry
            why = f"{Path(path).name} could not be added to the library: {exc}"
            self.window.statusBar().showMessage(why, 8000)
            return False
        if refresh:
            self.library_changed()
        return True

    def library_changed(self) -> None:
        """A model joined the library: the Models page (when it is open) and the picker list it."""
        from app.ui.models_page import ModelsPage

        if isinstance(page := self.pages.built_page("models"), ModelsPage):
            page.refresh_library()  # its sig_library_done refreshes the picker too
        else:
            self.refresh_model_library()

    def refresh_model_library(self) -> None:
        """Rescan the models library (models folder, added folders, imports) off the UI thread;
        the picker lists what it finds (``sig_library_refreshed``)."""
        if self.state.shut:
            return
        self.refresh_made()
        if self.library is not None:
            self.tasks.run(self.library.scan, self._on_library_scanned, self._on_library_scan_failed)

    def _on_library_scan_failed(self, message: str) -> None:
        self.window.statusBar().showMessage(f"The models library could not be scanned: {message}", 8000)
        self.sig_library_refreshed.emit()

    def _on_library_scanned(self, models: list[Any]) -> None:
        self.library_models = [m for m in models if m.usable]
        self.fill_model_picker()
        self.sig_library_refreshed.emit()

    def _known_models(self) -> list[tuple[str, str]]:
        """(label, path) of every model the picker offers: the library's, then the last used,
        the demo, the loaded and the loading one when they are not in it."""
        out: list[tuple[str, str]] = []
        seen: set[str] = set()

        def add(label: str, path: str) -> None:
            key = path_key(path)
            if key not in seen:
                seen.add(key)
                out.append((label, path))

        for m in self.library_models:
            add(str(m.name), str(m.path))
        for p in self._extra_models():
            add(Path(p).stem, p)
        labels = [label for label, _p in out]  # the same name in two folders: each says its folder (U15)
        return [(f"{lb} — {Path(p).parent.name or p}" if labels.count(lb) > 1 else lb, p) for lb, p in out]

    def _extra_models(self) -> list[str]:
        st = self.state
        paths: list[str] = []
        if st.settings.model.last_model_path:
            paths.append(st.settings.model.last_model_path)
        paths.extend(st.settings.model.recent_models)  # files opened lately, in the library or not
        demo = self._demo_model()
        if demo is not None:
            paths.append(str(demo))
        loaded = st.model_info.path if st.model_info else None
        for p in (loaded, st.loading_path):
            if p and parse_remote_key(p) is None:  # a remote model is listed with its provider's
                paths.append(p)
        # a deleted file leaves the picker (the loaded model stays listed: it still works)
        return [p for p in paths if p == loaded or p == st.loading_path or Path(p).is_file()]

    def fill_model_picker(self) -> None:
        picker = self.model_picker
        picker.blockSignals(True)
        picker.clear()
        current = self.state.current_model()
        made_items = made_models.made_picker_items(self.state)
        made = self.state.current_made()
        made_listed = made is not None and any(
            key == made_models.made_key(made) for _l, key, _t in made_items
        )
        i = 0
        for label, p in self._known_models():
            if current and not made_listed and path_key(p) == path_key(current):
                i = picker.count()
                p = current  # the path as loaded
            picker.addItem(label, p)
            picker.setItemData(picker.count() - 1, p, Qt.ItemDataRole.ToolTipRole)
        for label, key, tip in made_items:
            if made_listed and made is not None and key == made_models.made_key(made):
                i = picker.count()
            picker.addItem(label, key)
            picker.setItemData(picker.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        for label, key in self.remote.picker_items():
            if key == current:
                i = picker.count()
            picker.addItem(label, key)
            picker.setItemData(
                picker.count() - 1, "A model served by a remote engine", Qt.ItemDataRole.ToolTipRole
            )
        if current is None:  # nothing loaded or loading: the picker says so, not a model it lists (U4)
            picker.insertItem(0, "No model loaded", None)
            i = 0
        picker.addItem("Download a model…", DOWNLOAD)
        if self.state.settings.remote:
            picker.addItem("Edit remote engines…", MANAGE_REMOTE)
        picker.addItem("Add a remote engine…", ADD_REMOTE)
        picker.addItem("Open a GGUF file…", OPEN_FILE)
        picker.setCurrentIndex(i)
        picker.blockSignals(False)

    def _on_model_picker_activated(self, index: int) -> None:
        data = self.model_picker.itemData(index)
        info = self.state.model_info
        if data == DOWNLOAD:
            self.fill_model_picker()
            self.pages.show_models_page()
        elif data == ADD_REMOTE:
            self.fill_model_picker()
            self.remote.open_provider_dialog()
        elif data == MANAGE_REMOTE:
            self.fill_model_picker()
            self.remote.open_providers_dialog()
        elif parse_remote_key(data) is not None:
            if info is None or data != info.path:
                self.remote.load_remote(data)
        elif (made := made_models.parse_made_key(data)) is not None:
            if info is None or made != self.state.made:
                self.load_made(made)
        elif data == OPEN_FILE:
            self.fill_model_picker()  # the picker keeps showing the current model meanwhile
            path, _ = QFileDialog.getOpenFileName(
                self.window, "Open a GGUF model", "", "GGUF models (*.gguf)"
            )
            if path:
                self.load_model(path)
        elif data and not self.state.uses_model(data):
            self.load_model(data)  # (the made model's file: the file as it is)

    def begin_loading(self, key: str, what: str) -> None:
        """``key`` (a path or a remote key) is being loaded: the picker shows it, with progress."""
        self.state.loading_path = key
        self.fill_model_picker()
        self.progress_action.setVisible(True)
        self.load_progress.setRange(0, 0)
        self.load_label.setText(what)
        self.sig_state_changed.emit()

    def load_model(self, path: str, made: str | None = None) -> None:
        """Load in the background; the picker shows progress, the window stays usable. ``made``:
        the made model over ``path`` to chat with (None: the file as it is)."""
        self.state.loading_made = made
        self.begin_loading(str(path), f"Loading {made or Path(path).name}…")
        self.worker.load(path, self.state.config_for(str(path), made=made or ""))

    def refresh_made(self, then: Callable[[], None] | None = None) -> None:
        """Read the made models again off the UI thread; the picker lists them, then ``then``."""

        def done(found: dict[str, Any] | None) -> None:
            if found is not None:
                self.state.made_presets = found
                self.fill_model_picker()
            if then is not None and not self.state.shut:
                then()

        self.tasks.run(lambda: made_models.read_made(self.state), done, lambda _why: done(None))

    def load_made(self, name: str) -> None:
        """Chat with the made model ``name`` (its file with what it sets), as read now; said in
        the status bar when it was deleted or its file is gone."""
        self.refresh_made(lambda: self._load_made(name))

    def _load_made(self, name: str) -> None:
        base = made_models.made_base(self.state, name)
        if base is not None:
            self.load_model(base, made=name)
            return
        gone = f"The made model {name} was deleted, or its file is gone: pick another model."
        self.window.statusBar().showMessage(gone, 8000)

    def open_on(self, path: str, made: str | None) -> None:
        """The window's first load: ``path``, with the made model ``made`` over it when it is still
        there (read first)."""
        if not made:
            self.load_model(path)
            return
        self.refresh_made(
            lambda: self.load_model(path, made=made if self.state.made_preset(made, path) else None)
        )

    def _on_load_progress(self, fraction: float, what: str) -> None:
        if fraction < 0:
            self.load_progress.setRange(0, 0)
        else:
            self.load_progress.setRange(0, 100)
            self.load_progress.setValue(int(fraction * 100))
        self.load_label.setText(what)

    def _on_loaded(self, info: ModelInfo) -> None:
        st = self.state
        st.model_info = info
        if st.loading_path is not None:  # a load the picker began (not settings applied again)
            st.made = st.loading_made if info.remote is None else None
        st.loading_path, st.loading_made = None, None
        self.progress_action.setVisible(False)
        self.load_label.setText("")
        if info.remote is not None:
            self.status.clear_context_meter()
        else:
            model = st.settings.model
            recent = [
                info.path,
                *(p for p in model.recent_models if path_key(p) != path_key(info.path)),
            ][:RECENT_MODELS]
            remembered = (info.path, recent, st.made)
            if (model.last_model_path, model.recent_models, model.last_made) != remembered:
                model.last_model_path, model.recent_models, model.last_made = remembered
                self.save_settings()
        self.fill_model_picker()
        self.update_format_badge()
        self.sig_state_changed.emit()
        self.sig_model_ready.emit(info)

    def _on_load_failed(self, path: str, message: str) -> None:
        """The worker kept the model it had: the picker, badge and Send show that one again."""
        st = self.state
        if st.loading_path is not None and path_key(st.loading_path) == path_key(path):
            st.loading_path, st.loading_made = None, None
            self.progress_action.setVisible(False)
            self.load_label.setText("")
            self.fill_model_picker()
            self.update_format_badge()
            self.sig_state_changed.emit()
        still = f" {Path(st.model_info.path).stem} is still loaded." if st.model_info is not None else ""
        end = "" if message.rstrip().endswith(".") else "."
        self.notices.show("load_error", message.rstrip() + end + still, None, kind="error")

    def update_format_badge(self) -> None:
        text, tip = format_badge_text(self.state)
        b = self.format_badge
        b.setText(text)
        b.setToolTip(tip)
        self.badge_action.setVisible(bool(text))  # in a toolbar the action, not the widget, shows it
        b.setProperty("warn", "false")
        b.style().unpolish(b)
        b.style().polish(b)
