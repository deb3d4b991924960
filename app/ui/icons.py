"""The window's icons: one line-icon set in ``resources/icons/ui/`` (24 px SVG, ``currentColor`` strokes).

``icon(name)`` draws the SVG in the current theme's text colour, so one file serves light and dark.
A name without a file gives an empty icon (the action still shows its text).
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QByteArray, QRectF, Qt
from PySide6.QtGui import QGuiApplication, QIcon, QImage, QPainter, QPalette, QPixmap

from app.ui.theme import resources_dir

__all__ = ["ICON_NAMES", "icon", "icon_dir"]


def icon_dir():
    return resources_dir() / "icons" / "ui"


ICON_NAMES = (
    "chat",
    "models",
    "settings",
    "tools",
    "conversations",
    "server",
    "check",
    "help",
    "download",
    "error",
    "copy",
)


@lru_cache(maxsize=64)
def _svg(name: str) -> str | None:
    p = icon_dir() / f"{name}.svg"
    return p.read_text(encoding="utf-8") if p.is_file() else None


def _pixmap(svg: str, colour: str, size: int) -> QPixmap:
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(QByteArray(svg.replace("currentColor", colour).encode("utf-8")))
    img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    painter = QPainter(img)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return QPixmap.fromImage(img)


def icon(name: str) -> QIcon:
    """The icon ``name`` in the palette's text colour (its disabled look in the disabled colour)."""
    svg = _svg(name)
    if svg is None or QGuiApplication.instance() is None:
        return QIcon()
    pal = QGuiApplication.palette()
    normal = pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.WindowText).name()
    disabled = pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText).name()
    out = QIcon()
    for size in (18, 24, 36, 48):
        out.addPixmap(_pixmap(svg, normal, size), QIcon.Mode.Normal)
        out.addPixmap(_pixmap(svg, disabled, size), QIcon.Mode.Disabled)
    return out
