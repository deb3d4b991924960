"""The real window, worker thread, engine, tools and SQLite, driven with pytest-qt.

Models are real llama.cpp GGUFs written per test (``tests.ui.scripted_gguf``): their next
token depends only on the current one, so they say something known.
"""

from __future__ import annotations

import gc
import json
import re
import time

import pytest
from PySide6.QtCore import QObject, Qt, QTimer, Slot
from PySide6.QtWidgets import QApplication

from app.storage.history import History
from app.storage.settings import Settings, load_settings
from app.ui.chat import AssistantMessage, UserMessage
from app.ui.settings_dialog import SettingsDialog
from tests.ui.turns import send_turn

DONE_TIMEOUT = 30_000


class _OnUiThread(QObject):
    """Receives a worker signal on the UI thread (a bound slot of a UI-thread QObject is queued)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    @Slot(str)
    def call(self, value: str) -> None:
        self.fn(value)


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT, enter=True)


def _settings(max_tokens: int = 64, **chat) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    for k, v in chat.items():
        setattr(s.chat, k, v)
    return s


def test_send_streams_reply_updates_status_and_saves_history(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=60))
    assert w.model_picker.currentData() == str(streaming_model)
    assert w.format_badge.text() == "No tools"  # plain words, not a warning pill
    chunks: list[str] = []
    rec = _OnUiThread(chunks.append)
    w.worker.sig_text.connect(rec.call)
    done = _send(qtbot, w, "Hello there")
    assert done.finish_reason == "length"
    reply = w.chat.current_assistant()
    assert reply.text() == ("abcdefghijklmnopqrstuvwxyz " * 3)[:60]
    assert "".join(chunks) == reply.text()
    assert w.compose.toPlainText() == ""  # Enter sent it
    assert w.send_button.text() == "Send"
    assert "tok/s" in w.stat_tps.text() and w.stat_tps.text() != "— tok/s"
    assert w.stat_ctx.text().startswith("context ") and "/ " in w.stat_ctx.text()
    assert re.fullmatch(r"TTFT (\d+ ms|\d+\.\d s|\d+ min \d\d s)", w.stat_ttft.text())
    # saved: the conversation, the user message and the complete reply
    conv = w.history.load_conversation(w.conversation_id)
    assert conv.title == "Hello there"
    assert [(m.role, m.status) for m in conv.messages] == [("user", "complete"), ("assistant", "complete")]
    assert conv.messages[1].content == reply.text()
    assert conv.model_path == str(streaming_model)
    assert w.conversations.titles() == ["Hello there"]
    # llama.cpp ran on the worker's thread only: it loaded the model there, and the UI thread never
    # touched it (a second calling thread costs ~40% of decode speed, see app.engine.llm)
    import threading

    assert w.worker.model.owner_thread != threading.get_ident()
    assert w.worker.model.owner_thread == w.worker.generation_thread_ident


def test_shift_enter_inserts_newline_and_ctrl_n_starts_new_chat(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=5))
    w.compose.setFocus()
    qtbot.keyClicks(w.compose, "line one")
    qtbot.keyClick(w.compose, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(w.compose, "line two")
    assert w.compose.toPlainText() == "line one\nline two"
    assert not w.busy
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.keyClick(w.compose, Qt.Key.Key_Return)
    assert isinstance(w.chat.messages[0], UserMessage) and w.chat.messages[0].text == "line one\nline two"
    qtbot.keyClick(w, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert w.chat.messages == [] and w.conversation_id is None


def test_stop_with_esc_keeps_partial_reply_as_interrupted(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=3500))
    w.compose.setPlainText("Go on forever")
    assert w.send()
    assert w.send_button.text() == "Stop"
    qtbot.waitUntil(lambda: bool(w.chat.current_assistant().text()), timeout=DONE_TIMEOUT)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        qtbot.keyClick(w, Qt.Key.Key_Escape)  # Esc stops
    done = blocker.args[0]
    assert done.finish_reason == "cancelled"
    assert done.generated_tokens < 3500
    reply = w.chat.current_assistant()
    assert reply.status == "cancelled" and reply.text()
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert msgs[-1].role == "assistant" and msgs[-1].status == "interrupted"
    assert msgs[-1].content == reply.text()
    assert not w.busy and w.send_button.text() == "Send"


UI_WORK_BUDGET_MS = 50  # the UI thread's own CPU time between two heartbeats
UI_WALL_BUDGET_MS = 1000  # wall time between two heartbeats: a UI thread blocked on a lock or a wait


class _UiHeartbeat:
    """A 10 ms heartbeat on the UI thread, measured only while ``on``: between two beats, the CPU
    time the UI thread itself used (``time.thread_time()`` sampled on the UI thread) and the wall
    time. The CPU time is the work the UI thread did without a break, whatever the OS scheduler
    did to it; the wall time catches a UI thread that waits (a lock, a synchronous generation)."""

    def __init__(self) -> None:
        self.on = False
        self.cpu_ms: list[float] = []
        self.wall_ms: list[float] = []
        self._last: tuple[float, float] | None = None
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(10)
        self.timer.timeout.connect(self._beat)

    def _beat(self) -> None:
        if not self.on:
            return
        now = (time.thread_time(), time.perf_counter())
        if self._last is not None:
            self.cpu_ms.append((now[0] - self._last[0]) * 1000)
            self.wall_ms.append((now[1] - self._last[1]) * 1000)
        self._last = now

    def problem(self) -> str | None:
        """What the measurement shows wrong (None: the UI thread never blocked)."""
        if len(self.cpu_ms) < 5:
            return "the stream was too short to measure"
        if max(self.cpu_ms) >= UI_WORK_BUDGET_MS:
            return (
                f"the UI thread worked {max(self.cpu_ms):.0f} ms without a break while streaming"
                f" (budget {UI_WORK_BUDGET_MS} ms)"
            )
        if max(self.wall_ms) >= UI_WALL_BUDGET_MS:
            return (
                f"the UI thread did not run for {max(self.wall_ms):.0f} ms while streaming"
                f" (blocked; budget {UI_WALL_BUDGET_MS} ms)"
            )
        return None


def _stream_with_heartbeat(qtbot, w, *, ui_job=None) -> tuple[_UiHeartbeat, object]:
    """Send one message and measure the UI thread from the first streamed text to the turn's end;
    ``ui_job`` runs once on the UI thread shortly after the first text. Returns (heartbeat, done)."""
    beat = _UiHeartbeat()

    def first_text(_t: str) -> None:
        if not beat.on:
            beat.on = True
            if ui_job is not None:
                QTimer.singleShot(30, ui_job)

    beat.timer.start()
    rec = _OnUiThread(first_text)
    w.worker.sig_text.connect(rec.call)
    w.compose.setPlainText("Stream a lot")
    # The objects every earlier test of this process left are moved out of the collector's reach:
    # a full collection over them (in a long suite, tens of ms) would be counted as the window's
    # work. What the window makes while streaming is still collected, and counted.
    gc.collect()
    gc.freeze()
    try:
        with qtbot.waitSignal(w.sig_turn_done, timeout=60_000) as blocker:
            assert w.send()
    finally:
        gc.unfreeze()
        beat.on = False
        beat.timer.stop()
        w.worker.sig_text.disconnect(rec.call)
    return beat, blocker.args[0]


def test_streaming_2000_tokens_never_blocks_ui_thread_over_50ms(qtbot, make_window, markdown_model):
    """The UI thread's budget: it never works more than 50 ms without a break while
    2,000 real tokens of a code-heavy Markdown reply (fenced python blocks, lists, headings,
    paragraphs: ~8,500 characters) stream. A 10 ms heartbeat on the UI thread measures the UI
    thread's own CPU time between beats (what it did, not when the OS let it run: a loaded machine
    does not fail this), and a 1 s bound on the wall time between beats catches a UI thread that is
    blocked waiting (a lock, a synchronous generation). The companion test below shows the check
    catches a 120 ms job on the UI thread."""
    w = make_window(markdown_model, settings=_settings(max_tokens=2000))
    beat, done = _stream_with_heartbeat(qtbot, w)
    assert done.generated_tokens == 2000 and done.finish_reason == "length"
    reply = w.chat.current_assistant()
    text = reply.text()
    assert len(text) > 8000 and text.count("```python") >= 10 and "\n- read " in text
    run = reply.blocks[0]
    assert len(run.views) > 40 and run.code_blocks[0].startswith("def stage_0(")
    assert beat.problem() is None, beat.problem()


def test_the_ui_stall_check_catches_a_120ms_job_on_the_ui_thread(qtbot, make_window, markdown_model):
    """The check above can fail: 120 ms of synchronous work on the UI thread mid-stream is reported
    as work over the 50 ms budget."""
    w = make_window(markdown_model, settings=_settings(max_tokens=600))
    ran: list[float] = []

    def job() -> None:  # busy, not asleep: the UI thread's own CPU time grows by 120 ms
        start = time.thread_time()
        while time.thread_time() - start < 0.12:
            pass
        ran.append(time.thread_time() - start)

    beat, done = _stream_with_heartbeat(qtbot, w, ui_job=job)
    assert done.finish_reason == "length" and ran, "the job ran while streaming"
    problem = beat.problem()
    assert problem is not None and problem.startswith("the UI thread worked"), problem
    assert max(beat.cpu_ms) >= 120


def test_banner_on_first_reply_when_auto_finds_no_format_and_link_opens_setting(
    qtbot, make_window, streaming_model
):
    w = make_window(streaming_model, settings=_settings(max_tokens=8))
    _send(qtbot, w, "first")
    banners = w.chat.banners()
    assert [b.code for b in banners] == ["no_tool_format"]
    assert banners[0].setting == "chat.tool_format"
    assert "chat.tool_format" in banners[0].label.text()
    first_reply = w.chat.assistant_messages()[0]
    assert banners[0] in first_reply.banners  # inline, above the first reply
    _send(qtbot, w, "second")
    assert len(w.chat.banners()) == 1  # only the first reply carries it
    # the link opens the settings dialog at chat.tool_format
    banners[0].label.linkActivated.emit("setting:chat.tool_format")
    dlg = w.settings_dialog
    assert isinstance(dlg, SettingsDialog) and dlg.isVisible()
    assert dlg.tabs.currentIndex() == dlg.controls["chat.tool_format"][0]
    qtbot.waitUntil(lambda: QApplication.focusWidget() is dlg.tool_format)
    assert dlg.tool_format.itemText(0) == "Automatic — detected: none (no tool calls)"
    dlg.reject()


def test_switch_tool_format_to_none_hides_banner_and_is_saved(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=8))
    dlg = w.open_settings("chat.tool_format")
    values = [dlg.tool_format.itemData(i) for i in range(dlg.tool_format.count())]
    from app.engine.formats import tool_format_choices

    assert values == [v for v, _ in tool_format_choices()]
    assert values[0] == "auto" and values[-1] == "none" and "hermes" in values
    dlg.tool_format.setCurrentIndex(values.index("none"))
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):  # the worker re-applies
        dlg._on_buttons_accepted()
    assert load_settings()[0].chat.tool_format == "none"
    assert w.format_badge.text() == "Tools off"
    w.new_chat()
    _send(qtbot, w, "hello")
    assert w.chat.banners() == []
    # back to an explicit family the template does not match: the disagreement notice
    dlg = w.open_settings("chat.tool_format")
    dlg.tool_format.setCurrentIndex(values.index("hermes"))
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        dlg._on_buttons_accepted()
    w.new_chat()
    _send(qtbot, w, "hello again")
    assert [b.code for b in w.chat.banners()] == ["tool_format_override"]


def test_tool_call_chip_selects_call_in_side_panel(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}', answer="The answer is 42.")
    w = make_window(path, settings=_settings(max_tokens=64))
    assert w.model_info.detected_format == "hermes"
    assert "Hermes" in w.format_badge.text()
    done = _send(qtbot, w, "What is 6*7?")
    assert done.finish_reason == "stop" and done.rounds == 2
    reply = w.chat.current_assistant()
    assert list(reply.cards) and reply.text().endswith("The answer is 42.")
    call_id = next(iter(reply.cards))
    chip = reply.cards[call_id].chip
    assert chip.view.status == "ok" and "calculator" in chip.text()
    assert not w.tool_dock.isVisible()
    qtbot.mouseClick(chip, Qt.MouseButton.LeftButton)
    assert w.tool_dock.isVisible()
    assert w.tool_panel.selected_call_id() == call_id
    detail = w.tool_panel.detail_text()
    assert '"expression": "6*7"' in detail  # typed arguments, pretty JSON
    assert "42" in detail and "Raw text the model wrote" in detail
    assert "<tool_call>" in detail and "Approval: not needed" in detail  # plain words, not "auto"
    entry = w.tool_panel.entries[call_id]
    assert entry.outcome.content == "42" and entry.outcome.duration_s is not None
    # the panel says the call's time as its chip does ("64 ms", not "64.0 ms")
    from app.ui.call_view import format_duration

    took = format_duration(entry.outcome.duration_s)
    assert f"Time: {took}" in detail and took in chip.text()
    # the panel can be hidden again
    w.act_panel.trigger()
    assert not w.tool_dock.isVisible()
    # saved with the call and its result
    msgs = w.history.load_conversation(w.conversation_id).messages
    calls = [tc for m in msgs for tc in m.tool_calls]
    assert [(c.name, c.result, c.approval) for c in calls] == [("calculator", "42", "auto")]
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("button, expect_file", [("btn_once", True), ("btn_deny", False)])
def test_approval_dialog_allows_or_denies_side_effecting_tool(
    qtbot, make_window, tool_model, tmp_path, button, expect_file
):
    ws = tmp_path / "workspace"
    ws.mkdir()
    path = tool_model("write_file", '{"path": "note.txt", "content": "hi from the model"}', answer="Done.")
    s = _settings(max_tokens=64)
    s.tools.workspace = str(ws)
    w = make_window(path, settings=s)
    w.compose.setPlainText("Write a note")
    assert w.send()
    qtbot.waitUntil(
        lambda: w.approval_dialog is not None and w.approval_dialog.isVisible(), timeout=DONE_TIMEOUT
    )
    dlg = w.approval_dialog
    assert dlg.tool_name == "write_file"
    shown = json.loads(dlg.args_view.toPlainText())
    assert shown == {"path": "note.txt", "content": "hi from the model"}
    assert [b.text() for b in (dlg.btn_once, dlg.btn_always, dlg.btn_deny)] == [
        "Allow once",
        "Always allow",
        "Deny",
    ]
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(getattr(dlg, button), Qt.MouseButton.LeftButton)
    assert (ws / "note.txt").exists() == expect_file
    entry = next(iter(w.tool_panel.entries.values()))
    if expect_file:
        assert (ws / "note.txt").read_text() == "hi from the model"
        assert entry.outcome.approval == "allowed_once" and entry.outcome.error is None
    else:
        assert entry.outcome.approval == "denied" and "denied" in entry.outcome.error
        chip = w.chat.find_card(entry.call.id).chip
        assert chip.view.status == "denied"


def test_always_allow_is_remembered_in_settings(qtbot, make_window, tool_model, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    path = tool_model("write_file", '{"path": "a.txt", "content": "x"}', answer="Done.")
    s = _settings(max_tokens=64)
    s.tools.workspace = str(ws)
    w = make_window(path, settings=s)
    w.compose.setPlainText("Write")
    assert w.send()
    qtbot.waitUntil(lambda: w.approval_dialog is not None, timeout=DONE_TIMEOUT)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(w.approval_dialog.btn_always, Qt.MouseButton.LeftButton)
    assert load_settings()[0].tools.approvals == {"write_file": "allow"}
    (ws / "a.txt").unlink()
    _send(qtbot, w, "Again")  # no dialog this time
    assert (ws / "a.txt").read_text() == "x"


def test_reopen_conversation_restores_messages_and_tool_calls(qtbot, make_window, tool_model, tmp_path):
    path = tool_model("calculator", '{"expression": "2+3"}', answer="It is 5.")
    hist_path = tmp_path / "h.sqlite3"
    w = make_window(path, settings=_settings(max_tokens=64), history=History(hist_path))
    _send(qtbot, w, "Add please")
    cid = w.conversation_id
    w.new_chat()
    assert w.chat.messages == []
    item = w.conversations.item_for(cid)
    rect = w.conversations.list.visualItemRect(item)
    qtbot.mouseClick(w.conversations.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert w.conversation_id == cid
    kinds = [type(m) for m in w.chat.messages]
    assert kinds == [UserMessage, AssistantMessage]
    reply = w.chat.messages[1]
    assert reply.text() == "It is 5." and len(reply.cards) == 1
    assert [e.outcome.content for e in w.tool_panel.entries.values()] == ["5"]
    # the engine continues from the saved messages: a second turn sees the whole history
    _send(qtbot, w, "And again")
    assert len(w.history.load_conversation(cid).messages) == 8
    w.shutdown()
    # a fresh window on the same database (a restart) lists and reopens it
    w2 = make_window(None, settings=_settings(), history=History(hist_path))
    assert w2.conversations.ids() == [cid]
    w2.open_conversation(cid)
    assert len(w2.chat.user_messages()) == 2


def test_rename_search_delete_conversations(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=3))
    _send(qtbot, w, "alpha question")
    first = w.conversation_id
    w.new_chat()
    _send(qtbot, w, "beta question")
    second = w.conversation_id
    assert set(w.conversations.ids()) == {first, second}
    item = w.conversations.item_for(first)
    item.setText("Renamed chat")  # what in-place editing does
    assert w.history.get_conversation(first).title == "Renamed chat"
    w.conversations.search.setText("beta")
    w.conversations_ctl.search_conversations("beta")
    assert w.conversations.ids() == [second]
    w.conversations.search.setText("")
    w.conversations_ctl.search_conversations("")
    w.conversations_ctl.delete_conversation(second)
    assert w.conversations.ids() == [first] and w.conversation_id is None


def test_regenerate_and_edit_and_resend(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    _send(qtbot, w, "one")
    _send(qtbot, w, "two")
    reply = w.chat.current_assistant()
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(reply.btn_regen, Qt.MouseButton.LeftButton)
    assert len(w.chat.assistant_messages()) == 2 and w.chat.current_assistant().text() == "abcd"
    assert len(w.history.load_conversation(w.conversation_id).messages) == 4
    first_user = w.chat.user_messages()[0]
    qtbot.mouseClick(first_user.btn_edit, Qt.MouseButton.LeftButton)
    assert first_user.editor.isVisible()
    first_user.editor.setPlainText("one, edited")
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(first_user.btn_resend, Qt.MouseButton.LeftButton)
    assert [m.text for m in w.chat.user_messages()] == ["one, edited"]
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert [(m.role, m.content) for m in msgs] == [("user", "one, edited"), ("assistant", "abcd")]
    assert [m.role for m in w.worker.session.messages] == ["user", "assistant"]


def test_ctrl_comma_opens_settings_and_corrupt_settings_show_notice(qtbot, make_window, tmp_path):
    from app.storage.paths import settings_path
    from app.ui.main_window import MainWindow

    settings_path().write_text("{ this is not json", encoding="utf-8")
    w = MainWindow(history=History(), autoload=False)
    qtbot.addWidget(w)
    w.show()
    try:
        notices = w.window_notice_texts()
        assert len(notices) == 1 and "damaged" in notices[0]
        backups = list(settings_path().parent.glob("settings.json.corrupt-*"))
        assert len(backups) == 1 and backups[0].read_text() == "{ this is not json"
        with qtbot.waitActive(w):
            w.activateWindow()
        w.compose.setFocus()
        qtbot.keyClick(w.compose, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
        assert w.settings_dialog is not None and w.settings_dialog.isVisible()
        w.settings_dialog.reject()
    finally:
        w.shutdown()


def test_quit_during_generation_stops_cleanly(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=3900))
    w.compose.setPlainText("long")
    assert w.send()
    qtbot.waitUntil(lambda: bool(w.chat.current_assistant().text()), timeout=DONE_TIMEOUT)
    assert w.worker.is_busy()
    w.close()  # closeEvent: cancel, join the thread
    assert not w.worker.thread_handle.isRunning()
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert msgs[-1].status in ("interrupted", "complete")


def test_partial_reply_is_saved_while_streaming(qtbot, make_window, streaming_model):
    """A reply in progress is in the database (status streaming) before it ends, so a killed app
    keeps what was shown; History marks it interrupted on the next start."""
    w = make_window(streaming_model, settings=_settings(max_tokens=3900))
    w.worker.turns.partial_save_s = 0.0  # save at every delta
    w.compose.setPlainText("long")
    assert w.send()
    cid = w.conversation_id

    def partial_saved() -> bool:
        msgs = w.history.load_conversation(cid).messages
        return len(msgs) == 2 and msgs[1].status == "streaming" and len(msgs[1].content) > 10

    qtbot.waitUntil(partial_saved, timeout=DONE_TIMEOUT)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        w.stop()


def test_models_page_is_one_click_away_and_loads_into_chat(qtbot, make_window, streaming_model, tool_model):
    from app.ui.models_page import ModelsPage

    w = make_window(streaming_model, settings=_settings())
    w.act_models.trigger()
    page = w.stack.currentWidget()
    assert isinstance(page, ModelsPage)
    other = tool_model("calculator", '{"expression": "1+1"}')
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        page.sig_load_requested.emit(str(other))
    assert w.stack.currentWidget() is w.chat_page
    assert w.model_info.path == str(other) and w.model_picker.currentData() == str(other)
    assert load_settings()[0].model.last_model_path == str(other)


@pytest.mark.live
def test_first_run_loads_demo_model_into_library_and_replies_with_banner(qtbot, smollm2_path):
    """No settings, no model: the offline demo model is added to the library, loaded in the
    background, and its first reply streams under the no-tool-format banner."""
    from app.engine.models.library import Library
    from app.storage.settings import save_settings
    from app.ui.main_window import MainWindow

    s = Settings()
    s.sampling.max_tokens = 16
    save_settings(s)
    w = MainWindow(history=History())
    qtbot.addWidget(w)
    w.show()
    try:
        assert w.loading_path == str(smollm2_path) and w.model_bar.progress_action.isVisible()
        qtbot.waitUntil(lambda: w.model_info is not None, timeout=60_000)
        assert str(smollm2_path) in [str(m.path) for m in Library().scan()]
        done = _send(qtbot, w, "Hello! Who are you?")
        assert done.finish_reason in ("stop", "length")
        assert w.chat.current_assistant().text().strip()
        assert [b.setting for b in w.chat.banners()] == ["chat.tool_format"]
    finally:
        w.shutdown()


def test_banner_is_shown_again_above_its_reply_when_the_conversation_is_reopened(
    qtbot, make_window, streaming_model, tmp_path
):
    hist_path = tmp_path / "h.sqlite3"
    w = make_window(streaming_model, settings=_settings(max_tokens=6), history=History(hist_path))
    _send(qtbot, w, "first")
    _send(qtbot, w, "second")
    cid = w.conversation_id
    saved = w.history.load_conversation(cid).messages
    assert [[n["code"] for n in m.notices] for m in saved] == [[], ["no_tool_format"], [], []]
    w.new_chat()
    assert w.chat.banners() == []
    w.open_conversation(cid)
    banners = w.chat.banners()
    assert [b.code for b in banners] == ["no_tool_format"]
    assert banners[0] in w.chat.assistant_messages()[0].banners  # above the reply it belonged to
    assert banners[0].setting == "chat.tool_format" and "chat.tool_format" in banners[0].label.text()
    # a new reply in the reopened chat does not repeat it; the link still opens the setting
    _send(qtbot, w, "third")
    assert len(w.chat.banners()) == 1
    banners[0].label.linkActivated.emit("setting:chat.tool_format")
    assert w.settings_dialog is not None and w.settings_dialog.isVisible()
    w.settings_dialog.reject()
    w.shutdown()
    # after a restart too
    w2 = make_window(None, settings=_settings(), history=History(hist_path))
    w2.open_conversation(cid)
    assert [b.code for b in w2.chat.banners()] == ["no_tool_format"]
    assert w2.chat.banners()[0] in w2.chat.assistant_messages()[0].banners


def test_banner_of_an_interrupted_first_reply_is_kept(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=3900))
    w.compose.setPlainText("long")
    assert w.send()
    qtbot.waitUntil(lambda: bool(w.chat.current_assistant().text()), timeout=DONE_TIMEOUT)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        w.stop()
    cid = w.conversation_id
    msg = w.history.load_conversation(cid).messages[-1]
    assert msg.status == "interrupted" and [n["code"] for n in msg.notices] == ["no_tool_format"]
    w.new_chat()
    w.open_conversation(cid)
    assert [b.code for b in w.chat.banners()] == ["no_tool_format"]
