"""UI fixtures: offscreen Qt, the real MainWindow on a scripted (or tiny) real GGUF."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from tests.support.tool_done import write_tool_done_model  # noqa: E402
from tests.ui.scripted_gguf import (  # noqa: E402
    CHATML,
    code_heavy_section,
    markdown_script,
    streaming_script,
    unique_chunks,
    write_scripted_gguf,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
QWEN25 = (FIXTURES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _collect_on_the_main_thread():
    """After each test, free its widgets here, on the GUI thread.

    A failed test's traceback (``sys.last_traceback``) keeps its widgets alive; left to themselves they
    would be freed by whichever thread next runs Python's cycle collector, and a worker thread (the check
    runner, the engine bridge) freeing a QWidget crashes the process. So the traceback is let go and the
    collector runs here, after pytest-qt has closed the test's widgets."""
    yield
    import gc
    import sys

    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    from PySide6.QtCore import QCoreApplication, QEvent

    if QCoreApplication.instance() is not None:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
        gc.freeze()  # what outlived the test: the next test's collection walks only what it makes


def call_token(name: str, arguments: str) -> str:
    """The whole Hermes tool call as one user-defined token of a scripted model."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


@pytest.fixture
def streaming_model(tmp_path) -> Path:
    """ChatML without tools: streams "abc...z abc...z" forever (never EOS)."""
    return write_scripted_gguf(
        tmp_path / "stream.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )


@pytest.fixture
def markdown_model(tmp_path) -> Path:
    """ChatML without tools: streams a code-heavy Markdown reply (headings, paragraphs, lists, fenced
    python blocks) of ~4.3 characters a token, round and round (never EOS)."""
    tokens = unique_chunks(code_heavy_section())
    script = markdown_script(tokens)
    return write_scripted_gguf(
        tmp_path / "markdown.gguf",
        chat_template=CHATML,
        script=script,
        default_next=tokens[0],
        user_tokens=tokens,
        embedding_length=512,
    )


@pytest.fixture
def tool_model(tmp_path) -> Callable[..., Path]:
    """Qwen 2.5's real template (Hermes family): the first reply is one tool call, the next one
    (after the tool result) is the text ``answer``."""

    def make(name: str, arguments: str, answer: str = "The tool answered.") -> Path:
        return write_tool_done_model(tmp_path / f"tool-{name}.gguf", call_token(name, arguments), answer)

    return make


@pytest.fixture
def make_server_page(qtbot) -> Callable[..., object]:
    """``make_server_page(model_path, n_ctx=...)``: the real Server page on a free port, with its own
    settings saved to the store; its server is stopped at the end."""
    from app.storage.settings import Settings, save_settings
    from app.ui.server_page import ServerPage
    from tests.support.ports import free_port

    pages = []

    def make(model: Path, *, n_ctx: int) -> ServerPage:
        settings = Settings()
        settings.server.port = free_port()
        p = ServerPage(
            settings,
            model_path=lambda: str(model),
            save=lambda: save_settings(settings),
            n_ctx=n_ctx,
            n_threads=1,
            use_library=False,
        )
        pages.append(p)
        qtbot.addWidget(p)
        p.show()
        return p

    yield make
    for p in pages:
        p.stop()


@pytest.fixture
def make_window(qtbot) -> Callable[..., object]:
    """``make_window(model_path, **settings)``: the real window with its worker; waits for the load."""
    from app.storage.history import History
    from app.storage.settings import Settings, save_settings
    from app.ui.main_window import MainWindow

    windows = []

    def make(
        model_path: Path | None,
        *,
        settings: Settings | None = None,
        wait_loaded: bool = True,
        history: History | None = None,
    ) -> MainWindow:
        s = settings or Settings()
        save_settings(s)
        w = MainWindow(
            settings=s, history=history or History(), autoload=model_path is not None, model_path=model_path
        )
        windows.append(w)
        qtbot.addWidget(w)
        if not s.window.geometry:  # else the window has the size it had last time
            w.resize(1100, 700)
        w.show()
        if model_path is not None and wait_loaded:
            qtbot.waitUntil(lambda: w.model_info is not None, timeout=30_000)
        return w

    yield make
    for w in windows:
        w.shutdown()
