"""Light / Dark / System themes.

A theme is a full palette on the Fusion style (so every native widget, page and dialog — tables,
headers, tabs, combo-box pop-ups, message boxes — takes its colours) plus the stylesheets in
``resources/`` for Callisto's own widgets. "system" follows the OS colour scheme (Qt 6.5+
``QStyleHints.colorScheme()``) and changes with it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

__all__ = [
    "THEMES",
    "apply_theme",
    "install_theme_follower",
    "is_dark",
    "palette",
    "resources_dir",
    "stylesheet",
    "theme_choice",
]

THEMES = (("system", "System (follow the OS)"), ("light", "Light"), ("dark", "Dark"))

_CHOICE = "system"

# (role, light, dark); the disabled group uses the *_DISABLED colours for text roles
_COLOURS = (
    (QPalette.ColorRole.Window, "#f3f3f3", "#1e1f22"),
    (QPalette.ColorRole.WindowText, "#1f1f1f", "#e3e3e3"),
    (QPalette.ColorRole.Base, "#ffffff", "#2b2d31"),
    (QPalette.ColorRole.AlternateBase, "#f5f7fa", "#26282c"),
    (QPalette.ColorRole.Text, "#1f1f1f", "#e3e3e3"),
    (QPalette.ColorRole.PlaceholderText, "#6b6b6b", "#9a9a9a"),
    (QPalette.ColorRole.Button, "#ececec", "#2f3136"),
    (QPalette.ColorRole.ButtonText, "#1f1f1f", "#e3e3e3"),
    (QPalette.ColorRole.BrightText, "#ffffff", "#ffffff"),
    (QPalette.ColorRole.Highlight, "#1a73e8", "#3b6fd8"),
    (QPalette.ColorRole.HighlightedText, "#ffffff", "#ffffff"),
    (QPalette.ColorRole.ToolTipBase, "#ffffe8", "#3a3c42"),
    (QPalette.ColorRole.ToolTipText, "#1f1f1f", "#e3e3e3"),
    (QPalette.ColorRole.Link, "#0b57d0", "#8ab4f8"),
    (QPalette.ColorRole.LinkVisited, "#6a1b9a", "#c58af9"),
    (QPalette.ColorRole.Light, "#ffffff", "#3a3c42"),
    (QPalette.ColorRole.Midlight, "#e0e0e0", "#33353a"),
    (QPalette.ColorRole.Mid, "#b8b8b8", "#4a4c52"),
    (QPalette.ColorRole.Dark, "#8a8a8a", "#141517"),
    (QPalette.ColorRole.Shadow, "#5a5a5a", "#000000"),
)
_DISABLED_TEXT = ("#8a8a8a", "#7d7f84")


def resources_dir() -> Path:
    """The repository's / bundle's ``resources`` folder (stylesheets, icons)."""
    here = Path(__file__).resolve()
    for base in (here.parents[2], here.parents[1]):
        d = base / "resources"
        if d.is_dir():
            return d
    return here.parents[2] / "resources"


def theme_choice() -> str:
    """The theme chosen last: "system", "light" or "dark"."""
    return _CHOICE


def _os_is_dark() -> bool:
    if QGuiApplication.instance() is None:
        return False
    scheme = QGuiApplication.styleHints().colorScheme()
    return scheme == Qt.ColorScheme.Dark


def is_dark() -> bool:
    if _CHOICE in ("light", "dark"):
        return _CHOICE == "dark"
    return _os_is_dark()


def palette(dark: bool) -> QPalette:
    """The full palette of the light or dark theme."""
    pal = QPalette()
    for role, light, dark_colour in _COLOURS:
        pal.setColor(role, QColor(dark_colour if dark else light))
    disabled = QColor(_DISABLED_TEXT[1 if dark else 0])
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return pal


def stylesheet(dark: bool) -> str:
    name = "dark.qss" if dark else "light.qss"
    base = resources_dir()
    parts = []
    for f in ("common.qss", name):
        p = base / f
        if p.is_file():
            parts.append(p.read_text(encoding="utf-8"))
    return "\n".join(parts)


def apply_theme(app, choice: str | None = None) -> bool:
    """Apply ``choice`` ("system", "light", "dark"; None or "auto": keep the last choice); returns dark?"""
    global _CHOICE
    if choice is not None:
        _CHOICE = "system" if choice == "auto" else choice
    dark = is_dark()
    if app.style().name().lower() != "fusion":
        app.setStyle("Fusion")  # the one style whose every widget follows the palette
    app.setPalette(palette(dark))
    app.setStyleSheet(stylesheet(dark))
    app.setProperty("callistoDark", dark)
    return dark


def install_theme_follower(app) -> None:
    """Re-apply the theme whenever the OS switches between light and dark (for "system")."""
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(lambda _s: _CHOICE == "system" and apply_theme(app))
