"""The Models page's pane of the models made over the API (Ollama's ``/api/create`` and
``/api/copy``: ``app.server.PresetStore``, kept in the data folder): each one's name, the model
file it is made from, its system prompt and parameters, Chat (the window chats with it:
``app.ui.made_models``) and Delete (the made model only: its file stays). The pane shows while there are made models (or their file cannot be read)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QPushButton, QTableWidgetItem, QWidget

from app.ui.made_models import made_key
from app.ui.models_page._pane import pane_table

if TYPE_CHECKING:
    from app.ui.models_page.page import ModelsPage

__all__ = ["CHAT", "DELETE", "MadePane", "read_made"]

COLUMNS = ["Model", "Made from", "System prompt", "Parameters", "", ""]
CHAT, DELETE = 4, 5


def _store() -> Any:
    from app.server import PresetStore, default_presets_path

    return PresetStore(default_presets_path())


def read_made() -> tuple[list[Any], str | None]:
    """(the made models, why their file cannot be read or None), read off the UI thread."""
    store = _store()
    return store.all(), store.problem


def _parameters(parameters: dict[str, Any]) -> str:
    return " · ".join(
        f"{k} {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in parameters.items()
    )


class MadePane(QWidget):
    """The made models as a table with a Delete button a row."""

    def __init__(self, page: ModelsPage) -> None:
        super().__init__()
        self.page = page
        self.made: list[Any] = []
        self.table = pane_table(self, "Made over the API", [], COLUMNS)
        self.table.setObjectName("madeTable")
        self.table.setToolTip(
            "Models a client made with Ollama's /api/create or /api/copy: a name over a model file "
            "with its own system prompt, template and parameters, which every API applies"
        )
        self.setVisible(False)

    def refresh(self) -> None:
        """Read the made models again, off the UI thread (a server may have made or deleted some)."""
        self.page.background(read_made, self.show_made, self.page.library.on_failed)

    def show_made(self, result: tuple[list[Any], str | None]) -> None:
        made, problem = result
        self.made = made
        t = self.table
        t.setRowCount(len(made))
        for i, p in enumerate(made):
            system = (p.system or "").strip()
            cells = [
                p.name,
                Path(p.base).name,
                system.splitlines()[0] if system else "",
                _parameters(p.parameters),
            ]
            tips = [p.name, p.base, system, _parameters(p.parameters).replace(" · ", "\n")]
            for col, (text, tip) in enumerate(zip(cells, tips, strict=True)):
                item = QTableWidgetItem(text)
                item.setToolTip(tip)
                t.setItem(i, col, item)
            chat = QPushButton("Chat")
            there = Path(p.base).is_file()
            chat.setEnabled(there)
            chat.setToolTip(
                f"Chat with {p.name}: {Path(p.base).name} with what it sets"
                if there
                else f"Its model file is gone: {p.base}"
            )
            chat.clicked.connect(
                lambda _=False, name=p.name: self.page.sig_load_requested.emit(made_key(name))
            )
            t.setCellWidget(i, CHAT, chat)
            delete = QPushButton("Delete")
            delete.setToolTip(f"Delete the made model {p.name} (its file, {Path(p.base).name}, stays)")
            delete.clicked.connect(lambda _=False, name=p.name, base=p.base: self.delete(name, base))
            t.setCellWidget(i, DELETE, delete)
        t.resizeColumnsToContents()
        self.setVisible(bool(made) or problem is not None)
        if problem is not None:
            self.page.show_status(problem, error=True)

    def button(self, name: str, column: int = DELETE) -> QPushButton:
        """The Delete (or ``CHAT``: Chat) button of the made model ``name``."""
        row = next(i for i, p in enumerate(self.made) if p.name == name)
        widget = self.table.cellWidget(row, column)
        assert isinstance(widget, QPushButton)
        return widget

    def delete(self, name: str, base: str) -> None:
        if not self.page.confirm(
            "Delete the made model?",
            f"Delete {name}? Clients can no longer ask for it. Its model file, {Path(base).name}, stays.",
        ):
            return

        def done(_result: Any) -> None:
            self.page.show_status(f"Deleted the made model {name}.")
            self.refresh()

        def failed(message: str) -> None:
            self.page.show_status(f"{name} could not be deleted: {message}", error=True)

        self.page.background(lambda: _store().delete(name), done, failed)
