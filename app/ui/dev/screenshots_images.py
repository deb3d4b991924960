"""The ``image-chat`` screenshot state (:mod:`app.ui.dev.screenshots`): a conversation with an
image. The loaded model must read images (a projector beside it, or chosen in the library: pass a
vision ``--model``); a picture is drawn here (a sunset: sky, sun and sea), attached as a person
attaches one (the compose box's images, as a paste would), sent with the state's prompt, and the
window is shot once the reply is done: the user message with its thumbnail, then the reply.

A development tool: the bundle leaves it out (see :mod:`app.ui.dev`)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QLinearGradient, QPainter

from app.ui.dev.screenshot_pages import StateNotReached

__all__ = ["IMAGE_PROMPT", "ImageChat", "sunset_png"]

IMAGE_PROMPT = "What is in this picture?"


def sunset_png(width: int = 480, height: int = 320) -> bytes:
    """A small picture to send: a sky fading to orange, a sun on the horizon, a dark sea (PNG)."""
    image = QImage(width, height, QImage.Format.Format_RGB32)
    p = QPainter(image)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    horizon = height * 0.62
    sky = QLinearGradient(QPointF(0, 0), QPointF(0, horizon))
    sky.setColorAt(0.0, QColor("#2b3a67"))
    sky.setColorAt(0.6, QColor("#e0744d"))
    sky.setColorAt(1.0, QColor("#f6c453"))
    p.fillRect(QRectF(0, 0, width, horizon), sky)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor("#fff1b8"))
    r = height * 0.14
    p.drawEllipse(QPointF(width * 0.5, horizon), r, r)
    sea = QLinearGradient(QPointF(0, horizon), QPointF(0, height))
    sea.setColorAt(0.0, QColor("#1f4e79"))
    sea.setColorAt(1.0, QColor("#0b1d33"))
    p.fillRect(QRectF(0, horizon, width, height - horizon), sea)
    p.setBrush(QColor(255, 226, 150, 150))
    for i in range(5):  # the sun's light on the water
        w = width * (0.22 - 0.035 * i)
        p.drawRect(QRectF(width * 0.5 - w / 2, horizon + 8 + i * 16, w, 4))
    p.end()
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")  # type: ignore[call-overload]  # PySide6 takes the format as str
    return bytes(buf.data().data())


class ImageChat:
    """The steps of the ``image-chat`` state, driven by the director's poll: once a model that
    reads images is loaded, attach the picture and send the prompt; shoot once the reply is done."""

    def __init__(self, director: Any) -> None:
        self.director = director

    def step(self) -> None:
        d = self.director
        w = d.window
        if not d._require_model() or w.busy:
            return
        if not d._sent:
            if not w.model_info.vision:
                raise StateNotReached(
                    "the 'image-chat' state needs a model that reads images: pass a --model with its "
                    "projector (an mmproj GGUF) beside it"
                )
            d._sent = True
            w.new_chat()
            w.chat.suppress_notice_codes.add("no_tool_format")  # the picture is of the image, not of tools
            if w.chat_ctl.images.add([sunset_png()]) != 1:
                raise StateNotReached("the picture could not be attached")
            w.compose.setPlainText(d.prompt)
            if not w.send():
                raise StateNotReached("the prompt could not be sent")
        elif d._turn_done:
            last = w.chat.current_assistant()
            if last is None or last.error_box is not None:
                raise StateNotReached(f"the reply to the image failed: {w.last_done and w.last_done.error}")
            d._settle_then_shoot(w)

    def summary(self, said: str) -> str:
        w = self.director.window
        users, last = w.chat.user_messages(), w.chat.current_assistant()
        thumbs = len(users[-1].image_strip.thumbs) if users else 0
        reply = len(last.text()) if last is not None else 0
        return f"{said}; image thumbnails: {thumbs}; reply characters: {reply}"
