"""The context meter counts the message being written, in the real window on a scripted GGUF: a
moment after typing, the meter's figure is the prompt with the message (the engine's own count,
``measure_draft``), its tooltip says the message's share; an attached file counts; a message too
long for the context turns the meter to "full"; clearing the box gives the conversation's own
figure back. While the engine runs someone else's job, nothing is asked of it (the meter keeps its
figure) and the message is counted once the engine is free."""

from __future__ import annotations

import threading

from app.engine.context import measure, measure_draft
from app.engine.host import Job
from app.storage.settings import Settings
from tests.ui.scripted_gguf import write_alphabet_model

TIMEOUT = 30_000


def _window(qtbot, make_window):
    s = Settings()
    s.sampling.max_tokens = 2
    s.model.context_length = 512
    w = make_window(write_alphabet_model(), settings=s)
    qtbot.waitUntil(lambda: w.context_usage is not None, timeout=TIMEOUT)
    return w


def test_the_meter_counts_the_message_being_written(qtbot, make_window, tmp_path):
    w = _window(qtbot, make_window)
    base = w.context_usage.prompt_tokens
    assert w.context_usage.draft_tokens == 0

    w.compose.setPlainText("abc " * 30)
    qtbot.waitUntil(lambda: w.context_usage.draft_tokens > 0, timeout=TIMEOUT)
    usage = w.context_usage
    session = w.worker.session
    # the engine's own count, of the box's text as Send takes it (stripped)
    assert usage == measure_draft(session, ("abc " * 30).strip())
    assert usage.prompt_tokens == base + usage.draft_tokens
    tip = w.context_meter.toolTip()
    assert f"{usage.draft_tokens:,} the message being written" in tip
    assert w.context_meter.property("level") == "ok"

    notes = tmp_path / "notes.txt"
    notes.write_text("abc " * 40, encoding="utf-8")
    assert w.chat_ctl.files.add_paths([notes])
    qtbot.waitUntil(lambda: w.context_usage.draft_tokens > usage.draft_tokens + 30, timeout=TIMEOUT)

    w.compose.setPlainText("abc " * 600)  # longer than the context
    qtbot.waitUntil(lambda: not w.context_usage.fits, timeout=TIMEOUT)
    assert w.context_meter.property("level") == "full"
    assert "The message being written does not fit." in w.context_meter.toolTip()

    w.chat_ctl.files.pending.clear()
    w.compose.clear()
    qtbot.waitUntil(lambda: w.context_usage.draft_tokens == 0, timeout=TIMEOUT)
    assert w.context_usage.prompt_tokens == base == measure(session).prompt_tokens


def test_nothing_is_asked_of_a_busy_engine_and_the_message_is_counted_once_it_is_free(qtbot, make_window):
    w = _window(qtbot, make_window)
    hold, running = threading.Event(), threading.Event()

    def others_job(_host, _model) -> None:  # the check or the server, working on the engine
        running.set()
        hold.wait(TIMEOUT / 1000)

    w.worker.host.submit(Job(run=others_job, owner="check"), bounded=False)
    qtbot.waitUntil(running.is_set, timeout=TIMEOUT)
    try:
        assert not w.worker.jobs.idle()
        assert not w.worker.measure_draft("abc abc")  # not queued behind it
        w.compose.setPlainText("abc " * 10)
        qtbot.wait(600)  # (past the meter's delay: it asked, and was told the engine is busy)
        assert w.context_usage.draft_tokens == 0
    finally:
        hold.set()
    qtbot.waitUntil(w.worker.jobs.idle, timeout=TIMEOUT)
    w.compose.insertPlainText("abc")  # the next key once the engine is free
    qtbot.waitUntil(lambda: w.context_usage.draft_tokens > 0, timeout=TIMEOUT)
