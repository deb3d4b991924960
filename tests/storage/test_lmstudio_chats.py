"""LM Studio's chats brought into the history (``app.storage.lmstudio``, ``backup.import_lmstudio``)
over real files and real SQLite: the versions shown, the thinking, tool calls with their results,
who wrote each reply, pictures LM Studio still has, the system prompt, the pin and the folder; a
chat brought once is not brought twice; what cannot be read or brought is said, and a file of the
wrong shape is refused with why. The chats here are written for these tests in LM Studio's shape
(``<home>/conversations/[folder/]<ms>.conversation.json``)."""

from __future__ import annotations

import json

import pytest

from app.storage.backup import import_lmstudio
from app.storage.export import conversation_from_json, read_export
from app.storage.history import History
from app.storage.lmstudio import (
    conversation_from_lmstudio,
    is_lmstudio_chat,
    lmstudio_chat_files,
    lmstudio_home,
    read_lmstudio_chat,
)
from tests.support.lmstudio_chats import (
    MADE,
    WEATHER,
    lms_chat,
    lms_reply,
    lms_text,
    lms_user,
    write_lms_chat,
)
from tests.support.other_chats import check_weather_call
from tests.support.tiny_vision import png_bytes


def test_a_chat_is_read_as_it_was_shown():
    chat = conversation_from_lmstudio(WEATHER, folder="Travel")
    conv = chat.conversation
    assert conv.title == "Weather in Lyon" and conv.created == MADE / 1000 and conv.updated == conv.created
    assert conv.system_prompt == "Answer briefly." and conv.pinned and conv.folder == "Travel"
    roles = [(m.role, m.content) for m in conv.messages]
    assert roles == [
        ("user", "What is the weather in Lyon?"),
        ("assistant", "Let me look."),
        ("tool", "12 °C, rain"),
        ("assistant", "It is 12 °C and raining in Lyon."),
        ("user", "And in Paris tomorrow?"),
        ("assistant", "Tomorrow, Paris: sunny."),
    ]
    check_weather_call(conv.messages)
    assert chat.left == ["1 other version of a question"]
    # the reply's other version is kept as Regenerate keeps one: version 1, the shown one 2
    kept = [
        (k.user_index, k.number, k.messages and [m.content for m in k.messages]) for k in conv.kept_replies
    ]
    assert kept == [(4, 1, ["An older answer."]), (4, 2, None)]


def test_a_brought_chat_is_stored_and_reads_back(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    new = h.restore_conversation(
        conversation_from_lmstudio(WEATHER, folder="Travel").conversation, place=True
    )
    assert new.folder == "Travel" and new.pinned and new.title == "Weather in Lyon"
    back = h.load_conversation(new.id)
    assert back.messages[1].tool_calls[0].result == "12 °C, rain"
    assert back.messages[1].tool_calls[0].call.arguments == {"city": "Lyon"}
    assert [c.id for c in h.search("raining")] == [new.id]
    paris = back.messages[4].position  # the reply to it: "2 / 2", and the older one to switch to
    assert back.versions == {paris: (2, 2)}
    assert [m.content for m in h.reply_version(new.id, paris, 1)] == ["An older answer."]
    h.select_reply_version(new.id, paris, 1)
    assert h.load_conversation(new.id).messages[-1].content == "An older answer."
    plain = h.restore_conversation(conversation_from_lmstudio(WEATHER, folder="Travel").conversation)
    assert plain.folder is None and not plain.pinned  # (an import of one file: no place)


def test_every_chat_of_lm_studio_s_folder_is_brought_once_in_its_folder(tmp_path):
    home = tmp_path / ".lmstudio"
    write_lms_chat(home, WEATHER, f"{MADE}.conversation.json")
    write_lms_chat(
        home,
        lms_chat("Budget", lms_user("Sum 3 and 4"), lms_reply([lms_text("7")]), made=MADE + 1),
        "a.conversation.json",
        "Work",
    )
    write_lms_chat(
        home,
        lms_chat("Plan", lms_user("Plan my week"), lms_reply([lms_text("Monday: rest")]), made=MADE + 2),
        "b.conversation.json",
        "Work",
    )
    (home / "conversations" / "Work" / "bad.conversation.json").write_text("{not json", encoding="utf-8")
    write_lms_chat(home, {"messages": "none"}, "odd.conversation.json")
    (home / "conversations" / "notes.txt").write_text("not a chat", encoding="utf-8")
    h = History(tmp_path / "h.sqlite3")

    done = import_lmstudio(h, home)
    assert sorted(c.title for c in done.imported) == ["Budget", "Plan", "Weather in Lyon"]
    assert done.already == 0 and done.left == ["“Weather in Lyon”: 1 other version of a question"]
    assert sorted((p.name, why[:24]) for p, why in done.failed) == [
        ("bad.conversation.json", "the file is not JSON (Ex"),
        ("odd.conversation.json", "the file is not an LM St"),
    ]
    listed = {c.title: c for c in h.list_conversations()}
    assert (
        listed["Budget"].folder == listed["Plan"].folder == "Work"
        and listed["Weather in Lyon"].folder is None
    )
    assert listed["Weather in Lyon"].pinned and not listed["Budget"].pinned
    assert h.folders() == ["Work"]
    budget = h.load_conversation(listed["Budget"].id)
    assert [m.content for m in budget.messages] == ["Sum 3 and 4", "7"]

    # brought again (LM Studio used meanwhile): only the new chat comes
    write_lms_chat(
        home,
        lms_chat("New one", lms_user("Hello"), lms_reply([lms_text("Hi")]), made=MADE + 3),
        "c.conversation.json",
    )
    again = import_lmstudio(h, home)
    assert [c.title for c in again.imported] == ["New one"] and again.already == 3
    assert len(h.list_conversations()) == 4


def test_pictures_lm_studio_still_has_come_with_their_message(tmp_path):
    home = tmp_path / ".lmstudio"
    (home / "user-files").mkdir(parents=True)
    picture = png_bytes()
    (home / "user-files" / "1764-cat.png").write_bytes(picture)
    (home / "user-files" / "notes.txt").write_text("just text", encoding="utf-8")
    (home / "user-files" / "report.pdf").write_bytes(b"%PDF-1.7\n\x00\x01binary")
    chat = lms_chat(
        "Cat",
        lms_user(
            "What is this?", files=("1764-cat.png", "gone.png", "notes.txt", "report.pdf", "../escape.png")
        ),
        lms_reply([lms_text("A cat.")]),
    )
    path = write_lms_chat(home, chat, "1.conversation.json")
    read = read_lmstudio_chat(path)
    question = read.conversation.messages[0]
    assert question.images == [picture]
    # a text file comes with its text, in the message as Callisto attaches one
    assert question.content == "What is this?\n\nFile `notes.txt`:\n\n```\njust text\n```"
    assert read.conversation.title == "Cat"
    assert read.left == [
        "the attached file gone.png is gone",
        "the attached file report.pdf is neither a picture nor text",
        "an attached file (../escape.png) is not where LM Studio keeps files",
    ]
    h = History(tmp_path / "h.sqlite3", max_image_bytes=len(picture) - 1)  # smaller than the picture
    done = import_lmstudio(h, home)
    (new,) = done.imported
    assert h.load_conversation(new.id).messages[0].images == []
    assert done.left[-1] == "“Cat”: 1 picture(s) larger than the history keeps"


def test_a_chat_file_chosen_in_import_chats_is_read_too(tmp_path):
    path = write_lms_chat(tmp_path / ".lmstudio", WEATHER, f"{MADE}.conversation.json")
    assert read_export(path).title == "Weather in Lyon"
    renamed = tmp_path / "weather.json"  # the same chat under another name: known by its shape
    renamed.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    assert read_export(renamed).messages[3].content == "It is 12 °C and raining in Lyon."
    with pytest.raises(ValueError, match="nor one of LM Studio's"):
        conversation_from_json(json.dumps({"messages": [{"role": "user"}]}))


@pytest.mark.parametrize(
    ("messages", "roles", "left"),
    [
        # a version number out of range: the first version
        ([lms_user("one", "two", selected=7)], [("user", "one")], ["1 other version of a question"]),
        # entries that are no message, an unknown role, a version list of nothing
        (
            [lms_user("hi"), {"versions": []}, {"versions": [{"role": "narrator", "content": "x"}]}],
            [("user", "hi")],
            ["message 2, which has no version", "message 3, whose role is 'narrator'"],
        ),
        # a call with no name; a result with no call; arguments as JSON text, or not JSON
        (
            [
                lms_user("go"),
                lms_reply(
                    [
                        {
                            "type": "contentBlock",
                            "content": [
                                {"type": "toolCallResult", "content": "early"},
                                {"type": "toolCallRequest", "arguments": {}},
                                {"type": "toolCallRequest", "name": "a", "arguments": '{"x": 1}'},
                                {"type": "toolCallRequest", "name": "b", "parameters": "not json"},
                                {"type": "toolCallResult", "content": [{"type": "text", "text": "A done"}]},
                                {"type": "toolCallResult", "content": "B done"},
                                {"type": "toolCallResult", "content": "extra"},
                            ],
                        },
                    ]
                ),
            ],
            [("user", "go"), ("assistant", ""), ("tool", "A done"), ("tool", "B done")],
            ["a tool result with no call", "a tool call with no name", "a tool result with no call"],
        ),
    ],
)
def test_what_is_not_a_message_is_passed_over_and_said(messages, roles, left):
    chat = conversation_from_lmstudio(lms_chat("", *messages))
    assert [(m.role, m.content) for m in chat.conversation.messages] == roles
    assert chat.left == left
    assert chat.conversation.title == (
        roles[0][1] if roles else "LM Studio chat"
    )  # (no name: the first words)
    calls = [c for m in chat.conversation.messages for c in m.tool_calls]
    if calls:
        assert [(c.name, c.arguments) for c in calls] == [("a", {"x": 1}), ("b", "not json")]


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"messages": {}},
        {"messages": [{"role": "user", "content": "hi"}]},
        {"format": "callisto.conversation"},
        "x",
    ],
)
def test_json_of_another_shape_is_no_lm_studio_chat(data):
    assert not is_lmstudio_chat(data)
    with pytest.raises(ValueError, match="not an LM Studio chat"):
        conversation_from_lmstudio(data)


def test_lm_studio_s_folder_is_found_where_it_keeps_it(tmp_path):
    assert lmstudio_home(tmp_path) is None
    (tmp_path / ".cache" / "lm-studio" / "conversations").mkdir(parents=True)
    assert lmstudio_home(tmp_path) == tmp_path / ".cache" / "lm-studio"  # an older LM Studio
    (tmp_path / ".lmstudio" / "conversations").mkdir(parents=True)
    assert lmstudio_home(tmp_path) == tmp_path / ".lmstudio"
    moved = tmp_path / "elsewhere"
    (moved / "conversations").mkdir(parents=True)
    (tmp_path / ".lmstudio-home-pointer").write_text(f"{moved}\n", encoding="utf-8")
    assert lmstudio_home(tmp_path) == moved  # LM Studio moved: its pointer says where
    write_lms_chat(moved, WEATHER, "1.conversation.json", "  Trips   abroad ")
    write_lms_chat(moved, WEATHER, "2.conversation.json")
    assert [(p.name, f) for p, f in lmstudio_chat_files(moved / "conversations")] == [
        ("1.conversation.json", "Trips abroad"),
        ("2.conversation.json", None),
    ]


def test_thinking_kept_in_tags_by_an_older_lm_studio_is_read_as_thinking():
    old = lms_reply([lms_text("<think>\nCount the letters.\n</think>\n\nThere are 3.")])
    unclosed = lms_reply([lms_text("<think>never ended")])
    conv = conversation_from_lmstudio(
        lms_chat("Letters", lms_user("How many r?"), old, lms_user("And?"), unclosed)
    ).conversation
    reply, cut = conv.messages[1], conv.messages[3]
    assert (reply.reasoning, reply.content) == ("Count the letters.", "There are 3.")
    assert (cut.reasoning, cut.content) == (None, "<think>never ended")  # no end: left as written


def test_lm_studio_s_models_folder_is_the_one_its_settings_name(tmp_path):
    from app.storage.lmstudio import lmstudio_models_folder

    assert lmstudio_models_folder(tmp_path) is None
    home = tmp_path / ".lmstudio"
    (home / "models").mkdir(parents=True)
    assert lmstudio_models_folder(tmp_path) == home / "models"
    elsewhere = tmp_path / "big disk" / "llms"
    elsewhere.mkdir(parents=True)
    (home / "settings.json").write_text(json.dumps({"downloadsFolder": str(elsewhere)}), encoding="utf-8")
    assert lmstudio_models_folder(tmp_path) == elsewhere  # moved in LM Studio's settings
    (home / "settings.json").write_text(
        json.dumps({"downloadsFolder": str(tmp_path / "gone")}), encoding="utf-8"
    )
    assert lmstudio_models_folder(tmp_path) == home / "models"  # a folder no longer there: its own
    (home / "settings.json").write_text("[1, 2", encoding="utf-8")
    assert lmstudio_models_folder(tmp_path) == home / "models"  # settings it cannot read: its own


def test_a_reply_s_versions_are_kept_with_their_calls_and_only_where_a_question_precedes(tmp_path):
    called = [
        {
            "type": "contentBlock",
            "content": [
                {"type": "toolCallRequest", "id": "c9", "name": "get_weather", "arguments": {"city": "Oslo"}},
            ],
        },
        {
            "type": "contentBlock",
            "content": [{"type": "toolCallResult", "toolCallId": "c9", "content": "-3 °C"}],
        },
        lms_text("Cold."),
    ]
    chat = conversation_from_lmstudio(
        lms_chat(
            "Oslo",
            lms_user("Weather in Oslo?"),
            lms_reply([lms_text("No idea.")], called, [lms_text("Try a website.")], selected=2),
            lms_reply([lms_text("(more)")], [lms_text("(other more)")]),  # a reply after a reply
        )
    )
    conv = chat.conversation
    assert [m.content for m in conv.messages] == ["Weather in Oslo?", "Try a website.", "(more)"]
    assert [
        (k.number, k.messages and [(m.role, m.content) for m in k.messages]) for k in conv.kept_replies
    ] == [
        (1, [("assistant", "No idea.")]),
        (2, [("assistant", ""), ("tool", "-3 °C"), ("assistant", "Cold.")]),
        (3, None),
    ]
    assert chat.left == ["1 other version of a reply"]  # the second reply's: no question before it
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.restore_conversation(conv).id
        upos = h.load_conversation(cid).messages[0].position
        (call,) = h.reply_version(cid, upos, 2)[0].tool_calls
        assert (call.name, call.call.arguments, call.result) == ("get_weather", {"city": "Oslo"}, "-3 °C")
