"""Conversation history on real SQLite files: migrations, streaming replies, crash recovery, search."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from app.storage import migrations as migrations_mod
from app.storage.history import (
    ConversationNotFound,
    History,
    HistoryError,
    MessageNotFound,
)
from app.storage.migrations import MIGRATIONS, apply_migrations
from app.storage.paths import history_path
from tests.support.history import (
    add_tool_call,
    append_chat_message,
    chat_messages,
    edit_message,
    update_tool_call,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def h(tmp_path):
    store = History(tmp_path / "history.sqlite3")
    yield store
    store.close()


def _names(db_path: Path) -> list[str]:
    with sqlite3.connect(db_path) as db:
        return [r[0] for r in db.execute("SELECT name FROM migrations ORDER BY rowid")]


def test_default_path_wal_and_migrations_recorded():
    with History() as store:
        assert store.path == history_path()
        assert store.applied_migrations == [name for name, _ in MIGRATIONS]
    db = sqlite3.connect(history_path())
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    assert _names(history_path()) == [name for name, _ in MIGRATIONS]


def test_migrations_keep_the_names_users_databases_recorded():
    """A database knows each migration by its function's name: a renamed one would run twice."""
    assert [name for name, _ in MIGRATIONS] == [
        "m001_initial",
        "m002_message_details",
        "m003_tool_calls",
        "m004_indexes",
        "m005_message_fts",
        "m006_message_writer",
        "m007_message_notices",
        "m008_message_extra",
        "m009_reply_versions",
        "m010_turn_settings",
        "m011_message_images",
        "m012_conversation_system_prompt",
        "m013_conversation_pinned",
        "m014_conversation_folder",
        "m015_trash",
    ]
    assert all(fn.__name__ == name for name, fn in MIGRATIONS)


def test_open_twice_is_idempotent(tmp_path):
    p = tmp_path / "h.sqlite3"
    with History(p) as a:
        cid = a.create_conversation("first").id
        a.append_message(cid, "user", "hello")
    with History(p) as b:
        assert b.applied_migrations == []
        assert [c.title for c in b.list_conversations()] == ["first"]
    assert _names(p) == [name for name, _ in MIGRATIONS]  # each recorded exactly once


def test_older_schema_is_migrated_without_losing_data(tmp_path):
    """A database made by an older Callisto (only m001 applied, hand-written rows) gets upgraded."""
    p = tmp_path / "old.sqlite3"
    db = sqlite3.connect(p, isolation_level=None)
    db.executescript(
        """
        CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL);
        INSERT INTO migrations VALUES ('m001_initial', 1.0);
        CREATE TABLE conversations (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL, updated REAL NOT NULL, model_path TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            position INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL, UNIQUE (conversation_id, position));
        INSERT INTO conversations VALUES (1, 'Old chat', 10.0, 20.0, '/m/old.gguf');
        INSERT INTO messages VALUES (1, 1, 0, 'user', 'what is a zebra', 11.0);
        INSERT INTO messages VALUES (2, 1, 1, 'assistant', 'a striped horse', 12.0);
        """
    )
    db.close()
    with History(p) as store:
        assert store.applied_migrations == [name for name, _ in MIGRATIONS[1:]]
        conv = store.load_conversation(1)
        assert conv.title == "Old chat" and conv.model_path == "/m/old.gguf" and conv.settings is None
        assert [(m.role, m.content, m.status) for m in conv.messages] == [
            ("user", "what is a zebra", "complete"),
            ("assistant", "a striped horse", "complete"),
        ]
        # old rows are searchable (the full-text index was filled from existing rows)
        assert [c.id for c in store.search("striped")] == [1]
        # new features work on the old data
        msg = store.append_message(
            1, "assistant", "", tool_calls=[{"id": "c1", "name": "lookup", "arguments": {}}]
        )
        assert msg.position == 2 and msg.tool_calls[0].name == "lookup"
    assert _names(p) == [name for name, _ in MIGRATIONS]


def test_failed_migration_rolls_back_and_others_still_apply(tmp_path):
    p = tmp_path / "m.sqlite3"
    calls = []

    def broken(db):
        calls.append(1)
        db.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("boom")

    db = sqlite3.connect(p, isolation_level=None)
    with pytest.raises(RuntimeError, match="boom"):
        apply_migrations(db, [*MIGRATIONS[:1], ("m_broken", broken)])
    # the first migration stuck; the broken one left nothing behind
    assert [r[0] for r in db.execute("SELECT name FROM migrations")] == ["m001_initial"]
    assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'half_done'").fetchone()
    assert apply_migrations(
        db, [*MIGRATIONS[:1], ("m_fixed", lambda d: d.execute("CREATE TABLE ok (x)"))]
    ) == ["m_fixed"]
    db.close()
    assert calls == [1]


def test_conversation_crud_and_order(h):
    a = h.create_conversation(
        "Alpha", model_path=Path("/m/a.gguf"), settings={"sampling": {"temperature": 0.2}}
    )
    b = h.create_conversation("Beta")
    assert a.model_path == "/m/a.gguf" and a.settings == {"sampling": {"temperature": 0.2}}
    # most recent first; appending to a conversation moves it to the top
    assert [c.id for c in h.list_conversations()] == [b.id, a.id]
    h.append_message(a.id, "user", "hi")
    assert [c.id for c in h.list_conversations()] == [a.id, b.id]
    assert h.list_conversations(limit=1)[0].message_count == 1
    h.rename_conversation(b.id, "Beta renamed")
    assert h.get_conversation(b.id).title == "Beta renamed"
    h.update_conversation(a.id, model_path="/m/b.gguf", settings={"x": 1})
    got = h.get_conversation(a.id)
    assert got.model_path == "/m/b.gguf" and got.settings == {"x": 1} and got.title == "Alpha"
    d = got.to_dict()
    assert d["title"] == "Alpha" and d["messages"] == []
    with pytest.raises(ConversationNotFound):
        h.rename_conversation(9999, "x")
    with pytest.raises(ConversationNotFound):
        h.get_conversation(9999)
    with pytest.raises(HistoryError, match="not JSON"):
        h.create_conversation("bad", settings={"x": object()})
    assert len(h.list_conversations()) == 2  # the bad create left nothing


def test_messages_tool_calls_and_load(h):
    c = h.create_conversation("Tools")
    h.append_message(c.id, "system", "You are terse.")
    h.append_message(c.id, "user", "list files")
    call_msg = h.append_message(
        c.id,
        "assistant",
        "",
        reasoning="I should call ls",
        prompt_tokens=30,
        completion_tokens=12,
        tool_calls=[
            {"call_id": "call_1", "name": "list_dir", "arguments": {"path": "."}, "raw": "<tool_call>..."}
        ],
    )
    tc = call_msg.tool_calls[0]
    assert tc.arguments == {"path": "."} and tc.raw == "<tool_call>..."
    later = add_tool_call(h, call_msg.id, "call_2", "read_file", '{"path": broken json')
    assert later.position == 1 and later.arguments == '{"path": broken json'
    done = update_tool_call(h, tc.id, result="a.txt\nb.txt", duration_s=0.01, approval="allow_once")
    assert done.result == "a.txt\nb.txt" and done.approval == "allow_once" and done.error is None
    update_tool_call(h, later.id, error="denied by user", approval="deny")
    h.append_message(c.id, "tool", "a.txt\nb.txt", tool_call_id="call_1", name="list_dir")

    conv = h.load_conversation(c.id)
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool"]
    assert [m.position for m in conv.messages] == [0, 1, 2, 3]
    asst = conv.messages[2]
    assert asst.reasoning == "I should call ls" and asst.prompt_tokens == 30 and asst.completion_tokens == 12
    assert [(t.call_id, t.name, t.result, t.error) for t in asst.tool_calls] == [
        ("call_1", "list_dir", "a.txt\nb.txt", None),
        ("call_2", "read_file", None, "denied by user"),
    ]
    tool = conv.messages[3]
    assert tool.tool_call_id == "call_1" and tool.name == "list_dir"
    assert tool.to_chat_dict() == {
        "role": "tool",
        "content": "a.txt\nb.txt",
        "tool_call_id": "call_1",
        "name": "list_dir",
    }
    chat = asst.to_chat_dict()
    assert chat["tool_calls"][0] == {
        "id": "call_1",
        "name": "list_dir",
        "arguments": {"path": "."},
        "raw": "<tool_call>...",
    }
    assert conv.to_dict()["messages"][2]["tool_calls"][1]["approval"] == "deny"


def test_bad_input_is_rejected_and_changes_nothing(h):
    c = h.create_conversation("x")
    with pytest.raises(HistoryError, match="unknown role"):
        h.append_message(c.id, "wizard", "hi")
    with pytest.raises(HistoryError, match="unknown status"):
        h.append_message(c.id, "user", "hi", status="done")
    with pytest.raises(HistoryError, match="call id and a name"):
        h.append_message(c.id, "assistant", "x", tool_calls=[{"name": "ls"}])
    with pytest.raises(ConversationNotFound):
        h.append_message(12345, "user", "hi")
    with pytest.raises(MessageNotFound):
        h.update_partial(12345, "x")
    with pytest.raises(MessageNotFound):
        h.finish_message(12345)
    with pytest.raises(HistoryError, match="final status"):
        h.finish_message(h.begin_assistant_message(c.id).id, "streaming")
    # only the one streaming message exists: every failed call rolled back entirely
    assert [(m.role, m.status) for m in h.load_conversation(c.id).messages] == [("assistant", "streaming")]


def test_streaming_reply_lifecycle(h):
    c = h.create_conversation("Stream")
    h.append_message(c.id, "user", "count to three")
    m = h.begin_assistant_message(c.id)
    assert m.status == "streaming" and m.content == "" and m.position == 1
    h.update_partial(m.id, "one")
    h.update_partial(m.id, "one two", reasoning="counting")
    mid = h.get_message(m.id)
    assert (mid.content, mid.reasoning, mid.status) == ("one two", "counting", "streaming")
    fin = h.finish_message(m.id, "complete", content="one two three", prompt_tokens=5, completion_tokens=3)
    assert (fin.content, fin.reasoning, fin.status, fin.completion_tokens) == (
        "one two three",
        "counting",
        "complete",
        3,
    )
    err = h.begin_assistant_message(c.id)
    h.update_partial(err.id, "partial")
    e = h.finish_message(err.id, "error", error="model crashed")
    assert (e.status, e.content, e.error) == ("error", "partial", "model crashed")


def test_leftover_streaming_message_marked_interrupted_on_open(tmp_path):
    p = tmp_path / "h.sqlite3"
    store = History(p)
    c = store.create_conversation("x")
    m = store.begin_assistant_message(c.id)
    store.update_partial(m.id, "half a rep")
    done = store.begin_assistant_message(c.id)
    store.finish_message(done.id, "complete", content="whole")
    store.close()  # closed without finishing the first: e.g. the app quit mid-reply
    with History(p) as again:
        assert again.recovered_messages == 1
        msgs = again.load_conversation(c.id).messages
        assert [(x.content, x.status) for x in msgs] == [("half a rep", "interrupted"), ("whole", "complete")]


def test_killed_mid_reply_keeps_the_partial_reply(tmp_path):
    """A real process writing a reply is SIGKILLed; reopening shows what it had saved, marked interrupted."""
    p = tmp_path / "h.sqlite3"
    script = textwrap.dedent(
        f"""
        import sys, time
        from app.storage.history import History
        h = History({str(p)!r})
        c = h.create_conversation("Crash test")
        h.append_message(c.id, "user", "tell me a story")
        m = h.begin_assistant_message(c.id)
        text = ""
        for word in ["Once", " upon", " a", " time"]:
            text += word
            h.update_partial(m.id, text, reasoning="thinking...")
        print("READY", c.id, flush=True)
        while True:
            time.sleep(1)   # still 'streaming' when killed
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("READY"), line + proc.stderr.read()
        cid = int(line.split()[1])
        # while the writer lives, opening the file elsewhere (a second window) leaves its reply alone
        with History(p) as live:
            assert live.recovered_messages == 0
            assert live.load_conversation(cid).messages[1].status == "streaming"
            assert live.load_conversation(cid).messages[1].content == "Once upon a time"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    with History(p) as store:
        assert store.recovered_messages == 1
        conv = store.load_conversation(cid)
        assert conv.title == "Crash test"
        assert [(m.role, m.content, m.status) for m in conv.messages] == [
            ("user", "tell me a story", "complete"),
            ("assistant", "Once upon a time", "interrupted"),
        ]
        assert conv.messages[1].reasoning == "thinking..."


def test_search_titles_and_message_text(h):
    a = h.create_conversation("Paris trip")
    h.append_message(a.id, "user", "Which museums open on Mondays?")
    b = h.create_conversation("Cooking")
    h.append_message(b.id, "user", "A recipe for bouillabaisse please")
    r = h.begin_assistant_message(b.id)
    h.update_partial(r.id, "You need saffron and rascasse")
    c = h.create_conversation("Empty")
    assert [x.id for x in h.search("paris")] == [a.id]  # title, case-insensitive
    assert [x.id for x in h.search("museum")] == [a.id]  # word prefix in message text
    assert [x.id for x in h.search("saffron")] == [b.id]  # a partial (streaming) reply is indexed
    assert [x.id for x in h.search("SAFFRON rascasse")] == [b.id]  # every word must match
    assert h.search("saffron museums") == []
    assert h.search("   ") == []
    # FTS syntax in user text is treated as plain words, not an error
    for nasty in [
        '"',
        "a OR",
        "NEAR(",
        "*",
        "col:umn",
        "100%",
        "under_score",
        "-x",
        "'; DROP TABLE messages; --",
    ]:
        h.search(nasty)
    h.rename_conversation(c.id, "100% done_ok")
    assert [x.id for x in h.search("100%")] == [c.id]
    assert h.search("1000") == []
    # edits and deletions keep the index in sync
    h.update_partial(r.id, "You need fennel")
    assert h.search("saffron") == [] and [x.id for x in h.search("fennel")] == [b.id]
    h.delete_conversation(b.id)
    assert h.search("fennel") == [] and h.search("bouillabaisse") == []


def test_search_without_fts5_uses_like(h):
    c = h.create_conversation("no fts")
    h.append_message(c.id, "user", "the quick brown fox")
    h.has_fts = False  # as on a SQLite built without FTS5: the LIKE fallback answers
    assert [x.id for x in h.search("quick fox")] == [c.id]
    assert [x.id for x in h.search("ick")] == [c.id]  # substring, not prefix
    assert h.search("slow fox") == []
    assert h.search("100%") == []


def test_migrations_skip_fts_when_unavailable(tmp_path, monkeypatch):
    monkeypatch.setattr(migrations_mod, "_fts5_available", lambda db: False)
    with History(tmp_path / "nofts.sqlite3") as store:
        assert not store.has_fts
        c = store.create_conversation("t")
        store.append_message(c.id, "user", "findable words")
        assert [x.id for x in store.search("findable")] == [c.id]


def test_delete_cascades_to_messages_and_tool_calls(h):
    keep = h.create_conversation("keep")
    h.append_message(keep.id, "user", "stay")
    gone = h.create_conversation("gone")
    m = h.append_message(gone.id, "assistant", "", tool_calls=[{"id": "c", "name": "t", "arguments": {}}])
    add_tool_call(h, m.id, "c2", "t2")
    h.delete_conversation(gone.id)
    with pytest.raises(ConversationNotFound):
        h.load_conversation(gone.id)
    with pytest.raises(ConversationNotFound):
        h.delete_conversation(gone.id)
    db = sqlite3.connect(h.path)
    assert (
        db.execute("SELECT count(*) FROM messages WHERE conversation_id = ?", (gone.id,)).fetchone()[0] == 0
    )
    assert db.execute("SELECT count(*) FROM tool_calls").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 1
    db.close()
    assert [x.content for x in h.load_conversation(keep.id).messages] == ["stay"]


def test_truncate_for_edit_and_resend(h):
    c = h.create_conversation("edit")
    u1 = h.append_message(c.id, "user", "first question")
    h.append_message(
        c.id, "assistant", "first answer", tool_calls=[{"id": "c", "name": "t", "arguments": {}}]
    )
    u2 = h.append_message(c.id, "user", "second questoin")
    h.append_message(c.id, "assistant", "second answer")
    # edit the second question and resend: drop everything after it, fix its text
    assert h.truncate_after(c.id, u2.position) == 1
    edit_message(h, u2.id, "second question")
    new = h.append_message(c.id, "assistant", "better answer")
    assert new.position == 3
    assert [m.content for m in h.load_conversation(c.id).messages] == [
        "first question",
        "first answer",
        "second question",
        "better answer",
    ]
    assert h.truncate_after(c.id, u1.position - 1) == 4  # remove everything, the first message included
    assert h.load_conversation(c.id).messages == []
    assert h.search("better") == []
    db = sqlite3.connect(h.path)
    assert db.execute("SELECT count(*) FROM tool_calls").fetchone()[0] == 0
    db.close()
    with pytest.raises(ConversationNotFound):
        h.truncate_after(999, 0)


def test_shared_between_threads(h):
    """Worker threads and the main thread write through one History without errors or lost rows."""
    c = h.create_conversation("threads")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(25):
                m = h.begin_assistant_message(c.id)
                h.update_partial(m.id, f"w{n}-{i}")
                h.finish_message(m.id)
        except BaseException as exc:  # noqa: BLE001 - any failure of a writer thread is reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for i in range(25):
        h.append_message(c.id, "user", f"main-{i}")
    for t in threads:
        t.join()
    assert errors == []
    msgs = h.load_conversation(c.id).messages
    assert len(msgs) == 125
    assert [m.position for m in msgs] == list(range(125))
    assert all(m.status == "complete" for m in msgs)


def test_two_processes_share_the_file(tmp_path):
    """Another process (e.g. a second window) sees committed writes; WAL lets readers and a writer coexist."""
    p = tmp_path / "h.sqlite3"
    with History(p) as a:
        c = a.create_conversation("shared")
        script = textwrap.dedent(
            f"""
            from app.storage.history import History
            with History({str(p)!r}) as b:
                b.append_message({c.id}, "user", "from the other process")
            """
        )
        out = subprocess.run(
            [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert [m.content for m in a.load_conversation(c.id).messages] == ["from the other process"]


def test_open_history_in_same_process_does_not_interrupt_a_live_reply(tmp_path):
    p = tmp_path / "h.sqlite3"
    first = History(p)
    c = first.create_conversation("x")
    m = first.begin_assistant_message(c.id)
    first.update_partial(m.id, "still going")
    with History(p) as second:
        assert second.recovered_messages == 0
        assert second.get_message(m.id).status == "streaming"
    first.update_partial(m.id, "still going, more")
    first.close()
    with History(p) as third:
        assert third.recovered_messages == 1
        got = third.get_message(m.id)
        assert (got.content, got.status) == ("still going, more", "interrupted")


def test_engine_messages_round_trip():
    """Messages from the chat loop are stored and come back equal (the UI resumes a conversation)."""
    from app.engine.messages import Message, ToolCall

    original = [
        Message("system", "Be terse."),
        Message("user", "weather in Oslo?"),
        Message(
            "assistant",
            "",
            reasoning="need the tool",
            tool_calls=[ToolCall("call00001", "weather", {"city": "Oslo"}, raw="<tool_call>{}</tool_call>")],
        ),
        Message("tool", "-3 C, snow", tool_call_id="call00001", name="weather"),
        Message("assistant", "It is -3 C and snowing."),
    ]
    with History() as h:
        c = h.create_conversation("Oslo")
        for msg in original:
            append_chat_message(h, c.id, msg.to_dict())
        append_chat_message(h, c.id, {"role": "assistant", "content": "boom"}, status="error")
        restored = [Message.from_dict(d) for d in chat_messages(h, c.id)]
        assert restored == original
        assert len(chat_messages(h, c.id, include_errors=True)) == 6
        # OpenAI-shaped tool calls (arguments as a JSON string) are accepted too
        m = append_chat_message(
            h,
            c.id,
            {
                "role": "assistant",
                "tool_calls": [{"id": "call00002", "function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
        )
        assert m.tool_calls[0].arguments == {"a": 1} and m.tool_calls[0].name == "f"
        with pytest.raises(HistoryError, match="not a chat message"):
            append_chat_message(h, c.id, {"content": "no role"})
        with pytest.raises(HistoryError, match="must be a string"):
            append_chat_message(h, c.id, {"role": "user", "content": ["parts"]})
