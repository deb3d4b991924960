"""Files dropped on the real window: a GGUF model joins the library where it is and loads (the real
worker loads the scripted GGUF and it writes the next reply); a split shard stands for its model; a
projector joins the library and is not loaded; a file that is no GGUF is refused with why and
changes nothing; an exported chat comes in as a new conversation; the message box leaves these
files to the window instead of inserting their paths; other files are refused while dragged."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from app.storage.settings import Settings
from app.ui.window_drops import dropped_files
from tests.support.drag import drag_event
from tests.support.tiny_vision import png_bytes, write_tiny_projector
from tests.ui.scripted_gguf import CHATML, streaming_script, write_alphabet_model, write_scripted_gguf

TIMEOUT = 30_000


def _mime(paths, *, with_text: bool = False, urls=()) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths] + [QUrl(u) for u in urls])
    if with_text:  # as Linux file managers send it: the paths as text too
        mime.setText("\n".join(str(p) for p in paths))
    return mime


def _drag(widget, mime: QMimeData) -> bool:
    """``mime`` dragged over ``widget``: whether the window (or a widget in it) takes it."""
    centre = QPointF(widget.rect().center())
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = drag_event(QDragEnterEvent, centre, Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(widget, enter)
    move = drag_event(QDragMoveEvent, centre, Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(widget, move)
    return enter.isAccepted() and move.isAccepted()


def _drop(widget, mime: QMimeData) -> bool:
    centre = QPointF(widget.rect().center())
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    assert _drag(widget, mime)
    drop = QDropEvent(centre, Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(widget, drop)
    return drop.isAccepted()


def _status(w) -> str:
    return w.statusBar().currentMessage()


def _beta(folder: Path) -> Path:
    """A second scripted model, outside the models folder: it writes the alphabet too."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_scripted_gguf(
        folder / "beta.gguf", chat_template=CHATML, script=streaming_script(), default_next="a", name="beta"
    )


def _settings() -> Settings:
    s = Settings()
    s.sampling.max_tokens = 3
    return s


def test_a_model_dropped_on_the_message_box_joins_the_library_and_loads(qtbot, make_window, tmp_path):
    w = make_window(write_alphabet_model(), settings=_settings())
    beta = _beta(tmp_path / "elsewhere")
    said: list[str] = []
    w.statusBar().messageChanged.connect(said.append)
    # on the message box, with the paths as text too: not inserted, the window takes the file
    assert _drop(w.compose.viewport(), _mime([beta], with_text=True))
    assert w.compose.toPlainText() == ""
    qtbot.waitUntil(lambda: w.model_info is not None and Path(w.model_info.path) == beta, timeout=TIMEOUT)
    assert "Added beta to the library; loading it." in said
    assert beta in [m.path for m in w.library.scan()]  # in the library, where it is (no copy)
    assert beta.is_file() and not (w.library.models_dir / "imported" / "beta.gguf").exists()
    qtbot.waitUntil(
        lambda: any(w.model_picker.itemData(i) == str(beta) for i in range(w.model_picker.count()))
    )

    w.compose.setPlainText("Go on")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    reply = w.chat.current_assistant()
    assert reply.text() == "abc" and reply.who.text() == "beta"  # the dropped model wrote it

    # dropped again: it is the model the chat uses, nothing reloads
    loads = []
    w.worker.sig_loaded.connect(loads.append)
    assert _drop(w.chat_page, _mime([beta]))
    qtbot.waitUntil(lambda: "it is the model the chat uses" in _status(w), timeout=TIMEOUT)
    assert w.state.loading_path is None and loads == []


def test_a_projector_joins_the_library_and_is_not_loaded(qtbot, make_window, tmp_path):
    first = write_alphabet_model()
    w = make_window(first, settings=_settings())
    projector = write_tiny_projector(tmp_path / "mmproj-tiny.gguf")
    assert _drop(w.chat_page, _mime([projector]))
    qtbot.waitUntil(lambda: "projector mmproj-tiny" in _status(w), timeout=TIMEOUT)
    assert "Projector column" in _status(w)
    assert Path(w.model_info.path) == first and w.state.loading_path is None  # still the first model
    assert projector in [p.path for p in w.library.projectors()]
    assert projector not in [m.path for m in w.library.scan()]  # never offered as a chat model

    # two models in one drop: both join the library, neither loads by itself
    one, two = _beta(tmp_path / "one"), _beta(tmp_path / "two")
    assert _drop(w.chat_page, _mime([one, two]))
    qtbot.waitUntil(lambda: "Added 2 models to the library" in _status(w), timeout=TIMEOUT)
    assert Path(w.model_info.path) == first and w.state.loading_path is None
    assert {one, two} <= {m.path for m in w.library.scan()}


def test_the_shards_of_a_split_model_are_one_model_that_loads(qtbot, make_window, tmp_path):
    w = make_window(write_alphabet_model(), settings=_settings())
    folder = tmp_path / "split"
    first = _beta(folder).rename(folder / "gamma-00001-of-00002.gguf")
    second = folder / "gamma-00002-of-00002.gguf"
    second.write_bytes(first.read_bytes())
    # the second shard alone, then both: each time the model is the first shard's
    assert _drop(w.chat_page, _mime([second]))
    qtbot.waitUntil(lambda: w.model_info is not None and Path(w.model_info.path) == first, timeout=TIMEOUT)
    assert [m.path for m in w.library.scan()].count(first) == 1
    assert second not in [m.path for m in w.library.scan()]
    w.new_chat()
    assert _drop(w.chat_page, _mime([first, second]))
    qtbot.waitUntil(lambda: "it is the model the chat uses" in _status(w), timeout=TIMEOUT)
    assert "2 models" not in _status(w)


def test_a_file_that_is_no_model_is_refused_and_nothing_changes(qtbot, make_window, tmp_path):
    first = write_alphabet_model()
    w = make_window(first, settings=_settings())
    before = [m.path for m in w.library.scan()]
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is no GGUF file at all" * 10)
    missing = tmp_path / "gone.gguf"
    assert _drop(w.chat_page, _mime([bad, missing]))
    qtbot.waitUntil(lambda: "broken.gguf" in _status(w), timeout=TIMEOUT)
    said = _status(w)
    assert "Cannot import broken.gguf" in said and "gone.gguf does not exist" in said
    assert [m.path for m in w.library.scan()] == before
    assert Path(w.model_info.path) == first and w.state.loading_path is None


def test_an_exported_chat_dropped_on_the_window_comes_in_as_a_new_conversation(qtbot, make_window, tmp_path):
    w = make_window(write_alphabet_model(), settings=_settings())
    w.compose.setPlainText("Say the first letters")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    first = w.conversation_id
    export = tmp_path / "chat.json"
    assert w.conversations_ctl.exports.export_conversation(path=str(export))
    qtbot.waitUntil(export.is_file, timeout=TIMEOUT)
    assert json.loads(export.read_text(encoding="utf-8"))["format"] == "callisto.conversation"

    w.page_stack.show_page("models")  # dropped anywhere: here on the Models page
    assert _drop(w.centralWidget(), _mime([export]))
    qtbot.waitUntil(lambda: w.conversation_id not in (None, first), timeout=TIMEOUT)
    assert _status(w).startswith("Imported “Say the first letters” from chat.json (2 messages)")
    assert [u.text for u in w.chat.user_messages()] == ["Say the first letters"]
    assert w.chat.current_assistant().text() == "abc"
    assert len(w.conversations.ids()) == 2 and w.stack.currentWidget() is w.chat_page


def test_other_apps_exports_dropped_on_the_window_bring_their_chats(qtbot, make_window, tmp_path):
    import zipfile

    from tests.storage.test_cloud_exports import _powers

    export = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(export, "w") as z:
        z.writestr("conversations.json", json.dumps([_powers()]))
        z.writestr("file-abc-cat.png", png_bytes())
    w = make_window(None)
    assert _drop(w.centralWidget(), _mime([export]))
    qtbot.waitUntil(lambda: _status(w).startswith("Imported"), timeout=TIMEOUT)
    assert _status(w) == "Imported “Powers of two” from chatgpt-export.zip (6 messages)"
    assert [u.text for u in w.chat.user_messages()] == ["What is 2**10?", "And these?"]
    assert w.tool_panel.select_call(
        w.state.history.load_conversation(w.conversation_id).messages[1].tool_calls[0].call_id
    )
    assert "python" in w.tool_panel.detail_text() and "1024" in w.tool_panel.detail_text()

    # another app's chat file dropped is imported too, not attached (LM Studio's, by its name)
    from tests.support.lmstudio_chats import WEATHER

    lms = tmp_path / "1764000000000.conversation.json"
    lms.write_text(json.dumps(WEATHER), encoding="utf-8")
    assert _drop(w.centralWidget(), _mime([lms]))
    qtbot.waitUntil(lambda: "Weather in Lyon" in _status(w), timeout=TIMEOUT)
    assert _status(w).startswith("Imported “Weather in Lyon” from 1764000000000.conversation.json")
    assert w.chat_ctl.files.pending.files == [] and len(w.conversations.ids()) == 2


def test_a_drop_with_a_model_and_an_image_attaches_the_image_too(qtbot, make_window, tmp_path):
    w = make_window(write_alphabet_model(), settings=_settings())
    beta = _beta(tmp_path / "elsewhere")
    photo = tmp_path / "photo.png"
    photo.write_bytes(png_bytes(16, 10))
    assert _drop(w.chat_page, _mime([photo, beta]))
    qtbot.waitUntil(lambda: w.model_info is not None and Path(w.model_info.path) == beta, timeout=TIMEOUT)
    assert w.chat_ctl.images.pending.images == [photo.read_bytes()]


def test_links_are_refused_while_dragged_and_files_are_sorted(qtbot, make_window, tmp_path):
    w = make_window(None)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello", encoding="utf-8")
    assert _drag(w.centralWidget(), _mime([notes]))  # a text file: attached to the message
    assert not _drag(w.centralWidget(), _mime([], urls=["https://example.org/model.gguf"]))
    assert not dropped_files(_mime([], urls=["https://example.org/chat.json"]))
    found = dropped_files(_mime([tmp_path / "A.GGUF", notes, tmp_path / "c.Json", tmp_path / "p.PNG"]))
    assert found.models == [tmp_path / "A.GGUF"] and found.chats == [tmp_path / "c.Json"]
    assert found.files == [notes]  # (images are read by the images' part)
    # text dragged onto the message box is still inserted; files are handed to the window
    mime = QMimeData()
    mime.setText("some words")
    w.compose.insertFromMimeData(mime)
    assert w.compose.toPlainText() == "some words"
    w.compose.clear()
    handed = []
    w.compose.sig_files.connect(lambda m: handed.append([u.toLocalFile() for u in m.urls()]))
    for files in ([tmp_path / "m.gguf"], [notes]):
        with_paths = _mime(files, with_text=True)
        assert w.compose.canInsertFromMimeData(with_paths)
        w.compose.insertFromMimeData(with_paths)
    assert w.compose.toPlainText() == ""  # no path typed into the message
    assert handed == [[str(tmp_path / "m.gguf")], [str(notes)]]
