"""The window's settings: the dialog, applying and saving them, the remembered window state
(:class:`SettingsController`), and the banners above the chat (:class:`Notices`); parts of the
main window.

Settings are read and changed only through the window's one
:class:`~app.storage.settings_store.SettingsStore`; this controller hears every change there (from
the dialog, the Server page, the model picker...) and passes it on: the worker receives the values
it needs as an :class:`~app.ui.worker.EngineConfig` (:func:`engine_config_for`), the theme is
applied, and ``sig_settings_saved`` tells the badge and the tool choice.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QObject, Signal
from PySide6.QtWidgets import QPushButton, QVBoxLayout

from app.ui.chat import NoticeBanner
from app.ui.made_models import made_note
from app.ui.settings_dialog import SettingsDialog
from app.ui.window_part import WindowKit, WindowPart
from app.ui.window_state import engine_config_for

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QDockWidget

__all__ = ["Notices", "SettingsController", "engine_config_for"]


class Notices(QObject):
    """Owns the banners above the chat (``layout``): one per code, the newest wins."""

    sig_open_setting = Signal(str)  # a banner's link: the settings dialog at that setting

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.layout = QVBoxLayout()
        self.layout.setContentsMargins(8, 4, 8, 0)

    def show(self, code: str, message: str, setting: str | None, *, kind: str = "warning") -> NoticeBanner:
        """A banner above the chat (``kind``: info, warning or error)."""
        for old in self._banners():
            if old.code == code:
                self.layout.removeWidget(old)
                old.hide()
                old.deleteLater()
        b = NoticeBanner(code, message, setting, kind=kind)
        b.sig_open_setting.connect(self.sig_open_setting)
        close = QPushButton("Dismiss")
        close.setFlat(True)
        close.clicked.connect(b.deleteLater)
        row = b.layout()
        assert row is not None  # a NoticeBanner lays out its words and links in a row
        row.addWidget(close)
        self.layout.addWidget(b)
        return b

    def show_error(self, message: str) -> None:
        self.show("error", message, None, kind="error")

    def show_warning(self, code: str, message: str, setting: str | None) -> None:
        self.show(code, message, setting, kind="warning")

    def texts(self) -> list[str]:
        return [b.message for b in self._banners()]

    def _banners(self) -> list[NoticeBanner]:
        items = (self.layout.itemAt(i) for i in range(self.layout.count()))
        return [w for item in items if item is not None and isinstance(w := item.widget(), NoticeBanner)]


class SettingsController(WindowPart):
    """Owns the settings dialog (``settings_dialog``), applying and saving the settings, and the
    window state remembered in them (geometry, panels, the open conversation)."""

    sig_settings_saved = Signal()  # applied settings were saved; the badge and the tool choice follow

    def __init__(self, kit: WindowKit) -> None:
        super().__init__(kit)
        self.settings_dialog: SettingsDialog | None = None
        self._theme = self.state.settings.window.theme
        self._force_configure = False
        self._theme_later = False
        self.notices.sig_open_setting.connect(self.open_settings)
        unsubscribe = self.state.store.subscribe(self._on_store_changed)
        self.destroyed.connect(lambda *_: unsubscribe())

    # -- the dialog ----------------------------------------------------------------------------------
    def open_settings(self, key: str | None = None) -> SettingsDialog:
        if self.settings_dialog is not None and self.settings_dialog.isVisible():
            dlg = self.settings_dialog
        else:
            info = self.state.model_info
            dlg = SettingsDialog(
                self.state.settings,
                detected_label=info.detected_label if info else None,
                model_path=info.path if info else None,
                model_name=Path(info.path).stem if info else None,  # the picker's name
                made_note=made_note(self.state),
                mcp=self.worker.mcp,  # the Tools tab lists the running MCP servers' tools in full
                parent=self.window,
            )
            # the edits made in the dialog, onto the settings as they are then (not the copy it opened with)
            dlg.accepted.connect(
                lambda: self.apply_settings(dlg.settings, base=dlg.original, theme_later=True)
            )
            self.settings_dialog = dlg
        dlg.open_at(key or "chat.tool_format")
        return dlg

    def apply_settings(self, settings: Any, *, base: Any = None, theme_later: bool = False) -> None:
        """Settings edited elsewhere (a dialog): with ``base`` (what the editor started from) only
        the edits are taken, so that what another part changed meanwhile stays. Saved and told.
        ``theme_later``: a new theme is applied once the dialog has closed (U18)."""
        self._theme_later = theme_later
        self._force_configure = True  # a Save applies again even with nothing changed (an MCP file re-read)
        try:
            if not self.state.store.apply(settings, base=base):
                self._on_store_changed(frozenset())
        finally:
            self._theme_later = self._force_configure = False

    def _on_store_changed(self, sections: frozenset[str]) -> None:
        st = self.state
        if st.model_info is not None:
            config = st.config_for(st.model_info.path)
            # what the engine uses now: a server port or the window's size is no news to it
            if self._force_configure or config != self.worker.state.config:
                self._force_configure = False
                self.worker.configure(config)
        theme = st.settings.window.theme
        if theme != self._theme:
            self._theme = theme
            if self._theme_later:
                self._apply_theme_soon(theme)
            else:
                self.apply_theme_now(theme)
        self.sig_settings_saved.emit()

    def _apply_theme_soon(self, theme: str) -> None:
        """The dialog is gone from the screen first (U18): the window is drawn without it, then the
        theme is applied under a busy cursor, and every icon is drawn again in its colours (U7)."""
        from PySide6.QtCore import QEventLoop
        from PySide6.QtWidgets import QApplication

        if self.settings_dialog is not None:
            self.settings_dialog.hide()
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
        self.apply_theme_now(theme)

    def apply_theme_now(self, theme: str) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QCursor
        from PySide6.QtWidgets import QApplication

        from app.ui.theme import apply_theme

        app = QApplication.instance()
        if not isinstance(app, QApplication) or self.state.shut:
            return
        QApplication.setOverrideCursor(QCursor(Qt.CursorShape.WaitCursor))
        try:
            apply_theme(app, theme)
            from app.ui.icons import refresh_icons

            refresh_icons(self.window)
        finally:
            QApplication.restoreOverrideCursor()

    def save_quietly(self) -> None:
        """Save the settings and tell every part what changed; a failure is a banner, never an exception."""
        self.state.store.commit()

    # -- remembered state -----------------------------------------------------------------------------
    def restore_geometry(self) -> None:
        geo = self.state.settings.window.geometry
        if geo:
            with contextlib.suppress(ValueError, TypeError):
                self.window.restoreGeometry(QByteArray.fromBase64(geo.encode("ascii")))

    def save_window_state(self, *, tool_dock: QDockWidget, act_conversations: QAction) -> None:
        w = self.state.settings.window
        w.geometry = bytes(self.window.saveGeometry().toBase64().data()).decode("ascii")
        w.panels = {
            **w.panels,
            "tools": tool_dock.isVisible(),
            "conversations": act_conversations.isChecked(),
        }
        w.last_conversation_id = self.state.conversation_id
