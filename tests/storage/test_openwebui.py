"""Open WebUI's chat exports read into the history (``app.storage.openwebui``, Import chats…,
``history import``) over real files and real SQLite: the branch each chat showed, the thinking
Open WebUI writes at a reply's start, who wrote each reply and its token counts, pictures sent as
data URLs, the pin; what is not brought is said; a file of another shape is refused with why. The
exports here are written for these tests in Open WebUI's shape."""

from __future__ import annotations

import base64
import json

import pytest

from app.storage.backup import read_exports
from app.storage.export import conversation_from_json, read_chats
from app.storage.history import History
from app.storage.openwebui import conversations_from_openwebui, is_openwebui_export
from tests.support.openwebui_chats import owui_chat, owui_message
from tests.support.tiny_vision import png_bytes

PNG = png_bytes()
THOUGHT = '<details type="reasoning" done="true" duration="2">\n<summary>Thought for 2 seconds</summary>\n> Rain is likely.\n> Say so.\n</details>\n'


def _trip() -> dict:
    """A chat whose question was edited (two branches) and whose shown reply was regenerated."""
    return owui_chat(
        "Trip to Lyon",
        [
            owui_message("u1", "user", "Weather in Lyon?", None, timestamp=1_750_000_000),
            owui_message(
                "u1b",
                "user",
                "Weather in Lyon tomorrow?",
                None,
                timestamp=1_750_000_010,
                files=[
                    {"type": "image", "url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
                    {"type": "file", "name": "notes.pdf"},
                ],
            ),
            owui_message("a1", "assistant", "Sunny.", "u1b", model="llama3.2:3b", timestamp=1_750_000_020),
            owui_message(
                "a2",
                "assistant",
                THOUGHT + "Rain, 12 °C.",
                "u1b",
                model="llama3.2:3b",
                modelName="Llama 3.2 3B",
                usage={"prompt_tokens": 30, "completion_tokens": 9},
                timestamp=1_750_000_030,
            ),
            owui_message("u2", "user", "Thanks", "a2", timestamp=1_750_000_040),
        ],
        "u2",
        created=1_750_000_000,
        pinned=True,
    )


def _plain() -> dict:
    return owui_chat(
        "Sums",
        [owui_message("q", "user", "2+2?", None), owui_message("r", "assistant", "4", "q")],
        "r",
        created=1_750_100_000,
    )


def test_each_chat_is_read_along_the_branch_it_showed():
    trip, sums = conversations_from_openwebui([_trip(), _plain()])
    conv = trip.conversation
    assert conv.title == "Trip to Lyon" and conv.pinned and conv.created == 1_750_000_000
    assert conv.updated == 1_750_000_060
    assert [(m.role, m.content) for m in conv.messages] == [
        ("user", "Weather in Lyon tomorrow?"),
        ("assistant", "Rain, 12 °C."),
        ("user", "Thanks"),
    ]
    reply = conv.messages[1]
    assert reply.reasoning == "Rain is likely.\nSay so." and reply.extra["model_name"] == "Llama 3.2 3B"
    assert (reply.prompt_tokens, reply.completion_tokens) == (30, 9) and reply.created == 1_750_000_030
    assert conv.messages[0].images == [PNG]
    assert trip.left == [
        "an attached file (notes.pdf) that is no picture in the file",
        "1 other version of its messages",  # the question's edit: a branch is a chat of its own
    ]
    # the regenerated reply: the earlier one kept as Regenerate keeps it, to switch to
    kept = [
        (k.user_index, k.number, k.messages and [m.content for m in k.messages]) for k in conv.kept_replies
    ]
    assert kept == [(0, 1, ["Sunny."]), (0, 2, None)]
    assert [(m.role, m.content) for m in sums.conversation.messages] == [("user", "2+2?"), ("assistant", "4")]
    assert sums.left == []


def test_an_export_file_brings_every_chat(tmp_path):
    path = tmp_path / "chat-export-1750000000.json"
    path.write_text(json.dumps([_trip(), _plain()]), encoding="utf-8")
    assert [c.title for c in read_chats(path)] == ["Trip to Lyon", "Sums"]
    read = read_exports([path, tmp_path / "gone.json"])
    assert [(p.name, c if isinstance(c, str) else c.title) for p, c in read] == [
        (path.name, "Trip to Lyon"),
        (path.name, "Sums"),
        ("gone.json", "No such file or directory"),
    ]
    h = History(tmp_path / "h.sqlite3")
    new = [h.restore_conversation(c) for c in read_chats(path)]
    back = h.load_conversation(new[0].id)
    assert back.messages[1].reasoning == "Rain is likely.\nSay so." and back.messages[0].images == [PNG]
    assert [c.id for c in h.search("Lyon")] == [new[0].id]
    # one chat alone (a bare chat object, or a list of one) is read as any export is
    assert conversation_from_json(json.dumps(_plain()["chat"])).title == "Sums"
    assert conversation_from_json(json.dumps([_plain()])).title == "Sums"
    with pytest.raises(ValueError, match="holds 2 chats of Open WebUI"):
        conversation_from_json(json.dumps([_trip(), _plain()]))


@pytest.mark.parametrize(
    ("messages", "current", "shown", "left"),
    [
        # a parent that points back at its child: the branch stops, nothing loops
        (
            [owui_message("a", "user", "hi", "b"), owui_message("b", "assistant", "yo", "a")],
            "b",
            [("user", "hi"), ("assistant", "yo")],
            [],
        ),
        # the shown message is not there: nothing shown
        ([owui_message("a", "user", "hi", None)], "zz", [], []),
        # content of the wrong type, a role Callisto does not keep, a picture that is not base64
        (
            [
                owui_message(
                    "a", "user", 42, None, files=[{"type": "image", "url": "data:image/png;base64,***"}]
                ),
                owui_message("b", "tool", "x", "a"),
                owui_message("c", "assistant", '<details type="reasoning">never closed', "b"),
            ],
            "c",
            [("user", ""), ("assistant", '<details type="reasoning">never closed')],
            ["a picture whose data is not base64", "message 2, whose role is 'tool'"],
        ),
    ],
)
def test_what_is_not_a_message_is_passed_over_and_said(messages, current, shown, left):
    (chat,) = conversations_from_openwebui([owui_chat("", messages, current, created=1_750_000_000)])
    assert [(m.role, m.content) for m in chat.conversation.messages] == shown
    assert [m.position for m in chat.conversation.messages] == list(range(len(shown)))
    assert chat.left == left


@pytest.mark.parametrize(
    "data", [[], {}, [{"chat": "x"}], [{"chat": {"history": {"messages": []}}}], [1], {"messages": []}]
)
def test_json_of_another_shape_is_no_open_webui_export(data):
    assert not is_openwebui_export(data)
    with pytest.raises(ValueError, match="not a chat export of Open WebUI"):
        conversations_from_openwebui(data)


def _tool_block(call_id: str, name: str, arguments, result=None) -> str:
    """A tool Open WebUI ran, as it writes it in the reply (``html.escape(json.dumps(…))``)."""
    import html

    done = result is not None
    attrs = f'done="{str(done).lower()}" id="{call_id}" name="{name}" arguments="{html.escape(json.dumps(arguments))}"'
    if done:
        attrs += f' result="{html.escape(json.dumps(result, ensure_ascii=False))}" files=""'
    return f'<details type="tool_calls" {attrs}>\n<summary>Tool Executed</summary>\n</details>\n'


def test_the_tools_open_webui_ran_are_calls_with_their_results():
    content = (
        THOUGHT
        + "Let me look.\n"
        + _tool_block("call_1", "get_weather", {"city": "Lyon"}, "12 °C, rain")
        + _tool_block("call_2", "add", '{"a": 1, "b": 2}', {"sum": 3})  # arguments sent as JSON text
        + '<details type="reasoning" done="true">\n<summary>Thought</summary>\n> Now answer.\n</details>\n'
        + "It is 12 °C and raining; 1+2 is 3.\n"
        + _tool_block("call_3", "", {})  # no name: not a call
        + _tool_block("call_4", "search", {"q": "x"})  # still running when exported: no result
        + '<details type="code_interpreter">kept as text</details>'
    )
    chat = owui_chat(
        "Tools",
        [
            owui_message("q", "user", "Weather?", None),
            owui_message("r", "assistant", content, "q", model="qwen3"),
        ],
        "r",
        created=1_750_000_000,
    )
    (read,) = conversations_from_openwebui([chat])
    messages = read.conversation.messages
    assert [(m.role, m.content) for m in messages] == [
        ("user", "Weather?"),
        ("assistant", "Let me look."),
        ("tool", "12 °C, rain"),
        ("tool", '{"sum": 3}'),
        # (a call still running has no result: what follows it stays in its message)
        (
            "assistant",
            'It is 12 °C and raining; 1+2 is 3.\n\n<details type="code_interpreter">kept as text</details>',
        ),
    ]
    first = messages[1]
    assert first.reasoning == "Rain is likely.\nSay so." and first.extra["model_name"] == "qwen3"
    assert [(c.call_id, c.name, c.arguments, c.result) for c in first.tool_calls] == [
        ("call_1", "get_weather", {"city": "Lyon"}, "12 °C, rain"),
        ("call_2", "add", {"a": 1, "b": 2}, '{"sum": 3}'),
    ]
    after = messages[4]
    assert after.reasoning == "Now answer." and [(c.name, c.result) for c in after.tool_calls] == [
        ("search", None)
    ]
    assert read.left == ["a tool call with no name"]


def test_a_hostile_reply_of_unclosed_blocks_is_read_as_text():
    content = '<details type="tool_calls"' * 2000 + "<details " * 2000 + '<details type="reasoning">' * 2000
    chat = owui_chat("x", [owui_message("r", "assistant", content, None)], "r", created=1_750_000_000)
    (read,) = conversations_from_openwebui([chat])
    assert [(m.role, m.content) for m in read.conversation.messages] == [("assistant", content)]


def test_a_regenerated_reply_comes_in_as_a_version_to_switch_to(tmp_path):
    (trip,) = conversations_from_openwebui([_trip()])
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.restore_conversation(trip.conversation).id
        conv = h.load_conversation(cid)
        upos = conv.messages[0].position
        assert conv.versions == {upos: (2, 2)}
        assert [m.content for m in h.reply_version(cid, upos, 1)] == ["Sunny."]
        assert h.reply_version(cid, upos, 1)[0].extra["model_name"] == "llama3.2:3b"
