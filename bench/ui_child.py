"""Child process of figure 6 (``python -m bench.ui_child startup|stall``); prints ``KEY value``
lines the parent reads. Runs offscreen with CALLISTO_HOME set by the parent.

* ``startup``: the window as ``python -m app`` builds it (runtime set-up, theme, MainWindow), no
  model; prints ``PAINTED`` as soon as the window has handled its first paint event, then idles
  for ``IDLE_S`` seconds with the event loop running and prints ``RSS <bytes>``.
* ``stall``: the real window on a scripted real GGUF that streams a code-heavy Markdown reply forever; a 1 ms precise
  heartbeat on the main thread from the send until the turn is rendered (2,000 tokens); prints
  ``MAXGAP <ms>``, ``TOKENS <n>`` and ``BEATS <n>``.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

IDLE_S = 2.0


def _print(*parts: object) -> None:
    print(*parts, flush=True)


def startup() -> int:
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication

    from app.ui import runtime
    from app.ui.main_window import MainWindow
    from app.ui.theme import apply_theme, install_theme_follower

    runtime.setup()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Callisto")
    app.setOrganizationName("Callisto")
    apply_theme(app, None)
    install_theme_follower(app)
    window = MainWindow(autoload=False)
    window.resize(1200, 760)

    class FirstPaint(QObject):
        seen = False

        def eventFilter(self, obj, ev):  # noqa: N802 - Qt's name
            if not self.seen and ev.type() == QEvent.Type.Paint:
                self.seen = True
                QTimer.singleShot(0, lambda: _print("PAINTED"))
            return False

    f = FirstPaint()
    window.installEventFilter(f)
    window.show()

    def report() -> None:
        import gc

        import psutil

        gc.collect()
        _print("RSS", psutil.Process().memory_info().rss)
        window.shutdown()
        app.quit()

    QTimer.singleShot(int(IDLE_S * 1000), report)
    return app.exec()


def stall(tokens: int = 2000) -> int:
    import tempfile
    from pathlib import Path

    from PySide6.QtCore import QElapsedTimer, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from app.storage.history import History
    from app.storage.settings import Settings, save_settings
    from app.ui.main_window import MainWindow
    from tests.ui.scripted_gguf import (
        CHATML,
        code_heavy_section,
        markdown_script,
        unique_chunks,
        write_scripted_gguf,
    )

    app = QApplication.instance() or QApplication(sys.argv[:1])
    # The worst realistic case for the chat view: a code-heavy Markdown reply (headings, lists,
    # fenced python blocks, ~4.3 characters a token), as tests/ui's stall test streams.
    chunks = unique_chunks(code_heavy_section())
    model = write_scripted_gguf(
        Path(tempfile.mkdtemp(prefix="bench-ui-")) / "markdown.gguf",
        chat_template=CHATML,
        script=markdown_script(chunks),
        default_next=chunks[0],
        user_tokens=chunks,
        embedding_length=512,
    )
    s = Settings()
    s.sampling.max_tokens = tokens
    save_settings(s)
    w = MainWindow(settings=s, history=History(), autoload=True, model_path=model)
    w.resize(1100, 700)
    w.show()
    deadline = time.monotonic() + 120
    while w.model_info is None:
        app.processEvents()
        time.sleep(0.01)
        if time.monotonic() > deadline:
            _print("ERROR the model did not load")
            return 1
    gaps: list[int] = []
    clock = QElapsedTimer()
    state = {"on": False, "done": None}

    def beat() -> None:
        if state["on"]:
            if clock.isValid():
                gaps.append(clock.restart())
            else:
                clock.start()

    def send() -> None:
        state["on"] = True  # measured from the send to the rendered end of the turn
        if not w.send():
            _print("ERROR the window refused to send")
            app.quit()

    def done(ev) -> None:
        state["on"] = False
        state["done"] = ev
        app.quit()

    hb = QTimer()
    hb.setTimerType(Qt.TimerType.PreciseTimer)
    hb.setInterval(1)
    hb.timeout.connect(beat)
    hb.start()
    w.sig_turn_done.connect(done)
    w.compose.setPlainText("Stream a lot")
    QTimer.singleShot(0, send)
    QTimer.singleShot(300_000, app.quit)
    app.exec()
    hb.stop()
    ev = state["done"]
    _print("TOKENS", getattr(ev, "generated_tokens", 0))
    _print("BEATS", len(gaps))
    _print("MAXGAP", max(gaps) if gaps else -1)
    w.shutdown()
    return 0 if ev is not None else 1


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "startup":
        sys.exit(startup())
    if mode == "stall":
        sys.exit(stall(int(sys.argv[2]) if len(sys.argv) > 2 else 2000))
    sys.exit(f"usage: python -m bench.ui_child startup|stall [tokens]  (got {mode!r})")
