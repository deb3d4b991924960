"""The main window."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QMainWindow

__all__ = ["MainWindow"]


class MainWindow(QMainWindow):
    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("Callisto")
        self.setCentralWidget(QLabel("Callisto"))
