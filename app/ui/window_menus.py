"""The window's menus and keyboard shortcuts, and the Help list of them (a part of the main window)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMessageBox

from app.storage.history import TRASH_DAYS

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMainWindow

    from app.ui.window_conversations import ConversationsController
    from app.ui.window_pages import Page, PageStack

__all__ = ["SHORTCUTS", "MenusController", "about_facts", "documentation_path"]

#: The keyboard shortcuts the Help menu lists (key, what it does).
SHORTCUTS = (
    ("Enter", "Send the message"),
    ("Shift+Enter", "New line in the message"),
    ("Up", "Edit the last message sent (in the empty message box)"),
    ("Esc", "Stop the reply (in an edit: cancel it)"),
    ("Ctrl+R", "Regenerate the last reply (on the chat page)"),
    ("Ctrl+Shift+;", "Copy the last code block of the replies"),
    ("Ctrl+End", "Go to the latest message (in the chat)"),
    ("Ctrl+N", "New chat"),
    ("Ctrl+Shift+E", "Export the chat (Markdown or JSON)"),
    ("Ctrl+Shift+C", "Copy the chat as Markdown"),
    ("Ctrl+F", "Find in the chat (Enter: next, Shift+Enter: previous, Esc: close)"),
    ("Ctrl+K", "Search conversations"),
    ("Alt+Down / Alt+Up", "Open the next or the previous conversation in the list"),
    ("Enter (in the list)", "Open the chat; on a folder's line: fold or unfold it"),
    ("Left / Right (in the list)", "Fold or unfold the folder; Left from a chat: its folder"),
    ("F2 (in the list)", "Rename the chat or the folder"),
    ("Menu, Shift+F10 (in the list)", "The line's menu"),
    ("Ctrl+click, Shift+click (in the list)", "Choose several chats: move, export or delete them together"),
    ("Ctrl+A, Esc (in the list)", "Choose every chat; leave those chosen"),
    ("Ctrl+Z (in the list)", "Put back the chats just deleted (for 30 seconds)"),
    ("Ctrl+B", "Show or hide the conversation list"),
    ("Ctrl+T", "Show or hide the tool-call panel"),
    ("Ctrl+= / Ctrl+- / Ctrl+0", "Larger, smaller or the usual chat text"),
    ("Ctrl+,", "Settings"),
    ("Ctrl+/", "These keyboard shortcuts"),
    ("Ctrl+Q", "Quit"),
)


def _llama_cpp_build() -> str:
    """The llama.cpp bindings' version (without importing them: read from the installed package)."""
    import sys
    from importlib import metadata

    mod = sys.modules.get("llama_cpp")
    version = vars(mod).get("__version__") if mod is not None else None
    if version is None:
        try:
            version = metadata.version("llama_cpp_python")
        except metadata.PackageNotFoundError:
            return "not installed"
    return f"llama-cpp-python {version}"


def about_facts() -> dict[str, str]:
    """What Help → About says: the version, the llama.cpp build, the data and log folders."""
    from app import __version__
    from app.storage.paths import config_dir, data_dir, log_dir

    return {
        "Version": f"Callisto {__version__}",
        "llama.cpp": _llama_cpp_build(),
        "Data folder": str(data_dir()),
        "Settings folder": str(config_dir()),
        "Log folder": str(log_dir()),
    }


def documentation_path() -> str:
    """The README that came with this copy (the project's documentation), or the docs folder."""
    from app.ui.theme import resources_dir

    root = resources_dir().parent
    for candidate in (root / "README.md", root / "docs"):
        if candidate.exists():
            return str(candidate)
    return str(root)


class MenusController:
    """Owns File, View and Help (``act_quit``, ``view_menu``) and the shortcuts that are no menu
    entry. The View menu lists every page, those registered later too."""

    def __init__(
        self,
        window: QMainWindow,
        *,
        pages: PageStack,
        panel_actions: tuple[QAction, QAction],
        conversations: ConversationsController,
        stop: Callable[[], None],
        open_settings: Callable[[], object],
        regenerate: Callable[[], object],
        copy_code: Callable[[], object],
        text_size: Callable[[int], object],
    ) -> None:
        new_chat, exports = conversations.new_chat, conversations.exports
        self.window = window
        bar = window.menuBar()
        file_menu = bar.addMenu("&File")
        act_new = file_menu.addAction("New chat")
        act_new.triggered.connect(new_chat)
        self.act_export = file_menu.addAction("Export chat…")
        self.act_export.setShortcut(QKeySequence("Ctrl+Shift+E"))
        self.act_export.triggered.connect(lambda: exports.export_conversation())
        self.act_copy_md = file_menu.addAction("Copy chat as Markdown")
        self.act_copy_md.setShortcut(QKeySequence("Ctrl+Shift+C"))
        self.act_copy_md.triggered.connect(lambda: exports.copy_markdown())
        self.act_export_all = file_menu.addAction("Export all chats…")
        self.act_export_all.setToolTip("Every chat as JSON, in a new folder: to keep, or to import elsewhere")
        self.act_export_all.triggered.connect(lambda: exports.export_all())
        self.act_import = file_menu.addAction("Import chats…")
        self.act_import.setToolTip(
            "Chats exported by Callisto, LM Studio's or Jan's chat files, or the chat export of Open WebUI, "
            "ChatGPT or Claude (the zip it came in, or its conversations.json)"
        )
        self.act_import.triggered.connect(lambda: exports.import_conversation())
        self.act_import_lms = file_menu.addAction("Import from LM Studio…")
        self.act_import_lms.setToolTip(
            "Every chat LM Studio keeps, in its folders (LM Studio's files are only read)"
        )
        self.act_import_lms.triggered.connect(lambda: exports.import_lmstudio())
        self.act_import_jan = file_menu.addAction("Import from Jan…")
        self.act_import_jan.setToolTip("Every chat Jan keeps (Jan's files are only read)")
        self.act_import_jan.triggered.connect(lambda: exports.import_jan())
        file_menu.addSeparator()
        self.act_trash = file_menu.addAction("Recently deleted…")
        self.act_trash.setToolTip(
            f"The chats deleted in the last {TRASH_DAYS} days: put them back, or delete them for good"
        )
        self.act_trash.triggered.connect(lambda: conversations.undo.show_trash())
        file_menu.aboutToShow.connect(self._count_trash)
        self._trash_count = conversations.undo.trashed_count
        file_menu.addSeparator()
        file_menu.addAction(pages.act_settings)
        file_menu.addSeparator()
        self.act_quit = file_menu.addAction("Quit")
        self.act_quit.setShortcut(QKeySequence("Ctrl+Q"))
        self.act_quit.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        self.act_quit.triggered.connect(window.close)
        edit_menu = bar.addMenu("&Edit")
        self.act_find = edit_menu.addAction("Find in chat…")
        self.act_find.setShortcut(QKeySequence("Ctrl+F"))
        self.act_find.triggered.connect(lambda: conversations.find_in_chat())
        edit_menu.addSeparator()
        self.act_regenerate = edit_menu.addAction("Regenerate last reply")
        self.act_regenerate.setShortcut(QKeySequence("Ctrl+R"))
        # on the chat page only: on another page (the Models list, say) Ctrl+R must not write
        self.act_regenerate.triggered.connect(
            lambda: regenerate() if pages.current_page() == "chat" else None
        )
        self.act_copy_code = edit_menu.addAction("Copy last code block")
        self.act_copy_code.setShortcut(QKeySequence("Ctrl+Shift+;"))
        self.act_copy_code.triggered.connect(lambda: copy_code())
        self.view_menu = bar.addMenu("&View")
        for page in pages.pages.values():
            self.view_menu.addAction(page.action)
        self._pages_end = self.view_menu.addSeparator()
        for action in panel_actions:  # the conversation list and the tool-call panel
            self.view_menu.addAction(action)
        self.view_menu.addSeparator()
        self.act_larger = self.view_menu.addAction("Larger text")
        self.act_larger.setShortcuts([QKeySequence("Ctrl++"), QKeySequence("Ctrl+=")])
        self.act_larger.triggered.connect(lambda: text_size(1))
        self.act_smaller = self.view_menu.addAction("Smaller text")
        self.act_smaller.setShortcut(QKeySequence("Ctrl+-"))
        self.act_smaller.triggered.connect(lambda: text_size(-1))
        self.act_actual = self.view_menu.addAction("Actual text size")
        self.act_actual.setShortcut(QKeySequence("Ctrl+0"))
        self.act_actual.triggered.connect(lambda: text_size(0))

        pages.sig_page_added.connect(self._on_page_added)
        help_menu = bar.addMenu("&Help")
        self.help_menu = help_menu
        act_keys = help_menu.addAction("Keyboard shortcuts")
        act_keys.setShortcut(QKeySequence("Ctrl+/"))
        act_keys.triggered.connect(self.show_shortcuts)
        #: how a folder or file is opened (the desktop's own program)
        self.open_url: Callable[[QUrl], object] = QDesktopServices.openUrl
        self.act_docs = help_menu.addAction("Documentation")
        self.act_docs.triggered.connect(self.open_documentation)
        self.act_logs = help_menu.addAction("Open log folder")
        self.act_logs.triggered.connect(self.open_log_folder)
        help_menu.addSeparator()
        self.act_about = help_menu.addAction("About Callisto")
        self.act_about.triggered.connect(self.show_about)

        QShortcut(QKeySequence("Esc"), window, stop)
        QShortcut(QKeySequence("Ctrl+N"), window, new_chat)
        QShortcut(QKeySequence("Ctrl+K"), window, conversations.focus_search)
        QShortcut(QKeySequence("Alt+Down"), window, lambda: conversations.step_conversation(1))
        QShortcut(QKeySequence("Alt+Up"), window, lambda: conversations.step_conversation(-1))
        QShortcut(QKeySequence("Ctrl+,"), window, lambda: open_settings())

    def _count_trash(self) -> None:
        """The File menu says how many chats Recently deleted holds ("Recently deleted (3)…")."""
        n = self._trash_count()
        self.act_trash.setText(f"Recently deleted ({n})…" if n else "Recently deleted…")

    def open_log_folder(self) -> None:
        from app.storage.paths import log_dir

        self.open_url(QUrl.fromLocalFile(str(log_dir())))

    def open_documentation(self) -> None:
        self.open_url(QUrl.fromLocalFile(documentation_path()))

    def show_about(self) -> QMessageBox:
        from html import escape

        facts = about_facts()
        box = QMessageBox(
            QMessageBox.Icon.NoIcon,
            "About Callisto",
            "<p><b>Callisto</b>: chat with local models that call tools.</p><table>"
            + "".join(
                f"<tr><td><b>{escape(k)}</b>&nbsp;&nbsp;</td><td>{escape(v)}</td></tr>"
                for k, v in facts.items()
            )
            + "</table>",
            QMessageBox.StandardButton.Close,
            self.window,
        )
        box.setObjectName("aboutBox")
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.open()
        return box

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
        label = box.findChild(QLabel, "qt_msgbox_label")
        if label is not None:  # wide enough that each line's meaning is one line, not three
            label.setMinimumWidth(label.fontMetrics().horizontalAdvance("x") * 90)
        box.open()
        return box
