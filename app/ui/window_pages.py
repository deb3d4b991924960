"""The window's pages: the sidebar of page entries and the stack that shows one (a part of MainWindow).

A page is registered with :meth:`PagesMixin.add_page` (key, title, factory): the sidebar gets a
checkable entry (before Settings) that shows which page is active, and the page's widget is built
the first time it is shown. The Models, Server and Check pages are built here; the chat page by
:mod:`app.ui.window_chat`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QLabel, QStackedWidget, QToolBar, QWidget

from app.ui.icons import icon

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDockWidget, QMenu

    from app.engine.models.manager import ModelManager
    from app.ui.worker import EngineWorker, ModelInfo

__all__ = ["Page", "PagesMixin"]


@dataclass
class Page:
    """A page of the window: built by ``factory`` the first time it is shown."""

    key: str
    title: str
    factory: Callable[[], QWidget]
    action: QAction
    widget: QWidget | None = None
    tool_panel: bool = False  # the tool-call panel belongs beside this page


class PagesMixin:
    """The sidebar, the page stack and the pages other than the chat; mixed into the main window."""

    settings: Any
    worker: EngineWorker
    model_info: ModelInfo | None
    pages: dict[str, Page]
    sidebar: QToolBar
    stack: QStackedWidget
    tool_dock: QDockWidget
    act_settings: QAction
    view_menu: QMenu | None
    _page_group: QActionGroup
    _panel_hidden_for_page: bool

    if TYPE_CHECKING:  # provided by the window (other parts, QMainWindow)
        sig_page_changed: Any
        sig_model_ready: Any

        @property
        def model_manager(self) -> ModelManager: ...
        def addToolBar(self, *args: Any) -> None: ...  # noqa: N802
        def open_settings(self, key: str | None = None) -> Any: ...
        def load_model(self, path: str) -> None: ...
        def refresh_model_library(self) -> None: ...
        def _on_downloads(self, running: int, fraction: float) -> None: ...
        def _save_settings_quietly(self) -> None: ...

    def _build_sidebar(self, chat_page: QWidget) -> None:
        """The left sidebar: one checkable entry per page (the active one is marked), then Settings."""
        self.sidebar = QToolBar("Pages")
        self.sidebar.setObjectName("sidebar")
        self.sidebar.setMovable(False)
        self.sidebar.setIconSize(QSize(22, 22))
        self.sidebar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextUnderIcon)
        self.addToolBar(Qt.ToolBarArea.LeftToolBarArea, self.sidebar)
        self._page_group = QActionGroup(self)
        self._page_group.setExclusive(True)
        self.act_settings = QAction(icon("settings"), "Settings", self)
        self.act_settings.setToolTip("Settings (Ctrl+,)")
        self.act_settings.triggered.connect(lambda: self.open_settings())
        self.stack = QStackedWidget()
        self.stack.setMinimumWidth(360)

        self.add_page(
            "chat", "Chat", lambda: chat_page, tooltip="Chat with the loaded model", tool_panel=True
        )
        self.add_page("models", "Models", self._build_models_page, tooltip="Find, download and load models")
        self.add_page(
            "server",
            "Server",
            self._build_server_page,
            tooltip="Serve the OpenAI, Anthropic and Ollama APIs to other programs",
        )
        self.add_page(
            "check",
            "Check",
            self._build_check_page,
            tooltip="Will it call? Check how well a model or an endpoint calls tools",
        )
        if self.settings.server.enabled:  # it was on when the window last closed: it starts again
            self.page_widget("server")
        self.sidebar.addSeparator()
        self.sidebar.addAction(self.act_settings)

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
        act = QAction(icon(icon_name or key), title, self)
        act.setCheckable(True)
        act.setToolTip(tooltip or title)
        act.triggered.connect(lambda _on=False, k=key: self.show_page(k))
        self._page_group.addAction(act)
        before = self.act_settings if self.act_settings in self.sidebar.actions() else None
        if before is not None:
            sep = self.sidebar.actions()[self.sidebar.actions().index(before) - 1]
            self.sidebar.insertAction(sep, act)
        else:
            self.sidebar.addAction(act)
        page = Page(key, title, factory, act, tool_panel=tool_panel)
        self.pages[key] = page
        if self.view_menu is not None:
            self.view_menu.insertAction(self.view_menu.actions()[len(self.pages) - 1], act)
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
        if self.pages["chat"].widget is self.stack.currentWidget():
            self._panel_hidden_for_page = False

    @property
    def act_chat(self) -> QAction:
        return self.pages["chat"].action

    @property
    def act_models(self) -> QAction:
        return self.pages["models"].action

    def built_page(self, key: str) -> QWidget | None:
        """The page's widget if it was built already (None: never shown, or no such page)."""
        page = self.pages.get(key)
        return page.widget if page is not None else None

    def models_page(self) -> QWidget:
        return self.page_widget("models")

    # -- the pages ------------------------------------------------------------------------------------
    def _build_models_page(self) -> QWidget:
        from app.ui.models_page import ModelsPage

        page = ModelsPage(self.model_manager)  # the window's one library, seen by the picker too
        page.setObjectName("modelsPage")
        page.sig_load_requested.connect(self._on_models_page_load_requested)
        # a finished download, an import, a deletion or a new folder: the picker follows
        page.sig_library_done.connect(self.refresh_model_library)
        page.sig_downloads.connect(self._on_downloads)
        page.set_loaded_path(self.model_info.path if self.model_info else None)
        self.sig_model_ready.connect(lambda info: page.set_loaded_path(info.path))
        return page

    def _build_server_page(self) -> QWidget:
        from app.ui.server_page import ServerPage

        return ServerPage(
            self.settings,
            model_path=self._local_model_path,
            save=self._save_settings_quietly,
            host=self.worker.host,  # one engine: the server's requests and the chat share its queue
            library=self.library,  # one Library object over the manifest
        )

    def _build_check_page(self) -> QWidget:
        from app.ui.check_page import CheckPage

        return CheckPage(model_path=self._local_model_path, host=self.worker.host)

    def _local_model_path(self) -> str | None:
        """The loaded model's file (None for a remote engine's model: it is not a file here)."""
        info = self.model_info
        return str(info.path) if info is not None and info.remote is None else None

    def _on_models_page_load_requested(self, path: str) -> None:
        self.show_chat_page()
        self.load_model(path)

    def _shutdown_pages(self) -> None:
        """Running downloads are paused (kept for next time); the API server stops with the window."""
        models, server = self.built_page("models"), self.built_page("server")
        if models is not None:
            from app.ui.models_page import ModelsPage

            if isinstance(models, ModelsPage):
                models.shutdown()
        if server is not None:
            from app.ui.server_page import ServerPage

            if isinstance(server, ServerPage):
                server.shutdown()
