"""The window's settings: the dialog, applying and saving them, the remembered window state, and
the banners above the chat (a part of MainWindow).

Settings are read and written only through :mod:`app.storage.settings`; the worker receives the
values it needs as an :class:`~app.ui.worker.EngineConfig` (:func:`engine_config_for`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray
from PySide6.QtWidgets import QPushButton

from app.ui.chat_view import NoticeBanner
from app.ui.settings_dialog import SettingsDialog
from app.ui.worker import EngineConfig

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QDockWidget, QVBoxLayout

    from app.ui.tool_choice import ToolChoiceBox
    from app.ui.worker import EngineWorker, ModelInfo

__all__ = ["SettingsMixin", "engine_config_for"]


def engine_config_for(settings: Any, model_path: str | None) -> EngineConfig:
    """The worker's config: global settings with the model's override on top."""
    from app.storage.settings import effective_settings

    eff = effective_settings(settings, model_path)
    return EngineConfig(
        tool_format=eff.tool_format,
        system_prompt=eff.system_prompt,
        sampling=eff.sampler_overrides(),
        max_tokens=int(eff.max_tokens),
        n_ctx=eff.context_length,
        n_gpu_layers=eff.gpu_layers,
        n_threads=eff.threads,
        workspace=settings.tools.workspace,
        approvals=dict(settings.tools.approvals),
        default_approval=settings.tools.default_approval,
        mcp_servers_path=settings.tools.mcp_servers_path,
        context_policy=eff.context_policy,
    )


class SettingsMixin:
    """Mixed into :class:`app.ui.main_window.MainWindow`."""

    settings: Any
    history: Any
    worker: EngineWorker
    model_info: ModelInfo | None
    conversation_id: int | None
    settings_dialog: SettingsDialog | None
    tool_choice_box: ToolChoiceBox
    tool_dock: QDockWidget
    act_conversations: QAction
    window_notices: QVBoxLayout

    if TYPE_CHECKING:  # provided by the window (other parts, QMainWindow)
        sig_settings_saved: Any

        def saveGeometry(self) -> QByteArray: ...  # noqa: N802
        def restoreGeometry(self, geometry: QByteArray) -> bool: ...  # noqa: N802
        def open_conversation(self, conversation_id: int) -> None: ...
        def _update_format_badge(self) -> None: ...

    def config_for(self, model_path: str | None) -> EngineConfig:
        return engine_config_for(self.settings, model_path)

    # -- the dialog ----------------------------------------------------------------------------------
    def open_settings(self, key: str | None = None) -> SettingsDialog:
        if self.settings_dialog is not None and self.settings_dialog.isVisible():
            dlg = self.settings_dialog
        else:
            info = self.model_info
            dlg = SettingsDialog(
                self.settings,
                detected_label=info.detected_label if info else None,
                model_path=info.path if info else None,
                model_name=Path(info.path).stem if info else None,  # the picker's name
                parent=self,  # type: ignore[arg-type]
            )
            dlg.accepted.connect(lambda: self.apply_settings(dlg.settings))
            self.settings_dialog = dlg
        dlg.open_at(key or "chat.tool_format")
        return dlg

    def apply_settings(self, settings: Any) -> None:
        theme_changed = settings.window.theme != self.settings.window.theme
        self.settings = settings
        self._save_settings_quietly()
        self.tool_choice_box.default = settings.chat.tool_choice
        if self.model_info is not None:
            self.worker.configure(self.config_for(self.model_info.path))
        self._update_format_badge()
        if theme_changed:
            from PySide6.QtWidgets import QApplication

            from app.ui.theme import apply_theme

            app = QApplication.instance()
            if app is not None:
                apply_theme(app, settings.window.theme)
        self.sig_settings_saved.emit()

    def _save_settings_quietly(self) -> None:
        from app.storage.settings import save_settings

        try:
            save_settings(self.settings)
        except OSError as exc:  # SettingsSaveError (an OSError) says what failed
            self.show_window_notice("settings_save", str(exc), None, kind="error")

    # -- banners above the chat ------------------------------------------------------------------------
    def _on_worker_error(self, message: str) -> None:
        self.show_window_notice("error", message, None, kind="error")

    def _on_worker_window_notice(self, code: str, message: str, setting: str | None) -> None:
        self.show_window_notice(code, message, setting, kind="warning")

    def show_window_notice(
        self, code: str, message: str, setting: str | None, *, kind: str = "warning"
    ) -> NoticeBanner:
        """A banner above the chat (``kind``: info, warning or error); one per code, the newest wins."""
        for i in reversed(range(self.window_notices.count())):
            old = self.window_notices.itemAt(i).widget()
            if isinstance(old, NoticeBanner) and old.code == code:
                self.window_notices.removeWidget(old)
                old.hide()
                old.deleteLater()
        b = NoticeBanner(code, message, setting, kind=kind)
        b.sig_open_setting.connect(self.open_settings)
        close = QPushButton("Dismiss")
        close.setFlat(True)
        close.clicked.connect(b.deleteLater)
        b.layout().addWidget(close)
        self.window_notices.addWidget(b)
        return b

    def window_notice_texts(self) -> list[str]:
        out = []
        for i in range(self.window_notices.count()):
            w = self.window_notices.itemAt(i).widget()
            if isinstance(w, NoticeBanner):
                out.append(w.message)
        return out

    # -- remembered state -----------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        geo = self.settings.window.geometry
        if geo:
            with contextlib.suppress(ValueError, TypeError):
                self.restoreGeometry(QByteArray.fromBase64(geo.encode("ascii")))

    def _reopen_last_conversation(self) -> None:
        cid = self.settings.window.last_conversation_id
        if cid is None:
            return
        from app.storage.history import ConversationNotFound

        try:
            self.history.load_conversation(cid)
        except ConversationNotFound:
            self.settings.window.last_conversation_id = None
            return
        self.open_conversation(cid)

    def _save_window_state(self) -> None:
        w = self.settings.window
        w.geometry = bytes(self.saveGeometry().toBase64()).decode("ascii")
        w.panels = {
            **w.panels,
            "tools": self.tool_dock.isVisible(),
            "conversations": self.act_conversations.isChecked(),
        }
        w.last_conversation_id = self.conversation_id
