"""Light / dark: follow the OS colour scheme (Qt 6.5+ ``QStyleHints.colorScheme()``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette

__all__ = ["apply_theme", "install_theme_follower", "is_dark", "resources_dir", "stylesheet"]

_FORCED: str | None = None


def resources_dir() -> Path:
    """The repository's / bundle's ``resources`` folder (stylesheets, icons)."""
    here = Path(__file__).resolve()
    for base in (here.parents[2], here.parents[1]):
        d = base / "resources"
        if d.is_dir():
            return d
    return here.parents[2] / "resources"


def is_dark() -> bool:
    if _FORCED is not None:
        return _FORCED == "dark"
    app = QGuiApplication.instance()
    if app is None:
        return False
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def stylesheet(dark: bool) -> str:
    name = "dark.qss" if dark else "light.qss"
    base = resources_dir()
    parts = []
    for f in ("common.qss", name):
        p = base / f
        if p.is_file():
            parts.append(p.read_text(encoding="utf-8"))
    return "\n".join(parts)


def apply_theme(app, forced: str | None = None) -> bool:
    """Apply the stylesheet of the OS scheme (or ``forced``: "light" / "dark"); returns dark?"""
    global _FORCED
    if forced is not None:
        _FORCED = forced
    dark = is_dark()
    if _FORCED is not None:
        # A forced scheme also sets the palette, so native widgets match the stylesheet.
        try:
            QGuiApplication.styleHints().setColorScheme(Qt.ColorScheme.Dark if dark else Qt.ColorScheme.Light)
        except AttributeError:
            pass
    app.setStyleSheet(stylesheet(dark))
    app.setProperty("callistoDark", dark)
    return dark


def install_theme_follower(app) -> None:
    """Re-apply the stylesheet whenever the OS switches between light and dark."""
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(lambda _s: apply_theme(app))
