"""The base of the window's controllers: a child of the window that reads the state the parts
share (:class:`~app.ui.window_state.WindowState`) and talks to the engine worker, and the kit of
the window's shared pieces (:class:`WindowKit`) each part is given, and :func:`each_chat` (one
history write over several chats)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from PySide6.QtWidgets import QDockWidget, QMainWindow

    from app.ui.tasks import BackgroundTasks
    from app.ui.tool_panel import ToolCallPanel
    from app.ui.window_pages import PageStack
    from app.ui.window_settings import Notices
    from app.ui.window_state import WindowState
    from app.ui.window_status import StatusController
    from app.ui.worker import EngineWorker

__all__ = ["WindowKit", "WindowPart", "each_chat"]


def each_chat(ids: Iterable[int], change: Callable[[int], object]) -> Callable[[], None]:
    """One history write over the chats ``ids``: ``change(cid)`` for each, where one failure (a
    chat deleted elsewhere meanwhile) stops none of the others; the first is raised once all are
    done, so the list is shown again once, not once a chat."""

    def write() -> None:
        failure: Exception | None = None
        for cid in ids:
            try:
                change(cid)
            except Exception as exc:  # noqa: BLE001 - raised once all are done
                failure = failure or exc
        if failure is not None:
            raise failure

    return write


@dataclass(frozen=True)
class WindowKit:
    """The pieces of the window its parts share: the window, the state they read, the engine worker,
    the background tasks, the banners, the status bar, the pages, the tool-call panel and its dock."""

    window: QMainWindow
    state: WindowState
    worker: EngineWorker
    tasks: BackgroundTasks
    notices: Notices
    status: StatusController
    pages: PageStack
    tool_panel: ToolCallPanel
    tool_dock: QDockWidget

    def save_settings(self) -> None:
        """Save the settings and tell every part what changed; a failure is a banner (the store's
        ``on_save_error``), never an exception."""
        self.state.store.commit()


class WindowPart(QObject):
    """A controller of the window: the kit's pieces under their names; whatever else it needs comes
    in its own constructor."""

    def __init__(self, kit: WindowKit) -> None:
        super().__init__(kit.window)
        self.window, self.state, self.worker = kit.window, kit.state, kit.worker
        self.tasks, self.notices, self.status, self.pages = kit.tasks, kit.notices, kit.status, kit.pages
        self.tool_panel, self.tool_dock = kit.tool_panel, kit.tool_dock
        self.save_settings = kit.save_settings
