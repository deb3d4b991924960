"""The text files of the message being written (a part of the main window): the File… button, a
drop of text files anywhere on the window (``window_drops`` hands them over), the chips under the
message box, and at Send their text put in the message (``app.storage.attached_files``). Files are
read off the UI thread; what cannot be attached (too large, not text) is said in the status bar."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QFileDialog

from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from app.storage.attached_files import AttachedFile
    from app.ui.window_chat_page import ChatPage

__all__ = ["FilesController"]

STATUS_MS = 10_000


class FilesController(WindowPart):
    """Owns the text files attached to the message being written (``pending``) and the File… button."""

    def __init__(self, kit: WindowKit, *, page: ChatPage) -> None:
        super().__init__(kit)
        assert page.pending_files is not None and page.file_button is not None
        self.pending = page.pending_files
        self.button = page.file_button
        self.compose = page.compose
        self.button.clicked.connect(self.choose_files)
        self.dialog: Any = None  # the open file dialog, if any

    def choose_files(self) -> None:
        dlg = QFileDialog(self.window, "Attach text files")
        dlg.setObjectName("attachFilesDialog")
        dlg.setFileMode(QFileDialog.FileMode.ExistingFiles)
        dlg.setNameFilters(["All files (*)"])
        dlg.filesSelected.connect(self.add_paths)
        self.dialog = dlg
        dlg.open()

    def add_paths(self, paths: Iterable[str | Path]) -> bool:
        """Read the files at ``paths`` (off the UI thread) and attach those that are text; the
        status bar says which were attached and why any was not."""
        chosen = [Path(p) for p in paths]
        if not chosen:
            return False
        from app.storage.attached_files import read_text_file

        def read() -> tuple[list[AttachedFile], list[str]]:
            files: list[AttachedFile] = []
            problems: list[str] = []
            for p in chosen:
                try:
                    files.append(read_text_file(p))
                except ValueError as exc:
                    problems.append(str(exc))
                except OSError as exc:
                    problems.append(f"{p.name}: {exc.strerror or exc}")
            return files, problems

        return self.tasks.run(read, self._read, lambda why: self._read(([], [why])))

    def _read(self, result: tuple[list[AttachedFile], list[str]]) -> None:
        files, problems = result
        attached = []
        for f in files:
            problem = self.pending.add(f)
            if problem is None:
                attached.append(f.name)
            else:
                problems.append(f"{f.name}: {problem}")
        said = []
        if attached:
            said.append(f"Attached {', '.join(attached)}: the text goes with the message")
        said += problems
        if said:
            self.window.statusBar().showMessage(". ".join(s.rstrip(".") for s in said) + ".", STATUS_MS)
        if attached:
            self.compose.setFocus()

    def message(self, text: str) -> str:
        """The message Send makes of ``text``: the attached files' text after it (labelled and
        fenced); ``text`` as it is when none is attached."""
        if not self.pending.files:
            return text
        from app.storage.attached_files import message_with_files

        return message_with_files(text, list(self.pending.files))

    def into_message(self, text: str) -> str:
        """:meth:`message`, to send now: the files leave the box."""
        message = self.message(text)
        self.pending.clear()
        return message
