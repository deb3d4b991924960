"""Every conversation exported at once, and many exports read back: real SQLite, real files. The
export makes a new folder (nothing there is replaced), names each file after its chat (the same
title twice: numbered), writes what Import reads back whole; a write that fails partway (a real
one: a file size limit set on the process) keeps what was written and says how far it got."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from app.calls import ToolCall
from app.storage.backup import backup_folder_name, export_all, read_exports
from app.storage.history import History, TurnMessage
from tests.support.history import call_turn

NOW = 1_780_000_000.0


def _history(path) -> tuple[History, dict[str, int]]:
    h = History(path)
    ids = {}
    for key, title in (("trip", "Trip"), ("garden", "Garden: roses/tulips?"), ("trip2", "trip")):
        cid = h.create_conversation(title).id
        h.record_turn(cid, None, [TurnMessage("user", f"notes on {title}"), TurnMessage("assistant", "ok")])
        ids[key] = cid
    call = ToolCall("call00001", "calculator", {"expression": "6*7"}, raw="<tool_call>")
    ids["maths"] = h.create_conversation("Maths").id
    h.record_turn(ids["maths"], None, call_turn("What is 6*7?", call, "42", "It is 42.", reasoning="easy"))
    h.set_folder(ids["maths"], "School")
    garden = h.load_conversation(ids["garden"]).messages[0].position
    h.archive_reply(ids["garden"], garden)  # Regenerate: "ok" kept as version 1 ...
    h.record_turn(ids["garden"], None, [TurnMessage("assistant", "Roses in May.")])  # ... this is 2
    return h, ids


def test_every_chat_is_written_to_a_new_folder_and_comes_back_whole(tmp_path):
    h, ids = _history(tmp_path / "history.db")
    (tmp_path / "out").mkdir()
    done = export_all(h, tmp_path / "out", now=NOW)
    assert done.folder == tmp_path / "out" / backup_folder_name(NOW)
    assert done.folder.name.startswith("Callisto chats ")
    names = sorted(p.name for p in done.files)
    assert names == ["Garden roses tulips.json", "Maths.json", "Trip.json", "trip (2).json"] or names == [
        "Garden roses tulips.json",
        "Maths.json",
        "Trip (2).json",
        "trip.json",
    ]
    assert sorted(p.name for p in done.folder.iterdir()) == names  # nothing else (no temp file)

    # read back into another history: every chat, every message, the call and its result
    back = History(tmp_path / "restored.db")
    read = read_exports(done.files)
    assert all(not isinstance(conv, str) for _p, conv in read)
    for _path, conv in read:
        back.restore_conversation(conv)
    restored = {c.title: back.load_conversation(c.id) for c in back.list_conversations()}
    assert sorted(restored) == sorted(["Trip", "trip", "Garden: roses/tulips?", "Maths"])
    maths, original = restored["Maths"], h.load_conversation(ids["maths"])
    assert [m.content for m in maths.messages] == [m.content for m in original.messages]
    assert maths.messages[1].reasoning == "easy"
    assert maths.messages[1].tool_calls[0].call.arguments == {"expression": "6*7"}
    assert maths.messages[1].tool_calls[0].outcome.content == "42"
    assert json.loads((done.folder / "Maths.json").read_text(encoding="utf-8"))["folder"] == "School"
    garden = restored["Garden: roses/tulips?"]  # the reply Regenerate replaced came too
    upos = garden.messages[0].position
    assert [m.content for m in garden.messages] == ["notes on Garden: roses/tulips?", "Roses in May."]
    assert garden.versions == {upos: (2, 2)}
    assert [m.content for m in back.reply_version(garden.id, upos, 1)] == ["ok"]


def test_a_second_export_makes_its_own_folder_and_replaces_nothing(tmp_path):
    h, _ids = _history(tmp_path / "history.db")
    first = export_all(h, tmp_path, now=NOW)
    before = {p: p.read_bytes() for p in first.files}
    h.rename_conversation(h.list_conversations()[0].id, "Renamed")
    second = export_all(h, tmp_path, now=NOW)
    assert second.folder == tmp_path / f"{backup_folder_name(NOW)} (2)"
    assert {p: p.read_bytes() for p in first.files} == before
    assert "Renamed.json" in [p.name for p in second.files]


def test_no_chats_is_an_empty_folder_and_a_file_is_no_folder(tmp_path):
    done = export_all(History(tmp_path / "empty.db"), tmp_path, now=NOW)
    assert done.files == [] and done.folder.is_dir() and list(done.folder.iterdir()) == []
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        export_all(History(tmp_path / "empty.db"), tmp_path / "file.txt")


def test_a_write_that_fails_partway_keeps_what_was_written_and_says_how_far_it_got(tmp_path):
    """The export runs in a child process whose files may not grow past 64 KiB (RLIMIT_FSIZE, and
    SIGXFSZ ignored, so the write fails with EFBIG as on a full disk): the oldest chat, written
    last, is larger."""
    pytest.importorskip("resource")
    h = History(tmp_path / "history.db")
    big = h.create_conversation("Big").id
    h.record_turn(big, None, [TurnMessage("user", "long"), TurnMessage("assistant", "word " * 40_000)])
    for title in ("Small one", "Small two"):
        cid = h.create_conversation(title).id
        h.record_turn(cid, None, [TurnMessage("user", "hi"), TurnMessage("assistant", "ok")])
    h.close()
    out = tmp_path / "out"
    out.mkdir()
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        from app.storage.backup import export_all
        from app.storage.history import History
        h = History({str(tmp_path / "history.db")!r})
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
        try:
            export_all(h, {str(out)!r}, now={NOW})
        except OSError as exc:
            print(exc)
            sys.exit(3)
        """
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stderr
    folder = out / backup_folder_name(NOW)
    assert run.stdout.strip() == f"2 of 3 chats written to {folder}; “Big.json” could not be: File too large"
    assert sorted(p.name for p in folder.iterdir()) == ["Small one.json", "Small two.json"]  # no part of Big
    assert all(not isinstance(conv, str) for _p, conv in read_exports(folder.iterdir()))


def test_files_read_back_one_by_one_each_says_why_it_cannot_be(tmp_path):
    h, _ids = _history(tmp_path / "history.db")
    done = export_all(h, tmp_path, now=NOW)
    (tmp_path / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    read = read_exports([done.files[0], tmp_path / "notes.json", tmp_path / "gone.json"])
    assert [p.name for p, _c in read] == [done.files[0].name, "notes.json", "gone.json"]
    assert not isinstance(read[0][1], str)
    assert (
        read[1][1]
        == "the file is not a chat exported by Callisto (its format is not callisto.conversation) nor one of LM Studio's, Open WebUI's, ChatGPT's or Claude's"
    )
    assert read[2][1] == "No such file or directory"


def test_the_chats_chosen_are_written_and_no_other(tmp_path):
    h, ids = _history(tmp_path / "history.db")
    done = export_all(h, tmp_path, ids=[ids["maths"], ids["garden"], 99_999], now=NOW)  # 99999: none
    assert sorted(p.name for p in done.files) == ["Garden roses tulips.json", "Maths.json"]
