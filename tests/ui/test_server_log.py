"""The Server page's request log: a failed request says why on one line (its whole message in the
tooltip) and its status stands out with its name; times read as a person says them; the oldest
rows go past the limit."""

from __future__ import annotations

import pytest

from app.server import RequestLogEntry


def _entry(**changes) -> RequestLogEntry:
    base = {
        "time": 1_700_000_000.0,
        "method": "POST",
        "path": "/v1/chat/completions",
        "model": "loop-hermes",
        "prompt_tokens": 31,
        "completion_tokens": 12,
        "duration_s": 2.74,
        "tool_calls": 0,
        "status": 200,
    }
    return RequestLogEntry(**{**base, **changes})


@pytest.fixture
def log(qtbot):
    from app.ui.server_log import RequestLog

    table = RequestLog()
    qtbot.addWidget(table)
    table.resize(1000, 300)
    table.show()
    return table


def _row(log, r: int) -> dict:
    from app.ui.server_log import LOG_COLUMNS

    return {name: log.item(r, c) for c, name in enumerate(LOG_COLUMNS)}


def test_a_served_request_reads_plainly(log):
    from PySide6.QtCore import Qt

    log.add(_entry())
    row = _row(log, 0)
    assert row["Tokens"].text() == "31 + 12" and row["Duration"].text() == "2.7 s"
    assert row["Status"].text() == "200" and row["Status"].toolTip() == "200 OK"
    assert row["Error"].text() == "" and row["Error"].toolTip() == ""
    assert row["Status"].background().style() == Qt.BrushStyle.NoBrush  # the table's own colours


def test_a_failed_request_says_why_on_one_line(log):
    from app.ui.server_log import FAILED_COLOR

    why = "the prompt is 3097 tokens but the context holds 256:\nshorten the conversation"
    log.add(_entry(status=400, error=why, duration_s=0.004, prompt_tokens=0, completion_tokens=0))
    row = _row(log, 0)
    assert (
        row["Error"].text() == "the prompt is 3097 tokens but the context holds 256: shorten the conversation"
    )
    assert row["Error"].toolTip() == why
    assert row["Status"].toolTip() == "400 Bad Request"
    assert row["Status"].background().color().name() == FAILED_COLOR
    assert row["Duration"].text() == "4 ms" and row["Tokens"].text() == ""
    # cut, an error keeps its start (what went wrong); a model's name keeps both ends
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QStyleOptionViewItem

    from app.ui.server_log import LOG_COLUMNS

    option = QStyleOptionViewItem()
    column = LOG_COLUMNS.index("Error")
    log.itemDelegateForColumn(column).initStyleOption(option, log.model().index(0, column))
    assert option.textElideMode == Qt.TextElideMode.ElideRight
    assert log.itemDelegateForColumn(LOG_COLUMNS.index("Model")) is None  # the table's: the middle


def test_a_stream_that_failed_after_its_200_and_a_client_that_left_stand_out(log):
    from app.ui.server_log import FAILED_COLOR

    log.add(_entry(status=499, error="the client closed the connection before the response ended"))
    log.add(_entry(status=200, error="the engine crashed while generating"))  # (as a client saw it)
    assert _row(log, 0)["Status"].toolTip() == "499 Client Closed Request"
    for r in (0, 1):
        assert _row(log, r)["Status"].background().color().name() == FAILED_COLOR


def test_a_long_model_name_is_cut_in_the_middle_with_its_whole_name_in_the_tooltip(log):
    from PySide6.QtCore import Qt

    from app.ui.server_log import LOG_COLUMNS

    name = "hf.co/bartowski/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q4_K_M"
    log.add(_entry(model=name))
    assert _row(log, 0)["Model"].toolTip() == name
    assert log.textElideMode() == Qt.TextElideMode.ElideMiddle and not log.wordWrap()
    assert log.columnWidth(LOG_COLUMNS.index("Model")) < log.fontMetrics().horizontalAdvance(name)


def test_the_oldest_rows_go_past_the_limit(log, monkeypatch):
    import app.ui.server_log as server_log

    monkeypatch.setattr(server_log, "MAX_ROWS", 3)
    for i in range(5):
        log.add(_entry(path=f"/v1/p{i}"))
    assert [_row(log, r)["Path"].text() for r in range(log.rowCount())] == ["/v1/p2", "/v1/p3", "/v1/p4"]


def test_copy_puts_the_chosen_rows_on_the_clipboard_whole(qtbot, log):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from app.ui.server_log import LOG_COLUMNS

    why = "model 'gpt-4o' not found; available models: " + ", ".join(f"model-{i}" for i in range(40))
    log.add(_entry())
    log.add(_entry(status=404, error=why, model="", prompt_tokens=0, completion_tokens=0))
    log.add(_entry(path="/v1/models", method="GET"))
    QApplication.clipboard().setText("")
    log.setFocus()
    log.selectRow(1)
    qtbot.keyClick(log, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    lines = QApplication.clipboard().text().split("\n")
    assert lines[0] == "\t".join(LOG_COLUMNS)
    row = dict(zip(LOG_COLUMNS, lines[1].split("\t"), strict=True))
    assert len(lines) == 2 and row["Status"] == "404" and row["Error"] == why  # whole, not cut
    # several rows, in the table's order; nothing chosen copies nothing
    log.selectAll()
    log.copy_selected()
    assert len(QApplication.clipboard().text().split("\n")) == 4
    log.clearSelection()
    QApplication.clipboard().setText("kept")
    log.copy_selected()
    assert QApplication.clipboard().text() == "kept"


def test_the_log_follows_new_rows_unless_scrolled_up(qtbot, log):
    log.resize(1000, 150)
    for i in range(30):
        log.add(_entry(path=f"/v1/p{i}"))
    bar = log.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())  # it follows
    log.add(_entry(path="/v1/newest"))
    qtbot.waitUntil(lambda: bar.value() == bar.maximum())
    bar.setValue(0)  # the person scrolls up to read an old row
    for i in range(5):
        log.add(_entry(path=f"/v1/later{i}"))
    qtbot.wait(50)  # (the range grows a moment later)
    assert bar.value() == 0 and bar.maximum() > 0
    bar.setValue(bar.maximum())  # back at the bottom: it follows again
    log.add(_entry(path="/v1/last"))
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() and log.rowAt(log.viewport().height() - 2) >= 35)
