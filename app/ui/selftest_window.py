"""The window half of the bundle self-test (``app.selftest`` is Qt-free and calls this)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["WindowCheckError", "render_main_window"]


class WindowCheckError(RuntimeError):
    """The main window could not be built or rendered; the message says why."""


def render_main_window(screenshot: Path | None = None) -> dict[str, Any]:
    """Build the main window (offscreen unless a platform is chosen), render it, check the image.

    Returns ``{"width", "height", "colours_sampled", "platform"}``; raises WindowCheckError.
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from app.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "callisto"])
    app.setApplicationName("Callisto")
    window = MainWindow(autoload=False)
    try:
        window.resize(1100, 720)
        window.show()
        for _ in range(5):
            QCoreApplication.processEvents()
        image = window.grab().toImage()
        if image.isNull() or image.width() < 100 or image.height() < 100:
            raise WindowCheckError(f"window: the rendered image is empty ({image.width()}x{image.height()})")
        colours = {
            image.pixel(x, y) for x in range(0, image.width(), 37) for y in range(0, image.height(), 23)
        }
        if len(colours) < 3:
            raise WindowCheckError("window: the rendered window is blank (fewer than 3 colours)")
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            # PySide6 takes the format as str only (bytes raise ValueError), whatever its stub says
            if not image.save(str(screenshot), "PNG"):  # type: ignore[call-overload]
                raise WindowCheckError(f"window: could not save the screenshot to {screenshot}")
        return {
            "width": image.width(),
            "height": image.height(),
            "colours_sampled": len(colours),
            "platform": QGuiApplication.platformName(),
        }
    finally:
        window.shutdown()
        window.close()
        window.deleteLater()
        QCoreApplication.processEvents()
