"""The window's icons: one line-icon set in ``resources/icons/ui/`` (24 px SVG, ``currentColor`` strokes).

``icon(name)`` draws the SVG in the current theme's text colour, so one file serves light and dark.
A name without a file gives an empty icon (the action still shows its text).
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QByteArray, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QGuiApplication, QIcon, QIconEngine, QImage, QPainter, QPalette, QPixmap

from app.ui.theme import resources_dir

__all__ = ["ICON_NAMES", "icon", "icon_colour", "icon_dir", "refresh_icons"]


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
    "attach",
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


def _colours() -> tuple[str, str]:
    pal = QGuiApplication.palette()
    normal = pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.WindowText).name()
    disabled = pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.WindowText).name()
    return normal, disabled


class _ThemedIconEngine(QIconEngine):
    """Draws the SVG in the palette's colours *when it is drawn*, so a theme switched at run time
    recolours every icon already on screen (U7), as at start-up."""

    def __init__(self, name: str, svg: str) -> None:
        super().__init__()
        self._name, self._svg = name, svg

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:  # noqa: ARG002
        normal, disabled = _colours()
        colour = disabled if mode == QIcon.Mode.Disabled else normal
        side = max(1, min(size.width(), size.height()))
        return _cached_pixmap(self._svg, colour, side)

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        painter.drawPixmap(rect, self.pixmap(rect.size(), mode, state))

    def clone(self) -> QIconEngine:
        return _ThemedIconEngine(self._name, self._svg)

    def key(self) -> str:
        return "callisto-themed"

    def iconName(self) -> str:  # noqa: N802 - Qt's name
        return self._name


@lru_cache(maxsize=512)
def _cached_pixmap(svg: str, colour: str, size: int) -> QPixmap:
    return _pixmap(svg, colour, size)


def icon(name: str) -> QIcon:
    """The icon ``name`` in the palette's text colour (its disabled look in the disabled colour),
    drawn in the colours of the theme in use each time it is painted."""
    svg = _svg(name)
    if svg is None or QGuiApplication.instance() is None:
        return QIcon()
    return QIcon(_ThemedIconEngine(name, svg))


def icon_colour(qicon: QIcon, mode: QIcon.Mode = QIcon.Mode.Normal, size: int = 24) -> str | None:
    """The colour of the darkest-or-lightest opaque pixel the icon draws now (tests and checks)."""
    img = qicon.pixmap(size, size, mode).toImage()
    for y in range(img.height()):
        for x in range(img.width()):
            c = img.pixelColor(x, y)
            if c.alpha() == 255:
                return c.name()
    return None


def refresh_icons(root: object) -> None:
    """Repaint ``root`` and its children after a theme switch (the icons draw in the new colours)."""
    from PySide6.QtWidgets import QWidget

    if isinstance(root, QWidget):
        for w in [root, *root.findChildren(QWidget)]:
            w.update()
