"""Jan's chats brought into the real window (File → Import from Jan…) over real files and real
SQLite: Jan's data folder is found as Jan finds it, its chats come in off the UI thread, pinned
when they were favourites, with their calls in the side panel; a second import brings only what is
new (not found, a folder dialog asks where it is: ``test_import_lmstudio``); an empty list offers
LM Studio's and Jan's chats, a line each, and a click brings that app's."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt

from tests.storage.test_jan_chats import WEATHER
from tests.support.jan_chats import jan_message, jan_thread, write_jan_thread
from tests.support.lmstudio_chats import WEATHER as LMS_WEATHER
from tests.support.lmstudio_chats import write_lms_chat
from tests.support.other_chats import imported_from_menu

TIMEOUT = 30_000


def _status(w) -> str:
    return w.statusBar().currentMessage()


def _jan_data() -> Path:
    """Jan's default data folder in the tests' own data folder (``XDG_DATA_HOME``)."""
    return Path(os.environ["XDG_DATA_HOME"]) / "Jan" / "data"


def test_jan_s_chats_come_in_once(qtbot, make_window, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    data = _jan_data()
    write_jan_thread(data, "t1", jan_thread("Weather in Lyon", is_favorite=True), WEATHER)
    write_jan_thread(data, "t2", jan_thread("Hello"), [jan_message("user", "Hi", n=50), "{broken"])
    w = make_window(None)
    lst = w.conversations_ctl.list
    assert imported_from_menu(qtbot, w, w.menus.act_import_jan, "Import from Jan…") == (
        "Imported 2 chats from Jan; not brought: “Hello”: 1 line of its messages that is not JSON."
    )
    assert sorted(lst.titles()) == ["Hello", "Weather in Lyon"] and lst.headers()[0] == "Pinned"
    weather = next(c for c in w.state.history.list_conversations() if c.title == "Weather in Lyon")
    w.open_conversation(weather.id)
    assert [m.text for m in w.chat.user_messages()] == ["What is the weather in Lyon?", "And this?"]
    assert w.tool_panel.select_call("call-1")  # the call Jan's model made, in the side panel
    assert "get_weather" in w.tool_panel.detail_text() and "12 °C, rain" in w.tool_panel.detail_text()

    write_jan_thread(data, "t3", jan_thread("New"), [jan_message("user", "Later", n=90)])
    w.menus.act_import_jan.trigger()
    qtbot.waitUntil(lambda: _status(w).startswith("Imported 1"), timeout=TIMEOUT)
    assert _status(w) == "Imported 1 chat from Jan (2 were here already)."
    assert len(lst.ids()) == 3


def test_an_empty_list_offers_lm_studio_s_and_jan_s_chats_each_on_its_line(
    qtbot, make_window, tmp_path, monkeypatch
):
    monkeypatch.setenv("HOME", str(tmp_path))
    write_jan_thread(_jan_data(), "t1", jan_thread("Jan's weather"), WEATHER)
    w = make_window(None)
    lst = w.conversations_ctl.list
    assert lst.list.item(1).text() == "Import your 1 chat from Jan…" and lst.list.count() == 2

    write_lms_chat(tmp_path / ".lmstudio", LMS_WEATHER, "1.conversation.json")
    w.conversations_ctl.refresh_conversations()
    lines = [lst.list.item(i) for i in (1, 2)]
    assert [i.text() for i in lines] == ["Import your 1 chat from LM Studio…", "Import your 1 chat from Jan…"]
    assert "File → Import from Jan…" in lines[1].toolTip()
    qtbot.mouseClick(
        lst.list.viewport(), Qt.MouseButton.LeftButton, pos=lst.list.visualItemRect(lines[1]).center()
    )
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    assert _status(w) == "Imported 1 chat from Jan." and lst.titles() == ["Jan's weather"]
