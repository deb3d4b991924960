"""One source of every setting and every choice (issue 28, Must show 1; defects U1 and U2).

The window, its pages, its dialogs and the worker read the settings from the window's one
``SettingsStore`` and hear its changes; the tool choice shown is the one the next message sends.
Each test drives the real window on a real (scripted) model, changes settings through the ways the
window offers, in different orders, restarts the window and checks that what is shown, what is
saved (``settings.json`` and the keychain) and what is sent agree.
"""

from __future__ import annotations

import json

import httpx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from app.storage.paths import settings_path
from app.storage.settings import Settings, load_settings
from tests.support.ports import free_port
from tests.ui.turns import send_turn

TIMEOUT = 60_000


def _labels(box) -> list[str]:
    return [box.itemText(i) for i in range(box.count())]


def _saved() -> dict:
    return json.loads(settings_path().read_text(encoding="utf-8"))


def _settings_dialog_save(qtbot, w, **changes) -> None:
    """Ctrl+, then (optionally) change fields by their setting key, then Save."""
    dlg = w.open_settings()
    for key, value in changes.items():
        control = dlg.controls[key][1]
        control.setCurrentIndex(control.findData(value))
    buttons = dlg.findChild(QDialogButtonBox)
    buttons.button(QDialogButtonBox.StandardButton.Save).click()
    assert not dlg.isVisible()


def _restart(qtbot, make_window, w, model=None):
    """Quit (Ctrl+Q's shutdown) and start the window again from what was saved."""
    w.shutdown()
    w.close()
    settings, _notice = load_settings()
    return make_window(model, settings=settings)


def _server_page(w):
    return w.show_page("server")


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=TIMEOUT, enter=True)


# -- U1 ---------------------------------------------------------------------------------------------


def test_u1_server_key_survives_a_settings_save_and_a_restart(qtbot, make_window, memory_keyring):
    """U1: Server → Start; restart (it starts by itself); open the Server page, then Settings → Save
    (no change), then Server → New key. The key is kept in the keychain (not settings.json), the
    server requires it, and after a restart it still does, with the key shown."""
    s = Settings()
    s.server.port = free_port()
    w = make_window(None, settings=s)
    page = _server_page(w)
    qtbot.mouseClick(page.toggle, Qt.MouseButton.LeftButton)
    assert page.running
    w = _restart(qtbot, make_window, w)
    page = w.pages["server"].widget
    assert page is not None
    qtbot.waitUntil(lambda: page.running, timeout=TIMEOUT)  # it was on: it started by itself
    _server_page(w)
    _settings_dialog_save(qtbot, w)  # Ctrl+, → Save with no change
    qtbot.mouseClick(page.new_key, Qt.MouseButton.LeftButton)
    key = page.api_key.text()
    assert key.startswith("cal-")
    url = page.address.text()
    assert httpx.get(url + "/v1/models", timeout=10).status_code == 401
    saved = _saved()["server"]
    assert saved["enabled"] is True and saved["require_key"] is True
    assert saved["api_key"] is None and key not in settings_path().read_text(encoding="utf-8")
    assert memory_keyring.store[("callisto", "server:api_key")] == key

    w = _restart(qtbot, make_window, w)
    page = w.pages["server"].widget
    qtbot.waitUntil(lambda: page.running, timeout=TIMEOUT)
    assert page.api_key.text() == key  # shown again, read from the keychain
    url = page.address.text()
    assert httpx.get(url + "/v1/models", timeout=10).status_code == 401
    ok = httpx.get(url + "/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert ok.status_code == 200


def test_u1_start_is_remembered_after_the_server_page_and_a_settings_save(qtbot, make_window, memory_keyring):
    """U1: with the Server page opened, then Settings saved, Start server is still remembered."""
    s = Settings()
    s.server.port = free_port()
    w = make_window(None, settings=s)
    page = _server_page(w)
    _settings_dialog_save(qtbot, w)
    qtbot.mouseClick(page.toggle, Qt.MouseButton.LeftButton)
    assert page.running and _saved()["server"]["enabled"] is True
    w = _restart(qtbot, make_window, w)
    qtbot.waitUntil(
        lambda: w.pages["server"].widget is not None and w.pages["server"].widget.running, timeout=TIMEOUT
    )


def test_u1_a_server_whose_key_cannot_be_read_does_not_start_open(qtbot, make_window, memory_keyring):
    """U1: a server started at launch never runs with less protection than the person chose: the
    key is gone from the keychain, so the server stays stopped and says why."""
    s = Settings()
    s.server.port = free_port()
    s.server.enabled = True
    s.server.require_key = True  # a key was chosen; the keychain no longer has it
    w = make_window(None, settings=s)
    page = w.pages["server"].widget
    assert page is not None
    qtbot.waitUntil(lambda: "Not started" in page.status.text(), timeout=TIMEOUT)
    assert not page.running and "API key" in page.status.text()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{s.server.port}/v1/models", timeout=5)


def test_u1_a_key_an_older_version_wrote_moves_to_the_keychain(qtbot, make_window, memory_keyring):
    s = Settings()
    s.server.port = free_port()
    s.server.api_key = "k-old"
    w = make_window(None, settings=s)
    page = _server_page(w)
    assert page.api_key.text() == "k-old"
    assert memory_keyring.store[("callisto", "server:api_key")] == "k-old"
    saved = _saved()["server"]
    assert saved["api_key"] is None and saved["require_key"] is True


def test_u1_a_server_started_after_settings_serves_their_tool_format(
    qtbot, make_window, memory_keyring, tmp_path
):
    """U1: Hermes set in Settings while the server runs: it serves Hermes at once (the model's
    Hermes call comes back as a call), not the format it started with."""
    from tests.server.conftest import TOOLS, write_loop_model

    model = write_loop_model(tmp_path)
    s = Settings()
    s.server.port = free_port()
    s.chat.tool_format = "none"
    w = make_window(model, settings=s)
    page = _server_page(w)
    qtbot.mouseClick(page.toggle, Qt.MouseButton.LeftButton)
    assert page.running and page.server.state.config.tool_format == "none"
    _settings_dialog_save(qtbot, w, **{"chat.tool_format": "hermes"})
    assert page.server.state.config.tool_format == "hermes"  # the running server follows
    body = {"model": "loop-hermes", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
    r = httpx.post(page.address.text() + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"].get("tool_calls"), r.json()  # read as Hermes calls


# -- U2 ---------------------------------------------------------------------------------------------


def test_u2_the_tool_control_shows_what_the_next_message_sends(qtbot, make_window, tool_model):
    """U2: Tools → "Call calculator", then Settings → tools off → Save: the control falls back to
    Auto, and Auto is what is sent (no "tool_choice names 'calculator'" failure); picking Auto
    again and a new chat send Auto too."""
    s = Settings()
    s.sampling.max_tokens = 24
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=s)
    box = w.tool_choice_box
    qtbot.waitUntil(lambda: "Call calculator" in _labels(box), timeout=TIMEOUT)
    box.setCurrentIndex(_labels(box).index("Call calculator"))
    assert w.worker.tool_choice == {"type": "function", "function": {"name": "calculator"}}
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        _settings_dialog_save(qtbot, w, **{"chat.tool_format": "none"})
    qtbot.waitUntil(lambda: "Call calculator" not in _labels(box), timeout=TIMEOUT)
    assert box.currentText() == "Tools: Auto"
    assert w.worker.tool_choice == box.value() == "auto"
    done = _send(qtbot, w, "hello")
    assert done.error is None, done.error
    box.setCurrentIndex(_labels(box).index("Tools: Auto"))
    w.new_chat()
    assert w.worker.tool_choice == box.value() == "auto"
    done = _send(qtbot, w, "hello again")
    assert done.error is None, done.error


def test_u2_every_way_the_choice_changes_is_what_the_worker_holds(qtbot, make_window, tool_model):
    """U2: the tools change (a model or format without them), a conversation is switched, a pick:
    after each, the worker holds what the control shows."""
    from app.ui.tool_choice import ToolChoiceBox

    box = ToolChoiceBox()
    qtbot.addWidget(box)
    told: list = []
    box.sig_choice.connect(told.append)
    box.set_tools(["calculator", "write_file"])
    box.setCurrentIndex(_labels(box).index("Call write_file"))
    assert told[-1] == box.value()
    box.set_tools(["calculator"])  # write_file went away: Auto, and told
    assert box.value() == "auto" and told[-1] == "auto"
    box.recall(7)
    box.setCurrentIndex(_labels(box).index("Call calculator"))
    box.recall(None)  # a new chat: the default, told
    assert told[-1] == box.value() == "auto"
    box.recall(7)  # back: its choice, told
    assert told[-1] == box.value() == {"type": "function", "function": {"name": "calculator"}}


# -- Must show 1: every way, in different orders, then a restart ---------------------------------------


def _shown_and_sent(w) -> dict:
    """What the window shows, what settings.json holds and what the worker will send."""
    page = w.pages["server"].widget
    saved = _saved()
    return {
        "format_saved": saved["chat"]["tool_format"],
        "format_sent": w.worker.state.config.tool_format,
        "ctx_saved": saved["model"]["context_length"],
        "ctx_sent": w.worker.state.config.n_ctx,
        "port_shown": page.port.value() if page is not None else None,
        "port_saved": saved["server"]["port"],
        "choice_shown": w.tool_choice_box.value(),
        "choice_sent": w.worker.tool_choice,
        "model_shown": w.model_picker.currentData(),
        "model_sent": w.worker.state.info.path if w.worker.state.info else None,
    }


def _agree(view: dict) -> None:
    assert view["format_saved"] == view["format_sent"], view
    assert view["ctx_saved"] == view["ctx_sent"], view
    if view["port_shown"] is not None:
        assert view["port_shown"] == view["port_saved"], view
    assert view["choice_shown"] == view["choice_sent"], view
    assert view["model_shown"] == view["model_sent"], view


@pytest.mark.parametrize("order", ["dialog_first", "pages_first"])
def test_must_show_1_every_way_in_any_order_then_a_restart(
    qtbot, make_window, tool_model, memory_keyring, order
):
    s = Settings()
    s.sampling.max_tokens = 16
    model = tool_model("calculator", '{"expression": "6*7"}')
    other = tool_model("current_datetime", "{}")  # the model the picker switches to
    s.model.recent_models = [str(other)]
    w = make_window(model, settings=s)
    box = w.tool_choice_box
    qtbot.waitUntil(lambda: "Call calculator" in _labels(box), timeout=TIMEOUT)
    port = free_port()

    def by_picker() -> None:
        picker = w.model_picker
        i = picker.findData(str(other))
        assert i >= 0, [picker.itemText(j) for j in range(picker.count())]
        with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
            picker.setCurrentIndex(i)
            picker.activated.emit(i)
        box.setCurrentIndex(_labels(box).index("Call current_datetime"))

    def by_dialog() -> None:
        with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
            _settings_dialog_save(qtbot, w, **{"chat.tool_format": "hermes"})
        dlg = w.open_settings("model.context_length")  # a second save: the context
        dlg.context_length.setValue(2048)
        with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
            dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()

    def by_pages() -> None:
        page = _server_page(w)
        page.port.setValue(port)
        qtbot.mouseClick(page.new_key, Qt.MouseButton.LeftButton)
        w.show_page("check")  # the Check page reads the chat's format
        w.show_page("chat")
        box.setCurrentIndex(_labels(box).index("Call calculator"))

    steps = [by_dialog, by_pages, by_picker] if order == "dialog_first" else [by_picker, by_pages, by_dialog]
    for step in steps:
        step()
        qtbot.waitUntil(
            lambda: w.worker.state.config.tool_format == w.settings.chat.tool_format, timeout=TIMEOUT
        )
        _agree(_shown_and_sent(w))
    key = w.pages["server"].widget.api_key.text()
    assert key and memory_keyring.store[("callisto", "server:api_key")] == key
    saved = _saved()
    assert saved["chat"]["tool_format"] == "hermes" and saved["model"]["context_length"] == 2048
    assert saved["server"]["port"] == port and saved["server"]["require_key"] is True
    assert saved["model"]["last_model_path"] == str(other)

    w = _restart(qtbot, make_window, w, saved["model"]["last_model_path"])  # the window loads the last model
    page = _server_page(w)
    assert page.api_key.text() == key and page.port.value() == port
    qtbot.waitUntil(lambda: w.worker.state.config.tool_format == "hermes", timeout=TIMEOUT)
    _agree(_shown_and_sent(w))
    assert w.settings.model.context_length == 2048
