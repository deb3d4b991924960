"""``python -m app history``: list, export and import the conversations the window keeps, run as a
real subprocess on the real SQLite history under this test's ``CALLISTO_HOME``."""

from __future__ import annotations

import json
import os

from app.storage.history import History, TurnMessage
from tests.support.lmstudio_chats import WEATHER, lms_chat, lms_reply, lms_text, lms_user, write_lms_chat
from tests.test_cli import run_app


def _fill() -> tuple[int, int]:
    with History() as h:
        a = h.create_conversation("Sums", system_prompt="Be brief.").id
        h.append_message(a, "user", "2+2?")
        h.record_turn(
            a,
            h.begin_assistant_message(a).id,
            [TurnMessage("assistant", "4.", extra={"model": "/m/alpha.gguf"})],
        )
        b = h.create_conversation("\x1b]0;pwned\x07Evil \u202etitle").id
        h.append_message(b, "user", "zebra stripes")
        return a, b


def test_an_empty_history_lists_nothing():
    proc = run_app("history")
    assert (proc.returncode, proc.stdout.strip()) == (0, "No conversations yet.")
    proc = run_app("history", "--json")
    assert (proc.returncode, json.loads(proc.stdout)) == (0, [])
    proc = run_app("history", "export", "last", "x.md")
    assert proc.returncode == 1 and "no conversation to export yet" in proc.stderr


def test_the_list_shows_each_conversation_safely_and_searches():
    a, b = _fill()
    proc = run_app("history")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [int(line.split()[0]) for line in lines] == [b, a]  # the latest first
    assert "2 msg  Sums" in lines[1]
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout  # no terminal escape, no bidi override
    assert "\\x1b]0;pwned\\x07Evil" in lines[0]
    rows = json.loads(run_app("history", "--json").stdout)
    assert [(r["id"], r["messages"], r["system_prompt"]) for r in rows] == [(b, 1, None), (a, 2, "Be brief.")]
    with History() as h:
        h.set_pinned(a, True)  # pinned: marked, in its place (the window lists it first)
    lines = run_app("history").stdout.splitlines()
    assert [int(line.split()[0]) for line in lines] == [b, a] and "2 msg  pinned  Sums" in lines[1]
    rows = json.loads(run_app("history", "--json").stdout)
    assert [(r["id"], r["pinned"]) for r in rows] == [(b, False), (a, True)]
    with History() as h:
        h.set_folder(b, "Zoo \x1b[31m")  # in a folder: named before the title, safely
    lines = run_app("history").stdout.splitlines()
    assert "1 msg  [Zoo \\x1b[31m] " in lines[0] and "\x1b" not in "".join(lines)
    rows = json.loads(run_app("history", "--json").stdout)
    assert [(r["id"], r["folder"]) for r in rows] == [(b, "Zoo \x1b[31m"), (a, None)]
    found = json.loads(run_app("history", "--search", "zebra", "--json").stdout)
    assert [r["id"] for r in found] == [b]
    assert run_app("history", "--search", "nothing-like-this").stdout.strip() == "No conversations match."


def test_export_and_import_go_through_files(tmp_path):
    a, _b = _fill()
    md = tmp_path / "sums.md"
    proc = run_app("history", "export", str(a), str(md))
    assert proc.returncode == 0, proc.stderr
    assert f"Exported {a} “Sums” to {md}" in proc.stdout
    text = md.read_text(encoding="utf-8")
    assert text.startswith("# Sums\n") and "## alpha\n\n4." in text and "Be brief." in text
    as_json = tmp_path / "sums.txt"
    assert run_app("history", "export", str(a), str(as_json), "--format", "json").returncode == 0
    assert json.loads(as_json.read_text(encoding="utf-8"))["format"] == "callisto.conversation"
    last = tmp_path / "last.json"
    assert run_app("history", "export", "last", str(last)).returncode == 0
    assert json.loads(last.read_text(encoding="utf-8"))["title"].endswith("title")

    proc = run_app("history", "import", str(as_json), "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["title"] == "Sums" and row["messages"] == 2 and row["system_prompt"] == "Be brief."
    with History() as h:
        new, old = h.load_conversation(row["id"]), h.load_conversation(a)
        assert [(m.role, m.content) for m in new.messages] == [(m.role, m.content) for m in old.messages]
        assert len(h.list_conversations()) == 3


def test_what_cannot_be_done_is_said_with_its_exit_status(tmp_path):
    a, _b = _fill()
    proc = run_app("history", "export", "999", str(tmp_path / "x.md"))
    assert proc.returncode == 1 and "there is no conversation 999" in proc.stderr
    proc = run_app("history", "export", "first", str(tmp_path / "x.md"))
    assert proc.returncode == 2 and "is not a conversation id" in proc.stderr
    proc = run_app("history", "export", str(a), str(tmp_path / "missing" / "x.md"))
    assert proc.returncode == 1 and "cannot write" in proc.stderr
    proc = run_app("history", "export", str(a), str(tmp_path / "x.md"), "--format", "html")
    assert proc.returncode == 2
    bad = tmp_path / "notes.json"
    bad.write_text('{"title": "x"}', encoding="utf-8")
    proc = run_app("history", "import", str(bad))
    assert proc.returncode == 1 and "not a chat exported by Callisto" in proc.stderr
    proc = run_app("history", "import", str(tmp_path / "gone.json"))
    assert proc.returncode == 1 and "cannot import" in proc.stderr
    with History() as h:
        assert len(h.list_conversations()) == 2  # nothing came in
    assert not (tmp_path / "missing").exists() and not (tmp_path / "x.md").exists()


def test_every_conversation_is_exported_at_once_and_many_files_are_imported(tmp_path):
    a, b = _fill()
    proc = run_app("history", "export", "all", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert proc.stdout.strip() == f"Exported 2 conversations to {folder}"
    assert folder.name.startswith("Callisto chats ")
    files = sorted(folder.iterdir())
    assert (
        len(files) == 2 and all(p.suffix == ".json" for p in files) and "Sums.json" in [p.name for p in files]
    )
    assert all("\x1b" not in p.name for p in files)  # the escape is no part of a file's name

    bad = tmp_path / "notes.json"
    bad.write_text('{"title": "x"}', encoding="utf-8")
    proc = run_app("history", "import", str(files[0]), str(bad), str(files[1]), "--json")
    assert proc.returncode == 1 and "cannot import" in proc.stderr and "notes.json" in proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]  # one a line, the others still in
    assert len(rows) == 2 and sorted(r["messages"] for r in rows) == [1, 2]
    with History() as h:
        assert len(h.list_conversations()) == 4
        sums = next(h.load_conversation(r["id"]) for r in rows if r["title"] == "Sums")
        assert [m.content for m in sums.messages] == [m.content for m in h.load_conversation(a).messages]
    assert b not in [r["id"] for r in rows]

    proc = run_app("history", "export", "all", str(tmp_path), "--format", "markdown")
    assert proc.returncode == 2 and "exported as JSON" in proc.stderr
    proc = run_app("history", "export", "all", str(bad))
    assert proc.returncode == 1 and "is not a folder" in proc.stderr


def test_lm_studio_s_chats_are_imported_once_from_its_folder(tmp_path, monkeypatch):
    """``history import --lmstudio``: LM Studio's own folder (found from the home folder), or the one
    named; each chat in its folder, once; a file that cannot be read is said, exit status 1."""
    monkeypatch.setenv("HOME", str(tmp_path))
    proc = run_app("history", "import", "--lmstudio")
    assert proc.returncode == 1 and "LM Studio's folder was not found" in proc.stderr
    proc = run_app("history", "import")
    assert proc.returncode == 2 and "--lmstudio" in proc.stderr

    home = tmp_path / ".lmstudio"
    write_lms_chat(home, WEATHER, "1.conversation.json")
    write_lms_chat(
        home,
        lms_chat("Budget", lms_user("Sum 3 and 4"), lms_reply([lms_text("7")]), made=2),
        "2.conversation.json",
        "Work",
    )
    proc = run_app("history", "import", "--lmstudio")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == f"2 chats imported from LM Studio ({home})" and len(lines) == 3
    assert "note: not brought from “Weather in Lyon”: 1 other version of a question" in proc.stderr
    with History() as h:
        assert {c.title: c.folder for c in h.list_conversations()} == {
            "Weather in Lyon": None,
            "Budget": "Work",
        }

    moved = tmp_path / "moved"
    write_lms_chat(moved, WEATHER, "1.conversation.json")  # the same chat: here already
    (moved / "conversations" / "3.conversation.json").write_text("[]", encoding="utf-8")
    proc = run_app("history", "import", "--lmstudio", str(moved), "--json")
    assert proc.returncode == 1 and proc.stdout == "" and "3.conversation.json" in proc.stderr
    proc = run_app("history", "import", "--lmstudio", str(tmp_path / "nowhere"))
    assert proc.returncode == 1 and "has no conversations folder" in proc.stderr


def test_jan_s_chats_are_imported_once_and_with_lm_studio_s(tmp_path, monkeypatch):
    """``history import --jan [FOLDER]``: Jan's data folder (found as Jan finds it), or the one
    named; with ``--lmstudio`` too, both apps' chats in one go; each chat once."""
    from pathlib import Path

    from tests.support.jan_chats import jan_message, jan_thread, write_jan_thread

    monkeypatch.setenv("HOME", str(tmp_path))
    proc = run_app("history", "import", "--jan")
    assert (
        proc.returncode == 1 and "Jan's folder was not found" in proc.stderr and "--jan FOLDER" in proc.stderr
    )
    data = Path(os.environ["XDG_DATA_HOME"]) / "Jan" / "data"
    write_jan_thread(
        data, "t1", jan_thread("Sums"), [jan_message("user", "2+2?"), jan_message("assistant", "4", n=1)]
    )
    write_lms_chat(tmp_path / ".lmstudio", WEATHER, "1.conversation.json")
    proc = run_app("history", "import", "--lmstudio", "--jan", "--json")
    assert proc.returncode == 0, proc.stderr
    assert sorted(json.loads(line)["title"] for line in proc.stdout.splitlines()) == [
        "Sums",
        "Weather in Lyon",
    ]
    moved = tmp_path / "moved"
    write_jan_thread(moved, "t1", jan_thread("Sums"), [jan_message("user", "2+2?")])  # here already
    write_jan_thread(moved, "t2", None, [jan_message("user", "New?", n=5)])
    proc = run_app("history", "import", "--jan", str(moved / "threads"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"1 chat imported from Jan ({moved}); 1 was here already"
    proc = run_app("history", "import", "--jan", str(tmp_path / "nowhere"))
    assert proc.returncode == 1 and "has no threads folder" in proc.stderr


def test_an_open_webui_export_brings_each_of_its_chats(tmp_path):
    from tests.support.openwebui_chats import owui_chat, owui_message

    chats = [
        owui_chat(
            "Sums",
            [owui_message("q", "user", "2+2?", None), owui_message("r", "assistant", "4", "q")],
            "r",
            created=1_750_000_000,
        ),
        owui_chat("Hello", [owui_message("q", "user", "hi", None)], "q", created=1_750_000_100),
    ]
    path = tmp_path / "chat-export.json"
    path.write_text(json.dumps(chats), encoding="utf-8")
    proc = run_app("history", "import", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["title"], r["messages"]) for r in rows] == [("Sums", 2), ("Hello", 1)]


def test_delete_moves_to_recently_deleted_and_restore_puts_back_with_the_same_id():
    a, b = _fill()
    with History() as h:
        h.set_folder(a, "Maths")
        before = h.load_conversation(a).to_dict()
    proc = run_app("history", "delete", str(a), "999999")
    assert proc.returncode == 1 and "there is no conversation 999999" in proc.stderr
    assert (
        f"Deleted {a} “Sums”: in Recently deleted for 30 days (python -m app history restore {a})"
        in proc.stdout
    )
    assert [r["id"] for r in json.loads(run_app("history", "--json").stdout)] == [b]
    proc = run_app("history", "deleted")
    assert proc.returncode == 0 and proc.stdout.split()[0] == str(a) and "2 msg  [Maths] Sums" in proc.stdout
    (row,) = json.loads(run_app("history", "deleted", "--json").stdout)
    assert (row["id"], row["title"], row["folder"], row["messages"]) == (a, "Sums", "Maths", 2)
    assert isinstance(row["deleted"], float)

    proc = run_app("history", "restore", str(a), str(b))  # b is not deleted: said, a still comes back
    assert proc.returncode == 1 and f"conversation {b} is not in Recently deleted" in proc.stderr
    assert f"Put back {a} “Sums”" in proc.stdout
    with History() as h:
        assert h.load_conversation(a).to_dict() == before and h.trashed() == []
    assert run_app("history", "deleted").stdout.strip() == "Recently deleted is empty."
    assert run_app("history", "restore", "x").returncode == 2
    assert run_app("history", "delete", "last").returncode == 2


def test_deleted_empty_deletes_them_for_good():
    a, b = _fill()
    assert run_app("history", "delete", str(a), str(b)).returncode == 0
    proc = run_app("history", "deleted", "--empty")
    assert (proc.returncode, proc.stdout.strip()) == (0, "Deleted 2 chats for good.")
    assert json.loads(run_app("history", "deleted", "--json").stdout) == []
    assert run_app("history").stdout.strip() == "No conversations yet."


def test_a_newer_export_of_another_app_brings_only_what_is_new(tmp_path):
    from tests.support.openwebui_chats import owui_chat, owui_message

    def chat(n: int) -> dict:
        messages = [
            owui_message("q", "user", f"question {n}", None),
            owui_message("r", "assistant", "ok", "q"),
        ]
        return owui_chat(f"Chat {n}", messages, "r", created=1_750_000_000 + n)

    path = tmp_path / "chat-export.json"
    path.write_text(json.dumps([chat(0), chat(1)]), encoding="utf-8")
    assert run_app("history", "import", str(path)).returncode == 0
    path.write_text(json.dumps([chat(0), chat(1), chat(2)]), encoding="utf-8")  # exported again, later
    proc = run_app("history", "import", str(path))
    assert proc.returncode == 0 and proc.stdout.count("Imported ") == 1 and "“Chat 2”" in proc.stdout
    assert f"note: 2 chats of {path} were here already" in proc.stderr
    callisto = tmp_path / "mine.json"  # Callisto's own export: a second import is a second copy
    assert run_app("history", "export", "last", str(callisto)).returncode == 0
    assert run_app("history", "import", str(callisto), str(callisto)).stdout.count("Imported ") == 2
    assert len(json.loads(run_app("history", "--json").stdout)) == 5
