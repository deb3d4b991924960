"""QApplication set-up, command-line options of the window, headless screenshots.

``--model GGUF --prompt TEXT`` loads the model and sends TEXT in a new chat as soon as it is ready.

``--screenshot PATH [--state STATE]`` renders one main state and saves a PNG:

* ``empty``     the window (the demo model loading/loaded when installed), no conversation
* ``empty-no-model``  the window started without a model: the hint to the recommended models and Import
* ``streaming`` a reply streaming from the loaded model (``--model`` or the demo model)
* ``banner``    the first reply of a model whose template has no tool format: the notice banner
* ``tool-call-with-panel``  a reply with a tool call, its chip selected in the side panel
* ``settings``  the settings dialog opened at chat.tool_format
* ``models``    the Models page, once it has scanned the library (``models-800x600``: in an 800x600 window)
* ``theme-switch``  started in the other theme, then switched at run time in Settings → Appearance
* and the others listed in :mod:`app.ui.dev.screenshots`

The picture is taken only when the state is really reached (model loaded, reply streaming or
done, banner shown, tool called, library scanned); ``--quit-after`` bounds the wait (default
60 s). When the state is not reached, nothing is saved, the reason is printed and the exit
code is 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from pathlib import Path

__all__ = ["SCREENSHOT_LIMIT_S", "STATES", "build_parser", "main"]

STATES = (
    "empty",
    "empty-no-model",
    "streaming",
    "tool-call-with-panel",
    "banner",
    "settings",
    "models",
    "models-800x600",
    "check",
    "cut-off",
    "context-full",
    "failed-load",
    "recommended",
    "server",
    "remote",
    "reply-versions",
    "live-call",
    "thinking",
    "theme-switch",
    "turn-waits",
    "image-chat",
)
SCREENSHOT_LIMIT_S = 60.0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="callisto", description="Callisto: chat with local models.")
    p.add_argument("--screenshot", metavar="PATH", help="render the window, save a PNG to PATH and exit")
    p.add_argument(
        "--quit-after",
        metavar="SECONDS",
        type=float,
        default=None,
        help="quit after this many seconds (with --screenshot: the longest to wait for the state, "
        f"default {SCREENSHOT_LIMIT_S:g})",
    )
    p.add_argument("--state", choices=STATES, default="empty", help="which main state --screenshot renders")
    p.add_argument("--model", metavar="GGUF", default=None, help="load this model instead of the last one")
    p.add_argument(
        "--theme",
        choices=("auto", "system", "light", "dark"),
        default="auto",
        help="colour scheme (default: the Settings → Appearance choice, which follows the OS)",
    )
    p.add_argument(
        "--prompt",
        default=None,
        help="a message to send as soon as the model is loaded (with --screenshot: in message states)",
    )
    return p


def _send_when_loaded(window, prompt: str) -> None:
    """Send ``prompt`` once, in a new chat, when the first model is ready."""

    def on_ready(_info) -> None:
        window.sig_model_ready.disconnect(on_ready)
        window.new_chat()
        window.send(prompt)

    window.sig_model_ready.connect(on_ready)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.screenshot and importlib.util.find_spec("app.ui.dev") is None:  # the bundle leaves it out
        print(
            "--screenshot is a development tool: run it from a source checkout (python -m app).",
            file=sys.stderr,
        )
        return 2
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.ui import runtime  # folders, rotating log, exception dialog
    from app.ui.collector import MainThreadCollector
    from app.ui.main_window import MainWindow
    from app.ui.theme import apply_theme, install_theme_follower

    runtime.setup()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Callisto")
    app.setOrganizationName("Callisto")
    runtime.install_exception_hooks()  # now with a QApplication: unhandled errors show a dialog
    from app.ui.binding_check import binding_problem

    if (problem := binding_problem()) is not None:  # a Qt binding that will crash the window
        logging.getLogger(__name__).error(problem)
        print(f"callisto: {problem}", file=sys.stderr)
    collector = MainThreadCollector(app)  # before any worker thread: cycles are freed on this one
    collector.start()
    guard = None
    if not args.screenshot:  # a second launch focuses the running window
        guard = runtime.SingleInstance()
        if guard.activate_running():
            return 0
    from app.storage.settings import load_settings

    settings, settings_notice = load_settings()
    theme = settings.window.theme if args.theme == "auto" else args.theme  # Settings → Appearance
    switch_to = theme
    if args.screenshot and args.state == "theme-switch":  # started in the other theme, switched later
        from app.ui.dev.screenshot_theme import opposite_theme

        theme = settings.window.theme = opposite_theme(switch_to)
    apply_theme(app, theme)
    install_theme_follower(app)
    window = MainWindow(
        settings=settings,
        settings_notice=settings_notice,
        autoload=not (args.screenshot and args.state == "empty-no-model"),
        model_path=args.model,
    )
    if not settings.window.geometry or args.screenshot:  # else the size and place it had last time
        window.resize(1200, 760)
    window.show()
    app.aboutToQuit.connect(window.shutdown)
    if guard is not None:
        guard.listen(window)

    if args.screenshot:
        from app.ui.dev.screenshots import ScreenshotDirector

        limit = args.quit_after if args.quit_after is not None else SCREENSHOT_LIMIT_S
        director = ScreenshotDirector(
            app,
            window,
            args.state,
            Path(args.screenshot),
            limit_s=limit,
            prompt=args.prompt,
            force_tool=not args.model,  # the default model: the tool states choose the calculator (U24)
            switch_to=switch_to,
        )
        director.start()
        code = app.exec()
        window.shutdown()
        return code or director.exit_code
    if args.prompt:
        _send_when_loaded(window, args.prompt)
    if args.quit_after is not None:
        QTimer.singleShot(int(1000 * args.quit_after), app.quit)
    code = app.exec()
    window.shutdown()
    return code
