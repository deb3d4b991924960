"""Images in the chat (issue 30): the images attached to the message being written (thumbnails
under the message box, each removable), the images of a sent message (thumbnails; a click opens
one larger), and the reading of images from the clipboard, a drop or a file.

The window never decodes an image *for the model*: a message carries the image files' bytes
(``Message.images``) and the engine process checks and decodes them (``app.engine.vision``).
Here Qt decodes only thumbnails, through a :class:`QImageReader` that reads the header first and
refuses an image larger than :data:`MAX_PIXELS` before anything is allocated, and re-encodes an
image when the ``images.store`` setting asks for it (:func:`reencode`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QImage, QImageReader, QPixmap
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QScrollArea, QToolButton, QVBoxLayout, QWidget

from app.storage.attached_files import MAX_FILES, AttachedFile

__all__ = [
    "DEFAULT_MAX_IMAGE_BYTES",
    "IMAGE_SUFFIXES",
    "MAX_IMAGES",
    "MAX_PIXELS",
    "REENCODE_MAX_SIDE",
    "ImagePolicy",
    "ImageStrip",
    "PendingFiles",
    "PendingImages",
    "check_image",
    "images_from_mime",
    "mime_has_images",
    "reencode",
    "thumbnail",
]

#: the largest image file a message takes when the settings name no ``images.max_bytes``
DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: images one message carries at most
MAX_IMAGES = 8
#: pixels an image may have (width x height) before the window refuses to read it
MAX_PIXELS = 64 * 1024 * 1024
#: the longest side of a re-encoded image (``images.store == "reencoded"``)
REENCODE_MAX_SIDE = 2048
#: the suffixes of the image files a drop or the file dialog takes
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp")
THUMB_PX = 64  # a thumbnail's longest side, pending and sent


@dataclass(frozen=True)
class ImagePolicy:
    """What a message's images must keep to: bytes per image, how many, and how they are kept
    (``original``: the file's bytes as they are; ``reencoded``: re-encoded by :func:`reencode`)."""

    max_bytes: int = DEFAULT_MAX_IMAGE_BYTES
    store: str = "original"
    max_images: int = MAX_IMAGES


def _reader(data: bytes) -> tuple[QImageReader, QBuffer]:
    buf = QBuffer()
    buf.setData(QByteArray(data))
    buf.open(QIODevice.OpenModeFlag.ReadOnly)
    return QImageReader(buf), buf  # the reader reads the buffer: both are kept together


def _header_problem(data: bytes) -> str | None:
    """Why ``data`` is not an image the window reads (from its header alone), or None."""
    reader, _buf = _reader(data)
    size = reader.size()
    if not reader.canRead() or not size.isValid():
        return "the file is not an image the window can read (PNG, JPEG, GIF, BMP or WebP)"
    if size.width() * size.height() > MAX_PIXELS:
        return f"the image is {size.width()}x{size.height()} pixels, too large to read"
    return None


def check_image(data: bytes, policy: ImagePolicy) -> str | None:
    """Why ``data`` cannot go with a message (one sentence), or None: its size, that it is an
    image Qt recognises (from its header), and its pixels."""
    if len(data) > policy.max_bytes:
        return (
            f"the image is {len(data) / 2**20:.1f} MB, more than the {policy.max_bytes / 2**20:.1f} MB "
            "an image may be (Settings: images.max_bytes)"
        )
    return _header_problem(data)


def thumbnail(data: bytes, px: int = THUMB_PX) -> QPixmap:
    """A thumbnail of ``data`` whose longest side is ``px`` (decoded at that size where the
    format allows); an empty pixmap when it cannot be read."""
    reader, _buf = _reader(data)
    size = reader.size()
    if not size.isValid() or size.width() * size.height() > MAX_PIXELS:
        return QPixmap()
    reader.setScaledSize(size.scaled(QSize(px, px), Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    return QPixmap.fromImage(image) if not image.isNull() else QPixmap()


def _encode(image: QImage, fmt: str, quality: int = -1) -> bytes:
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, fmt, quality)  # type: ignore[call-overload]  # PySide6 takes the format as str
    return bytes(buf.data().data())


def reencode(data: bytes, max_side: int = REENCODE_MAX_SIDE) -> bytes:
    """``data`` decoded and written again: its longest side at most ``max_side``, as PNG when it
    has transparency, else JPEG (quality 90); ``data`` itself when it cannot be read."""
    reader, _buf = _reader(data)
    size = reader.size()
    if not size.isValid() or size.width() * size.height() > MAX_PIXELS:
        return data
    if max(size.width(), size.height()) > max_side:
        reader.setScaledSize(size.scaled(QSize(max_side, max_side), Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    if image.isNull():
        return data
    if image.hasAlphaChannel():
        return _encode(image, "PNG")
    return _encode(image.convertToFormat(QImage.Format.Format_RGB888), "JPEG", 90)


def _is_webp(data: bytes) -> bool:
    return data[:4] == b"RIFF" and data[8:12] == b"WEBP"


def _image_paths(mime: QMimeData) -> list[Path]:
    return [
        Path(url.toLocalFile())
        for url in mime.urls()
        if url.isLocalFile() and url.toLocalFile().lower().endswith(IMAGE_SUFFIXES)
    ]


def mime_has_images(mime: QMimeData | None) -> bool:
    """True when ``mime`` (a paste or a drop) holds an image or image files."""
    return mime is not None and (bool(_image_paths(mime)) or mime.hasImage())


def images_from_mime(mime: QMimeData, policy: ImagePolicy) -> tuple[list[bytes], list[str]]:
    """The image files' bytes in ``mime`` (its image files; else the image itself, as PNG), and
    what could not be taken, in words. A file is not read when its size is over the limit."""
    images: list[bytes] = []
    problems: list[str] = []
    paths = _image_paths(mime)
    read_limit = policy.max_bytes * (4 if policy.store == "reencoded" else 1)  # re-encoding shrinks it
    for path in paths:
        try:
            if path.stat().st_size > read_limit:
                problems.append(
                    f"{path.name}: more than the {policy.max_bytes / 2**20:.1f} MB an image may be"
                )
                continue
            images.append(path.read_bytes())
        except OSError as exc:
            problems.append(f"{path.name}: {exc.strerror or exc}")
    if not paths and mime.hasImage():
        image = mime.imageData()
        if isinstance(image, QImage) and not image.isNull():
            images.append(_encode(image, "PNG"))
        else:
            problems.append("the clipboard's image could not be read")
    return images, problems


class ImageStrip(QWidget):
    """A row of thumbnails; with ``removable``, each has a × that removes it (``sig_removed``)."""

    sig_removed = Signal(int)  # the index of the image removed

    def __init__(
        self, images: Sequence[bytes] = (), *, removable: bool = False, parent: QWidget | None = None
    ):
        super().__init__(parent)
        self.setObjectName("imageStrip")
        self.removable = removable
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.setSpacing(6)
        self.thumbs: list[QToolButton] = []
        self.set_images(images)

    def set_images(self, images: Sequence[bytes]) -> None:
        """Show ``images`` (replacing those shown); hidden when there are none."""
        while self._row.count():
            item = self._row.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.images = list(images)
        self.thumbs = []
        for i, data in enumerate(self.images):
            self._row.addWidget(self._thumb(i, data))
        self._row.addStretch(1)
        if self.images and self.parentWidget() is None:
            return  # not yet in a layout: shown with its parent (shown now, it would be a window)
        self.setVisible(bool(self.images))

    def _thumb(self, index: int, data: bytes) -> QWidget:
        box = QWidget()
        lay = QHBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        thumb = QToolButton()
        thumb.setObjectName("imageThumb")
        thumb.setAutoRaise(True)
        pix = thumbnail(data)
        if pix.isNull():
            thumb.setText("image")  # an image the window cannot show: the engine says what it makes of it
        else:
            thumb.setIcon(pix)
            thumb.setIconSize(pix.size())
        thumb.setToolTip(f"Image {index + 1} ({len(data) / 1024:,.0f} KB): click to open it larger")
        thumb.clicked.connect(lambda: open_image(data, self))
        self.thumbs.append(thumb)
        lay.addWidget(thumb)
        if self.removable:
            remove = QToolButton()
            remove.setObjectName("imageRemove")
            remove.setText("×")
            remove.setAutoRaise(True)
            remove.setToolTip("Remove this image from the message")
            remove.clicked.connect(lambda: self.sig_removed.emit(index))
            lay.addWidget(remove, 0, Qt.AlignmentFlag.AlignTop)
        return box


def open_image(data: bytes, parent: QWidget | None = None, max_px: int = 900) -> QDialog:
    """A window showing the image larger (at most ``max_px`` a side), closed by Esc or a click away."""
    dlg = QDialog(parent)
    dlg.setObjectName("imageViewer")
    dlg.setWindowTitle("Image")
    lay = QVBoxLayout(dlg)
    label = QLabel()
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    pix = thumbnail(data, max_px)
    if pix.isNull():
        label.setText("This image cannot be shown here.")
    else:
        label.setPixmap(pix)
    area = QScrollArea()
    area.setWidget(label)
    area.setWidgetResizable(True)
    lay.addWidget(area)
    dlg.resize(
        min(max_px, pix.width() + 40) if not pix.isNull() else 320, min(max_px, pix.height() + 40) or 200
    )
    dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dlg.open()
    return dlg


class PendingImages(ImageStrip):
    """The images attached to the message being written, under the message box."""

    sig_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(removable=True, parent=parent)
        self.setObjectName("pendingImages")
        self.sig_removed.connect(self.remove)

    def add(self, data: bytes, policy: ImagePolicy) -> str | None:
        """Attach ``data`` (re-encoded first when the policy keeps re-encoded images); why it was
        not attached, or None."""
        if len(self.images) >= policy.max_images:
            return f"a message takes at most {policy.max_images} images"
        if _header_problem(data) is None and (policy.store == "reencoded" or _is_webp(data)):
            data = reencode(data)  # (the engine's decoder reads no WebP: it goes as PNG or JPEG)
        problem = check_image(data, policy)
        if problem is None:
            self.set_images([*self.images, data])
            self.sig_changed.emit()
        return problem

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.images):
            self.set_images(self.images[:index] + self.images[index + 1 :])
            self.sig_changed.emit()

    def clear(self) -> None:
        if self.images:
            self.set_images([])
            self.sig_changed.emit()


class PendingFiles(QWidget):
    """The text files attached to the message being written, under the message box: a chip a file
    (its name and size; the whole name in the tooltip) with a × that takes it off."""

    sig_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("pendingFiles")
        self._lay = QHBoxLayout(self)
        self._lay.setContentsMargins(0, 0, 0, 0)
        self._lay.setSpacing(6)
        self._lay.addStretch(1)
        self.files: list[AttachedFile] = []
        self.chips: list[QWidget] = []
        self.setVisible(False)

    def add(self, file: AttachedFile) -> str | None:
        """Attach ``file``; why it was not attached, or None."""
        if len(self.files) >= MAX_FILES:
            return f"a message takes at most {MAX_FILES} files"
        self._set([*self.files, file])
        return None

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.files):
            self._set(self.files[:index] + self.files[index + 1 :])

    def clear(self) -> None:
        if self.files:
            self._set([])

    def _set(self, files: list[AttachedFile]) -> None:
        for chip in self.chips:
            self._lay.removeWidget(chip)
            chip.deleteLater()
        self.files, self.chips = list(files), []
        for i, f in enumerate(self.files):
            chip = QWidget()
            chip.setObjectName("fileChip")
            row = QHBoxLayout(chip)
            row.setContentsMargins(8, 2, 2, 2)
            row.setSpacing(2)
            name = QLabel(f.label)
            name.setToolTip(f"{f.name}: its text goes with the message")
            row.addWidget(name)
            drop = QToolButton()
            drop.setObjectName("removeFile")
            drop.setText("×")
            drop.setAutoRaise(True)
            drop.setToolTip(f"Take {f.name} off the message")
            drop.clicked.connect(lambda _c=False, i=i: self.remove(i))
            row.addWidget(drop)
            self._lay.insertWidget(i, chip)
            self.chips.append(chip)
        self.setVisible(bool(self.files))
        self.sig_changed.emit()
