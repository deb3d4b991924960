"""Chatting with a model made over the API (Ollama's ``/api/create``) in the window: the picker
lists it after the files, picking it loads its file with what it sets over the settings (system
prompt, messages, sampler values, reply length, context, stop strings, template), and picking the
file again chats with the file as it is. The model is a real scripted GGUF (after the prompt's
last character it writes the alphabet on from it); the made model is kept where the window's
server keeps them (``presets.json`` in the data folder)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from app.server import Preset, PresetStore, default_presets_path
from app.storage.settings import Settings
from tests.ui.scripted_gguf import CHATML, streaming_script, write_alphabet_model, write_scripted_gguf

TIMEOUT = 30_000
#: ChatML whose generation prompt ends in "q": the scripted model then writes "rstu…"
ENDS_IN_Q = CHATML.replace("assistant\\n'", "assistant\\nq'")


def _labels(w) -> list[str]:
    return [w.model_picker.itemText(i) for i in range(w.model_picker.count())]


def _pick(qtbot, w, label: str) -> None:
    i = _labels(w).index(label)
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        w.model_picker.activated.emit(i)  # as a click on the item does


def _send(qtbot, w, text: str) -> str:
    w.compose.setPlainText(text)
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    return w.chat.current_assistant().text()


def test_a_made_model_is_picked_chatted_with_and_left(qtbot, make_window):
    assert "assistant\\nq'" in ENDS_IN_Q
    base = write_alphabet_model()
    PresetStore(default_presets_path()).put(
        Preset(
            name="helper",
            base=str(base.resolve()),
            system="You are terse.",
            template=ENDS_IN_Q,
            parameters={"num_predict": 6, "stop": ["w"], "num_ctx": 1024, "temperature": 0.3},
            messages=[
                {"role": "user", "content": "Remember blue."},
                {"role": "assistant", "content": "Noted."},
            ],
        )
    )
    s = Settings()
    s.sampling.max_tokens = 4
    s.chat.system_prompt = "Global prompt."
    w = make_window(base, settings=s)
    qtbot.waitUntil(lambda: "helper · made" in _labels(w), timeout=TIMEOUT)
    labels = _labels(w)
    assert labels.index("alpha") < labels.index("helper · made") < labels.index("Download a model…")
    i = labels.index("helper · made")
    assert "alpha.gguf" in w.model_picker.itemData(i, Qt.ItemDataRole.ToolTipRole)
    assert _send(qtbot, w, "Hi") == "abcd"  # the file as it is: its template, 4 tokens

    _pick(qtbot, w, "helper · made")
    assert w.model_picker.currentText() == "helper · made"
    assert w.model_info.n_ctx == 1024  # num_ctx
    session = w.worker.state.session
    # its template (ends in "q"), its reply length (6, over the settings' 4), its stop string "w"
    assert _send(qtbot, w, "Hi again") == "rstuv"
    prompt = session.last_prompt.text
    assert "You are terse." in prompt and "Global prompt." not in prompt  # its system prompt wins
    order = [prompt.index(t) for t in ("You are terse.", "Remember blue.", "Noted.", "Hi again")]
    assert order == sorted(order)
    assert [m.content for m in session.messages if m.role == "user"] == ["Hi", "Hi again"]  # the chat goes on
    assert w.worker.state.config.sampling["temperature"] == 0.3

    # each reply's head names what wrote it, live and once the chat is opened again
    def heads() -> list[tuple[str, str]]:
        # (the tooltip but its last line, which says when: test_message_times)
        return [
            (r.who.text(), "\n".join(r.who.toolTip().splitlines()[:-1])) for r in w.chat.assistant_messages()
        ]

    file_name = "alpha"  # the picker's name of the file
    live = heads()
    assert [h[0] for h in live] == [file_name, "helper"]
    assert "made model helper" in live[1][1] and str(base.resolve()) in live[1][1]
    assert str(base.resolve()) in live[0][1] and "made model" not in live[0][1]
    stored = [m for m in w.history.load_conversation(w.conversation_id).messages if m.role == "assistant"]
    assert [m.extra.get("made_model") for m in stored] == [None, "helper"]
    assert {m.extra["model_name"] for m in stored} == {file_name}
    assert {m.extra["model"] for m in stored} == {str(base.resolve())}
    w.open_conversation(w.conversation_id)
    assert heads() == live

    # Settings → This model says that the made model's values win, and which it sets
    dlg = w.open_settings()
    note = dlg.override_tab.made_note
    assert note is not None and "<b>helper</b>, made over the API" in note.text()
    for words in ("system prompt", "opening messages", "sampler values", "reply length", "stop strings"):
        assert words in note.text()
    dlg.reject()

    # a settings change keeps the made model and what it sets
    changed = w.settings.model_copy(deep=True)
    changed.chat.max_tool_rounds = 3
    w.settings_ctl.apply_settings(changed)
    qtbot.waitUntil(lambda: w.worker.state.config.max_tool_rounds == 3, timeout=TIMEOUT)
    assert w.worker.state.config.stop == ("w",) and w.worker.state.config.system_prompt == "You are terse."
    assert w.state.made == "helper" and w.model_picker.currentText() == "helper · made"

    # the file again: as it is
    _pick(qtbot, w, "alpha")
    assert w.state.made is None and w.model_picker.currentText() == "alpha"
    assert _send(qtbot, w, "Plain") == "abcd"
    assert "You are terse." not in w.worker.state.session.last_prompt.text
    dlg = w.open_settings()
    assert dlg.override_tab.made_note is None
    dlg.reject()


def test_reply_versions_by_the_file_and_by_a_made_model_say_which_wrote_each(qtbot, make_window):
    """Regenerate after picking a made model: the pager's two versions name their writers (the
    file's model, then the made model) as they are paged, and so does the reopened chat."""
    base = write_alphabet_model()
    PresetStore(default_presets_path()).put(
        Preset(name="helper", base=str(base.resolve()), template=ENDS_IN_Q, parameters={"num_predict": 2})
    )
    s = Settings()
    s.sampling.max_tokens = 4
    w = make_window(base, settings=s)
    file_name = "alpha"  # the picker's name of the file
    assert file_name != "helper"
    assert _send(qtbot, w, "Hi") == "abcd"
    _pick(qtbot, w, "helper · made")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        qtbot.mouseClick(w.chat.current_assistant().btn_regen, Qt.MouseButton.LeftButton)
    reply = w.chat.current_assistant()
    # its template; the turn's own reply length (4: Regenerate sends the turn's settings again, U3)
    assert reply.version == (2, 2) and reply.text() == "rstu" and reply.who.text() == "helper"
    qtbot.mouseClick(reply.btn_prev, Qt.MouseButton.LeftButton)
    reply = w.chat.current_assistant()
    assert reply.version == (1, 2) and reply.text() == "abcd" and reply.who.text() == file_name
    qtbot.mouseClick(reply.btn_next, Qt.MouseButton.LeftButton)
    assert w.chat.current_assistant().who.text() == "helper"
    cid = w.conversation_id
    w.new_chat()
    w.open_conversation(cid)
    assert [r.who.text() for r in w.chat.assistant_messages()] == ["helper"]


def test_a_made_model_deleted_meanwhile_is_said_and_nothing_loads(qtbot, make_window):
    base = write_alphabet_model()
    store = PresetStore(default_presets_path())
    store.put(Preset(name="gone-soon", base=str(base.resolve()), system="x"))
    w = make_window(base)
    qtbot.waitUntil(lambda: "gone-soon · made" in _labels(w), timeout=TIMEOUT)
    i = _labels(w).index("gone-soon · made")
    store.delete("gone-soon")  # by the server, say
    w.model_picker.activated.emit(i)  # the made models are read again (off the UI thread) first
    qtbot.waitUntil(lambda: "gone-soon was deleted" in w.statusBar().currentMessage(), timeout=TIMEOUT)
    assert "gone-soon · made" not in _labels(w) and w.model_picker.currentText() == "alpha"
    assert w.state.loading_path is None and w.state.made is None
    assert Path(w.model_info.path).resolve() == base.resolve()


def _open(qtbot, settings):
    """The window as a double-click opens it: no model named, so the one it last used."""
    from app.storage.history import History
    from app.ui.main_window import MainWindow

    w = MainWindow(settings=settings, history=History(), autoload=True, model_path=None)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.model_info is not None and w.state.loading_path is None, timeout=TIMEOUT)
    return w


def test_the_window_opens_again_on_the_made_model_it_last_chatted_with(qtbot, make_window):
    from app.storage.settings import load_settings

    base = write_alphabet_model()
    store = PresetStore(default_presets_path())
    store.put(
        Preset(name="helper", base=str(base.resolve()), template=ENDS_IN_Q, parameters={"num_predict": 2})
    )
    w = make_window(base)
    _pick(qtbot, w, "helper · made")
    saved, _ = load_settings()
    assert saved.model.last_made == "helper" and Path(saved.model.last_model_path).resolve() == base.resolve()
    w.shutdown()
    w.close()

    w = _open(qtbot, saved)
    try:
        assert w.state.made == "helper" and w.model_picker.currentText() == "helper · made"
        assert _send(qtbot, w, "Hi") == "rs"
    finally:
        w.shutdown()
        w.close()

    store.delete("helper")  # deleted meanwhile: the window opens on the file as it is
    w = _open(qtbot, saved)
    try:
        assert w.state.made is None and w.model_picker.currentText() == "alpha"
    finally:
        w.shutdown()
        w.close()
    assert load_settings()[0].model.last_made is None


def test_the_models_pages_chat_button_chats_with_a_made_model(qtbot, make_window, tmp_path):
    from app.ui.models_page.made import CHAT

    base = write_alphabet_model()
    gone = write_scripted_gguf(
        tmp_path / "gone.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    store = PresetStore(default_presets_path())
    store.put(
        Preset(name="helper", base=str(base.resolve()), template=ENDS_IN_Q, parameters={"num_predict": 3})
    )
    store.put(Preset(name="orphan", base=str(gone.resolve())))
    gone.unlink()
    w = make_window(base)
    w.act_models.trigger()
    page = w.stack.currentWidget()
    page.made.refresh()
    qtbot.waitUntil(lambda: len(page.made.made) == 2, timeout=TIMEOUT)
    orphan = page.made.button("orphan", CHAT)
    assert not orphan.isEnabled() and "file is gone" in orphan.toolTip()
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        page.made.button("helper", CHAT).click()
    assert w.state.made == "helper" and w.model_picker.currentText() == "helper · made"
    assert w.stack.currentWidget() is not page  # the chat shows
    assert _send(qtbot, w, "Hi") == "rst"


def test_a_model_made_or_deleted_while_the_window_is_open_joins_or_leaves_the_picker(qtbot, make_window):
    """A server (another process, or the window's own) writes the made models' file: the window
    sees the file change and reads it again off the UI thread."""
    base = write_alphabet_model()
    w = make_window(base)
    qtbot.waitUntil(lambda: "alpha" in _labels(w), timeout=TIMEOUT)
    assert not any(label.endswith("· made") for label in _labels(w))
    store = PresetStore(default_presets_path())
    store.put(Preset(name="later", base=str(base.resolve()), system="x"))
    qtbot.waitUntil(lambda: "later · made" in _labels(w), timeout=TIMEOUT)
    store.delete("later")
    qtbot.waitUntil(lambda: "later · made" not in _labels(w), timeout=TIMEOUT)
