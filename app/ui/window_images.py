"""The images of the message being written (issue 30; a part of the main window): the Image…
button, a paste or a drop of images on the message box or anywhere on the chat page, the
thumbnails under the message box, the limits an image keeps to (the ``images`` settings:
``max_bytes``, and ``store``, re-encoded or not), and the images given back when their turn failed.

The images go with the user message as the files' bytes (``Message.images``); the engine process
checks and decodes them. A model without a projector cannot read them: the button says so and is
off, an image pasted or dropped anyway is attached with a word in the status bar, and if it is sent
the engine's error shows in the reply, the message and its images put back in the message box."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QWidget

from app.ui.chat.attachments import (
    IMAGE_SUFFIXES,
    ImagePolicy,
    PendingImages,
    images_from_mime,
    mime_has_images,
)
from app.ui.window_drops import dropped_files
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from PySide6.QtCore import QMimeData

    from app.engine.events import DoneEvent
    from app.ui.engine_types import ModelInfo
    from app.ui.window_chat_page import ChatPage

__all__ = ["NO_PROJECTOR_TIP", "ImagesController"]

NO_PROJECTOR_TIP = (
    "This model cannot read images: it has no vision projector (an mmproj GGUF beside the model, "
    "or paired with it on the Models page)"
)
STATUS_MS = 8000


class ImagesController(WindowPart):
    """Owns the images attached to the message being written (``pending``) and the Image… button."""

    def __init__(self, kit: WindowKit, *, page: ChatPage) -> None:
        super().__init__(kit)
        assert page.pending_images is not None and page.attach_button is not None
        self.pending: PendingImages = page.pending_images
        self.button = page.attach_button
        self.compose, self.chat = page.compose, page.chat
        self.compose.takes_images = True
        self.compose.sig_images.connect(self.add_mime)
        self.button.clicked.connect(self.choose_files)
        self.page_widget = page.widget
        self.page_widget.setAcceptDrops(True)  # image files dropped anywhere on the chat page
        self.page_widget.installEventFilter(self)
        self.sent: list[bytes] = []  # the images of the turn running: given back if it fails
        self.failed: QWidget | None = None  # the message given back to the box, shown until the next send
        self.worker.sig_loaded.connect(self.update_button)
        self.state.store.subscribe(lambda _sections: self._apply_settings())
        self._apply_settings()
        self.update_button()

    # -- limits and the model ---------------------------------------------------------------------
    def policy(self) -> ImagePolicy:
        """The limits the ``images`` settings set."""
        s = self.state.settings.images
        return ImagePolicy(max_bytes=s.max_bytes, store=s.store)

    def _apply_settings(self) -> None:
        history = self.state.history
        if history is not None:  # the history refuses what the window would refuse
            history.max_image_bytes = self.state.settings.images.max_bytes

    def model_reads_images(self, info: ModelInfo | None = None) -> bool | None:
        """True when the loaded model (``info``, else the window's) has a projector, False when it
        has none, None when no model is loaded or it is a remote engine's (whose server decides)."""
        info = info if info is not None else self.state.model_info
        if info is None or info.remote:
            return None
        return info.vision

    def update_button(self, info: ModelInfo | None = None) -> None:
        """The attach button for ``info`` (the model just loaded: this slot may run before the one
        that records it as the window's), else the window's model."""
        reads = self.model_reads_images(info)
        self.button.setEnabled(reads is not False)
        self.button.setToolTip(
            NO_PROJECTOR_TIP
            if reads is False
            else "Attach an image (or paste one, or drop image files on the window)"
        )

    # -- attaching ------------------------------------------------------------------------------------
    def add(self, images: Iterable[bytes], problems: Sequence[str] = ()) -> int:
        """Attach ``images`` (each checked against the limits); what was refused, and a model that
        cannot read images, said in the status bar. Returns how many were attached."""
        policy, said, added = self.policy(), list(problems), 0
        for data in images:
            problem = self.pending.add(data, policy)
            if problem is None:
                added += 1
            else:
                said.append(problem)
        if added and self.model_reads_images() is False:
            said.append(NO_PROJECTOR_TIP.replace("This model", "The loaded model"))
        if said:
            self.window.statusBar().showMessage("Image: " + "; ".join(said) + ".", STATUS_MS)
        return added

    def add_mime(self, mime: QMimeData) -> int:
        """Attach the images of a paste or a drop."""
        return self.add(*images_from_mime(mime, self.policy()))

    def add_files(self, paths: Iterable[str | Path]) -> int:
        images: list[bytes] = []
        problems: list[str] = []
        limit = self.policy().max_bytes * (4 if self.policy().store == "reencoded" else 1)
        for p in map(Path, paths):
            try:
                if p.stat().st_size > limit:
                    problems.append(f"{p.name} is larger than an image may be")
                else:
                    images.append(p.read_bytes())
            except OSError as exc:
                problems.append(f"{p.name}: {exc.strerror or exc}")
        return self.add(images, problems)

    def choose_files(self) -> None:
        patterns = " ".join(f"*{s}" for s in IMAGE_SUFFIXES)
        paths, _ = QFileDialog.getOpenFileNames(self.window, "Attach images", "", f"Images ({patterns})")
        if paths:
            self.add_files(paths)
            self.compose.setFocus()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        """Image files dragged over and dropped on the chat page (with models or chats, the
        window's ``DropsController`` takes the drop, and these images with it)."""
        if not isinstance(event, QDragEnterEvent | QDragMoveEvent | QDropEvent) or dropped_files(
            event.mimeData()
        ):
            return super().eventFilter(obj, event)
        if isinstance(event, QDragEnterEvent | QDragMoveEvent) and mime_has_images(event.mimeData()):
            event.acceptProposedAction()
            return True
        if isinstance(event, QDropEvent) and mime_has_images(event.mimeData()):
            event.acceptProposedAction()
            self.add_mime(event.mimeData())
            return True
        return super().eventFilter(obj, event)

    # -- sending ----------------------------------------------------------------------------------------
    def take(self) -> list[bytes]:
        """The images to send with the message: they leave the box (kept until the turn ends)."""
        self.sent = list(self.pending.images)
        self.pending.clear()
        return list(self.sent)

    def turn_ended(self, ev: DoneEvent, text: str | None) -> None:
        """After a turn: when it failed before the model wrote anything and carried images (a
        model without a projector, an image the engine refused), the message's text (unless
        something else was typed since) and its images go back in the box, and the message leaves
        the conversation (the model's and history's: sent again, it would fail again); the chat
        shows it and the reply's error until the next message is sent."""
        sent, self.sent = self.sent, []
        users = self.chat.user_messages()
        if ev.finish_reason != "error" or not sent or ev.generated_tokens or not users:
            return
        if not self.compose.toPlainText().strip():
            self.compose.setPlainText(text or "")
        self.pending.set_images([*sent, *self.pending.images][: self.policy().max_images])
        self.pending.sig_changed.emit()
        self.failed = users[-1]
        self.worker.truncate_before_user(len(users) - 1)
        reply = self.chat.current_assistant()
        if reply is not None:
            reply.btn_regen.setVisible(False)  # nothing to reply to again: the message is in the box

    def before_send(self) -> None:
        """A new message: the one given back after its failed turn leaves the chat, with its reply."""
        failed, self.failed = self.failed, None
        if failed is not None and failed in self.chat.messages:
            self.chat.truncate_from(failed)
