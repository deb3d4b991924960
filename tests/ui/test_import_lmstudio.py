"""LM Studio's chats brought into the real window (File → Import from LM Studio…) over real files and
real SQLite: LM Studio's own folder is found from the home folder, its chats come in off the UI
thread, each in its folder and pinned as in LM Studio, and are listed; a second import brings only
what is new; not found, a folder dialog (that does not block) asks where it is (for Jan's too); the
status bar says what came and what did not."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from tests.storage.test_jan_chats import WEATHER as JAN_WEATHER
from tests.support.jan_chats import jan_thread, write_jan_thread
from tests.support.lmstudio_chats import WEATHER, lms_chat, lms_reply, lms_text, lms_user, write_lms_chat
from tests.support.other_chats import imported_from_menu

TIMEOUT = 30_000


def _status(w) -> str:
    return w.statusBar().currentMessage()


def test_lm_studio_s_chats_come_in_with_their_folders_once(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    home = tmp_path / ".lmstudio"
    write_lms_chat(home, WEATHER, "1.conversation.json")
    budget = lms_chat("Budget", lms_user("Sum 3 and 4"), lms_reply([lms_text("7")]), made=2_000)
    write_lms_chat(home, budget, "2.conversation.json", "Work")
    w = make_window(None)
    lst = w.conversations_ctl.list
    assert imported_from_menu(qtbot, w, w.menus.act_import_lms, "Import from LM Studio…") == (
        "Imported 2 chats from LM Studio; not brought: “Weather in Lyon”: 1 other version of a question."
    )
    assert sorted(lst.titles()) == ["Budget", "Weather in Lyon"]
    assert lst.headers()[:2] == ["Pinned", "▾ Work (1)"]  # pinned in LM Studio, and its folder
    weather = next(c for c in w.state.history.list_conversations() if c.title == "Weather in Lyon")
    w.open_conversation(weather.id)
    assert [m.text for m in w.chat.user_messages()] == [
        "What is the weather in Lyon?",
        "And in Paris tomorrow?",
    ]
    assert w.tool_panel.select_call("call-1")  # the call LM Studio's model made, in the side panel
    assert "get_weather" in w.tool_panel.detail_text() and "12 °C, rain" in w.tool_panel.detail_text()
    reply = w.chat.current_assistant()  # regenerated in LM Studio: "2/2", and ‹ shows the older one
    assert reply.version == (2, 2) and reply.version_label.text() == "2/2" and reply.btn_prev.isEnabled()
    qtbot.mouseClick(reply.btn_prev, Qt.MouseButton.LeftButton)
    assert w.chat.current_assistant().version == (1, 2)
    assert "An older answer." in w.chat.current_assistant().text()

    write_lms_chat(
        home,
        lms_chat("New", lms_user("Hi"), lms_reply([lms_text("Hello")]), made=3_000),
        "3.conversation.json",
    )
    w.menus.act_import_lms.trigger()
    qtbot.waitUntil(lambda: _status(w).startswith("Imported 1"), timeout=TIMEOUT)
    assert _status(w) == "Imported 1 chat from LM Studio (2 were here already)."
    assert len(lst.ids()) == 3


def _lmstudio_elsewhere(moved):
    write_lms_chat(moved, WEATHER, "1.conversation.json")
    (moved / "conversations" / "2.conversation.json").write_text("{broken", encoding="utf-8")
    return (
        "conversations",
        "Imported 1 chat from LM Studio; could not import 2.conversation.json: the file is not JSON (",
    )


def _jan_elsewhere(moved):
    write_jan_thread(moved, "t1", jan_thread("Weather in Lyon"), JAN_WEATHER)
    return "threads", "Imported 1 chat from Jan."


@pytest.mark.parametrize(
    ("key", "name", "make"), [("lmstudio", "LM Studio", _lmstudio_elsewhere), ("jan", "Jan", _jan_elsewhere)]
)
def test_the_app_s_folder_not_found_is_asked_for(qtbot, make_window, tmp_path, monkeypatch, key, name, make):
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    moved = tmp_path / "moved data"
    holds, said = make(moved)
    w = make_window(None)
    exports = w.conversations_ctl.exports

    getattr(w.menus, f"act_import_{'lms' if key == 'lmstudio' else key}").trigger()
    dlg = exports.export_dialog
    assert isinstance(dlg, QFileDialog) and dlg.isVisible() and dlg.objectName() == f"{key}FolderDialog"
    assert dlg.fileMode() == QFileDialog.FileMode.Directory
    assert f"{name}'s folder was not found" in _status(w)
    dlg.fileSelected.emit(str(tmp_path))  # a folder with no chats: asked again, and said
    assert f"holds no {name} chats" in _status(w)
    dlg.reject()
    dlg = exports.export_dialog
    dlg.fileSelected.emit(str(moved / holds))  # the folder of its chats will do
    dlg.reject()
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    assert _status(w).startswith(said)
    assert w.conversations_ctl.list.titles() == ["Weather in Lyon"]


def test_an_empty_list_offers_lm_studio_s_chats_when_there_are_some(
    qtbot, make_window, tmp_path, monkeypatch
):
    monkeypatch.setenv("HOME", str(tmp_path))
    w = make_window(None)
    lst = w.conversations_ctl.list
    assert (
        lst.placeholder() == "No conversations yet" and lst.list.count() == 1
    )  # no LM Studio: nothing offered

    write_lms_chat(tmp_path / ".lmstudio", WEATHER, "1.conversation.json")
    w.conversations_ctl.refresh_conversations()
    offered = lst.list.item(1)
    assert (
        lst.placeholder() == "No conversations yet" and offered.text() == "Import your 1 chat from LM Studio…"
    )
    assert not offered.flags() & Qt.ItemFlag.ItemIsSelectable and offered.font().underline()
    qtbot.mouseClick(
        lst.list.viewport(), Qt.MouseButton.LeftButton, pos=lst.list.visualItemRect(offered).center()
    )
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    assert lst.titles() == ["Weather in Lyon"] and lst.placeholder() is None

    lst.search.setText("nothing like this")  # a search that finds nothing offers nothing
    w.conversations_ctl.search_conversations("nothing like this")
    assert lst.placeholder() == "No matches" and lst.list.count() == 1
