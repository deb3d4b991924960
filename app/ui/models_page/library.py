"""The Models page's Library pane: the local models (metadata, tool format, last check score,
where each comes from), Load now, Delete file, Remove from library, Import GGUF and Add folder; a
model's menu (right-click) with those and Show in folder (the file selected in Explorer or
Finder) and Copy path;
and for vision, a "Vision" badge on a model paired with a projector (an mmproj GGUF) and a
choice of its projector: automatic (the one beside it), none, one of the library's projectors,
or a file."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QProcess, Qt, QUrl
from PySide6.QtGui import QColor, QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QMenu,
    QMessageBox,
    QPushButton,
    QTableWidgetItem,
    QWidget,
)

from app.engine.models.library import LINKED_APPS
from app.ui.models_page._common import load_action
from app.ui.models_page._pane import pane_table
from app.ui.models_page.other_apps import OtherAppsModels
from app.units import format_bytes

if TYPE_CHECKING:
    from app.ui.models_page.page import ModelsPage

__all__ = ["LibraryPane", "reveal_command"]

COLUMNS = [
    "Model",
    "Architecture",
    "Params",
    "Quant",
    "Context",
    "Size",
    "Template",
    "Tools",
    "Source",
    "",
    "",
    "",
    "Vision",
    "Projector",
]
LOAD, DELETE, REMOVE = 9, 10, 11  # the button columns
VISION, PROJECTOR = 12, 13  # the badge of a model with a projector, and the choice of its projector
VISION_COLOR = "#6a1b9a"
#: the projector choices of the Projector column (besides the library's projectors, by path)
AUTO, NONE, FILE = "auto", "none", "file"

#: the sources whose models Remove stops listing (the file stays); those whose files Delete leaves
#: to their own app (the Hugging Face cache's, Ollama's, Jan's)
REMOVABLE, NOT_DELETED_HERE = ("imported", "folder", *LINKED_APPS), ("hf-cache", *LINKED_APPS)

SOURCE_WORDS = {
    "downloaded": "downloaded",
    "imported": "imported",
    "copied": "copied in",
    "uploaded": "sent over the API",
    "folder": "in your folder",
    "hf-cache": "Hugging Face cache",
    "ollama": "Ollama's (linked)",
    "jan": "Jan's (linked)",
}


def reveal_command(path: Path, platform: str = sys.platform) -> tuple[str, list[str]] | None:
    """The program (and its arguments) that shows ``path`` selected in the desktop's file manager:
    Explorer on Windows, Finder on macOS; None elsewhere (the folder is opened instead)."""
    if platform == "win32":
        return "explorer", ["/select,", str(path)]
    if platform == "darwin":
        return "open", ["-R", str(path)]
    return None


def reveal(
    path: Path, open_url: Callable[[QUrl], object] = QDesktopServices.openUrl, platform: str = sys.platform
) -> None:
    """Show ``path`` in the file manager: selected where the desktop can do that, else its folder
    opened. The file manager is the desktop's own program, not a child of Callisto."""
    command = reveal_command(path, platform)
    if command is None or not QProcess.startDetached(command[0], command[1]):
        open_url(QUrl.fromLocalFile(str(path.parent)))


def _check_score(model: Any) -> str:
    """The model's last "Will it call?" score (``check 9/63``), or "" when it was never checked."""
    from app.check.scores import score_label

    try:
        return score_label(model.path.name, model.size)
    except Exception:  # noqa: BLE001 - a damaged scores file must not hide the library
        return ""


def _cells(m: Any) -> list[str]:
    from app.engine.models.metadata import format_parameter_count

    s = m.summary
    return [
        m.name,
        s.architecture if s else "",
        format_parameter_count(s.parameter_count) if s and s.parameter_count else "",
        (s.quantization or "") if s else "",
        str(s.context_length or "") if s else "",
        format_bytes(m.size),
        ("yes" if s.has_chat_template else "no") if s else "",
        " · ".join(x for x in (s.tool_format if s else "", _check_score(m)) if x),
        SOURCE_WORDS.get(m.source, m.source),
    ]


class LibraryPane(QWidget):
    """The local library as a table with its buttons; narrow windows hide secondary columns."""

    # the columns a narrow window leaves out first (the name and the buttons always stay)
    SECONDARY_COLUMNS = (6, 4, PROJECTOR, 1, 8, 2, 7, 3, VISION, 5)
    NAME_MIN_WIDTH = 200

    def __init__(self, page: ModelsPage) -> None:
        super().__init__()
        self.page = page
        self.models: list[Any] = []  # the library as last scanned
        self.projectors: list[Any] = []  # the projector (mmproj) files it has, as last scanned
        self.import_button = QPushButton("Import GGUF…")
        self.import_button.clicked.connect(self._import_dialog)
        self.folder_button = QPushButton("Add folder…")
        self.folder_button.clicked.connect(self._folder_dialog)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(page.refresh_library)
        self.others = OtherAppsModels(self)  # LM Studio's and Ollama's models, offered
        buttons = [self.import_button, self.folder_button, *self.others.buttons, self.refresh_button]
        self.table = pane_table(self, "Library", buttons, COLUMNS)
        self.table.setObjectName("libraryTable")
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._on_menu)
        #: how a file is shown in the file manager (``reveal``; tests give their own)
        self.reveal: Callable[[Path], None] = reveal

    def resizeEvent(self, e: Any) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(e)
        self.fit_columns()

    def fit_columns(self) -> None:
        """Hide secondary columns until the name column has room: it is never squeezed to "Sm…"."""
        t = self.table
        header = t.horizontalHeader()

        def width(i: int) -> int:
            return max(t.sizeHintForColumn(i), header.sectionSizeHint(i))

        shown = set(range(1, t.columnCount()))
        for c in (None, *self.SECONDARY_COLUMNS):
            if c is not None:
                shown.discard(c)
            if t.viewport().width() - sum(width(i) for i in shown) >= self.NAME_MIN_WIDTH:
                break
        for i in range(1, t.columnCount()):
            t.setColumnHidden(i, i not in shown)

    def on_failed(self, message: str) -> None:
        self.page.show_status(message, error=True)
        self.page.sig_library_done.emit()

    def show_scan(self, scan: tuple[list[Any], list[Any]]) -> None:
        """Show a scan: (the chat models, the projectors)."""
        self.models, self.projectors = scan[0], scan[1]
        self.show_models(scan[0])

    def show_models(self, models: list[Any], *, quiet: bool = False) -> None:
        """Fill the table; unless ``quiet``, the other panes follow (Download becomes Load now)."""
        from app.ui.icons import icon

        self.models = models
        t = self.table
        t.setRowCount(len(models))
        for i, m in enumerate(models):
            items = [QTableWidgetItem(text) for text in _cells(m)]
            for col, item in enumerate(items):
                item.setToolTip(m.error or str(m.path))
                t.setItem(i, col, item)
            if m.error:  # an icon and a tooltip on the name, never text that widens a column
                items[0].setIcon(icon("error"))
                items[0].setToolTip(f"{m.path}\n{m.error}")
            self._buttons(i, m)
            self._vision(i, m)
        self.fit_columns()
        self.others.offer()
        if not quiet:
            self.page.models_changed()
        self.page.sig_library_done.emit()

    def _buttons(self, i: int, m: Any) -> None:
        t = self.table
        text, can_load, tip = load_action(self.page, m)
        load = QPushButton(text)
        load.setEnabled(m.usable and can_load)
        load.setToolTip(m.error or tip)
        load.clicked.connect(lambda _c=False, p=str(m.path): self.page.sig_load_requested.emit(p))
        delete = QPushButton("Delete file")
        delete.setEnabled(m.source not in NOT_DELETED_HERE)
        delete.clicked.connect(lambda _c=False, m=m: self.delete_model(m))
        t.setCellWidget(i, LOAD, load)
        t.setCellWidget(i, DELETE, delete)
        if m.source in REMOVABLE:
            remove = QPushButton("Remove")
            remove.setToolTip("Remove from library: Callisto stops listing it; the file stays where it is.")
            remove.clicked.connect(lambda _c=False, m=m: self.remove_model(m))
            t.setCellWidget(i, REMOVE, remove)
        else:
            t.removeCellWidget(i, REMOVE)

    # -- a model's menu -------------------------------------------------------------------------
    def _on_menu(self, pos: Any) -> None:
        row = self.table.rowAt(pos.y())
        if not 0 <= row < len(self.models):
            return
        self.table.selectRow(row)
        menu = QMenu(self)
        self.fill_menu(menu, self.models[row])
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def fill_menu(self, menu: QMenu, m: Any) -> None:
        """The actions of model ``m``'s menu: Load now, Show in folder, Copy path, then Remove from
        library (a file added where it is) and Delete file…, each enabled as its button is."""
        text, can_load, _tip = load_action(self.page, m)
        load = menu.addAction(text)
        load.setEnabled(m.usable and can_load)
        load.triggered.connect(lambda: self.page.sig_load_requested.emit(str(m.path)))
        menu.addAction("Show in folder", lambda: self.reveal(Path(m.path)))
        menu.addAction("Copy path", lambda: self._copy_path(m))
        menu.addSeparator()
        if m.source in REMOVABLE:
            menu.addAction("Remove from library", lambda: self.remove_model(m))
        delete = menu.addAction("Delete file…")
        delete.setEnabled(m.source not in NOT_DELETED_HERE)
        delete.triggered.connect(lambda: self.delete_model(m))

    def _copy_path(self, m: Any) -> None:
        QGuiApplication.clipboard().setText(str(m.path))
        self.page.show_status(f"Copied the path of {m.name}: {m.path}")

    # -- vision: the badge and the projector choice -----------------------------------------------
    def _vision(self, i: int, m: Any) -> None:
        t = self.table
        if m.vision:
            badge = QTableWidgetItem("Vision")
            badge.setForeground(QColor("white"))
            badge.setBackground(QColor(VISION_COLOR))
            how = "you chose" if m.projector_source == "chosen" else "beside the model"
            badge.setToolTip(f"Reads images with the projector {m.projector} ({how}).")
        else:
            badge = QTableWidgetItem("")
        t.setItem(i, VISION, badge)
        t.setCellWidget(i, PROJECTOR, self._projector_combo(m))

    def _projector_combo(self, m: Any) -> QComboBox:
        """Automatic / None / each projector of the library / Choose file…, the current one selected."""
        combo = QComboBox()
        combo.setObjectName("projectorChoice")
        beside = m.projector if m.projector_source == "beside" else None
        combo.addItem(f"Beside it: {beside.name}" if beside else "Automatic", AUTO)
        combo.setItemData(
            0, "The mmproj file beside the model, if there is one.", Qt.ItemDataRole.ToolTipRole
        )
        combo.addItem("None (text only)", NONE)
        paths = [str(p.path) for p in self.projectors if p.usable]
        if m.projector_source == "chosen" and str(m.projector) not in paths:
            paths.append(str(m.projector))
        for path in paths:
            combo.addItem(Path(path).name, path)
            combo.setItemData(combo.count() - 1, path, Qt.ItemDataRole.ToolTipRole)
        combo.addItem("Choose file…", FILE)
        current = {"chosen": str(m.projector), "none": NONE}.get(m.projector_source, AUTO)
        combo.setCurrentIndex(max(0, combo.findData(current)))
        combo.setEnabled(m.usable)
        combo.setToolTip("The projector (mmproj) this model reads images with.")
        combo.activated.connect(lambda index, m=m, c=combo: self._on_projector_chosen(m, c.itemData(index)))
        return combo

    def _on_projector_chosen(self, model: Any, choice: str) -> None:
        if choice == FILE:
            path, _ = QFileDialog.getOpenFileName(
                self,
                f"Choose the projector of {model.name}",
                str(model.path.parent),
                "GGUF projectors (*.gguf)",
            )
            if not path:
                self.show_models(self.models, quiet=True)  # back to the current choice
                return
            choice = path
        self.choose_projector(model, choice)

    def choose_projector(self, model: Any, choice: str | Path) -> None:
        """Pair ``model`` with a projector: ``"auto"`` (the one beside it), ``"none"``, or a file."""
        page = self.page
        lib = page.manager.library
        try:
            if choice == AUTO:
                lib.reset_projector(model.path)
                text = f"{model.name} uses the projector beside it, if any."
            elif choice == NONE:
                lib.set_projector(model.path, None)
                text = f"{model.name} is text only now (no projector)."
            else:
                lib.set_projector(model.path, choice)
                text = f"{model.name} reads images with {Path(choice).name}."
        except Exception as exc:  # noqa: BLE001 - LibraryError: not a projector, missing file
            page.show_status(str(exc), error=True)
            self.show_models(self.models, quiet=True)
            return
        page.show_status(text + (" Load it again to use it." if page.is_loaded(model) else ""))
        page.refresh_library()

    def projector_choice(self, row: int) -> QComboBox:
        return cast(QComboBox, self.table.cellWidget(row, PROJECTOR))

    def row(self, name: str) -> int:
        for i, m in enumerate(self.models):
            if m.name == name or m.path.name == name:
                return i
        raise KeyError(name)

    def button(self, row: int, column: int) -> QPushButton | None:
        """The Load / Delete / Remove button of ``row`` (None where the row has none)."""
        return cast(QPushButton | None, self.table.cellWidget(row, column))

    def remove_model(self, model: Any) -> None:
        """Stop listing a model (an import, the added folder it is in, or the links to one of
        Ollama's or Jan's); no model file is touched."""
        page = self.page
        lib = page.manager.library
        if model.source == "folder":
            folder = next((f for f in lib.folders() if Path(f) in Path(model.path).parents), None)
            if folder is None:
                return
            if not page.confirm(
                "Remove folder from library",
                f"{model.name} is in the folder {folder}, which you added. Stop listing every "
                "model in that folder? No file is deleted.",
            ):
                return
            lib.remove_folder(folder)
        elif model.source in LINKED_APPS:
            try:
                lib.unlink_linked(model)
            except Exception as exc:  # noqa: BLE001 - LibraryError: said
                page.show_status(str(exc), error=True)
                return
            page.show_status(
                f"Removed {model.name} from the library; {LINKED_APPS[model.source]} still has it."
            )
            page.refresh_library()
            return
        else:
            lib.forget(model.path)
        page.show_status(f"Removed {model.name} from the library; the file is still at {model.path}.")
        page.refresh_library()

    def delete_model(self, model: Any) -> None:
        page = self.page
        owned = model.deletable_without_confirmation
        text = (
            f"Delete {model.name} ({format_bytes(model.size)}) from disk?"
            if owned
            else f"Callisto did not download {model.name}. Delete your file {model.path} from disk? "
            "(Remove from library keeps the file.)"
        )
        if page.is_loaded(model):
            text = f"{model.name} is the model the chat uses now. " + text
        if not page.confirm("Delete model", text):
            return
        try:
            page.manager.library.delete(model, confirm_foreign=not owned)
        except Exception as exc:  # noqa: BLE001
            page.show_status(str(exc), error=True)
            return
        page.show_status(f"Deleted {model.name}.")
        page.refresh_library()

    def import_file(self, path: str | Path, *, copy: bool = False) -> None:
        page = self.page
        lib = page.manager.library

        def run() -> Any:
            return lib.import_copy(path) if copy else lib.import_in_place(path)

        def ok(model: Any) -> None:
            if model.is_projector:  # a projector is chosen for a model, never loaded as one
                page.show_status(
                    f"Imported the projector {model.name}: choose it in a model's Projector column."
                )
                page.refresh_library()
                return
            page.show_status(f"Imported {model.name}.")
            page.refresh_library()
            page.sig_imported.emit(str(model.path))

        page.background(run, ok, self.on_failed)

    def _import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a GGUF model", "", "GGUF models (*.gguf)")
        if path:
            box = QMessageBox(
                QMessageBox.Icon.Question,
                "Import a model",
                f"Use {Path(path).name} where it is, or copy it into Callisto's models folder?",
                QMessageBox.StandardButton.Cancel,
                self,
            )
            in_place = box.addButton("Use it where it is", QMessageBox.ButtonRole.AcceptRole)
            copy = box.addButton("Copy it", QMessageBox.ButtonRole.AcceptRole)
            box.setDefaultButton(in_place)
            box.exec()
            if box.clickedButton() in (in_place, copy):
                self.import_file(path, copy=box.clickedButton() is copy)

    def _folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of models")
        if folder:
            try:
                self.page.manager.library.add_folder(folder)
            except Exception as exc:  # noqa: BLE001
                self.page.show_status(str(exc), error=True)
                return
            self.page.refresh_library()
