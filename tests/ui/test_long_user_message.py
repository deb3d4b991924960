"""A long message of the person's (a pasted document or log) is folded to its first lines with
"Show all" under it, in the real window over a stored conversation in real SQLite; a short one is
never cut. Copy and Edit have the whole text, the fold follows the width, and Find in chat finds
words in the folded part and opens the fold for the current match."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from app.storage.history import History, TurnMessage
from app.ui.chat.bubble import FOLD_LINES, FOLDED_LINES

LOG = (
    "\n\n".join(f"Line {k}: the service answered in {k * 7} ms." for k in range(60)) + "\n\nneedle at the end"
)


def _window(qtbot, make_window):
    h = History()
    cid = h.create_conversation("Logs").id
    h.record_turn(cid, None, [TurnMessage("user", "Hello"), TurnMessage("assistant", "Hi!")])
    h.record_turn(cid, None, [TurnMessage("user", LOG), TurnMessage("assistant", "That log looks fine.")])
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    w.conversations_ctl.open_conversation(cid)
    qtbot.waitUntil(lambda: len(w.chat.user_messages()) == 2)
    short, long = w.chat.user_messages()
    qtbot.waitUntil(lambda: long.view.content_height > 0 and long.view.isVisible())
    return w, short, long


def _line(msg) -> int:
    return msg.view.fontMetrics().lineSpacing()


def test_a_long_message_is_folded_and_shows_all_on_click(qtbot, make_window):
    w, short, long = _window(qtbot, make_window)
    assert not short.fold.isVisibleTo(short) and short.view.cap is None and not short.folded
    qtbot.waitUntil(lambda: long.folded)
    line = _line(long)
    assert long.view.content_height > FOLD_LINES * line
    assert long.view.height() <= FOLDED_LINES * line + 8 < long.view.content_height
    assert long.fold.isVisibleTo(long) and long.fold.text().startswith("Show all (")
    hidden = int(long.fold.text().split("(")[1].split()[0])  # "Show all (N more lines)"
    assert abs(hidden * line - (long.view.content_height - long.view.height())) <= line

    qtbot.mouseClick(long.fold, Qt.MouseButton.LeftButton)
    assert not long.folded and long.fold.text() == "Show less"
    assert long.view.height() == long.view.content_height
    qtbot.mouseClick(long.fold, Qt.MouseButton.LeftButton)
    assert long.folded and long.fold.text().startswith("Show all (")

    # Copy takes the whole message, folded or not
    qtbot.mouseClick(long.btn_copy, Qt.MouseButton.LeftButton)
    assert QApplication.clipboard().text() == LOG


def test_edit_shows_the_whole_text_and_the_fold_comes_back_after(qtbot, make_window):
    w, _short, long = _window(qtbot, make_window)
    qtbot.waitUntil(lambda: long.folded)
    long.start_edit()
    assert long.editor.toPlainText() == LOG and not long.fold.isVisibleTo(long)
    long.cancel_edit()
    assert long.folded and long.fold.isVisibleTo(long)


def test_the_fold_follows_the_width(qtbot, make_window):
    """A long paragraph folds in a narrow window and shows whole in a wide one, where it takes
    fewer lines than the fold's threshold."""
    w, short, long = _window(qtbot, make_window)
    paragraph = w.chat.add_user(" ".join(["word"] * 450))
    w.resize(800, 600)
    qtbot.waitUntil(lambda: paragraph.folded)
    w.resize(1800, 900)
    qtbot.waitUntil(lambda: not paragraph.folded and not paragraph.fold.isVisibleTo(paragraph))
    assert paragraph.view.height() == paragraph.view.content_height
    assert long.folded and not short.folded


def test_find_opens_the_fold_of_a_match_in_the_folded_part(qtbot, make_window):
    w, _short, long = _window(qtbot, make_window)
    qtbot.waitUntil(lambda: long.folded)
    bar = w.conversations_ctl.find_bar
    bar.open("Line 3:")
    assert bar.count.text() == "1 of 1" and bar.current.view is long.view
    assert long.folded  # a match in the shown start opens nothing
    bar.open("needle")
    assert bar.count.text() == "1 of 1" and bar.current.view is long.view
    assert not long.folded and long.fold.text() == "Show less"

    def in_view() -> bool:
        rect = bar.current.view.cursorRect(bar.current.cursor)
        at = bar.current.view.viewport().mapTo(w.chat.viewport(), rect.topLeft())
        return w.chat.viewport().rect().contains(at + QPoint(1, 1))

    qtbot.waitUntil(in_view)
