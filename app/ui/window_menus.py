"""The window's menus and keyboard shortcuts, and the Help list of them (a part of MainWindow)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QMessageBox

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMenu

    from app.ui.window_pages import Page

__all__ = ["SHORTCUTS", "MenusMixin"]

#: The keyboard shortcuts the Help menu lists (key, what it does).
SHORTCUTS = (
    ("Enter", "Send the message"),
    ("Shift+Enter", "New line in the message"),
    ("Esc", "Stop the reply"),
    ("Ctrl+N", "New chat"),
    ("Ctrl+K", "Search conversations"),
    ("Ctrl+B", "Show or hide the conversation list"),
    ("Ctrl+T", "Show or hide the tool-call panel"),
    ("Ctrl+,", "Settings"),
    ("Ctrl+Q", "Quit"),
)


class MenusMixin:
    """File, View and Help; the shortcuts that are no menu entry. Mixed into the main window."""

    pages: dict[str, Page]
    act_settings: QAction
    act_conversations: QAction
    act_panel: QAction
    act_quit: QAction
    view_menu: QMenu | None

    if TYPE_CHECKING:  # provided by the window (other parts, QMainWindow)

        def menuBar(self) -> Any: ...  # noqa: N802
        def close(self) -> bool: ...
        def new_chat(self) -> None: ...
        def stop(self) -> None: ...
        def focus_search(self) -> None: ...
        def open_settings(self, key: str | None = None) -> Any: ...

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        act_new = file_menu.addAction("New chat")
        act_new.triggered.connect(self.new_chat)
        file_menu.addAction(self.act_settings)
        file_menu.addSeparator()
        self.act_quit = file_menu.addAction("Quit")
        self.act_quit.setShortcut(QKeySequence("Ctrl+Q"))
        self.act_quit.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        self.act_quit.triggered.connect(self.close)
        view_menu = bar.addMenu("&View")
        for page in self.pages.values():
            view_menu.addAction(page.action)
        view_menu.addSeparator()
        view_menu.addAction(self.act_conversations)
        view_menu.addAction(self.act_panel)
        self.view_menu = view_menu
        help_menu = bar.addMenu("&Help")
        act_keys = help_menu.addAction("Keyboard shortcuts")
        act_keys.triggered.connect(self.show_shortcuts)

    def _build_shortcuts(self) -> None:
        QShortcut(QKeySequence("Esc"), self, activated=self.stop)
        QShortcut(QKeySequence("Ctrl+N"), self, activated=self.new_chat)
        QShortcut(QKeySequence("Ctrl+K"), self, activated=self.focus_search)
        QShortcut(QKeySequence("Ctrl+,"), self, activated=lambda: self.open_settings())

    def shortcuts_text(self) -> str:
        return "\n".join(f"{key}\t{what}" for key, what in SHORTCUTS)

    def show_shortcuts(self) -> QMessageBox:
        box = QMessageBox(
            QMessageBox.Icon.NoIcon,
            "Keyboard shortcuts",
            "<table>"
            + "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{w}</td></tr>" for k, w in SHORTCUTS)
            + "</table>",
            QMessageBox.StandardButton.Close,
            self,  # type: ignore[arg-type]
        )
        box.setObjectName("shortcutsBox")
        box.open()
        return box
