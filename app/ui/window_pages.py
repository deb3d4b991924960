"""The window's pages: the sidebar of page entries and the stack that shows one (a part of the
main window).

A page is registered with :meth:`PageStack.add_page` (key, title, factory): the sidebar gets a
checkable entry (before Settings) that shows which page is active, and the page's widget is built
the first time it is shown. :class:`WorkPages` registers and builds the Models, Server and Check
pages; the chat page is :mod:`app.ui.window_chat`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QLabel, QStackedWidget, QToolBar, QWidget

from app.ui.icons import icon

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDockWidget, QMainWindow

    from app.ui.model_bar import ModelBar
    from app.ui.window_part import WindowKit

__all__ = ["Page", "PageStack", "WorkPages"]


@dataclass
class Page:
    """A page of the window: built by ``factory`` the first time it is shown."""

    key: str
    title: str
    factory: Callable[[], QWidget]
    action: QAction
    widget: QWidget | None = None
    tool_panel: bool = False  # the tool-call panel belongs beside this page


class PageStack(QObject):
    """Owns the sidebar, its Settings entry (``act_settings``), the page stack and the registered
    pages; hides the tool-call panel beside pages other than the chat and gives it back after."""

    sig_page_changed = Signal(str)  # the key of the page now shown
    sig_page_added = Signal(object)  # a Page registered (the View menu lists it)

    def __init__(
        self, window: QMainWindow, *, tool_dock: QDockWidget, open_settings: Callable[[], object]
    ) -> None:
        super().__init__(window)
        self.window = window
        self.tool_dock = tool_dock
        self.pages: dict[str, Page] = {}
        self._panel_hidden_for_page = False
        self.sidebar = QToolBar("Pages")
        self.sidebar.setObjectName("sidebar")
        self.sidebar.setMovable(False)
        self.sidebar.setIconSize(QSize(22, 22))
        self.sidebar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextUnderIcon)
        window.addToolBar(Qt.ToolBarArea.LeftToolBarArea, self.sidebar)
        self._page_group = QActionGroup(window)
        self._page_group.setExclusive(True)
        self.act_settings = QAction(icon("settings"), "Settings", window)
        self.act_settings.setToolTip("Settings (Ctrl+,)")
        self.act_settings.triggered.connect(lambda: open_settings())
        self.stack = QStackedWidget()
        self.stack.setMinimumWidth(340)  # with the conversations and the tool panel, 800 px still fit (U17)
        self.sidebar.addSeparator()
        self.sidebar.addAction(self.act_settings)
        tool_dock.toggleViewAction().toggled.connect(self._on_panel_toggled)

    def add_page(
        self,
        key: str,
        title: str,
        factory: Callable[[], QWidget],
        *,
        tooltip: str = "",
        icon_name: str | None = None,
        tool_panel: bool = False,
    ) -> Page:
        """Register a page: a checkable sidebar entry (before Settings) and, when first shown, the widget
        ``factory()`` builds. Other modules (Server, Check...) register theirs the same way."""
        if key in self.pages:
            raise ValueError(f"a page named {key!r} is already registered")
        act = QAction(icon(icon_name or key), title, self.window)
        act.setCheckable(True)
        act.setToolTip(tooltip or title)
        act.triggered.connect(lambda _on=False, k=key: self.show_page(k))
        self._page_group.addAction(act)
        actions = self.sidebar.actions()
        self.sidebar.insertAction(actions[actions.index(self.act_settings) - 1], act)  # before the separator
        page = Page(key, title, factory, act, tool_panel=tool_panel)
        self.pages[key] = page
        self.sig_page_added.emit(page)
        return page

    def page_widget(self, key: str) -> QWidget:
        page = self.pages[key]
        if page.widget is None:
            try:
                widget = page.factory()
            except Exception as exc:  # noqa: BLE001 - a page that cannot be built must not break the window
                widget = QLabel(f"The {page.title} page could not be opened: {exc}")
                widget.setAlignment(Qt.AlignmentFlag.AlignCenter)
                widget.setWordWrap(True)
            page.widget = widget
            if self.stack.indexOf(widget) < 0:
                self.stack.addWidget(widget)
        return page.widget

    def show_page(self, key: str) -> QWidget:
        widget = self.page_widget(key)
        self.stack.setCurrentWidget(widget)
        page = self.pages[key]
        page.action.setChecked(True)
        # the tool-call panel belongs beside the chat: other pages get the room, the chat gets it back
        if not page.tool_panel and self.tool_dock.isVisible():
            self._panel_hidden_for_page = True
            self.tool_dock.setVisible(False)
        elif page.tool_panel and self._panel_hidden_for_page:
            self._panel_hidden_for_page = False
            self.tool_dock.setVisible(True)
        self.sig_page_changed.emit(key)
        return widget

    def current_page(self) -> str:
        for key, page in self.pages.items():
            if page.widget is not None and self.stack.currentWidget() is page.widget:
                return key
        return "chat"

    def show_chat_page(self) -> None:
        self.show_page("chat")

    def show_models_page(self) -> None:
        self.show_page("models")

    def _on_panel_toggled(self, _on: bool) -> None:
        chat = self.pages.get("chat")
        if chat is not None and chat.widget is self.stack.currentWidget():
            self._panel_hidden_for_page = False

    def built_page(self, key: str) -> QWidget | None:
        """The page's widget if it was built already (None: never shown, or no such page)."""
        page = self.pages.get(key)
        return page.widget if page is not None else None

    def models_page(self) -> QWidget:
        return self.page_widget("models")


class WorkPages:
    """Registers the Models, Server and Check pages, builds each the first time it is shown with
    what it shares with the window (the model library, the engine host, the settings), and shuts
    them down with the window (downloads paused, the API server stopped)."""

    def __init__(self, kit: WindowKit, *, model_bar: ModelBar) -> None:
        self.pages = pages = kit.pages
        self.state, self.worker, self.status = kit.state, kit.worker, kit.status
        self.model_bar = model_bar
        pages.add_page("models", "Models", self._build_models_page, tooltip="Find, download and load models")
        pages.add_page(
            "server",
            "Server",
            self._build_server_page,
            tooltip="Serve the OpenAI, Anthropic, Ollama and llama-server APIs to other programs",
        )
        pages.add_page(
            "check",
            "Check",
            self._build_check_page,
            tooltip="Will it call? Check how well a model or an endpoint calls tools",
        )
        if self.state.settings.server.enabled:  # it was on when the window last closed: it starts again
            pages.page_widget("server")

    def _build_models_page(self) -> QWidget:
        from app.ui.models_page import ModelsPage

        page = ModelsPage(self.model_bar.model_manager)  # the window's one library, seen by the picker too
        page.setObjectName("modelsPage")
        page.sig_load_requested.connect(self._on_models_page_load_requested)
        # a finished download, an import, a deletion or a new folder: the picker follows
        page.sig_library_done.connect(self.model_bar.refresh_model_library)
        page.sig_downloads.connect(self.status.show_downloads)
        page.sig_imported.connect(self._on_imported)

        def follow() -> None:  # Loaded and Loading… on the page follow the picker's load
            info = self.state.model_info
            page.set_loaded_path(info.path if info else None, self.state.loading_path)

        follow()
        self.model_bar.sig_state_changed.connect(follow)  # a load began, ended (the model ready) or failed
        return page

    def _build_server_page(self) -> QWidget:
        from app.ui.server_page import ServerPage

        return ServerPage(
            self.state.store,  # the one store: the page reads and changes the settings there, and hears
            model_path=self.local_model_path,
            host=self.worker.host,  # one engine: the server's requests and the chat share its queue
            library=self.model_bar.library,  # one Library object over the manifest
        )

    def _build_check_page(self) -> QWidget:
        from app.ui.check_page import CheckPage

        page = CheckPage(
            model_path=self.local_model_path,
            host=self.worker.host,
            chat_format=lambda: self.state.settings.chat.tool_format,  # U20: the chat's format by default
        )
        unsubscribe = self.state.store.subscribe(lambda _sections: page.follow_chat_format())
        page.destroyed.connect(lambda *_: unsubscribe())
        return page

    def local_model_path(self) -> str | None:
        """The loaded model's file (None for a remote engine's model: it is not a file here)."""
        info = self.state.model_info
        return str(info.path) if info is not None and info.remote is None else None

    def _on_imported(self, path: str) -> None:
        """A model imported while the chat has none loads (U4); with one, the person picks it."""
        if self.state.model_info is None and self.state.loading_path is None and not self.state.shut:
            self.model_bar.load_model(path)

    def _on_models_page_load_requested(self, path: str) -> None:
        """A Load (a file) or Chat (a made model: its picker key) on the Models page."""
        from app.ui.made_models import parse_made_key

        self.pages.show_chat_page()
        made = parse_made_key(path)
        if made is not None:
            self.model_bar.load_made(made)
        else:
            self.model_bar.load_model(path)

    def confirm_quit(self) -> bool:
        """False when the person keeps the window open (asked while a download runs)."""
        page = self.pages.built_page("models")
        if page is None:  # never opened: no download can run
            return True
        from app.ui.models_page import ModelsPage

        return not isinstance(page, ModelsPage) or page.confirm_quit()

    def shutdown(self) -> None:
        """Running downloads are paused (kept for next time); the API server stops with the window."""
        models, server = self.pages.built_page("models"), self.pages.built_page("server")
        if models is not None:
            from app.ui.models_page import ModelsPage

            if isinstance(models, ModelsPage):
                models.shutdown()
        if server is not None:
            from app.ui.server_page import ServerPage

            if isinstance(server, ServerPage):
                server.shutdown()
