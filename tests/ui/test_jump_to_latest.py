"""The chat's "↓ Latest" button: hidden while the view is at the latest message (and follows the reply
as it grows), shown over the chat's bottom edge once the person scrolls up (new text then leaves
the view where they put it), and one click (or Ctrl+End in the chat) goes back down and follows
again. The real ChatView, its real messages and scroll bar."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.ui.chat.view import ChatView

PARAGRAPH = "\n\n".join(f"Line {k}: some words to read in the chat." for k in range(6))


def _view(qtbot) -> ChatView:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(520, 320)
    view.show()
    qtbot.waitExposed(view)
    return view


def _reply(view: ChatView, text: str) -> None:
    view.begin_assistant()
    view.append_text(text)
    view.end_assistant("done")


def test_the_button_shows_once_scrolled_up_and_takes_the_view_back_down(qtbot):
    view = _view(qtbot)
    bar = view.verticalScrollBar()
    for k in range(6):
        view.add_user(f"Question {k}\n\n{PARAGRAPH}")
        _reply(view, PARAGRAPH)
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())
    assert view.follow.following and view.follow.button.isHidden()

    # a message is sent: the view goes down to it and its reply
    bar.setValue(0)
    view.add_user("One more question")
    reply = view.begin_assistant()
    reply.append_text("Let me think.")
    qtbot.waitUntil(lambda: bar.value() == bar.maximum())
    assert view.follow.following

    bar.setValue(0)  # the person scrolls up to read while the reply is written
    assert not view.follow.following and view.follow.button.isVisible()
    button, viewport = view.follow.button.geometry(), view.viewport().geometry()
    assert viewport.contains(button)  # over the chat, at its bottom edge
    assert button.bottom() > viewport.center().y()

    top = bar.maximum()
    view.append_text("\n\n" + PARAGRAPH)
    view.end_assistant("done")
    qtbot.waitUntil(lambda: bar.maximum() > top)
    assert bar.value() == 0 and view.follow.button.isVisible()  # new text does not pull the view away

    qtbot.mouseClick(view.follow.button, Qt.MouseButton.LeftButton)
    assert bar.value() == bar.maximum() and view.follow.following and view.follow.button.isHidden()
    top = bar.maximum()
    _reply(view, PARAGRAPH)  # at the latest again: the view follows what is written
    qtbot.waitUntil(lambda: bar.maximum() > top and bar.value() == bar.maximum())

    bar.setValue(bar.maximum() // 2)
    assert view.follow.button.isVisible()
    qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    assert bar.value() == bar.maximum() and view.follow.button.isHidden()


def test_a_short_chat_has_no_button_and_clearing_hides_it(qtbot):
    view = _view(qtbot)
    bar = view.verticalScrollBar()
    view.add_user("Hi")
    _reply(view, "Hello.")
    qtbot.wait(50)
    assert bar.maximum() == 0 and view.follow.button.isHidden()
    for _ in range(4):
        view.add_user(PARAGRAPH)
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    bar.setValue(0)
    assert view.follow.button.isVisible()
    view.clear()  # another conversation opens: no scrolling left to do
    qtbot.waitUntil(lambda: bar.maximum() == 0)
    assert view.follow.button.isHidden()
