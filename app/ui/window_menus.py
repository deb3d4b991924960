"""The window's menus and keyboard shortcuts, and the Help list of them (a part of the main window)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QMessageBox

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMainWindow

    from app.ui.window_pages import Page, PageStack

__all__ = ["SHORTCUTS", "MenusController"]

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


class MenusController:
    """Owns File, View and Help (``act_quit``, ``view_menu``) and the shortcuts that are no menu
    entry. The View menu lists every page, those registered later too."""

    def __init__(
        self,
        window: QMainWindow,
        *,
        pages: PageStack,
        panel_actions: tuple[QAction, QAction],
        new_chat: Callable[[], None],
        stop: Callable[[], None],
        focus_search: Callable[[], None],
        open_settings: Callable[[], object],
    ) -> None:
        self.window = window
        bar = window.menuBar()
        file_menu = bar.addMenu("&File")
        act_new = file_menu.addAction("New chat")
        act_new.triggered.connect(new_chat)
        file_menu.addAction(pages.act_settings)
        file_menu.addSeparator()
        self.act_quit = file_menu.addAction("Quit")
        self.act_quit.setShortcut(QKeySequence("Ctrl+Q"))
        self.act_quit.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        self.act_quit.triggered.connect(window.close)
        self.view_menu = bar.addMenu("&View")
        for page in pages.pages.values():
            self.view_menu.addAction(page.action)
        self._pages_end = self.view_menu.addSeparator()
        for action in panel_actions:  # the conversation list and the tool-call panel
            self.view_menu.addAction(action)
        pages.sig_page_added.connect(self._on_page_added)
        help_menu = bar.addMenu("&Help")
        act_keys = help_menu.addAction("Keyboard shortcuts")
        act_keys.triggered.connect(self.show_shortcuts)

        QShortcut(QKeySequence("Esc"), window, stop)
        QShortcut(QKeySequence("Ctrl+N"), window, new_chat)
        QShortcut(QKeySequence("Ctrl+K"), window, focus_search)
        QShortcut(QKeySequence("Ctrl+,"), window, lambda: open_settings())

    def _on_page_added(self, page: Page) -> None:
        self.view_menu.insertAction(self._pages_end, page.action)

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
            self.window,
        )
        box.setObjectName("shortcutsBox")
        box.open()
        return box
