"""A chat's own system prompt in the real window: the line above the chat says which prompt the
chat uses, Edit… gives the chat its own (the model's next prompt holds it in place of the one in
Settings), it is kept with the conversation, another chat keeps the one in Settings, and clearing
it goes back. A real scripted GGUF; the prompt is read from the session's last rendered prompt."""

from __future__ import annotations

from PySide6.QtWidgets import QDialogButtonBox

from app.storage.settings import Settings
from tests.ui.scripted_gguf import write_alphabet_model

TIMEOUT = 30_000


def _send(qtbot, w, text: str) -> str:
    w.compose.setPlainText(text)
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    return w.worker.state.session.last_prompt.text


def _window(qtbot, make_window):
    model = write_alphabet_model()
    s = Settings()
    s.sampling.max_tokens = 2
    s.chat.system_prompt = "Global prompt."
    return make_window(model, settings=s)


def _edit(qtbot, w, text: str | None):
    w.conversations_ctl.system_bar.edit_button.click()
    dlg = w.conversations_ctl.system_dialog
    assert dlg.isVisible() and dlg.windowTitle() == "This chat's system prompt"
    if text is None:
        dlg.use_settings.click()
    else:
        dlg.text.setPlainText(text)
        dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    assert not dlg.isVisible()
    return dlg


def test_a_chat_given_its_own_system_prompt_uses_and_keeps_it(qtbot, make_window):
    w = _window(qtbot, make_window)
    bar = w.conversations_ctl.system_bar
    assert bar.label.text().startswith("System prompt: the one in Settings")
    assert "Global prompt." in _send(qtbot, w, "Hi")
    first = w.conversation_id

    w.conversations_ctl.system_bar.edit_button.click()
    dlg = w.conversations_ctl.system_dialog
    assert dlg.text.toPlainText() == "" and dlg.text.placeholderText() == "Global prompt."  # what it uses now
    dlg.reject()
    _edit(qtbot, w, "Answer as a pirate.")
    assert bar.label.text() == "System prompt (this chat): “Answer as a pirate.”"
    assert w.history.get_conversation(first).system_prompt == "Answer as a pirate."
    prompt = _send(qtbot, w, "Again")
    assert "Answer as a pirate." in prompt and "Global prompt." not in prompt
    assert "Hi" in prompt  # the same conversation goes on

    # a new chat uses the one in Settings; a prompt set before its first message is kept with it
    w.new_chat()
    assert bar.label.text().startswith("System prompt: the one in Settings")
    assert "Global prompt." in _send(qtbot, w, "Other chat")
    w.new_chat()
    _edit(qtbot, w, "Be a poet.")
    assert "Be a poet." in _send(qtbot, w, "Third chat")
    assert w.history.get_conversation(w.conversation_id).system_prompt == "Be a poet."

    # opened again: the first chat's own prompt is back in the line and in the model's prompt
    w.open_conversation(first)
    assert bar.label.text() == "System prompt (this chat): “Answer as a pirate.”"
    assert "Answer as a pirate." in _send(qtbot, w, "Once more")

    # Use the one in Settings: cleared, kept cleared
    _edit(qtbot, w, None)
    assert bar.label.text().startswith("System prompt: the one in Settings")
    assert w.history.get_conversation(first).system_prompt is None
    prompt = _send(qtbot, w, "Plain again")
    assert "Global prompt." in prompt and "Answer as a pirate." not in prompt


def test_the_chats_prompt_survives_a_settings_change_and_a_branch(qtbot, make_window):
    w = _window(qtbot, make_window)
    _edit(qtbot, w, "Answer as a pirate.")
    _send(qtbot, w, "Hi")
    changed = w.settings.model_copy(deep=True)
    changed.chat.system_prompt = "Another global prompt."
    w.settings_ctl.apply_settings(changed)
    qtbot.waitUntil(lambda: w.worker.state.config.system_prompt == "Another global prompt.", timeout=TIMEOUT)
    prompt = _send(qtbot, w, "Still?")
    assert "Answer as a pirate." in prompt and "global prompt" not in prompt
    w.chat.assistant_messages()[0].act_branch.trigger()
    assert w.conversations_ctl.system_bar.label.text() == "System prompt (this chat): “Answer as a pirate.”"
    assert "Answer as a pirate." in _send(qtbot, w, "In the branch")


def test_paging_the_last_replys_versions_keeps_the_chats_prompt(qtbot, make_window):
    """Showing another version of the last reply hands the conversation to the worker again: with
    its own system prompt."""
    from PySide6.QtCore import Qt

    w = _window(qtbot, make_window)
    _edit(qtbot, w, "Answer as a pirate.")
    _send(qtbot, w, "Hi")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        qtbot.mouseClick(w.chat.current_assistant().btn_regen, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(w.chat.current_assistant().btn_prev, Qt.MouseButton.LeftButton)
    assert w.chat.current_assistant().version == (1, 2)
    prompt = _send(qtbot, w, "Next")
    assert "Answer as a pirate." in prompt and "Global prompt." not in prompt
