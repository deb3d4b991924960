"""Images in the window (issue 30): pasted and dropped images become thumbnails under the message
box and go with the message (``Message.images``) through the real engine to a tiny vision model
(``tests.support.tiny_vision``: random weights, a LLaVA MLP projector beside it), the transcript
shows them, history keeps them for a reopened conversation; a model without a projector says so
and loses nothing; the limits and the re-encoding of the ``images`` settings hold."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication, QImage
from PySide6.QtWidgets import QApplication, QToolButton

from app.engine.vision import mtmd_available
from app.storage.settings import Settings
from app.ui.window_images import NO_PROJECTOR_TIP
from tests.support.drag import drag_event
from tests.support.tiny_vision import png_bytes, qt_image_bytes, write_tiny_vision_pair

HAVE_MTMD, WHY_NOT = mtmd_available()
needs_mtmd = pytest.mark.skipif(not HAVE_MTMD, reason=WHY_NOT)


def _paste(w, image: QImage) -> None:
    """An image on the clipboard, pasted into the message box (Ctrl+V's action)."""
    QGuiApplication.clipboard().setImage(image)
    w.compose.setFocus()
    w.compose.paste()


def _drop(widget, paths) -> bool:
    """Image files dragged over ``widget`` and dropped on it; whether the drop was accepted."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    centre = widget.rect().center()
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = drag_event(QDragEnterEvent, QPointF(centre), Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted(), "the chat page takes image files dragged over it"
    drop = QDropEvent(QPointF(centre), Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(widget, drop)
    return drop.isAccepted()


def _settings(**images) -> Settings:
    s = Settings()
    s.sampling.max_tokens = 6
    for k, v in images.items():
        setattr(s.images, k, v)
    return s


@needs_mtmd
def test_pasted_and_dropped_images_go_with_the_message_and_come_back_with_the_conversation(
    qtbot, make_window, tmp_path
):
    model, _projector = write_tiny_vision_pair(tmp_path / "models")
    w = make_window(model, settings=_settings())
    assert w.model_info.vision and w.chat_ctl.images.button.isEnabled()

    _paste(w, QImage.fromData(png_bytes(20, 12)))
    dropped = tmp_path / "photo.png"
    dropped.write_bytes(png_bytes(30, 18))
    assert _drop(w.chat_page, [dropped])
    pending = w.chat_ctl.images.pending
    assert len(pending.images) == 2 and len(pending.thumbs) == 2 and pending.isVisibleTo(w)
    assert pending.images[1] == dropped.read_bytes()  # a file goes as its bytes (images.store "original")
    pasted = QImage.fromData(pending.images[0])
    assert (pasted.width(), pasted.height()) == (20, 12)  # the clipboard's image, as PNG
    sent = list(pending.images)

    w.compose.setPlainText("What is in these pictures?")
    assert w.send()
    assert pending.images == [] and pending.isHidden()  # the images left the box with the message
    qtbot.waitUntil(lambda: w.last_done is not None and not w.busy, timeout=60_000)
    assert w.last_done.finish_reason in ("stop", "length"), w.last_done.error
    assert w.last_done.generated_tokens >= 1  # the reply streamed after the image's tokens were read
    (user,) = w.chat.user_messages()
    assert user.images == sent and len(user.image_strip.thumbs) == 2
    assert not user.image_strip.thumbs[0].icon().isNull()  # a thumbnail, not a placeholder
    (message,) = [m for m in w.worker.session.messages if m.role == "user"]
    assert message.images == sent and message.content == "What is in these pictures?"

    cid = w.conversation_id
    w.new_chat()
    assert w.chat.user_messages() == []
    w.open_conversation(cid)
    qtbot.waitUntil(lambda: len(w.chat.user_messages()) == 1, timeout=10_000)
    (reopened,) = w.chat.user_messages()
    assert reopened.images == sent and len(reopened.image_strip.thumbs) == 2
    qtbot.waitUntil(
        lambda: [m.images for m in w.worker.session.messages if m.role == "user"] == [sent], timeout=10_000
    )


def test_a_model_without_a_projector_says_why_and_a_failed_image_message_is_not_lost(
    qtbot, make_window, streaming_model
):
    w = make_window(streaming_model, settings=_settings())
    images = w.chat_ctl.images
    assert not w.model_info.vision
    # (each receiver of the worker's "loaded" signal gets its own queued event: wait for this one's)
    qtbot.waitUntil(lambda: not images.button.isEnabled(), timeout=10_000)
    assert "no vision projector" in images.button.toolTip()
    assert images.button.toolTip() == NO_PROJECTOR_TIP

    _paste(w, QImage.fromData(png_bytes()))
    assert len(images.pending.images) == 1  # attached anyway (another model may be chosen) ...
    assert "no vision projector" in w.statusBar().currentMessage()  # ... with a word saying so
    attached = list(images.pending.images)
    w.compose.setPlainText("Describe this")
    assert w.send()
    qtbot.waitUntil(lambda: w.last_done is not None and not w.busy, timeout=30_000)
    assert w.last_done.finish_reason == "error"
    reply = w.chat.current_assistant()
    assert reply.error_box is not None and "no vision projector (mmproj)" in reply.error_box.message
    assert w.compose.toPlainText() == "Describe this" and images.pending.images == attached
    assert not reply.btn_regen.isVisibleTo(w)
    # the failed message left the conversation: a text message now goes through, and the chat
    # shows it alone (the message given back is dropped from the view when the next one is sent)
    qtbot.waitUntil(lambda: not any(m.role == "user" for m in w.worker.session.messages), timeout=10_000)
    images.pending.clear()
    w.compose.setPlainText("Just text then")
    w.chat_ctl.last_done = None
    assert w.send()
    qtbot.waitUntil(lambda: w.last_done is not None and not w.busy, timeout=30_000)
    assert w.last_done.finish_reason == "length" and w.chat.current_assistant().text()  # max_tokens 6
    assert [u.text for u in w.chat.user_messages()] == ["Just text then"]
    assert [m.content for m in w.worker.session.messages if m.role == "user"] == ["Just text then"]


def test_the_limits_and_re_encoding_of_the_images_settings(qtbot, make_window, tmp_path):
    w = make_window(None, settings=_settings(max_bytes=4096))
    images = w.chat_ctl.images
    big = qt_image_bytes("BMP", 64, 64)  # 12 KB
    assert images.add([big]) == 0 and images.pending.images == []
    assert "images.max_bytes" in w.statusBar().currentMessage()
    assert images.add([b"not an image at all"]) == 0
    assert "not an image" in w.statusBar().currentMessage()
    small = png_bytes(8, 8)
    assert images.add([small, small]) == 2 and len(images.pending.thumbs) == 2
    images.pending.findChildren(QToolButton, "imageRemove")[0].click()  # the first one's ×
    qtbot.waitUntil(lambda: images.pending.images == [small])

    s = w.settings.model_copy(deep=True)
    s.images.max_bytes, s.images.store = 20 * 1024 * 1024, "reencoded"
    w.apply_settings(s)
    wide = tmp_path / "wide.bmp"
    wide.write_bytes(qt_image_bytes("BMP", 3000, 20))
    assert images.add_files([wide]) == 1
    kept = images.pending.images[-1]
    assert kept[:3] == b"\xff\xd8\xff"  # re-encoded as JPEG (no transparency) ...
    img = QImage.fromData(kept)
    assert img.width() == 2048 and img.height() in (13, 14)  # ... its longest side at most 2048


def test_a_webp_image_goes_as_png_or_jpeg_even_kept_original(qtbot, make_window):
    """The engine's decoder (stb_image) reads no WebP: the window, which can, re-encodes it."""
    w = make_window(None, settings=_settings(max_bytes=1024 * 1024))
    images = w.chat_ctl.images
    webp = qt_image_bytes("WEBP", 24, 16)
    assert webp[8:12] == b"WEBP"
    assert images.add([webp]) == 1
    kept = images.pending.images[-1]
    assert kept[:3] == b"\xff\xd8\xff" or kept[:8] == b"\x89PNG\r\n\x1a\n"
    assert QImage.fromData(kept).width() == 24


@needs_mtmd
def test_a_corrupt_image_is_a_clear_error_in_the_reply_and_the_engine_goes_on(qtbot, make_window, tmp_path):
    model, _projector = write_tiny_vision_pair(tmp_path / "models")
    w = make_window(model, settings=_settings())
    images = w.chat_ctl.images
    truncated = png_bytes(20, 12)[:-30]  # its header reads (the window attaches it); its data is cut
    assert images.add([truncated]) == 1
    w.compose.setPlainText("And this one?")
    assert w.send()
    qtbot.waitUntil(lambda: w.last_done is not None and not w.busy, timeout=60_000)
    assert w.last_done.finish_reason == "error" and not w.last_done.engine_crashed
    reply = w.chat.current_assistant()
    assert reply.error_box is not None and "image" in reply.error_box.message.lower()
    assert w.compose.toPlainText() == "And this one?" and images.pending.images == [truncated]

    images.pending.clear()
    w.chat_ctl.last_done = None
    w.compose.setPlainText("Then just text")
    assert w.send()
    qtbot.waitUntil(lambda: w.last_done is not None and not w.busy, timeout=60_000)
    assert w.last_done.finish_reason in ("stop", "length"), w.last_done.error
    assert w.worker.model.crash is None
    assert [u.text for u in w.chat.user_messages()] == ["Then just text"]


@needs_mtmd
def test_an_edited_message_keeps_its_images(qtbot, make_window, tmp_path):
    model, _projector = write_tiny_vision_pair(tmp_path / "models")
    w = make_window(model, settings=_settings())
    picture = png_bytes(16, 16)
    assert w.chat_ctl.images.add([picture]) == 1
    w.compose.setPlainText("First words")
    assert w.send()
    qtbot.waitUntil(lambda: w.last_done is not None and not w.busy, timeout=60_000)
    w.chat_ctl.last_done = None
    (user,) = w.chat.user_messages()
    user.start_edit()
    user.editor.setPlainText("Better words")
    user.btn_resend.click()
    qtbot.waitUntil(lambda: w.last_done is not None and not w.busy, timeout=60_000)
    assert w.last_done.finish_reason in ("stop", "length"), w.last_done.error
    (edited,) = w.chat.user_messages()
    assert edited.text == "Better words" and edited.images == [picture]
    assert [(m.content, m.images) for m in w.worker.session.messages if m.role == "user"] == [
        ("Better words", [picture])
    ]
