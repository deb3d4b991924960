"""Issue 28: reply versions (U3, U22), live progress (U8), Continue (U9), a reopened conversation
that looks as it did live (U11), an empty reply (U23) and long call cards (U5), on the real
window, worker and scripted GGUF models."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from app.storage.settings import Settings
from tests.ui.conftest import QWEN25
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf
from tests.ui.turns import send_turn

DONE_TIMEOUT = 30_000


def _settings(max_tokens: int = 64, context_length: int | None = None) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    if context_length is not None:
        s.model.context_length = context_length
    return s


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT)


def _click(qtbot, button, w):
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def _shown_calls(w) -> set[str]:
    return {cid for m in w.chat.assistant_messages() for cid in m.cards}


# -- U3 / U22: Regenerate --------------------------------------------------------------------------


def test_u3_regenerate_sends_the_turns_own_tool_choice(qtbot, make_window, tool_model):
    """The turn was sent with "Tools: None"; the control shows Auto when Regenerate is clicked: the
    regenerated reply is held to None like the first (the model is not told of the tools, so the
    call it writes is text, not a call)."""
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=_settings())
    w.tool_choice_box.set_value("none")
    _send(qtbot, w, "What is 6*7?")
    assert not w.chat.current_assistant().cards
    w.tool_choice_box.set_value("auto")
    _click(qtbot, w.chat.current_assistant().btn_regen, w)
    reply = w.chat.current_assistant()
    assert not reply.cards and "calculator" in reply.text()
    stored = w.history.load_conversation(w.conversation_id).messages[-1]
    assert stored.extra["settings"]["tool_choice"] == "none"
    # reopened (after a restart too): the stored turn says its choice
    _reopen(w)
    w.tool_choice_box.set_value("auto")
    _click(qtbot, w.chat.current_assistant().btn_regen, w)
    assert not w.chat.current_assistant().cards and w.chat.current_assistant().version == (3, 3)


def test_u22_regenerate_keeps_the_earlier_reply_as_a_version(qtbot, make_window, tool_model):
    w = make_window(tool_model("calculator", '{"expression": "6*7"}', answer="42."), settings=_settings())
    _send(qtbot, w, "What is 6*7?")
    first_calls = set(w.chat.current_assistant().cards)
    assert len(first_calls) == 1
    _click(qtbot, w.chat.current_assistant().btn_regen, w)
    reply = w.chat.current_assistant()
    assert reply.version == (2, 2) and reply.version_label.text() == "2/2"
    assert reply.btn_prev.isVisible() and reply.btn_prev.isEnabled() and not reply.btn_next.isEnabled()
    second_calls = set(reply.cards)
    assert second_calls and not (second_calls & first_calls)
    assert set(w.tool_panel.entries) == second_calls  # the panel shows the version shown

    qtbot.mouseClick(reply.btn_prev, Qt.MouseButton.LeftButton)  # ‹ : version 1, with its calls
    reply = w.chat.current_assistant()
    assert reply.version == (1, 2) and set(reply.cards) == first_calls
    assert all(c.view.outcome is not None and c.view.outcome.ok for c in reply.cards.values())
    assert set(w.tool_panel.entries) == first_calls
    assert "42." in reply.text()
    # the conversation goes on from the version shown: history and the model's conversation
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert {tc.call_id for m in msgs for tc in m.tool_calls} == first_calls
    qtbot.waitUntil(
        lambda: {c.id for m in w.worker.session.messages for c in m.tool_calls} == first_calls,
        timeout=DONE_TIMEOUT,
    )
    _send(qtbot, w, "Thanks")
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert [m.role for m in msgs][:4] == ["user", "assistant", "tool", "assistant"]
    assert {tc.call_id for tc in msgs[1].tool_calls} == first_calls

    # reopened: the earlier turn still has both versions, read-only, saying which one went on
    w.new_chat()
    w.open_conversation(msgs[0].conversation_id)
    older = w.chat.assistant_messages()[0]
    assert older.version == (1, 2)
    qtbot.mouseClick(older.btn_next, Qt.MouseButton.LeftButton)
    older = w.chat.assistant_messages()[0]
    assert older.version == (2, 2) and set(older.cards) == second_calls
    assert "version 1" in older.version_note.text()
    assert [m.role for m in w.history.load_conversation(w.conversation_id).messages][:4] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


# -- U8: live progress ------------------------------------------------------------------------------

CALL_OPEN = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "'


def _endless_call_model(tmp_path):
    """Qwen 2.5's template (Hermes): the reply opens a calculator call and writes its argument
    for ever ("7777..."), until the limit or Stop."""
    return write_scripted_gguf(
        tmp_path / "endless-call.gguf",
        chat_template=QWEN25,
        control_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        user_tokens=[CALL_OPEN, "7"],
        eos="<|im_end|>",
        script={"\n": CALL_OPEN, CALL_OPEN: "7", "7": "7"},
        default_next="\n",
        context_length=32768,
    )


def test_u8_a_call_being_written_shows_its_card_and_a_live_token_counter(qtbot, make_window, tmp_path):
    w = make_window(_endless_call_model(tmp_path), settings=_settings(max_tokens=30000, context_length=32768))
    w.compose.setPlainText("Compute a long number")
    assert w.send()
    reply = w.chat.current_assistant()

    def writing_card():
        cards = [c for c in reply.cards.values() if c.view.writing]
        return cards[0] if cards else None

    qtbot.waitUntil(lambda: writing_card() is not None, timeout=DONE_TIMEOUT)
    card = writing_card()
    assert card.view.call.name == "calculator" and card.chip.full_text.startswith("⚙ calculator(")
    assert "writing" in card.chip.full_text and reply.status_label.text() == "writing a call to calculator…"
    first = str(card.view.call.arguments)
    qtbot.waitUntil(
        lambda: len(str(writing_card().view.call.arguments)) > len(first) + 2, timeout=DONE_TIMEOUT
    )
    assert str(writing_card().view.call.arguments).startswith('{"expression": "77')  # arguments fill in
    qtbot.waitUntil(lambda: reply.live.isVisible() and "tok/s" in reply.live.text(), timeout=DONE_TIMEOUT)
    n = reply.counter.tokens
    assert reply.live.text().startswith(f"{n:,} tokens")
    # the status bar follows the reply being written: its tok/s, no figure of an earlier turn
    assert reply.live.text().endswith(" · " + w.stat_tps.text()) and w.stat_ttft.text() == "TTFT …"
    qtbot.waitUntil(lambda: reply.counter.tokens > n, timeout=DONE_TIMEOUT)  # it counts on
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        w.stop()
    assert blocker.args[0].finish_reason == "cancelled"
    done = blocker.args[0]
    assert w.stat_ttft.text() != "TTFT …" and w.stat_tps.text() != "… tok/s"  # the turn's own figures
    assert (done.ttft_s is None) == (w.stat_ttft.text() == "TTFT —")
    assert writing_card() is None and reply.live.isHidden()  # the call never ran: no card stays
    assert reply.incomplete  # it is shown as cut off, never run


# -- U9: Continue ----------------------------------------------------------------------------------


def test_u9_continue_goes_on_in_place_once_and_an_old_one_never_comes_back(
    qtbot, make_window, streaming_model
):
    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    assert _send(qtbot, w, "Tell me everything").finish_reason == "length"
    cut = w.chat.current_assistant()
    first = cut.text()
    old_box = cut.error_box
    _click(qtbot, old_box.buttons["Continue"], w)
    # in place: the same reply goes on, no user message is added
    assert w.chat.messages == [w.chat.user_messages()[0], cut]
    assert cut.text().startswith(first) and len(cut.text()) > len(first)
    assert cut.error_box is not old_box  # used: its mark and button went when the reply went on
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert [(m.role, m.content) for m in msgs] == [("user", "Tell me everything"), ("assistant", cut.text())]
    assert [(m.role, m.content) for m in w.worker.session.messages] == [
        ("user", "Tell me everything"),
        ("assistant", cut.text()),
    ]
    assert cut.status_label.text() == "(max tokens reached)"  # cut again: its own Continue is offered
    _send(qtbot, w, "Something else")
    replies = w.chat.assistant_messages()
    visible = [
        r for r in replies if r.error_box is not None and not r.error_box.buttons["Continue"].isHidden()
    ]
    assert visible == [replies[-1]]  # only the last reply can be continued
    n = len(w.chat.messages)
    w.chat_ctl.continue_reply(replies[0])  # an old reply's Continue does nothing
    assert len(w.chat.messages) == n and not w.busy


def test_u9_continue_goes_on_writing_the_call_that_was_cut(qtbot, make_window, tmp_path):
    w = make_window(_endless_call_model(tmp_path), settings=_settings(max_tokens=12, context_length=32768))
    assert _send(qtbot, w, "Compute a long number").finish_reason == "length"
    reply = w.chat.current_assistant()
    assert len(reply.incomplete) == 1 and not reply.cards
    _click(qtbot, reply.error_box.buttons["Continue"], w)
    assert w.chat.assistant_messages() == [reply] and len(w.chat.user_messages()) == 1
    assert len(reply.incomplete) == 1  # the same call, cut again further on: one chip, not two
    (cut,) = w.worker.session.messages[-1].incomplete_calls
    assert cut.name == "calculator" and cut.raw.startswith(CALL_OPEN) and cut.raw.count("7") > 12


# -- U11: a reopened conversation -------------------------------------------------------------------


def _reopen(w):
    cid = w.conversation_id
    w.new_chat()
    w.open_conversation(cid)


def test_u11_reopened_reply_keeps_stats_cut_off_mark_and_continue(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    _send(qtbot, w, "Tell me everything")
    live = w.chat.current_assistant()
    live_stats, live_status = live.stats.text(), live.status_label.text()
    assert live_stats and live_status == "(max tokens reached)"
    _reopen(w)
    reply = w.chat.current_assistant()
    assert reply.stats.text() == live_stats and not reply.stats.isHidden()
    assert reply.status_label.text() == "(max tokens reached)"
    assert reply.error_box is not None and not reply.error_box.buttons["Continue"].isHidden()
    qtbot.waitUntil(reply.error_box.buttons["Continue"].isVisible, timeout=DONE_TIMEOUT)
    text = reply.text()
    _click(qtbot, reply.error_box.buttons["Continue"], w)
    assert w.chat.assistant_messages() == [reply] and len(reply.text()) > len(text)  # in place


def test_u11_a_stopped_reply_reads_stopped_when_reopened(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=3500))
    w.compose.setPlainText("Go on forever")
    assert w.send()
    qtbot.waitUntil(lambda: bool(w.chat.current_assistant().text()), timeout=DONE_TIMEOUT)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        w.stop()
    assert w.chat.current_assistant().status_label.text() == "(stopped)"
    _reopen(w)
    assert w.chat.current_assistant().status_label.text() == "(stopped)"


def test_u11_reopened_calls_say_how_they_were_decoded(qtbot, make_window, tmp_path):
    """The turn recorder keeps how each call was decoded (held to its schema, or free), and a
    reopened conversation's side panel says what it said live (it said "free" for every call)."""
    from app.calls import ToolCall, ToolResult
    from app.engine.events import DoneEvent, ToolCallFinishedEvent, ToolCallStartedEvent
    from app.engine.messages import Message
    from app.engine.recorder import TurnRecorder
    from app.storage.history import History
    from app.ui.call_view import CallView

    history = History(tmp_path / "h.sqlite3")
    cid = history.create_conversation("calls").id
    held = ToolCall("call00000", "calculator", {"expression": "17*23"}, raw="<tool_call>…</tool_call>")
    free = ToolCall("call00001", "calculator", {"expression": "2*2"}, raw="<tool_call>…</tool_call>")
    events = [
        ToolCallStartedEvent(held, constrained="tool calculator, hermes"),
        ToolCallFinishedEvent(held, ToolResult(held.id, held.name, content="391")),
        ToolCallStartedEvent(free, constrained=None),
        ToolCallFinishedEvent(free, ToolResult(free.id, free.name, content="4")),
    ]
    rec = TurnRecorder(history, cid)
    rec.user_message("What is 17*23 and 2*2?")
    rec.begin()
    for ev in events:
        rec.observe(ev)
    messages = [
        Message(role="user", content="What is 17*23 and 2*2?"),
        Message(role="assistant", content="", tool_calls=[held, free]),
        Message(role="tool", content="391", tool_call_id=held.id, name=held.name),
        Message(role="tool", content="4", tool_call_id=free.id, name=free.name),
        Message(role="assistant", content="391 and 4."),
    ]
    assert rec.finish(DoneEvent(finish_reason="stop", generated_tokens=9, tokens_per_s=30.0), messages)
    w = make_window(None, history=history)
    w.open_conversation(cid)
    for started in events[::2]:
        w.tool_panel.select_call(started.call.id)
        assert f"Decoding: {CallView.from_event(started).decoding}" in w.tool_panel.detail_text()
    w.tool_panel.select_call(held.id)
    assert "Decoding: held to its schema (tool calculator, hermes)" in w.tool_panel.detail_text()
    assert w.chat.current_assistant().stats.text().startswith("9 tokens · 30.0 tok/s")


# -- U23: an empty reply ---------------------------------------------------------------------------


def test_u23_an_empty_reply_is_labelled(qtbot, make_window, tmp_path):
    path = write_scripted_gguf(
        tmp_path / "silent.gguf", chat_template=CHATML, script={"\n": "<|im_end|>"}, default_next="<|im_end|>"
    )
    w = make_window(path, settings=_settings())
    _send(qtbot, w, "The capital of France is")
    reply = w.chat.current_assistant()
    assert reply.text() == "" and not reply.empty_label.isHidden()
    assert reply.empty_label.text() == "(empty reply)"
    _reopen(w)
    assert not w.chat.current_assistant().empty_label.isHidden()


def test_u23_a_reply_with_words_is_not_labelled_empty(qtbot, make_window, tmp_path):
    path = write_scripted_gguf(
        tmp_path / "stream.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    w = make_window(path, settings=_settings(max_tokens=4))
    _send(qtbot, w, "hi")
    assert w.chat.current_assistant().empty_label.isHidden()


# -- U5: long call cards fit ------------------------------------------------------------------------


def test_u5_a_long_call_card_fits_the_window_and_keeps_the_actions_visible(qtbot, make_window, tool_model):
    long_path = "notes/" + "very-long-folder-name/" * 12 + "file.txt"
    args = '{"expression": "' + long_path + " + " + "1" * 300 + '"}'
    w = make_window(tool_model("calculator", args), settings=_settings(max_tokens=128))
    w.resize(1100, 700)
    w.tool_dock.setVisible(True)  # the side panel open: the chat is narrower still
    _send(qtbot, w, "Compute")
    reply = w.chat.current_assistant()
    (card,) = reply.cards.values()
    card.toggle.setChecked(True)  # the details too: a long unbroken argument
    qtbot.waitUntil(lambda: w.chat.widget().width() <= w.chat.viewport().width(), timeout=DONE_TIMEOUT)
    view = w.chat.viewport()
    for button in (reply.btn_copy, reply.btn_regen, reply.btn_more):
        right = button.mapTo(view, QPoint(button.width(), 0)).x()
        assert 0 < right <= view.width(), button.text()
    assert card.chip.text().endswith("…") and card.chip.full_text.startswith("⚙ calculator(")
    assert card.chip.mapTo(view, QPoint(card.chip.width(), 0)).x() <= view.width()


def test_u5_at_800x600_with_the_panel_open_a_regenerated_reply_still_fits(qtbot, make_window, tool_model):
    args = '{"expression": "' + "notes/" + "very-long-folder-name/" * 12 + "file.txt" + '"}'
    w = make_window(tool_model("calculator", args), settings=_settings(max_tokens=128))
    w.resize(800, 600)
    w.tool_dock.setVisible(True)
    _send(qtbot, w, "Compute")
    _click(qtbot, w.chat.current_assistant().btn_regen, w)  # the pager ‹ 2/2 › joins the actions
    reply = w.chat.current_assistant()
    assert reply.stats.isVisible() and reply.stats.text()  # the statistics line is there too
    # what the chat needs at the least, not only what it has now (laid out later, it would widen)
    content = w.chat.widget()
    qtbot.waitUntil(
        lambda: content.minimumSizeHint().width() <= w.chat.viewport().width(), timeout=DONE_TIMEOUT
    )
    qtbot.waitUntil(lambda: content.width() <= w.chat.viewport().width(), timeout=DONE_TIMEOUT)
    view = w.chat.viewport()
    for button in (reply.btn_prev, reply.btn_next, reply.btn_copy, reply.btn_regen, reply.btn_more):
        assert 0 < button.mapTo(view, QPoint(button.width(), 0)).x() <= view.width()


def test_u5_a_narrow_head_cuts_its_status_then_the_name_with_an_ellipsis(qtbot):
    """A long status (waiting for a slot) is cut first, with "…", the model's name after it; the
    actions stay; a cut text's whole words are its tooltip (the name's own tooltip stays)."""
    from PySide6.QtWidgets import QLabel

    from app.ui.chat import AssistantMessage

    reply = AssistantMessage()
    qtbot.addWidget(reply)
    name, status = "SmolLM2-135M-Instruct.Q4_1", "Waiting for a free slot: 4 server requests are generating."
    reply.set_author(name, "the file")
    reply.status_label.setText(status)
    reply.show()

    def shown(label) -> str:
        return QLabel.text(label)  # what is drawn (``text()`` is the whole text)

    def head_at(width: int) -> tuple[str, str]:
        reply.resize(width, 120)
        qtbot.waitUntil(lambda: reply.width() == width)
        right = reply.btn_more.mapTo(reply, QPoint(reply.btn_more.width(), 0)).x()
        assert right <= width  # the actions fit
        assert reply.who.text() == name and reply.status_label.text() == status
        return shown(reply.who), shown(reply.status_label)

    assert head_at(1100) == (name, status)
    assert reply.status_label.toolTip() == ""
    who, said = head_at(700)
    assert who == name and said.endswith("…") and status.startswith(said[:-1])
    assert reply.status_label.toolTip() == status
    who, said = head_at(380)
    assert said == "" and who.endswith("…") and name.startswith(who[:-1])
    assert reply.who.toolTip().startswith("the file")  # its own tooltip, not the cut text's
    assert head_at(1100) == (name, status)  # wide again: whole again


def test_u8_a_remote_reply_shows_a_live_counter_too(qtbot, make_window, memory_keyring):
    """A remote engine does not count its tokens as it writes: the reply counts the pieces it
    streamed (about one a token) and their rate."""
    import threading

    from app.engine.remote.keys import remote_key
    from tests.engine.remote.misbehaving import MisbehavingServer
    from tests.ui.test_remote_window import _add_provider, _choose, _slow_endpoint

    gone, shown = threading.Event(), threading.Event()
    with MisbehavingServer(_slow_endpoint(gone, shown)) as server:
        w = make_window(None)
        _add_provider(qtbot, w, name="Slow", url=server.url, kind="openai", mode="api")
        _choose(qtbot, w, remote_key("Slow", "slow"))
        assert w.send("Talk for a long time.")
        reply = w.chat.current_assistant()
        qtbot.waitUntil(
            lambda: "tok/s" in reply.live.text() and not reply.live.isHidden(), timeout=DONE_TIMEOUT
        )
        n = reply.counter.tokens
        qtbot.waitUntil(lambda: reply.counter.tokens > n, timeout=DONE_TIMEOUT)
        with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
            w.stop()
        assert gone.wait(10) and reply.live.isHidden()
