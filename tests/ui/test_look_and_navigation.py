"""Look and navigation, on the real views and window."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel

from app.calls import ToolCall, ToolResult
from app.storage.history import History
from app.storage.settings import Settings, load_settings
from app.ui.call_view import CallView
from app.ui.chat import ChatView
from app.ui.tool_panel import ToolCallPanel
from tests.ui.turns import send_turn

DONE_TIMEOUT = 30_000


def _settings(max_tokens: int = 4) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    return s


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT)


def test_d21_tool_call_is_an_inline_card_with_details_and_raw_behind_show_raw(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.show()
    raw = '<tool_call>{"name": ...}</tool_call>'
    calc = CallView(ToolCall("c1", "calculator", {"expression": "17 * 23"}, raw))
    chip = view.show_call(calc).chip
    view.show_call(calc.finished(ToolResult("c1", "calculator", content="391", duration_s=0.0003)))
    card = view.find_card("c1")
    assert chip.text() == '⚙ calculator(expression="17 * 23") ✓ → 391 · 0.3 ms'
    assert card.body.isHidden() and card.raw_view.isHidden()
    card.toggle.click()
    assert not card.body.isHidden()
    assert '"expression": "17 * 23"' in card.body.text() and "Result:\n391" in card.body.text()
    assert "0.3 ms" in card.body.text() and card.raw_view.isHidden()
    card.btn_raw.click()
    assert not card.raw_view.isHidden() and "<tool_call>" in card.raw_view.text()
    # a denied call reads as such without an emoji font
    write = CallView(ToolCall("c2", "write_file", {"path": "note.txt"}))
    view.show_call(write)
    denied = ToolResult(
        "c2", "write_file", error="The user denied permission to run 'write_file'.", approval="denied"
    )
    view.show_call(write.finished(denied))
    assert (
        "✗ denied → The user denied" in view.find_card("c2").chip.text()
        and "⛔" not in view.find_card("c2").chip.text()
    )


def test_d19_d20_panel_uses_plain_words_and_tells_calls_apart(qtbot):
    panel = ToolCallPanel()
    qtbot.addWidget(panel)
    for i, expr in enumerate(("1+1", "2*3")):
        call = CallView(ToolCall(f"call{i}", "calculator", {"expression": expr}))
        panel.show_call(call)
        two = ToolResult(f"call{i}", "calculator", content="2", duration_s=0.0003)
        panel.show_call(call.finished(two))
    rows = [panel.list.item(i).text() for i in range(panel.list.count())]
    assert rows == ['✓ calculator(expression="1+1") · 0.3 ms', '✓ calculator(expression="2*3") · 0.3 ms']
    detail = panel.detail_text()
    assert "Approval: not needed" in detail and "call id" not in detail and "auto" not in detail
    failed = ToolResult("call1", "calculator", error="no", duration_s=0.001, approval="allowed_once")
    panel.show_call(CallView(ToolCall("call1", "calculator", {}), failed))
    panel.select_call("call1")
    assert "allowed once" in panel.detail_text() and "allowed_once" not in panel.detail_text()


def test_d38_edit_box_sends_with_enter_cancels_with_esc_and_warns_what_it_discards(
    qtbot, make_window, streaming_model
):
    w = make_window(streaming_model, settings=_settings())
    _send(qtbot, w, "one")
    _send(qtbot, w, "two")
    first = w.chat.user_messages()[0]
    qtbot.mouseClick(first.btn_edit, Qt.MouseButton.LeftButton)
    assert first.editor.isVisible() and "discards the 2 later message(s)" in first.discard_note.text()
    qtbot.keyClick(first.editor, Qt.Key.Key_Escape)
    assert not first.editor.isVisible() and w.chat.user_messages()[0].text == "one"
    qtbot.mouseClick(first.btn_edit, Qt.MouseButton.LeftButton)
    first.editor.setPlainText("one, edited")
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.keyClick(first.editor, Qt.Key.Key_Return)
    assert [m.text for m in w.chat.user_messages()] == ["one, edited"]


def test_d40_window_size_position_and_last_conversation_are_remembered(
    qtbot, make_window, streaming_model, tmp_path
):
    hist = tmp_path / "h.sqlite3"
    w = make_window(streaming_model, settings=_settings(), history=History(hist))
    _send(qtbot, w, "remember me")
    cid = w.conversation_id
    w.resize(700, 520)
    w.shutdown()
    saved = load_settings()[0]
    assert saved.window.last_conversation_id == cid and saved.window.geometry
    w2 = make_window(None, settings=saved, history=History(hist))
    assert w2.conversation_id == cid and [m.text for m in w2.chat.user_messages()] == ["remember me"]
    assert w2.size() == QSize(700, 520)


def test_d41_help_menu_lists_shortcuts_and_ctrl_k_searches(qtbot, make_window):
    w = make_window(None, settings=_settings())
    menus = [a.text().replace("&", "") for a in w.menuBar().actions()]
    assert menus == ["File", "Edit", "View", "Help"]
    assert w.act_quit.shortcut() == QKeySequence("Ctrl+Q")
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QKeyEvent, QShortcut
    from PySide6.QtWidgets import QApplication

    # the message box leaves Ctrl+K to the window (a text box would delete to the end of the line)
    override = QKeyEvent(QEvent.Type.ShortcutOverride, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    QApplication.sendEvent(w.compose, override)
    assert not override.isAccepted()
    (search,) = [sc for sc in w.findChildren(QShortcut) if sc.key() == QKeySequence("Ctrl+K")]
    w.compose.setFocus()
    search.activated.emit()
    assert w.focusWidget() is w.conversations.search
    box = w.menus.show_shortcuts()
    text = " ".join(lab.text() for lab in box.findChildren(QLabel))
    for key in ("Ctrl+Q", "Ctrl+K", "Ctrl+N", "Esc", "Ctrl+T"):
        assert key in text
    box.close()


def test_d41_sidebar_marks_the_active_page_and_pages_register_in_it(qtbot, make_window):
    w = make_window(None, settings=_settings())
    assert w.pages["chat"].action.isChecked()
    w.act_models.trigger()
    assert w.page_stack.current_page() == "models" and w.act_models.isChecked() and not w.act_chat.isChecked()
    page = w.page_stack.add_page("extra", "Extra", lambda: QLabel("an extra page"))
    assert page.action in w.sidebar.actions()
    assert w.sidebar.actions().index(page.action) < w.sidebar.actions().index(w.act_settings)
    w.show_page("extra")
    assert w.page_stack.current_page() == "extra" and page.action.isChecked()


def test_d43_layout_works_at_800_by_600_and_side_panes_collapse(qtbot, make_window):
    w = make_window(None, settings=_settings())
    w.tool_dock.setVisible(True)
    w.resize(800, 600)
    qtbot.waitUntil(lambda: w.width() <= 820, timeout=30_000)
    assert w.chat.width() >= 340  # the chat keeps a usable column with both panes open
    w.act_conversations.trigger()  # Ctrl+B: the conversation list collapses
    assert not w.conversations.isVisible()
    qtbot.waitUntil(lambda: w.chat.width() >= 420, timeout=30_000)  # the list's room goes to the chat
    w.page_stack.show_models_page()  # the tool panel gives its room to the Models page, and comes back
    assert not w.tool_dock.isVisible()
    w.page_stack.show_chat_page()
    assert w.tool_dock.isVisible()


def test_d44_messages_sit_in_a_reading_column_of_bounded_width(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings())
    w.resize(1600, 900)
    _send(qtbot, w, "a long line " * 30)
    qtbot.waitUntil(lambda: w.chat.width() > 1000, timeout=30_000)
    assert w.chat.column.width() <= ChatView.READING_WIDTH
    left = w.chat.column.mapTo(w.chat, w.chat.column.rect().topLeft()).x()
    right = w.chat.viewport().width() - (left + w.chat.column.width())
    assert abs(left - right) <= 20  # centred


def test_d39_conversation_list_groups_by_day_has_no_matches_state_and_safe_delete(
    qtbot, make_window, streaming_model
):
    from app.ui.conversation_list import day_group

    w = make_window(streaming_model, settings=_settings())
    conv = w.conversations
    assert conv.placeholder() == "No conversations yet"
    assert not conv.btn_rename.isEnabled() and not conv.btn_delete.isEnabled()  # nothing selected
    _send(qtbot, w, "alpha")
    assert conv.list.item(0).text() == "Today" and conv.titles() == ["alpha"]
    assert conv.btn_delete.isEnabled()
    conv.search.setText("zzz-nothing")
    w.conversations_ctl.search_conversations("zzz-nothing")
    assert conv.placeholder() == "No matches"
    conv.search.setText("")
    w.conversations_ctl.search_conversations("")
    # the Delete key asks, with Cancel the default; cancelling keeps the chat
    conv.list.setCurrentItem(conv.item_for(w.conversation_id))
    qtbot.keyClick(conv.list, Qt.Key.Key_Delete)
    box = conv.confirm_box
    assert box.defaultButton() is box.button(box.StandardButton.Cancel)
    box.defaultButton().click()
    assert conv.ids() == [w.conversation_id]
    # a double-click opens, it does not start a rename
    from PySide6.QtWidgets import QAbstractItemView

    assert not conv.list.editTriggers() & QAbstractItemView.EditTrigger.DoubleClicked
    import datetime as dt

    today = dt.date(2026, 12, 1)
    stamp = dt.datetime(2026, 11, 30, 9, 0).timestamp()
    assert day_group(stamp, today) == "Yesterday"
    assert day_group(dt.datetime(2026, 10, 1).timestamp(), today) == "Earlier"
