"""Hostile storage: a bad history or settings file never stops the start, a failed save loses nothing."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from app.storage.history import History, HistoryError, TurnMessage, open_history
from app.storage.settings import Settings, load_settings, save_settings


def _conversation_with_partial(path):
    h = History(path)
    cid = h.create_conversation("c").id
    h.append_message(cid, "user", "question")
    partial = h.begin_assistant_message(cid)
    h.update_partial(partial.id, "a long reply already saved")
    return h, cid, partial.id


# -- history at start-up ----------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["garbage", "header_only", "folder", "fifo"])
def test_h8_unreadable_history_is_moved_aside_and_a_new_one_started(tmp_path, fault):
    p = tmp_path / "history.sqlite3"
    if fault == "garbage":
        p.write_bytes(os.urandom(8192))
    elif fault == "header_only":
        p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 84)
    elif fault == "folder":
        p.mkdir()
    else:
        os.mkfifo(p)
    history, notice = open_history(p, timeout=0.5)
    try:
        assert notice is not None and notice.code == "corrupt"
        assert notice.backup_path is not None and os.path.lexists(notice.backup_path)
        assert notice.backup_path.name in notice.message and "new, empty history" in notice.message
        cid = history.create_conversation("works").id  # the new history is a real, writable one
        assert history.get_conversation(cid).title == "works"
        assert p.is_file()
    finally:
        history.close()


def test_h8_locked_history_opens_in_memory_and_keeps_the_file(tmp_path):
    p = tmp_path / "history.sqlite3"
    h, cid, _ = _conversation_with_partial(p)
    h.close()
    other = sqlite3.connect(p, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another program writes and does not let go
    try:
        history, notice = open_history(p, timeout=0.2)
        assert notice is not None and notice.code == "unavailable"
        assert "locked" in notice.message and "in memory" in notice.message
        history.create_conversation("session only")
        history.close()
    finally:
        other.execute("ROLLBACK")
        other.close()
    kept = History(p)
    assert [c.id for c in kept.list_conversations()] == [cid]  # nothing moved, nothing lost
    kept.close()


def test_h8_history_folder_that_cannot_exist_opens_in_memory(tmp_path):
    (tmp_path / "data").write_text("a file where the data folder should be")
    history, notice = open_history(tmp_path / "data" / "history.sqlite3", timeout=0.2)
    assert notice is not None and notice.code == "unavailable"
    history.create_conversation("still works")
    history.close()


# -- settings at start-up ---------------------------------------------------------------------


def test_h8_settings_nested_to_recursion_are_backed_up(tmp_path):
    p = tmp_path / "settings.json"
    p.write_text("[" * 100_000)
    settings, notice = load_settings(p)
    assert settings == Settings()
    assert notice is not None and notice.code == "corrupt" and "nested too deeply" in notice.message
    assert notice.backup_path is not None and notice.backup_path.exists() and not p.exists()
    save_settings(settings, p)  # the next start reads a good file
    assert load_settings(p)[1] is None


def test_h8_settings_fifo_does_not_block_the_start(tmp_path):
    p = tmp_path / "settings.json"
    os.mkfifo(p)
    settings, notice = load_settings(p)  # blocked forever before
    assert settings == Settings()
    assert notice is not None and notice.code == "unreadable" and "not a regular file" in notice.message
    assert not os.path.lexists(p)  # moved aside, so saving works again
    save_settings(settings, p)


def test_h8_settings_in_a_folder_that_cannot_be_written_still_load(tmp_path, monkeypatch):
    p = tmp_path / "settings.json"
    p.write_text("{ broken")
    import app.storage.settings as settings_module

    def refuse(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(settings_module, "_backup", refuse)  # a read-only folder, for root too
    settings, notice = load_settings(p)
    assert settings == Settings() and notice.code == "corrupt"
    assert "could not be moved aside" in notice.message


# -- saving a turn ----------------------------------------------------------------------------


def test_h9_a_failed_final_save_keeps_the_partial_reply(tmp_path):
    p = tmp_path / "history.sqlite3"
    h, cid, partial = _conversation_with_partial(p)
    h.close()
    h = History(p, timeout=0.2)
    other = sqlite3.connect(p, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises((HistoryError, sqlite3.OperationalError)):
            h.record_turn(cid, partial, [TurnMessage("assistant", "the final reply")])
    finally:
        other.execute("ROLLBACK")
        other.close()
    contents = [m.content for m in h.load_conversation(cid).messages]
    assert contents == ["question", "a long reply already saved"]
    h.record_turn(cid, partial, [TurnMessage("assistant", "the final reply")])
    assert [m.content for m in h.load_conversation(cid).messages] == ["question", "the final reply"]
    h.close()


def test_h6_lone_surrogates_are_stored_as_valid_text(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = h.create_conversation("c").id
    m = h.append_message(
        cid,
        "assistant",
        "bad \ud800",
        tool_calls=[{"call_id": "c1", "name": "calc", "arguments": {"x": "\udfff"}, "result": "r\ud801"}],
    )
    stored = h.get_message(m.id)
    assert stored.content == "bad \ufffd"
    call = h.load_conversation(cid).messages[0].tool_calls[0]
    assert json.dumps(call.to_dict(), ensure_ascii=False).encode("utf-8")
    assert "\ufffd" in json.dumps(call.to_dict(), ensure_ascii=False)
    h.close()


def test_h8_a_home_that_cannot_be_written_still_opens_the_window(tmp_path):
    # A file where the home folder should be fails like a read-only home, for root too. Before, the
    # start died with a raw traceback before logging and the exception hooks existed.
    import subprocess
    import sys
    from pathlib import Path

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    env = dict(os.environ, CALLISTO_HOME=str(blocker / "home"), QT_QPA_PLATFORM="offscreen")
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(shot)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    assert "Traceback" not in proc.stderr
    assert shot.stat().st_size > 0
