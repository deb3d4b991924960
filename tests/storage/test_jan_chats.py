"""Jan's chats brought into the history (``app.storage.jan``, ``backup.import_jan``) over real
files and real SQLite: the version Jan shows, thinking (a part of its own, or ``<think>`` tags),
tool calls with their results in each of the three ways Jan has kept them, pictures sent as data
URLs, the model, the instructions and the favourite mark; a chat brought once is not brought
twice; what cannot be read or brought is said. The chats here are written for these tests in
Jan's shape (``<data>/threads/<id>/thread.json`` and ``messages.jsonl``)."""

from __future__ import annotations

import base64
import json

import pytest

from app.storage.backup import import_jan
from app.storage.history import History
from app.storage.jan import conversation_from_jan, jan_data_folder, jan_thread_folders, read_jan_thread
from tests.support.jan_chats import JAN_MADE, jan_message, jan_text, jan_thread, write_jan_thread
from tests.support.other_chats import check_weather_call
from tests.support.tiny_vision import png_bytes

CALL = {
    "type": "tool_call",
    "tool_call_id": "call-1",
    "tool_name": "get_weather",
    "input": {"city": "Lyon"},
    "output": {"content": [{"type": "text", "text": "12 °C, rain"}]},
}


def _picture_url() -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes()).decode()


WEATHER = [
    jan_message("user", "What is the weather in Lyon?", n=0),
    jan_message(
        "assistant",
        jan_text("The user wants the weather.", "reasoning"),
        "Let me look.",
        CALL,
        "It is 12 °C and raining in Lyon.",
        n=1,
    ),
    jan_message("user", "And this?", {"type": "image_url", "image_url": {"url": _picture_url()}}, n=2),
    jan_message("assistant", "<think>A picture of a cat.</think>\n\nA cat.", n=3),
]


def test_a_chat_is_read_as_jan_shows_it():
    thread = jan_thread("Weather in Lyon", instructions="Answer briefly.", is_favorite=True)
    chat = conversation_from_jan(thread, WEATHER, updated=JAN_MADE / 1000 + 60)
    conv = chat.conversation
    assert conv.title == "Weather in Lyon" and conv.created == JAN_MADE / 1000
    assert conv.updated == JAN_MADE / 1000 + 60 and conv.pinned and conv.system_prompt == "Answer briefly."
    assert [(m.role, m.content) for m in conv.messages] == [
        ("user", "What is the weather in Lyon?"),
        ("assistant", "Let me look."),
        ("tool", "12 °C, rain"),
        ("assistant", "It is 12 °C and raining in Lyon."),
        ("user", "And this?"),
        ("assistant", "A cat."),
    ]
    check_weather_call(conv.messages)
    assert (
        conv.messages[1].extra["imported_from"] == "Jan" and conv.messages[1].created == JAN_MADE / 1000 + 1
    )
    assert conv.messages[4].images == [png_bytes()]
    assert conv.messages[5].reasoning == "A picture of a cat."  # (older Jan: in <think> tags)
    assert chat.left == []


def test_calls_kept_the_older_ways_are_read_too():
    old = {
        "tool": {"id": "c7", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
        "response": {"content": [{"type": "text", "text": "3"}]},
        "state": "ready",
    }
    messages = [
        jan_message("user", "1+2? then 2+2?", n=0),
        jan_message("assistant", "Adding.", n=1, metadata={"tool_calls": [old, {"tool": {}}, "nonsense"]}),
        # a call whose result is a tool message of its own, and a result that answers nothing
        jan_message(
            "assistant", {"type": "tool_call", "tool_call_id": "c8", "tool_name": "add", "input": "oops"}, n=2
        ),
        jan_message("tool", "4", n=3, tool_call_id="c8"),
        jan_message("tool", "5", n=4, tool_call_id="c9"),
        jan_message("assistant", "3 and 4.", n=5),
    ]
    chat = conversation_from_jan({}, messages)
    conv = chat.conversation
    assert conv.title == "1+2? then 2+2?" and conv.messages[1].extra == {"imported_from": "Jan"}
    assert [(m.role, m.content) for m in conv.messages] == [
        ("user", "1+2? then 2+2?"),
        ("assistant", "Adding."),
        ("tool", "3"),
        ("assistant", ""),
        ("tool", "4"),
        ("assistant", "3 and 4."),
    ]
    assert [(c.call_id, c.arguments, c.result) for c in conv.messages[1].tool_calls] == [
        ("c7", {"a": 1, "b": 2}, "3")
    ]
    (later,) = conv.messages[3].tool_calls
    assert (later.call_id, later.arguments, later.result) == ("c8", "oops", "4")  # (kept as written)
    assert chat.left == ["a tool call with no name", "a tool result with no call"]


def _versions() -> list[dict]:
    """A chat whose first question was edited (two first messages) and whose last reply was
    regenerated, the older reply chosen again (``activeChildId``)."""
    return [
        jan_message("user", "Old question", n=0, id="u1", metadata={"parentId": None}),
        jan_message("assistant", "Old answer", n=1, id="a1", metadata={"parentId": "u1"}),
        jan_message("user", "New question", n=2, id="u2", metadata={"parentId": None}),
        jan_message("assistant", "First answer", n=3, id="a2", metadata={"parentId": "u2"}),
        jan_message("assistant", "Second answer", n=4, id="a3", metadata={"parentId": "u2"}),
    ]


def test_the_version_jan_shows_is_brought():
    messages = _versions()
    chat = conversation_from_jan({"title": "Versions"}, messages)
    assert [m.content for m in chat.conversation.messages] == ["New question", "Second answer"]  # newest
    assert chat.left == ["2 other versions of its messages"]  # the edited question and its answer

    def kept(chat) -> list:
        return [
            (k.number, k.messages and [m.content for m in k.messages]) for k in chat.conversation.kept_replies
        ]

    assert kept(chat) == [(1, ["First answer"]), (2, None)]  # the regenerated reply: a version
    messages[2]["metadata"]["activeChildId"] = "a2"
    chat = conversation_from_jan({"title": "Versions"}, messages)
    assert [m.content for m in chat.conversation.messages] == ["New question", "First answer"]
    assert kept(chat) == [(1, None), (2, ["Second answer"])]
    assert chat.conversation.created == JAN_MADE / 1000 + 2  # (the chat shown began then)


def test_a_regenerated_reply_with_a_call_is_a_version_and_an_error_is_none(tmp_path):
    messages = [
        jan_message("user", "What is the weather in Lyon?", n=0, id="u1", metadata={"parentId": None}),
        jan_message(
            "assistant",
            "Let me look.",
            CALL,
            "It is 12 °C and raining in Lyon.",
            n=1,
            id="a1",
            metadata={"parentId": "u1"},
        ),
        jan_message("assistant", "Failed", n=2, id="a2", status="error", metadata={"parentId": "u1"}),
        jan_message("assistant", "No idea.", n=3, id="a3", metadata={"parentId": "u1"}),
        jan_message("user", "Thanks", n=4, id="u2", metadata={"parentId": "a3"}),
    ]
    chat = conversation_from_jan({"title": "Lyon"}, messages)
    conv = chat.conversation
    assert [m.content for m in conv.messages] == ["What is the weather in Lyon?", "No idea.", "Thanks"]
    one, two = conv.kept_replies
    assert (one.number, two.number, two.messages) == (1, 2, None)  # the error is no version
    assert [(m.role, m.content) for m in one.messages] == [
        ("assistant", "Let me look."),
        ("tool", "12 °C, rain"),
        ("assistant", "It is 12 °C and raining in Lyon."),
    ]
    assert [(c.name, c.arguments) for c in one.messages[0].tool_calls] == [("get_weather", {"city": "Lyon"})]
    assert chat.left == ["1 reply that was an error"]  # (said as one on the branch shown is)
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.restore_conversation(conv).id
        upos = h.load_conversation(cid).messages[0].position
        assert h.load_conversation(cid).versions == {upos: (2, 2)}
        assert [m.content for m in h.reply_version(cid, upos, 1)][-1] == "It is 12 °C and raining in Lyon."


def test_a_reply_that_lost_its_link_is_linked_as_jan_mends_it():
    # Jan's bug: a reply written with no parent, and the next question hung from the one before
    messages = [
        jan_message("user", "One", n=0, id="u1", metadata={"parentId": None}),
        jan_message("assistant", "Answer one", n=1, id="a1", metadata={}),
        jan_message("user", "Two", n=2, id="u2", metadata={"parentId": "u1"}),
        jan_message("assistant", "Answer two", n=3, id="a2", metadata={"parentId": "u2"}),
    ]
    chat = conversation_from_jan({}, messages)
    assert [m.content for m in chat.conversation.messages] == ["One", "Answer one", "Two", "Answer two"]
    assert chat.left == []


def test_a_cycle_of_versions_ends():
    messages = [
        jan_message("user", "Q", n=0, id="u1", metadata={"parentId": None, "activeChildId": "a1"}),
        jan_message("assistant", "A", n=1, id="a1", metadata={"parentId": "u1", "activeChildId": "u1"}),
        jan_message("user", "Loop", n=2, id="u1", metadata={"parentId": "a1"}),
    ]
    chat = conversation_from_jan({}, messages)
    assert [m.content for m in chat.conversation.messages][:2] == ["Q", "A"]
    assert len(chat.conversation.messages) <= 3


def test_what_is_not_brought_is_said():
    messages = [
        jan_message(
            "user",
            "Read these",
            n=0,
            metadata={"inline_file_contents": [{"name": "a.txt", "content": "alpha"}, {"name": "b.txt"}, 3]},
        ),
        jan_message("assistant", "Error: the model crashed", n=1, metadata={"error": "crash"}),
        jan_message(
            "user", "And this link", {"type": "image_url", "image_url": {"url": "https://x/y.png"}}, n=2
        ),
        jan_message("narrator", "Once upon a time", n=3),
        jan_message("assistant", "Done.", n=4),
    ]
    chat = conversation_from_jan({"title": 7, "assistants": "none", "metadata": []}, messages)
    conv = chat.conversation
    assert [(m.role, m.content) for m in conv.messages] == [
        ("user", "Read these\n\nFile `a.txt`:\n\n```\nalpha\n```"),  # (b.txt kept no text: Jan sent none)
        ("user", "And this link"),
        ("assistant", "Done."),
    ]
    assert conv.title == "Read these" and not conv.pinned and conv.system_prompt is None
    assert chat.left == [
        "an attached picture that is not in the file (a link, not its data)",
        "message 4, whose role is 'narrator'",
        "1 reply that was an error",
    ]


@pytest.mark.parametrize(
    "messages",
    [[], ["nonsense", 3], [{"role": "user", "content": 5}, {"role": None, "content": [None, {"type": 3}]}]],
)
def test_nonsense_is_refused_or_read_as_what_it_is(messages):
    if not any(isinstance(m, dict) for m in messages):
        with pytest.raises(ValueError, match="no messages"):
            conversation_from_jan({}, messages)
        return
    chat = conversation_from_jan({}, messages)
    assert [(m.role, m.content) for m in chat.conversation.messages] == [("user", "")]
    assert chat.conversation.title == "Jan chat" and chat.left == ["message 2, whose role is 'None'"]


def test_every_chat_of_jan_s_folder_is_brought_once(tmp_path):
    data = tmp_path / "Jan" / "data"
    write_jan_thread(data, "t1", jan_thread("Weather in Lyon", is_favorite=True), WEATHER)
    write_jan_thread(
        data,
        "t2",
        None,  # (no thread.json: the title is the first question)
        [jan_message("user", "Hello?", n=100), "{broken line", jan_message("assistant", "Hi.", n=101)],
    )
    (data / "threads" / "empty").mkdir()  # a chat begun and never written to: not a chat
    bad = write_jan_thread(data, "t3", None, [jan_message("user", "x", n=200)])
    (bad / "thread.json").write_text("{not json", encoding="utf-8")
    assert [p.name for p in jan_thread_folders(data)] == ["t1", "t2", "t3"]
    h = History(tmp_path / "h.sqlite3")
    done = import_jan(h, data)
    assert sorted(c.title for c in done.imported) == ["Hello?", "Weather in Lyon"] and done.already == 0
    assert [(p.name, "not JSON" in why) for p, why in done.failed] == [("t3", True)]
    assert done.left == ["“Hello?”: 1 line of its messages that is not JSON"]
    weather = next(c for c in done.imported if c.title == "Weather in Lyon")
    assert weather.pinned
    back = h.load_conversation(weather.id)
    assert back.messages[1].tool_calls[0].result == "12 °C, rain" and back.messages[4].images == [png_bytes()]
    assert [c.id for c in h.search("raining")] == [weather.id]
    write_jan_thread(data, "t4", jan_thread("Later"), [jan_message("user", "New one", n=300)])
    again = import_jan(h, data)
    assert [c.title for c in again.imported] == ["Later"] and again.already == 2
    assert (data / "threads" / "t1" / "messages.jsonl").read_text(encoding="utf-8").count("\n") == 4


def test_a_thread_folder_is_read_on_its_own(tmp_path):
    folder = write_jan_thread(tmp_path, "t1", jan_thread("Weather in Lyon"), WEATHER)
    chat = read_jan_thread(folder)
    assert chat.conversation.title == "Weather in Lyon" and len(chat.conversation.messages) == 6
    assert chat.conversation.updated == (folder / "messages.jsonl").stat().st_mtime
    from app.storage.export import read_chats

    for name in ("messages.jsonl", "thread.json"):  # Import chats… takes either file of a chat
        (conv,) = read_chats(folder / name)
        assert conv.title == "Weather in Lyon" and len(conv.messages) == 6
    (folder / "messages.jsonl").unlink()
    with pytest.raises(FileNotFoundError):
        read_jan_thread(folder)


def test_where_jan_keeps_its_data(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert jan_data_folder(home, platform="linux") is None  # no Jan here
    old = home / "jan" / "threads"
    old.mkdir(parents=True)
    assert jan_data_folder(home, platform="linux") == home / "jan"  # Jan before 0.6
    default = home / ".local" / "share" / "Jan" / "data"
    (default / "threads").mkdir(parents=True)
    assert jan_data_folder(home, platform="linux") == default
    moved = tmp_path / "elsewhere"
    (moved / "threads").mkdir(parents=True)
    settings = home / ".local" / "share" / "Jan" / "settings.json"
    settings.write_text(json.dumps({"data_folder": str(moved)}), encoding="utf-8")
    assert jan_data_folder(home, platform="linux") == moved  # the folder Jan's settings name
    settings.write_text(json.dumps({"data_folder": str(tmp_path / "gone")}), encoding="utf-8")
    assert jan_data_folder(home, platform="linux") == default  # named, and no longer there
    settings.write_text("{not json", encoding="utf-8")
    assert jan_data_folder(home, platform="linux") == default
    mac = home / "Library" / "Application Support" / "Jan" / "data"
    (mac / "threads").mkdir(parents=True)
    assert jan_data_folder(home, platform="darwin") == mac
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    windows = tmp_path / "Roaming" / "jan.ai.app"
    windows.mkdir(parents=True)
    (windows / "settings.json").write_text(json.dumps({"data_folder": str(moved)}), encoding="utf-8")
    assert jan_data_folder(home, platform="win32") == moved  # (an older Jan's settings)
