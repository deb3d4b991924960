"""QApplication set-up, command-line options of the window, headless screenshots."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="callisto", description="Callisto: chat with local models.")
    p.add_argument("--screenshot", metavar="PATH", help="render the window, save a PNG to PATH and exit")
    p.add_argument("--quit-after", metavar="SECONDS", type=float, default=None,
                   help="quit after this many seconds (with --screenshot: take it just before)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Callisto")
    window = MainWindow()
    window.resize(1100, 720)
    window.show()

    if args.screenshot:
        delay_ms = int(1000 * (args.quit_after if args.quit_after is not None else 0.5))

        def shoot() -> None:
            path = Path(args.screenshot)
            path.parent.mkdir(parents=True, exist_ok=True)
            ok = window.grab().save(str(path), "PNG")
            app.exit(0 if ok else 1)

        QTimer.singleShot(delay_ms, shoot)
    elif args.quit_after is not None:
        QTimer.singleShot(int(1000 * args.quit_after), app.quit)
    return app.exec()
