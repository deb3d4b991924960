"""The ``theme-switch`` screenshot state (:mod:`app.ui.dev.screenshots`): the window starts in the
other theme, the theme is switched at run time the way a person does it (Settings → Appearance,
Save), and the picture is taken once the switch has settled, so it shows what a switch leaves on
screen: every icon drawn again, replies rendered again, in the new theme's colours.

A development tool: the bundle leaves it out (see :mod:`app.ui.dev`)."""

from __future__ import annotations

from typing import Any, Literal

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from app.ui.dev.screenshot_pages import StateNotReached

__all__ = ["ThemeSwitch", "opposite_theme"]


def _resolves_dark(choice: str) -> bool:
    """Whether ``choice`` ("light", "dark", "system" or "auto") draws dark on this machine now."""
    if choice in ("light", "dark"):
        return choice == "dark"
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def opposite_theme(choice: str) -> Literal["light", "dark"]:
    """The theme the window starts in when ``choice`` is the one it is switched to."""
    return "light" if _resolves_dark(choice) else "dark"


class ThemeSwitch:
    """The steps of the ``theme-switch`` state, driven by the director's poll: once the window is
    idle (with a model: the reply to the state's prompt is done, its first call selected), switch
    to ``target`` in the Settings dialog and save; then shoot once the switch has settled."""

    def __init__(self, director: Any, target: str) -> None:
        self.director, self.target = director, "system" if target == "auto" else target
        self.dialog: Any = None
        app = QApplication.instance()
        self.started_dark = bool(app.property("callistoDark")) if app is not None else False

    def step(self) -> None:
        d = self.director
        w = d.window
        if self.dialog is None:
            if d._loading() or (d._loaded() and (not d._prompt_sent() or not d._turn_done or w.busy)):
                return
            if w.tool_panel.entries:
                w.chat_ctl.select_tool_call(next(iter(w.tool_panel.entries)))
            self._switch()
        elif self._settled():
            d._settle_then_shoot(w)

    def summary(self, said: str) -> str:
        """``said`` (the model) and the theme now on screen, in words the tests read: the choice,
        light or dark, the one it was switched from, the palette's window and text colours and
        the colour the sidebar's icons draw in."""
        from app.ui.icons import icon_colour
        from app.ui.theme import is_dark, theme_choice

        w = self.director.window
        pal = QGuiApplication.palette()
        colours = (pal.color(r).name() for r in (QPalette.ColorRole.Window, QPalette.ColorRole.WindowText))
        icons = {icon_colour(a.icon()) or "?" for a in w.sidebar.actions() if not a.icon().isNull()}
        return (
            f"{said}; theme: {theme_choice()} ({'dark' if is_dark() else 'light'}, switched from "
            f"{'dark' if self.started_dark else 'light'}); palette: {', '.join(colours)}; "
            f"sidebar icons: {', '.join(sorted(icons))}; tool calls: {len(w.tool_panel.entries)}"
        )

    def _switch(self) -> None:
        """Settings → Appearance → the target theme → Save, as a person does."""
        if _resolves_dark(self.target) == self.started_dark:
            raise StateNotReached(f"the window did not start in the theme other than {self.target!r}")
        self.dialog = dlg = self.director.window.open_settings("window.theme")
        index = dlg.theme.findData(self.target)
        if index < 0:
            raise StateNotReached(f"the Settings dialog offers no theme {self.target!r}")
        dlg.theme.setCurrentIndex(index)
        box = dlg.findChild(QDialogButtonBox)
        box.button(QDialogButtonBox.StandardButton.Save).click()
        if dlg.isVisible():
            raise StateNotReached(f"the Settings dialog did not save: {dlg.error_label.text()}")

    def _settled(self) -> bool:
        """The new theme is the application's, the chat was rendered again in it and the busy
        cursor of the switch is gone."""
        from app.ui.theme import is_dark, palette

        app = QApplication.instance()
        dark = _resolves_dark(self.target)
        return (
            app is not None
            and app.property("callistoDark") == dark == is_dark()
            and QGuiApplication.palette().color(QPalette.ColorRole.Window)
            == palette(dark).color(QPalette.ColorRole.Window)
            and self.director.window.chat.rendered_dark == dark
            and QApplication.overrideCursor() is None
        )
