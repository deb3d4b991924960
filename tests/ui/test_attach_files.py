"""Text files attached to a message in the real window: File… (its dialog) and a drop of files on
the window put a chip a file under the message box (× takes one off); Send puts each file's text in
the message, labelled and fenced, which the chat shows, the real worker's session sends the scripted
model, and history keeps; a binary file, a file too large and an eleventh file are refused with why;
JSON that is no Callisto export is attached, an export is imported."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from app.storage.attached_files import MAX_FILE_BYTES, MAX_FILES
from app.storage.export import conversation_json
from app.storage.settings import Settings
from tests.support.drag import drag_event
from tests.ui.scripted_gguf import write_alphabet_model

TIMEOUT = 30_000


def _window(qtbot, make_window):
    s = Settings()
    s.sampling.max_tokens = 3
    return make_window(write_alphabet_model(), settings=s)


def _status(w) -> str:
    return w.statusBar().currentMessage()


def _drop(widget, paths) -> bool:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    centre = QPointF(widget.rect().center())
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = drag_event(QDragEnterEvent, centre, Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    drop = QDropEvent(centre, Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(widget, drop)
    return drop.isAccepted()


def _chips(w) -> list[str]:
    return [f.name for f in w.chat_ctl.files.pending.files]


def test_files_chosen_with_the_button_go_with_the_message(qtbot, make_window, tmp_path):
    w = _window(qtbot, make_window)
    code = tmp_path / "adder.py"
    code.write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    binary = tmp_path / "tool.exe"
    binary.write_bytes(b"MZ\x00\x00binary")
    files = w.chat_ctl.files
    qtbot.mouseClick(files.button, Qt.MouseButton.LeftButton)
    dlg = files.dialog
    assert dlg.isVisible() and dlg.objectName() == "attachFilesDialog"
    dlg.filesSelected.emit([str(code), str(binary)])  # what the dialog sends when the person picks them
    dlg.reject()
    qtbot.waitUntil(lambda: _chips(w) == ["adder.py"], timeout=TIMEOUT)
    assert "Attached adder.py" in _status(w) and "tool.exe is not a text file" in _status(w)
    assert (
        files.pending.isVisibleTo(w)
        and "adder.py · 32 B" in files.pending.chips[0].findChild(type(w.load_label)).text()
    )

    w.compose.setPlainText("What does this do?")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    expected = "What does this do?\n\nFile `adder.py`:\n\n```python\ndef add(a, b):\n    return a + b\n```"
    (user,) = w.chat.user_messages()
    assert user.text == expected and "return a + b" in user.view.toPlainText()
    assert [m.content for m in w.worker.session.messages if m.role == "user"] == [
        expected
    ]  # what the model read
    stored = w.history.load_conversation(w.conversation_id)
    assert [m.content for m in stored.messages if m.role == "user"] == [expected]
    assert stored.title == "What does this do?"
    assert _chips(w) == [] and files.pending.isHidden()  # they left with the message
    assert w.chat.current_assistant().text() == "abc"


def test_dropped_files_are_attached_an_export_is_imported_and_a_file_alone_is_sent(
    qtbot, make_window, tmp_path
):
    w = _window(qtbot, make_window)
    notes = tmp_path / "notes.txt"
    notes.write_text("buy milk\n", encoding="utf-8")
    data = tmp_path / "data.json"
    data.write_text('{"rows": [1, 2]}', encoding="utf-8")
    big = tmp_path / "huge.log"
    big.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    saved = w.history.load_conversation(w.history.create_conversation("Saved chat").id)
    export = tmp_path / "saved.json"
    export.write_text(conversation_json(saved), encoding="utf-8")
    before = {c.id for c in w.history.list_conversations()}
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)

    assert _drop(w.chat_page, [notes, data, export, big])
    qtbot.waitUntil(lambda: _chips(w) == ["data.json", "notes.txt"], timeout=TIMEOUT)  # (JSON sorted first)
    qtbot.waitUntil(lambda: any(m.startswith("Imported “Saved chat”") for m in said), timeout=TIMEOUT)
    (new,) = {c.id for c in w.history.list_conversations()} - before  # the export came in as a chat
    assert w.history.get_conversation(new).title == "Saved chat"
    assert any("huge.log is 1.0 MB" in m for m in said)

    # × takes one off
    pending = w.chat_ctl.files.pending
    pending.chips[0].findChild(type(w.chat_ctl.files.button)).click()
    assert _chips(w) == ["notes.txt"]

    w.new_chat()
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()  # a file alone is a message
    assert w.chat.user_messages()[0].text == "File `notes.txt`:\n\n```\nbuy milk\n```"
    assert w.history.get_conversation(w.conversation_id).title == "notes.txt"


def test_a_message_takes_at_most_ten_files(qtbot, make_window, tmp_path):
    w = _window(qtbot, make_window)
    paths = []
    for k in range(MAX_FILES + 1):
        p = tmp_path / f"part{k:02d}.txt"
        p.write_text(f"part {k}\n", encoding="utf-8")
        paths.append(p)
    assert w.chat_ctl.files.add_paths(paths)
    qtbot.waitUntil(lambda: len(_chips(w)) == MAX_FILES, timeout=TIMEOUT)
    assert f"part{MAX_FILES:02d}.txt: a message takes at most {MAX_FILES} files" in _status(w)
    assert not w.chat_ctl.files.add_paths([])
    assert Path(paths[0]).is_file()  # nothing is written or moved


def test_no_control_of_the_compose_row_is_squeezed_at_any_width(qtbot, make_window):
    """With the File button beside Image…, the controls under a narrow chat go on as many lines as
    they need: each keeps the width it asks for, inside the window, and the message box its room."""
    w = _window(qtbot, make_window)
    w.tool_dock.setVisible(True)
    page = w.chat_page
    controls = [
        w.chat_ctl.images.button,
        w.chat_ctl.files.button,
        w.tool_choice_box,
        w.chat_ctl.thinking.box,
        w.send_button,
    ]
    for width, panel in [(800, True), (800, False), (1000, True), (1300, True), (1800, False)]:
        w.tool_dock.setVisible(panel)
        w.resize(width, 700)
        qtbot.waitUntil(lambda width=width: w.width() == width)
        QApplication.processEvents()
        for c in controls:
            assert c.width() >= c.minimumSizeHint().width(), (width, panel, c.objectName(), c.width())
            assert c.width() >= c.sizeHint().width() - 2, (width, panel, c.objectName(), c.width())
            right = c.mapTo(page, c.rect().topRight()).x()
            assert 0 <= right <= page.width(), (width, panel, c.objectName())
        assert w.compose.width() >= 300


def test_files_copied_in_the_file_manager_and_pasted_are_attached(qtbot, make_window, tmp_path):
    from PySide6.QtGui import QGuiApplication

    w = _window(qtbot, make_window)
    notes = tmp_path / "pasted.txt"
    notes.write_text("from the clipboard\n", encoding="utf-8")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(notes))])
    mime.setText(str(notes))  # (as file managers put it: the path as text too)
    QGuiApplication.clipboard().setMimeData(mime)
    w.compose.setFocus()
    w.compose.paste()
    qtbot.waitUntil(lambda: _chips(w) == ["pasted.txt"], timeout=TIMEOUT)
    assert w.compose.toPlainText() == ""  # attached, not its path typed
