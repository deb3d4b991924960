"""The window's settings: the dialog, applying and saving them, the remembered window state
(:class:`SettingsController`), and the banners above the chat (:class:`Notices`); parts of the
main window.

Settings are read and written only through :mod:`app.storage.settings`; the worker receives the
values it needs as an :class:`~app.ui.worker.EngineConfig` (:func:`engine_config_for`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QObject, Signal
from PySide6.QtWidgets import QPushButton, QVBoxLayout

from app.ui.chat import NoticeBanner
from app.ui.settings_dialog import SettingsDialog
from app.ui.window_part import WindowPart
from app.ui.window_state import engine_config_for

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QDockWidget, QMainWindow

    from app.ui.window_state import WindowState
    from app.ui.worker import EngineWorker

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

    def __init__(
        self,
        window: QMainWindow,
        state: WindowState,
        *,
        worker: EngineWorker,
        notices: Notices,
    ) -> None:
        super().__init__(window, state, worker)
        self.notices = notices
        self.settings_dialog: SettingsDialog | None = None
        notices.sig_open_setting.connect(self.open_settings)

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
                mcp=self.worker.mcp,  # the Tools tab lists the running MCP servers' tools in full
                parent=self.window,
            )
            dlg.accepted.connect(lambda: self.apply_settings(dlg.settings))
            self.settings_dialog = dlg
        dlg.open_at(key or "chat.tool_format")
        return dlg

    def apply_settings(self, settings: Any) -> None:
        st = self.state
        theme_changed = settings.window.theme != st.settings.window.theme
        st.settings = settings
        self.save_quietly()
        if st.model_info is not None:
            self.worker.configure(st.config_for(st.model_info.path))
        if theme_changed:
            from PySide6.QtWidgets import QApplication

            from app.ui.theme import apply_theme

            app = QApplication.instance()
            if app is not None:
                apply_theme(app, settings.window.theme)
        self.sig_settings_saved.emit()

    def save_quietly(self) -> None:
        """Save the settings; a failure is a banner, never an exception."""
        from app.storage.settings import save_settings

        try:
            save_settings(self.state.settings)
        except OSError as exc:  # SettingsSaveError (an OSError) says what failed
            self.notices.show("settings_save", str(exc), None, kind="error")

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
