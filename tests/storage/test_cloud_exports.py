"""The data exports of ChatGPT and Claude (their ``conversations.json``) read by Import chats… and
``history import`` (``app.storage.chatgpt``, ``app.storage.claude``, ``export.read_chats``) over
real files and real SQLite: the branch shown, reasoning, calls to the apps' tools with their
results in Callisto's turn layout, the model, pictures beside ChatGPT's export, times; what is
not brought is said, and nonsense is refused or passed over. The exports here are written for
these tests in each app's shape."""

from __future__ import annotations

import json
import zipfile

import pytest

from app.storage.chatgpt import conversations_from_chatgpt, is_chatgpt_export
from app.storage.claude import conversations_from_claude, is_claude_export
from app.storage.export import conversation_from_json, read_chats
from app.storage.history import History
from tests.support.tiny_vision import png_bytes

T0 = 1_750_000_000.0


def _gpt_message(role: str, content: dict, n: int, **more) -> dict:
    author = {"role": role, **({"name": more.pop("name")} if "name" in more else {})}
    return {
        "id": f"msg{n}",
        "author": author,
        "create_time": T0 + n,
        "content": content,
        "recipient": "all",
        **more,
    }


def _text(*parts) -> dict:
    return {"content_type": "text", "parts": list(parts)}


def _gpt_chat(title: str, messages: list[dict], *, branches: dict[str, str] | None = None) -> dict:
    """A ChatGPT chat: ``messages`` one after the other under an empty root node, and
    ``branches`` (message id -> the id of the message it follows) beside them, older (listed
    first among its parent's children)."""
    mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for m in messages:
        mapping[m["id"]] = {"id": m["id"], "message": m, "parent": parent, "children": []}
        mapping[parent]["children"].append(m["id"])
        parent = m["id"]
    for m_id, after in (branches or {}).items():
        mapping[m_id] = {
            "id": m_id,
            "message": _gpt_message("assistant", _text("Old answer"), 99),
            "parent": after,
            "children": [],
        }
        mapping[after]["children"].insert(0, m_id)
    return {
        "title": title,
        "create_time": T0,
        "update_time": T0 + 60,
        "mapping": mapping,
        "current_node": parent,
    }


def _powers() -> dict:
    return _gpt_chat(
        "Powers of two",
        [
            _gpt_message("system", _text(""), 0, metadata={"is_visually_hidden_from_conversation": True}),
            _gpt_message(
                "user", {"content_type": "user_editable_context", "user_instructions": "Be terse"}, 1
            ),
            _gpt_message("user", _text("What is 2**10?"), 2),
            _gpt_message(
                "assistant",
                {"content_type": "thoughts", "thoughts": [{"summary": "Compute", "content": "Use Python."}]},
                3,
            ),
            _gpt_message(
                "assistant",
                {"content_type": "code", "language": "python", "text": "print(2**10)"},
                4,
                recipient="python",
            ),
            _gpt_message("tool", {"content_type": "execution_output", "text": "1024"}, 5, name="python"),
            _gpt_message("assistant", _text("It is 1024."), 6, metadata={"model_slug": "o3"}),
            _gpt_message(
                "user",
                {
                    "content_type": "multimodal_text",
                    "parts": [
                        {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-abc"},
                        {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-gone"},
                        "And these?",
                    ],
                },
                7,
            ),
            _gpt_message("assistant", _text("A cat."), 8, metadata={"model_slug": "gpt-4o"}),
        ],
        branches={"old": "msg2"},  # a regenerated answer to the first question
    )


def test_a_chatgpt_export_is_read_along_the_branch_it_showed(tmp_path):
    (tmp_path / "file-abc-cat.png").write_bytes(png_bytes())
    (chat,) = conversations_from_chatgpt([_powers()], tmp_path)
    conv = chat.conversation
    assert conv.title == "Powers of two" and (conv.created, conv.updated) == (T0, T0 + 60)
    assert conv.system_prompt == "Be terse"  # the custom instructions it answered with
    assert [(m.role, m.content) for m in conv.messages] == [
        ("user", "What is 2**10?"),
        ("assistant", ""),
        ("tool", "1024"),
        ("assistant", "It is 1024."),
        ("user", "And these?"),
        ("assistant", "A cat."),
    ]
    thought = conv.messages[1]
    assert thought.reasoning == "Compute\nUse Python." and thought.extra == {"imported_from": "ChatGPT"}
    (call,) = thought.tool_calls
    assert (call.name, call.arguments, call.result) == ("python", "print(2**10)", "1024")
    assert conv.messages[3].extra["model_name"] == "o3" and conv.messages[3].created == T0 + 6
    assert conv.messages[4].images == [png_bytes()]  # the picture's file beside the export
    assert chat.left == ["a picture whose file (file-gone) is not in the export"]
    # the first answer, regenerated: kept as Regenerate keeps it (version 1; the one shown is 2)
    kept = [
        (k.user_index, k.number, k.messages and [m.content for m in k.messages]) for k in conv.kept_replies
    ]
    assert kept == [(0, 1, ["Old answer"]), (0, 2, None)]
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.restore_conversation(conv).id
        upos = h.load_conversation(cid).messages[0].position
        assert h.load_conversation(cid).versions == {upos: (2, 2)}
        assert [m.content for m in h.reply_version(cid, upos, 1)] == ["Old answer"]


def test_a_chatgpt_regeneration_is_kept_whole_and_an_edit_is_said():
    question = _gpt_message("user", _text("Name a prime"), 1)
    chat = _gpt_chat(
        "Primes",
        [question, _gpt_message("assistant", _text("7"), 2), _gpt_message("user", _text("Another?"), 3)],
    )
    tree = chat["mapping"]
    # an earlier answer that called a tool, and a question asked after it (another branch)
    earlier = [
        _gpt_message("assistant", {"content_type": "code", "text": "next_prime(3)"}, 10, recipient="python"),
        _gpt_message("tool", {"content_type": "execution_output", "text": "5"}, 11, name="python"),
        _gpt_message("assistant", _text("5"), 12),
        _gpt_message("user", _text("Why?"), 13),
    ]
    parent = "msg1"
    for n, m in enumerate(earlier):
        key = f"e{n}"
        tree[key] = {"id": key, "message": m, "parent": parent, "children": []}
        tree[parent]["children"].insert(0, key)
        parent = key
    (read,) = conversations_from_chatgpt(chat)
    conv = read.conversation
    assert [m.content for m in conv.messages] == ["Name a prime", "7", "Another?"]
    assert conv.system_prompt is None  # (no custom instructions: the one in Settings)
    (one, shown) = conv.kept_replies
    assert (one.number, shown.number, shown.messages) == (1, 2, None)
    assert [(m.role, m.content) for m in one.messages] == [
        ("assistant", ""),
        ("tool", "5"),
        ("assistant", "5"),
    ]
    assert one.messages[0].tool_calls[0].result == "5"
    assert read.left == ["1 message of other branches (edits, regenerations)"]  # "Why?"


def test_chatgpt_s_custom_instructions_are_the_chat_s_system_prompt():
    context = {
        "content_type": "user_editable_context",
        "user_profile": "User profile:\n```I teach maths.```",
        "user_instructions": "How to respond:\n```Be terse.```",
    }
    chat = _gpt_chat(
        "Sums",
        [
            _gpt_message("user", context, 1),
            _gpt_message("user", _text("2+2?"), 2),
            _gpt_message("assistant", _text("4"), 3),
        ],
    )
    (read,) = conversations_from_chatgpt(chat)
    assert (
        read.conversation.system_prompt
        == "User profile:\n```I teach maths.```\n\nHow to respond:\n```Be terse.```"
    )
    assert [m.content for m in read.conversation.messages] == ["2+2?", "4"] and read.left == []


def test_a_chatgpt_export_file_brings_each_chat_with_its_pictures(tmp_path):
    (tmp_path / "file-abc-cat.png").write_bytes(png_bytes())
    (tmp_path / "file-gone.txt").write_text("not a picture", encoding="utf-8")
    hello = _gpt_chat("", [_gpt_message("user", _text("Hello there"), 0)])
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([_powers(), hello]), encoding="utf-8")
    h = History(tmp_path / "h.sqlite3")
    new = [h.restore_conversation(c) for c in read_chats(path)]
    assert [c.title for c in new] == ["Powers of two", "Hello there"]
    back = h.load_conversation(new[0].id)
    assert back.messages[1].tool_calls[0].result == "1024" and back.messages[4].images == [png_bytes()]
    assert [c.id for c in h.search("1024")] == [new[0].id]
    with pytest.raises(ValueError, match="holds 2 chats of ChatGPT"):
        conversation_from_json(json.dumps([_powers(), hello]))


def test_an_export_is_read_in_the_zip_it_came_in(tmp_path):
    hello = _gpt_chat("Hello", [_gpt_message("user", _text("Hello there"), 0)])
    path = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("conversations.json", json.dumps([_powers(), hello]))
        z.writestr("file-abc-cat.png", png_bytes())
        z.writestr("old/conversations.json", "[]")  # (the one nearest the top is read)
        z.writestr("chat.html", "<html></html>")
    powers, _ = read_chats(path)
    assert powers.title == "Powers of two" and powers.messages[4].images == [png_bytes()]
    claude = tmp_path / "claude.zip"
    with zipfile.ZipFile(claude, "w") as z:
        z.writestr("data-2025/conversations.json", json.dumps([CLAUDE]))
        z.writestr("data-2025/users.json", "[]")
    assert [c.title for c in read_chats(claude)] == ["Weather in Lyon"]
    for members, why in (
        ({"notes.txt": "hi"}, "holds no conversations.json"),
        (
            {
                "conversations.json": json.dumps(
                    [{"id": "x", "title": "t", "chat": {"history": {"messages": {}}}}]
                )
            },
            "not ChatGPT's or Claude's",
        ),
        ({"conversations.json": "{broken"}, "not JSON"),
    ):
        bad = tmp_path / "bad.zip"
        with zipfile.ZipFile(bad, "w") as z:
            for name, text in members.items():
                z.writestr(name, text)
        with pytest.raises(ValueError, match=why):
            read_chats(bad)


def test_a_chatgpt_tree_of_nonsense_ends():
    chat = _gpt_chat("Loop", [_gpt_message("user", _text("Q"), 0), _gpt_message("assistant", _text("A"), 1)])
    chat["mapping"]["root"]["parent"] = "msg1"  # a cycle
    chat["mapping"]["msg0"]["message"]["content"] = "not an object"
    chat["mapping"]["junk"] = "not a node"
    (read,) = conversations_from_chatgpt(chat)
    assert [(m.role, m.content) for m in read.conversation.messages] == [("user", ""), ("assistant", "A")]
    gone = dict(chat, current_node="nowhere")
    (read,) = conversations_from_chatgpt(gone)
    assert read.conversation.messages == [] and read.conversation.title == "Loop"
    assert read.left == ["2 messages of other branches (edits, regenerations)"]
    tool_first = _gpt_chat("", [_gpt_message("tool", _text("orphan"), 0, name="browser")])
    (read,) = conversations_from_chatgpt(tool_first)
    assert read.conversation.title == "ChatGPT chat" and read.left == ["a tool result with no call"]


CLAUDE = {
    "uuid": "c1",
    "name": "Weather in Lyon",
    "created_at": "2025-06-15T15:06:40.000000Z",
    "updated_at": "2025-06-15T15:10:00Z",
    "chat_messages": [
        {
            "uuid": "m1",
            "sender": "human",
            "text": "What is the weather in Lyon?",
            "content": [{"type": "text", "text": "What is the weather in Lyon?"}],
            "created_at": "2025-06-15T15:06:41+00:00",
            "attachments": [{"file_name": "notes.txt", "extracted_content": "secret"}],
            "files": [{"file_name": "photo.png"}],
        },
        {
            "uuid": "m2",
            "sender": "assistant",
            "text": "",
            "content": [
                {"type": "thinking", "thinking": "The user wants the weather."},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Lyon"}},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "12 °C, rain"}],
                },
                {"type": "text", "text": "It is 12 °C and raining."},
                {"type": "tool_use", "name": ""},
            ],
            "created_at": "2025-06-15T15:06:50Z",
        },
        {"uuid": "m3", "sender": "human", "text": "Thanks", "content": [], "created_at": "not a time"},
        {"uuid": "m4", "sender": "assistant", "text": "You're welcome."},
        {"uuid": "m5", "sender": "narrator", "text": "?"},
        "nonsense",
    ],
}


def test_a_claude_export_is_read_with_its_calls():
    (chat,) = conversations_from_claude([CLAUDE])
    conv = chat.conversation
    assert conv.title == "Weather in Lyon" and conv.created == 1_750_000_000.0
    assert conv.updated == 1_750_000_200.0
    assert [(m.role, m.content) for m in conv.messages][1:] == [
        ("assistant", "Let me look."),
        ("tool", "12 °C, rain"),
        ("assistant", "It is 12 °C and raining."),
        ("user", "Thanks"),
        ("assistant", "You're welcome."),
    ]
    # the attached document's text, as Claude read it, in the message as Callisto attaches a file
    assert conv.messages[0].content == "What is the weather in Lyon?\n\nFile `notes.txt`:\n\n```\nsecret\n```"
    lead = conv.messages[1]
    assert lead.reasoning == "The user wants the weather." and lead.created == 1_750_000_010.0
    (call,) = lead.tool_calls
    assert (call.call_id, call.name, call.arguments, call.result) == (
        "toolu_1",
        "get_weather",
        {"city": "Lyon"},
        "12 °C, rain",
    )
    assert conv.messages[4].created == conv.created  # (a time that is none: the chat's)
    assert chat.left == [
        "1 picture or file sent (the export keeps only their names)",
        "a tool call with no name",
        "message 5, whose sender is 'narrator'",
    ]


def test_a_claude_export_file_is_imported(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([CLAUDE, dict(CLAUDE, uuid="c2", name="")]), encoding="utf-8")
    h = History(tmp_path / "h.sqlite3")
    new = [h.restore_conversation(c) for c in read_chats(path)]
    assert [c.title for c in new] == ["Weather in Lyon", "What is the weather in Lyon?"]
    assert h.load_conversation(new[0].id).messages[1].tool_calls[0].result == "12 °C, rain"


@pytest.mark.parametrize(
    "data",
    [[], {}, [{"mapping": {}}], [{"chat_messages": []}], [{"uuid": "x", "chat_messages": "no"}], "text", [1]],
)
def test_other_json_is_neither_export(data):
    assert not is_chatgpt_export(data) and not is_claude_export(data)
    with pytest.raises(ValueError):
        conversations_from_chatgpt(data)
    with pytest.raises(ValueError):
        conversations_from_claude(data)
