"""The window opens over hostile files in the data folder: a template that never ends rendering in
the models folder, a history file that is not a database."""

from __future__ import annotations

from app.storage.paths import history_path
from app.storage.settings import Settings
from tests.engine.test_templates_hostile import GROWERS


def test_h2_window_opens_and_lists_models_with_a_hostile_template_in_the_models_folder(qtbot):
    from app.engine.models.tiny import write_tiny_gguf
    from app.storage.paths import models_dir
    from app.storage.settings import Settings
    from app.ui.main_window import MainWindow

    write_tiny_gguf(models_dir() / "bomb.gguf", chat_template=GROWERS["int_squaring"])
    write_tiny_gguf(models_dir() / "good.gguf", chat_template="{{ messages[0].content }}")
    w = MainWindow(settings=Settings(), autoload=False)
    qtbot.addWidget(w)
    try:
        w.show()
        # the scan runs off the UI thread and ends (before: never, and the UI thread froze)
        qtbot.waitUntil(lambda: len(w.model_bar.library_models) == 2, timeout=30_000)
        ticks = []
        qtbot.waitUntil(lambda: ticks.append(1) or len(ticks) > 3, timeout=30_000)  # the event loop runs
    finally:
        w.shutdown()


def test_h8_window_opens_with_a_notice_over_a_garbage_history(qtbot):
    from app.ui.main_window import MainWindow

    history_path().write_bytes(b"this is not a database" * 100)
    w = MainWindow(settings=Settings(), autoload=False)
    qtbot.addWidget(w)
    try:
        w.show()
        assert w.window_notices.count() >= 1
        banner = w.window_notices.itemAt(0).widget()
        assert banner.code == "history"
        assert w.history.create_conversation("x").id > 0
    finally:
        w.shutdown()
