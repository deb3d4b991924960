"""Files dropped anywhere on the window.

- A GGUF model joins the models library where it is (no copy, as Import GGUF… → *Use it where it
  is*) and, when it is the one model dropped, loads, as picking it in the model bar does. A split
  model's shard stands for the whole model; a vision projector joins the library to be paired
  with a model on the Models page, and is never loaded as one.
- A chat exported as JSON comes in as a new conversation and opens, as File → Import chat… does.
- Images are attached to the message being written (``window_images``), as on the chat page.
- Any other file is attached to the message as text (``window_files``), or refused with why (a
  binary file, one too large).

Files are read off the UI thread; the status bar says what came in and why anything did not."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QMimeData, QObject
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent

from app.ui.chat.attachments import IMAGE_SUFFIXES, mime_has_images
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from app.ui.model_bar import ModelBar
    from app.ui.window_conversations import ConversationsController

__all__ = ["CHAT_SUFFIX", "MODEL_SUFFIX", "DropsController", "Dropped", "dropped_files"]

MODEL_SUFFIX = ".gguf"
CHAT_SUFFIX = ".json"
STATUS_MS = 10_000


@dataclass(frozen=True)
class Dropped:
    """The local files of a drag, but images (``window_images`` reads those), in the drag's order:
    GGUF models, JSON files and zips (a chat export, or text to attach: told when dropped) and the
    others (text to attach)."""

    models: list[Path] = field(default_factory=list)
    chats: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.models or self.chats or self.files)


def dropped_files(mime: QMimeData | None) -> Dropped:
    """The local files of ``mime`` that are not images (a link from a web page is no file)."""
    out = Dropped()
    if mime is None or not mime.hasUrls():
        return out
    for url in mime.urls():
        if not url.isLocalFile():
            continue
        path = Path(url.toLocalFile())
        suffix = path.suffix.lower()
        if suffix == MODEL_SUFFIX:
            out.models.append(path)
        elif suffix in (CHAT_SUFFIX, ".zip"):  # (a zip: ChatGPT's or Claude's export, else attached)
            out.chats.append(path)
        elif suffix not in IMAGE_SUFFIXES:
            out.files.append(path)
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class DropsController(WindowPart):
    """Takes the files dropped on the window (its event filter sees every drag that no widget
    under the pointer took) and those the message box is given (``take_mime``): models, chats,
    text files and the images with them."""

    def __init__(
        self,
        kit: WindowKit,
        *,
        model_bar: ModelBar,
        conversations: ConversationsController,
        images: Callable[[QMimeData], int],
        files: Callable[[list[Path]], object],
    ) -> None:
        super().__init__(kit)
        self.model_bar, self.conversations, self.images, self.files = model_bar, conversations, images, files
        self.window.setAcceptDrops(True)
        self.window.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if isinstance(event, QDragEnterEvent | QDragMoveEvent | QDropEvent):
            mime = event.mimeData()
            files, images = dropped_files(mime), mime_has_images(mime)
            if files or images:
                event.acceptProposedAction()
                if event.type() == QEvent.Type.Drop:  # (a drag's enter and move events are drop events too)
                    self.take_mime(mime)
                return True
        return super().eventFilter(obj, event)

    def take_mime(self, mime: QMimeData) -> None:
        """A drop, or a paste in the message box (``ComposeEdit.sig_files``): its files taken, its
        images attached to the message."""
        self.take(dropped_files(mime))
        if mime_has_images(mime):
            self.images(mime)

    def take(self, files: Dropped) -> None:
        """Import the chats, add the models and attach the text files of a drop."""
        if self.state.shut:
            return
        if files.chats:
            self._sort_json(files.chats, files.files)
        elif files.files:
            self.files(files.files)
        if files.models:
            self.add_models(files.models)

    def _sort_json(self, jsons: list[Path], others: list[Path]) -> None:
        """JSON files: those exported by Callisto are imported as chats, the others attached with
        ``others`` (each file's start read off the UI thread)."""
        from app.storage.attached_files import is_chat_export

        def sort() -> list[bool]:
            return [is_chat_export(p) for p in jsons]

        def sorted_(exports: list[bool]) -> None:
            for path, export in zip(jsons, exports, strict=True):
                if export:
                    self.conversations.exports.import_conversation(str(path))
            attach = [p for p, export in zip(jsons, exports, strict=True) if not export] + others
            if attach:
                self.files(attach)

        self.tasks.run(sort, sorted_)

    # -- models -----------------------------------------------------------------------------------
    def add_models(self, paths: list[Path]) -> bool:
        """Add ``paths`` to the library where they are (each checked as a GGUF first, off the UI
        thread); one chat model among them loads. False when the library cannot be read."""
        library = self.model_bar.library
        if library is None:
            self.window.statusBar().showMessage(
                "The models library cannot be read: open the model with the model bar's “Open a GGUF file…”",
                STATUS_MS,
            )
            return False

        def run() -> tuple[list[Any], list[str]]:
            added: list[Any] = []
            problems: list[str] = []
            seen: set[Path] = set()
            for path in paths:
                try:
                    model = library.import_in_place(path)
                except Exception as exc:  # noqa: BLE001 - LibraryError names the file and why
                    problems.append(str(exc))
                    continue
                if model.path not in seen:  # two shards of one split model are one model
                    seen.add(model.path)
                    added.append(model)
            return added, problems

        self.window.statusBar().showMessage(f"Adding {_plural(len(paths), 'file')} to the models library…")
        return self.tasks.run(run, self._added, self._failed)

    def _failed(self, why: str) -> None:
        self.window.statusBar().showMessage(f"Could not add the dropped model: {why}", STATUS_MS)

    def _added(self, result: tuple[list[Any], list[str]]) -> None:
        added, problems = result
        if self.state.shut:
            return
        chat_models = [m for m in added if not m.is_projector]
        projectors = [m for m in added if m.is_projector]
        said: list[str] = []
        if added:
            self.model_bar.library_changed()
        if len(chat_models) == 1:
            said.append(self._open(chat_models[0]))
        elif chat_models:
            said.append(
                f"Added {_plural(len(chat_models), 'model')} to the library: pick one in the model bar"
            )
        if projectors:
            names = ", ".join(m.name for m in projectors)
            said.append(
                f"Added the projector{'' if len(projectors) == 1 else 's'} {names}: pair "
                f"{'it' if len(projectors) == 1 else 'them'} with a model in the Models page's "
                "Projector column"
            )
        said.extend(problems)
        self.window.statusBar().showMessage(". ".join(s.rstrip(".") for s in said) + ".", STATUS_MS)

    def _open(self, model: Any) -> str:
        """Load ``model`` unless it is the file the chat uses now (or is loading); what was done."""
        from app.ui.window_state import path_key

        loading = self.state.loading_path
        if self.state.uses_model(model.path) or (loading and path_key(loading) == path_key(model.path)):
            return f"{model.name} is in the library; it is the model the chat uses"
        self.model_bar.load_model(str(model.path))
        return f"Added {model.name} to the library; loading it"
