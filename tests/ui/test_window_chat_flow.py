"""The chat flow a newcomer goes through, each case reproduced on the real window, worker and models.

Each test is named after the defect it reproduces (``test_dN_...``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from app.storage.settings import Settings
from tests.ui.turns import send_turn

DONE_TIMEOUT = 30_000


def _settings(max_tokens: int = 4, **chat) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    for k, v in chat.items():
        setattr(s.chat, k, v)
    return s


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT, enter=True)


def _truncated_copy(src, dst):
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 2])
    return dst


def test_d1_failed_load_keeps_old_model_working_and_ui_in_sync(qtbot, make_window, streaming_model, tmp_path):
    w = make_window(streaming_model, settings=_settings())
    old = w.model_info.path
    broken = _truncated_copy(streaming_model, tmp_path / "truncated.gguf")
    with qtbot.waitSignal(w.worker.sig_load_failed, timeout=DONE_TIMEOUT) as failed:
        w.load_model(str(broken))
    qtbot.waitUntil(lambda: w.loading_path is None, timeout=30_000)
    # the file's name and the problem, once: not the engine's "Cannot load /full/path: ..." after it
    message = failed.args[1]
    assert message.startswith("Could not load truncated.gguf: ") and "Cannot load" not in message
    assert str(tmp_path) not in message and len(message) > len("Could not load truncated.gguf: ")
    # the picker, the badge and Send show the model that is still loaded
    assert w.model_info is not None and w.model_info.path == old
    assert w.model_picker.currentData() == old
    assert w.send_button.isEnabled()
    assert any("truncated.gguf" in t for t in w.window_notice_texts())
    # and it really works: the reply streams from the old model
    done = _send(qtbot, w, "Hi")
    assert done.finish_reason != "error"
    assert w.chat.current_assistant().text() == "abcd"


def test_d1_switching_models_keeps_the_conversation(qtbot, make_window, streaming_model, tool_model):
    w = make_window(streaming_model, settings=_settings())
    _send(qtbot, w, "first")
    other = tool_model("calculator", '{"expression": "1+1"}')
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        w.load_model(str(other))
    assert w.model_info.path == str(other)
    roles = [m.role for m in w.worker.session.messages]
    assert roles[:2] == ["user", "assistant"]


def test_d2_leaving_a_conversation_with_an_older_call_selected_raises_nothing(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}', answer="42.")
    w = make_window(path, settings=_settings(max_tokens=64))
    _send(qtbot, w, "What is 6*7?")
    _send(qtbot, w, "And again?")
    assert w.tool_panel.list.count() == 2
    # click the first reply's chip: the panel opens with that (older) call selected
    first_chip = next(iter(w.chat.assistant_messages()[0].cards.values())).chip
    qtbot.mouseClick(first_chip, Qt.MouseButton.LeftButton)
    assert w.tool_panel.selected_call_id() == first_chip.view.call.id
    # Ctrl+N: pytest-qt fails the test if a slot raises (a KeyError once)
    qtbot.keySequence(w, QKeySequence("Ctrl+N"))
    assert w.tool_panel.list.count() == 0 and w.tool_panel.entries == {}


def test_d3_regenerate_older_reply(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings())
    _send(qtbot, w, "a poem")
    _send(qtbot, w, "an essay")
    first_reply = w.chat.assistant_messages()[0]
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(first_reply.btn_regen, Qt.MouseButton.LeftButton)
    # the clicked reply was generated again; the later turn (which followed from it) is gone
    assert [m.text for m in w.chat.user_messages()] == ["a poem"]
    assert len(w.chat.assistant_messages()) == 1
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert [(m.role, m.content) for m in msgs] == [("user", "a poem"), ("assistant", "abcd")]
    assert [m.role for m in w.worker.session.messages] == ["user", "assistant"]


def _ctx_settings(context_length: int, policy: str = "stop", max_tokens: int = 4) -> Settings:
    s = _settings(max_tokens=max_tokens)
    s.model.context_length = context_length
    s.chat.context_policy = policy
    return s


LONG = "m" * 90  # one byte token per character: ~100 prompt tokens a turn with the template's markers


def test_d8_full_context_is_an_inline_error_with_new_chat_and_increase_context(
    qtbot, make_window, streaming_model
):
    w = make_window(streaming_model, settings=_ctx_settings(256))
    _send(qtbot, w, LONG)
    _send(qtbot, w, LONG)
    assert w.context_usage is not None and w.context_usage.n_ctx == 256
    meter_before = w.context_meter.value()
    assert meter_before >= 40  # the meter shows the conversation filling the context (replies vary)
    done = _send(qtbot, w, LONG)
    # refused before it was sent: an inline error in the reply, with the two ways out
    assert done.finish_reason == "error" and done.context_full
    reply = w.chat.current_assistant()
    assert reply.error_box is not None and reply.error_box.property("kind") == "error"
    assert "full" in reply.error_box.message
    assert set(reply.error_box.buttons) == {"New chat", "Increase context"}
    assert w.compose.toPlainText() == LONG  # nothing typed is lost
    saved = w.history.load_conversation(w.conversation_id).messages
    assert [m.role for m in saved] == ["user", "assistant", "user", "assistant"]
    # Increase context: the model reloads with twice the context, and the message then goes through
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(reply.error_box.buttons["Increase context"], Qt.MouseButton.LeftButton)
    assert w.model_info.n_ctx == 512 and w.settings.model.context_length == 512
    done = _send(qtbot, w, "short")
    assert done.finish_reason != "error"


def test_d8_new_chat_action_of_a_full_context(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_ctx_settings(256))
    _send(qtbot, w, LONG)
    _send(qtbot, w, LONG)
    _send(qtbot, w, LONG)
    reply = w.chat.current_assistant()
    qtbot.mouseClick(reply.error_box.buttons["New chat"], Qt.MouseButton.LeftButton)
    assert w.conversation_id is None and w.chat.messages == []


def test_d8_drop_oldest_policy_keeps_the_chat_going(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_ctx_settings(256, "drop_oldest"))
    _send(qtbot, w, "first " + LONG)
    _send(qtbot, w, "second " + LONG)
    done = _send(qtbot, w, "third " + LONG)
    assert done.finish_reason != "error"
    assert [b.code for b in w.chat.current_assistant().banners] == ["context_trimmed"]
    users = [m.content for m in w.worker.session.messages if m.role == "user"]
    assert users[0].startswith("second") and users[-1].startswith("third")
    # the history keeps every message: only the model's view is trimmed
    saved = [m.content for m in w.history.load_conversation(w.conversation_id).messages if m.role == "user"]
    assert [t.split()[0] for t in saved] == ["first", "second", "third"]


def test_d8_truncate_middle_policy_keeps_the_first_turn(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_ctx_settings(256, "truncate_middle"))
    _send(qtbot, w, "first " + LONG[:40])
    _send(qtbot, w, "second " + LONG)
    done = _send(qtbot, w, "third " + LONG)
    assert done.finish_reason != "error"
    users = [m.content.split()[0] for m in w.worker.session.messages if m.role == "user"]
    assert users == ["first", "third"]


def test_d8_tool_schemas_are_counted_in_the_context_meter(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}', answer="42.")
    w = make_window(path, settings=_settings(max_tokens=64))
    qtbot.waitUntil(lambda: w.context_usage is not None, timeout=DONE_TIMEOUT)
    usage = w.context_usage
    assert usage.tool_tokens > 0 and usage.prompt_tokens > usage.tool_tokens
    assert "tool descriptions" in w.context_meter.toolTip()


def test_d9_reply_cut_by_max_tokens_is_marked_with_continue(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    done = _send(qtbot, w, "Tell me everything")
    assert done.finish_reason == "length"
    reply = w.chat.current_assistant()
    assert reply.status_label.text() == "(max tokens reached)"
    assert reply.error_box is not None and reply.error_box.property("kind") == "info"
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(reply.error_box.buttons["Continue"], Qt.MouseButton.LeftButton)
    assert w.chat.assistant_messages() == [reply]  # the cut reply goes on in place (issue 28, U9)
    assert len(w.chat.user_messages()) == 1


def test_d6_stats_are_reset_for_a_new_or_another_conversation(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings())
    _send(qtbot, w, LONG)
    assert w.stat_ttft.text() != "TTFT —"
    full = w.context_usage.prompt_tokens
    w.new_chat()  # Ctrl+N
    assert w.stat_ttft.text() == "TTFT —" and w.stat_tps.text() == "— tok/s"
    # the meter follows: the new chat's context, not the old one's
    qtbot.waitUntil(lambda: w.context_usage.prompt_tokens < full, timeout=DONE_TIMEOUT)
    # per-message stats stay under the reply they belong to
    assert w.stat_ctx.text().startswith("context ")


def test_d5_regenerated_reply_drops_its_calls_from_the_panel(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}', answer="42.")
    w = make_window(path, settings=_settings(max_tokens=64))
    _send(qtbot, w, "What is 6*7?")
    old = set(w.tool_panel.entries)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(w.chat.current_assistant().btn_regen, Qt.MouseButton.LeftButton)
    visible = {cid for m in w.chat.assistant_messages() for cid in m.cards}
    assert set(w.tool_panel.entries) == visible and len(visible) == 1
    assert w.tool_panel.list.count() == 1
    assert not (old & visible) or w.tool_panel.entries.keys() == visible


def test_d16_panel_selects_the_newest_call(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}', answer="42.")
    w = make_window(path, settings=_settings(max_tokens=64))
    _send(qtbot, w, "What is 6*7?")
    _send(qtbot, w, "Again")
    newest = list(w.chat.assistant_messages()[-1].cards)[-1]
    assert w.tool_panel.selected_call_id() == newest
    assert "No tool calls" not in w.tool_panel.detail_text() and "calculator" in w.tool_panel.detail_text()


def test_d15_call_duration_excludes_the_approval_wait(qtbot, make_window, tool_model, tmp_path):
    import time

    ws = tmp_path / "ws"
    ws.mkdir()
    path = tool_model("write_file", '{"path": "note.txt", "content": "hi"}', answer="Done.")
    s = _settings(max_tokens=64)
    s.tools.workspace = str(ws)
    w = make_window(path, settings=s)
    w.compose.setPlainText("Write a note")
    assert w.send()
    qtbot.waitUntil(
        lambda: w.approval_dialog is not None and w.approval_dialog.isVisible(), timeout=DONE_TIMEOUT
    )
    shown = time.monotonic()
    qtbot.wait(600)  # the user reads the dialog
    read = time.monotonic() - shown  # at least 0.6 s: what a duration counting the wait would hold
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(w.approval_dialog.btn_once, Qt.MouseButton.LeftButton)
    entry = next(iter(w.tool_panel.entries.values()))
    assert (ws / "note.txt").read_text() == "hi"
    # the write itself takes milliseconds; a busy machine's slower rest of the turn does not count
    assert entry.outcome.duration_s is not None and entry.outcome.duration_s < read


def test_d10_processing_prompt_shows_before_the_first_token(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    w.compose.setPlainText("Hi")
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        assert w.send()
        reply = w.chat.current_assistant()
        # nothing arrived yet (the worker's events are queued to this thread): the reply says so
        assert reply.status_label.text() == "Processing prompt…"
        assert not reply.progress.isHidden()
    assert reply.progress.isHidden() and reply.text() == "abcd"
    assert "tokens" in reply.stats.text() and "tok/s" in reply.stats.text()


def test_d12_copy_says_copied(qtbot, make_window, streaming_model):
    from PySide6.QtGui import QGuiApplication

    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    _send(qtbot, w, "Hi")
    reply = w.chat.current_assistant()
    qtbot.mouseClick(reply.btn_copy, Qt.MouseButton.LeftButton)
    assert reply.btn_copy.text() == "Copied ✓"
    assert QGuiApplication.clipboard().text() == "abcd"
    qtbot.waitUntil(lambda: reply.btn_copy.text() == "Copy", timeout=30_000)


def test_d23_no_tool_format_is_one_quiet_dismissible_line(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    _send(qtbot, w, "Hi")
    (banner,) = w.chat.banners()
    assert banner.kind == "info"
    text = banner.plain_text()
    assert text == "This model can't call tools here. · Choose a format · Don't show again"
    assert "chat.tool_format" not in text and "⚠" not in text
    banner.label.linkActivated.emit("dismiss:")
    assert banner.isHidden()
    assert "no_tool_format" in w.settings.window.dismissed
    w.new_chat()
    _send(qtbot, w, "Hi again")
    assert w.chat.banners() == []


def test_d24_format_badge_is_short_plain_words(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}')
    w = make_window(path, settings=_settings())
    assert w.format_badge.text() == "Tools: Hermes JSON (auto)"
    assert w.format_badge.property("warn") == "false"


def test_a_load_failure_names_the_file_once_and_another_file_of_the_model_by_name():
    from app.engine.errors import ModelLoadError
    from app.ui.worker_session import load_failure

    model = "/models/Qwen3-VL-4B-Q4_K_M.gguf"
    assert load_failure(model, ModelLoadError(model, "it is truncated")) == (
        "Could not load Qwen3-VL-4B-Q4_K_M.gguf: it is truncated"
    )
    projector = ModelLoadError("/models/mmproj-F16.gguf", "not a vision projector")
    assert load_failure(model, projector) == (
        "Could not load Qwen3-VL-4B-Q4_K_M.gguf: mmproj-F16.gguf: not a vision projector"
    )
    assert load_failure(model, RuntimeError("out of memory")) == (
        "Could not load Qwen3-VL-4B-Q4_K_M.gguf: out of memory"
    )
