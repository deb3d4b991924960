"""Text files attached to a message (``app.storage.attached_files``): UTF-8 (with or without a BOM)
and UTF-16 text is read with its line ends made ``\\n``; binary files, other encodings and files
over the limit are refused with the file named; the message puts each file, labelled, in a fence
its text cannot close, with the language its suffix names; a Callisto export is told from other
JSON. Real files."""

from __future__ import annotations

import json

import pytest

from app.storage.attached_files import (
    MAX_FILE_BYTES,
    AttachedFile,
    is_chat_export,
    message_with_files,
    read_text_file,
)
from app.storage.export import conversation_json
from app.storage.history import History


def test_text_files_are_read_in_their_encodings(tmp_path):
    (tmp_path / "a.py").write_bytes(b"def f():\r\n    return 1\r\n")
    (tmp_path / "bom.txt").write_bytes("\ufeffcaf\u00e9\n".encode())
    (tmp_path / "wide.txt").write_bytes("na\u00efve\n".encode("utf-16"))
    (tmp_path / "empty.md").write_bytes(b"")
    a = read_text_file(tmp_path / "a.py")
    assert (a.name, a.text, a.size) == ("a.py", "def f():\n    return 1\n", 24)
    assert read_text_file(tmp_path / "bom.txt").text == "caf\u00e9\n"
    assert read_text_file(tmp_path / "wide.txt").text == "na\u00efve\n"
    assert read_text_file(tmp_path / "empty.md").text == ""
    assert a.label == "a.py · 24 B"


def test_what_is_not_text_or_too_large_is_refused_by_name(tmp_path):
    (tmp_path / "tool.exe").write_bytes(b"MZ\x90\x00\x03\x00\x00\x00")
    (tmp_path / "latin.txt").write_bytes("caf\u00e9".encode("latin-1"))
    (tmp_path / "big.log").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ValueError, match="tool.exe is not a text file"):
        read_text_file(tmp_path / "tool.exe")
    with pytest.raises(ValueError, match="latin.txt is not a text file"):
        read_text_file(tmp_path / "latin.txt")
    with pytest.raises(ValueError, match="big.log is 1.0 MB"):
        read_text_file(tmp_path / "big.log")
    with pytest.raises(OSError):
        read_text_file(tmp_path / "missing.txt")


def test_the_message_holds_each_file_labelled_in_a_fence_it_cannot_close():
    files = [
        AttachedFile("main.py", "print('hi')\n", 12),
        AttachedFile("notes `v2`.md", "Use ```python fences``` here\n", 30),
        AttachedFile("data.unknown", "1,2\n", 4),
    ]
    text = message_with_files("  What do these do?  ", files)
    assert text == (
        "What do these do?\n\n"
        "File `main.py`:\n\n```python\nprint('hi')\n```\n\n"
        "File `notes 'v2'.md`:\n\n````markdown\nUse ```python fences``` here\n````\n\n"
        "File `data.unknown`:\n\n```\n1,2\n```"
    )
    assert message_with_files("", files[:1]).startswith("File `main.py`:")


def test_a_callisto_export_is_told_from_other_json(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        conv = h.load_conversation(h.create_conversation("Saved").id)
    (tmp_path / "chat.json").write_text(conversation_json(conv), encoding="utf-8")
    (tmp_path / "data.json").write_text(json.dumps({"format": "other", "rows": [1, 2]}), encoding="utf-8")
    (tmp_path / "notes.txt").write_text('"callisto.conversation"', encoding="utf-8")
    assert is_chat_export(tmp_path / "chat.json")
    assert not is_chat_export(tmp_path / "data.json")
    assert not is_chat_export(tmp_path / "notes.txt")  # only JSON files
    assert not is_chat_export(tmp_path / "missing.json")
    import zipfile

    with zipfile.ZipFile(tmp_path / "export.zip", "w") as z:  # ChatGPT's or Claude's data export
        z.writestr("conversations.json", "[]")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as z:
        z.writestr("notes.txt", "hi")
    (tmp_path / "broken.zip").write_bytes(b"PK not a zip")
    assert is_chat_export(tmp_path / "export.zip")
    assert not any(is_chat_export(tmp_path / n) for n in ("other.zip", "broken.zip", "missing.zip"))
    # other apps' chat files: LM Studio's by its name, the others' exports by their first chat's fields
    from tests.storage.test_cloud_exports import CLAUDE, _gpt_chat, _gpt_message, _text
    from tests.support.lmstudio_chats import WEATHER
    from tests.support.openwebui_chats import owui_chat, owui_message

    files = {
        "1764000000000.conversation.json": WEATHER,
        "conversations.json": [_gpt_chat("Hi", [_gpt_message("user", _text("hi"), 0)])],
        "claude.json": [CLAUDE],
        "chat-export.json": [owui_chat("Hi", [owui_message("q", "user", "hi", None)], "q", created=1)],
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
        assert is_chat_export(tmp_path / name), name
    (tmp_path / "mapping.json").write_text(json.dumps({"mapping": {"a": 1}}), encoding="utf-8")
    assert not is_chat_export(tmp_path / "mapping.json")  # one field alone is any JSON's
