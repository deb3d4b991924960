"""Every chat at once, in the real window over real SQLite and real files: File → Export all
chats… asks for a folder (a dialog that does not block) and writes every chat as JSON in a new
folder there, off the UI thread; File → Import chats… takes many files at once, stores each chat
that is an export, opens the last, and says which file was not and why."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from tests.support.history import history_of_chats

TIMEOUT = 30_000


def _status(w) -> str:
    return w.statusBar().currentMessage()


def test_every_chat_is_exported_to_a_new_folder_and_imported_back_at_once(qtbot, make_window, tmp_path):
    h, ids = history_of_chats(["Garden", "Taxes", "Trip"])
    w = make_window(None, history=h)
    exports = w.conversations_ctl.exports

    w.menus.act_export_all.trigger()
    dlg = exports.export_dialog
    assert isinstance(dlg, QFileDialog) and dlg.isVisible() and dlg.objectName() == "exportAllDialog"
    assert dlg.fileMode() == QFileDialog.FileMode.Directory
    dlg.fileSelected.emit(str(tmp_path))  # what the dialog sends when a folder is chosen
    dlg.reject()
    qtbot.waitUntil(lambda: _status(w).startswith("Exported 3 chats to "), timeout=TIMEOUT)
    folder = Path(_status(w).removeprefix("Exported 3 chats to "))
    assert folder.parent == tmp_path and folder.name.startswith("Callisto chats ")
    files = sorted(folder.iterdir())
    assert [p.name for p in files] == ["Garden.json", "Taxes.json", "Trip.json"]
    assert exports.export_dir == str(tmp_path)  # the next dialog opens there

    # read back at once, a file that is no export among them: the others come in, the last opens
    (tmp_path / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    w.menus.act_import.trigger()
    dlg = exports.export_dialog
    assert dlg.objectName() == "importChatDialog" and Path(dlg.directory().absolutePath()) == tmp_path
    dlg.filesSelected.emit([str(p) for p in files] + [str(tmp_path / "notes.json")])
    dlg.reject()
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    assert _status(w) == (
        "Imported 3 chats; could not import notes.json: the file is not a chat exported by Callisto "
        "(its format is not callisto.conversation) nor one of LM Studio's, Open WebUI's, ChatGPT's or Claude's"
    )
    titles = [c.title for c in h.list_conversations()]
    assert sorted(titles) == ["Garden", "Garden", "Taxes", "Taxes", "Trip", "Trip"]
    new = [c.id for c in h.list_conversations() if c.id not in ids]
    assert len(new) == 3 and w.conversation_id in new
    assert h.get_conversation(w.conversation_id).title == "Trip"  # the last file read
    assert [m.text for m in w.chat.user_messages()] == ["notes on Trip"]
    assert sorted(w.conversations_ctl.list.ids()) == sorted([*ids, *new])


def test_an_export_that_cannot_be_written_says_why(qtbot, make_window, tmp_path):
    h, _ids = history_of_chats(["Garden"])
    w = make_window(None, history=h)
    (tmp_path / "file.txt").write_text("x")
    assert w.conversations_ctl.exports.export_all(str(tmp_path / "file.txt"))
    qtbot.waitUntil(lambda: _status(w).startswith("Could not export the chats"), timeout=TIMEOUT)
    assert _status(w) == f"Could not export the chats: {tmp_path / 'file.txt'} is not a folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]  # nothing made


def test_files_none_of_which_is_an_export_bring_nothing_in(qtbot, make_window, tmp_path):
    w = make_window(None)
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text("[]", encoding="utf-8")
    assert w.conversations_ctl.exports.import_conversations(
        [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    )
    qtbot.waitUntil(lambda: _status(w).startswith("Could not import"), timeout=TIMEOUT)
    assert _status(w).startswith("Could not import a.json (and 1 more): ")
    assert w.history.list_conversations() == [] and w.conversation_id is None


def test_an_open_webui_export_dropped_in_import_chats_brings_every_chat(qtbot, make_window, tmp_path):
    import json

    from tests.support.openwebui_chats import owui_chat, owui_message

    chats = [
        owui_chat(
            f"Chat {n}",
            [owui_message("q", "user", f"question {n}", None), owui_message("r", "assistant", "ok", "q")],
            "r",
            created=1_750_000_000 + n,
        )
        for n in range(3)
    ]
    path = tmp_path / "chat-export-1750000000.json"
    path.write_text(json.dumps(chats), encoding="utf-8")
    w = make_window(None)
    w.conversations_ctl.exports.import_conversations([str(path)])
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    assert _status(w) == "Imported 3 chats"
    assert sorted(w.conversations_ctl.list.titles()) == ["Chat 0", "Chat 1", "Chat 2"]
    assert [m.text for m in w.chat.user_messages()] == ["question 2"]  # the last one read, opened

    # a newer export of the same chats, one continued there since and one new: only those come
    chats[1]["updated_at"] = chats[1]["chat"]["timestamp"] = 1_750_000_500
    chats[1]["chat"]["history"]["messages"]["q2"] = {
        "id": "q2",
        "role": "user",
        "content": "and more",
        "parentId": "r",
        "childrenIds": [],
        "timestamp": 1_750_000_500,
    }
    chats[1]["chat"]["history"]["currentId"] = "q2"
    newer = chats + [
        owui_chat("Chat 3", [owui_message("q", "user", "question 3", None)], "q", created=1_750_000_003)
    ]
    path.write_text(json.dumps(newer), encoding="utf-8")
    w.statusBar().clearMessage()
    w.conversations_ctl.exports.import_conversations([str(path)])
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    assert _status(w) == "Imported 2 chats (2 were here already)"
    assert sorted(w.conversations_ctl.list.titles()) == ["Chat 0", "Chat 1", "Chat 1", "Chat 2", "Chat 3"]
    w.statusBar().clearMessage()
    w.conversations_ctl.exports.import_conversations([str(path)])  # the same file again: nothing new
    qtbot.waitUntil(lambda: _status(w).startswith("Nothing new"), timeout=TIMEOUT)
    assert _status(w) == "Nothing new: all 4 chats were here already."
