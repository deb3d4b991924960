"""Exporting a chat from the real window: File → Export chat… (Ctrl+Shift+E) and the conversation
list's Export…, a save dialog named after the chat that offers Markdown and JSON, the file written
off the UI thread, and the status bar saying where it went or why it could not be written. A real
scripted GGUF writes the reply; the history is real SQLite."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFileDialog

from app.storage.settings import Settings
from tests.ui.scripted_gguf import write_alphabet_model

TIMEOUT = 30_000


def _window(qtbot, make_window):
    model = write_alphabet_model()
    s = Settings()
    s.sampling.max_tokens = 4
    w = make_window(model, settings=s)
    w.compose.setPlainText("Say the first letters")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    assert w.chat.current_assistant().text() == "abcd"
    return w


def _status(w) -> str:
    return w.statusBar().currentMessage()


def test_the_open_chat_is_exported_as_markdown_and_as_json(qtbot, make_window, tmp_path):
    w = _window(qtbot, make_window)
    ctl = w.conversations_ctl.exports
    assert ctl.export_conversation(path=str(tmp_path / "chat.md"))
    qtbot.waitUntil(lambda: _status(w).startswith("Exported"), timeout=TIMEOUT)
    assert str(tmp_path / "chat.md") in _status(w)
    md = (tmp_path / "chat.md").read_text(encoding="utf-8")
    assert md.startswith("# Say the first letters\n")
    assert "## You\n\nSay the first letters\n\n## alpha\n\n" in md  # the head names the model
    assert "> **Note:** Tools are off for this model" in md  # the banner shown above the reply
    assert md.endswith("\n\nabcd\n\n*(cut off by the max-tokens limit)*\n")

    assert ctl.export_conversation(w.conversation_id, str(tmp_path / "chat.json"))
    qtbot.waitUntil(lambda: "chat.json" in _status(w), timeout=TIMEOUT)
    data = json.loads((tmp_path / "chat.json").read_text(encoding="utf-8"))
    assert [(m["role"], m["content"]) for m in data["messages"]] == [
        ("user", "Say the first letters"),
        ("assistant", "abcd"),
    ]
    assert data["messages"][1]["extra"]["model_name"] == "alpha"


def test_a_file_that_cannot_be_written_is_said_and_the_chat_is_kept(qtbot, make_window, tmp_path):
    w = _window(qtbot, make_window)
    assert w.conversations_ctl.exports.export_conversation(path=str(tmp_path / "no such folder" / "chat.md"))
    qtbot.waitUntil(lambda: _status(w).startswith("Could not export"), timeout=TIMEOUT)
    assert "Say the first letters" in _status(w)
    assert not (tmp_path / "no such folder").exists()
    w.conversations_ctl.exports.export_conversation(path=str(tmp_path))  # a folder, not a file
    qtbot.waitUntil(lambda: "is a folder" in _status(w), timeout=TIMEOUT)
    assert [m.role for m in w.history.load_conversation(w.conversation_id).messages] == ["user", "assistant"]


def test_the_menu_and_the_list_open_a_save_dialog_named_after_the_chat(qtbot, make_window, tmp_path):
    w = _window(qtbot, make_window)
    act = w.menus.act_export
    assert act.text() == "Export chat…" and act.shortcut() == QKeySequence("Ctrl+Shift+E")
    act.trigger()
    dlg = w.conversations_ctl.exports.export_dialog
    assert isinstance(dlg, QFileDialog) and dlg.isVisible() and dlg.isModal()
    assert dlg.acceptMode() == QFileDialog.AcceptMode.AcceptSave
    assert dlg.nameFilters() == ["Markdown (*.md)", "JSON, every stored detail (*.json)"]
    assert dlg.defaultSuffix() == "md"
    dlg.filterSelected.emit(dlg.nameFilters()[1])  # the person picks JSON: a bare name gets .json
    assert dlg.defaultSuffix() == "json"
    dlg.reject()

    # the list's Export… exports the conversation it was asked on, in the folder last used
    first = w.conversation_id
    w.new_chat()
    assert w.conversations_ctl.exports.export_conversation(first, str(tmp_path / "first.md"))
    # the folder is remembered once the file is written (by the callback that says so)
    qtbot.waitUntil(lambda: w.conversations_ctl.exports.export_dir == str(tmp_path), timeout=TIMEOUT)
    w.conversations_ctl.list.sig_export.emit(first)
    dlg = w.conversations_ctl.exports.export_dialog
    assert Path(dlg.directory().absolutePath()) == tmp_path
    assert dlg.selectedFiles()[0].endswith("Say the first letters.md")
    chosen = tmp_path / "picked.md"
    dlg.fileSelected.emit(str(chosen))  # what the dialog sends when the person saves
    qtbot.waitUntil(lambda: "picked.md" in _status(w), timeout=TIMEOUT)
    assert "abcd" in chosen.read_text(encoding="utf-8")
    dlg.reject()


def test_with_no_conversation_open_there_is_nothing_to_export(qtbot, make_window):
    w = make_window(None)
    w.menus.act_export.trigger()
    assert _status(w).startswith("Nothing to export yet")
    assert w.conversations_ctl.exports.export_dialog is None


def test_an_exported_chat_comes_back_through_import_and_goes_on(qtbot, make_window, tmp_path):
    """File → Import chats… reads the JSON off the UI thread, stores it as a new conversation, opens
    it as it looked (the reply's head names its model) and the next turn continues it."""
    w = _window(qtbot, make_window)
    first = w.conversation_id
    assert w.conversations_ctl.exports.export_conversation(path=str(tmp_path / "chat.json"))
    qtbot.waitUntil(lambda: w.conversations_ctl.exports.export_dir == str(tmp_path), timeout=TIMEOUT)
    w.new_chat()

    w.menus.act_import.trigger()
    dlg = w.conversations_ctl.exports.export_dialog
    assert isinstance(dlg, QFileDialog) and dlg.isVisible()
    assert dlg.fileMode() == QFileDialog.FileMode.ExistingFiles  # one file or many
    assert Path(dlg.directory().absolutePath()) == tmp_path  # where the last export went
    dlg.filesSelected.emit([str(tmp_path / "chat.json")])  # what the dialog sends when a file is opened
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    dlg.reject()
    assert _status(w) == "Imported “Say the first letters” from chat.json (2 messages)"
    assert w.conversation_id not in (None, first) and w.conversations_ctl.list.current_id == w.conversation_id
    assert sorted(w.conversations_ctl.list.ids()) == sorted([first, w.conversation_id])
    reply = w.chat.current_assistant()
    assert reply.text() == "abcd" and reply.who.text() == "alpha"
    w.compose.setPlainText("More")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert [m.content for m in msgs if m.role == "user"] == ["Say the first letters", "More"]
    assert len(w.history.load_conversation(first).messages) == 2  # the original is untouched


def test_a_file_that_is_no_export_is_refused_and_nothing_comes_in(qtbot, make_window, tmp_path):
    w = make_window(None)
    bad = tmp_path / "notes.json"
    bad.write_text('{"title": "x", "messages": []}', encoding="utf-8")
    assert w.conversations_ctl.exports.import_conversation(str(bad))
    qtbot.waitUntil(lambda: _status(w).startswith("Could not import notes.json"), timeout=TIMEOUT)
    assert "not a chat exported by Callisto" in _status(w)
    w.conversations_ctl.exports.import_conversation(str(tmp_path / "gone.json"))
    qtbot.waitUntil(lambda: _status(w).startswith("Could not import gone.json"), timeout=TIMEOUT)
    assert w.history.list_conversations() == [] and w.conversation_id is None


def test_the_chat_is_copied_as_markdown_from_the_menu_and_the_list(qtbot, make_window):
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QMenu

    w = _window(qtbot, make_window)
    assert w.menus.act_copy_md.shortcut() == QKeySequence("Ctrl+Shift+C")
    w.menus.act_copy_md.trigger()
    copied = QGuiApplication.clipboard().text()
    assert copied.startswith("# Say the first letters\n") and "## alpha\n\n" in copied and "abcd" in copied
    assert _status(w) == "Copied “Say the first letters” as Markdown"
    first = w.conversation_id

    w.new_chat()
    QGuiApplication.clipboard().setText("")
    assert not w.conversations_ctl.exports.copy_markdown()  # a new, empty chat: nothing to copy
    assert _status(w).startswith("Nothing to copy yet") and QGuiApplication.clipboard().text() == ""
    lst = w.conversations_ctl.list
    menu = QMenu(lst)
    lst.fill_menu(menu, lst.item_for(first))
    (copy,) = [a for a in menu.actions() if a.text() == "Copy as Markdown"]
    copy.trigger()  # the list's menu copies the conversation it was asked on
    assert QGuiApplication.clipboard().text() == copied
