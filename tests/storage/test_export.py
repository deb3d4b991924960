"""Exporting a stored conversation (``app.storage.export``): Markdown that reads as the chat did,
JSON that keeps every stored field, a file name from the title, and writes that fail plainly. On a
real SQLite history, filled the way the turn recorder fills it."""

from __future__ import annotations

import base64
import json

import pytest

from app.calls import ToolCall, ToolResult
from app.storage.export import (
    conversation_from_json,
    conversation_json,
    conversation_markdown,
    export_conversation,
    export_file_name,
    read_export,
)
from app.storage.history import History, HistoryError, TurnMessage

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2048
AUTHOR = {"model": "/models/alpha-q4.gguf", "model_name": "alpha-q4"}


def _turn(h: History, cid: int, messages: list[TurnMessage]) -> None:
    partial = h.begin_assistant_message(cid)
    h.record_turn(cid, partial.id, messages)


@pytest.fixture
def history(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        yield h


def _filled(h: History) -> int:
    """A conversation with a picture, a call and its result (which holds a code fence), thinking,
    a reply Regenerate replaced, a failed reply and a stopped one."""
    cid = h.create_conversation('Sea: a/b "poem"?', model_path="/models/alpha-q4.gguf").id
    h.append_message(cid, "user", "What is 17 * 23? Here is the sum.", images=[PNG])
    call = ToolCall(id="c1", name="calculator", arguments={"expression": "17 * 23"})
    result = ToolResult(
        call_id="c1", name="calculator", content="391\n```\nnot a fence end", duration_s=0.042
    )
    _turn(
        h,
        cid,
        [
            TurnMessage(
                "assistant",
                "",
                reasoning="Use the tool.",
                tool_calls=(call,),
                results={"c1": result},
                extra=AUTHOR,
            ),
            TurnMessage("tool", "391", tool_call_id="c1", name="calculator"),
            TurnMessage("assistant", "It is **391**.", extra={**AUTHOR, "made_model": "helper"}),
        ],
    )
    user = h.load_conversation(cid).messages[0]
    h.archive_reply(cid, user.position)  # Regenerate: the reply above becomes version 1 ...
    _turn(h, cid, [TurnMessage("assistant", "The product is 391.", extra={**AUTHOR, "made_model": "helper"})])
    h.append_message(cid, "user", "And 2 + 2?")
    failed = h.begin_assistant_message(cid)
    h.finish_message(failed.id, "error", error="the engine process ended")
    h.append_message(cid, "user", "Write a long poem.")
    stopped = h.begin_assistant_message(cid)
    h.finish_message(stopped.id, "interrupted", content="The sea, the", extra=AUTHOR)
    return cid


def test_markdown_reads_as_the_chat_shows(history):
    conv = history.load_conversation(_filled(history))
    md = conversation_markdown(conv)
    assert md.startswith('# Sea: a/b "poem"?\n')
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads == ["## You", "## helper", "## You", "## Assistant", "## You", "## alpha-q4"]
    # ... and only the version shown (the second) is written
    assert "The product is 391." in md and "It is **391**." not in md
    assert "*(an image: image/png, 2.0 KB)*" in md
    assert "*(the reply failed: the engine process ended)*" in md
    assert "The sea, the\n\n*(stopped before it ended)*" in md


def test_markdown_shows_thinking_calls_and_results_whose_fences_cannot_break(history):
    cid = history.create_conversation("Calc").id
    history.append_message(cid, "user", "17 * 23?")
    call = ToolCall(id="c1", name="calculator", arguments={"expression": "17 * 23"})
    result = ToolResult(
        call_id="c1", name="calculator", content="391\n````\nstill the result", duration_s=0.042
    )
    denied = ToolCall(id="c2", name="write_file", arguments={"path": "a.txt"})
    _turn(
        history,
        cid,
        [
            TurnMessage(
                "assistant",
                "",
                reasoning="Use the tool.",
                tool_calls=(call, denied),
                results={
                    "c1": result,
                    "c2": ToolResult(call_id="c2", name="write_file", error="denied", approval="denied"),
                },
                extra=AUTHOR,
            ),
            TurnMessage("tool", "391", tool_call_id="c1", name="calculator"),
            TurnMessage("assistant", "It is 391.", extra=AUTHOR),
        ],
    )
    md = conversation_markdown(history.load_conversation(cid))
    assert "<details><summary>Thinking</summary>\n\nUse the tool.\n\n</details>" in md
    assert "**Tool call: `calculator`** (ok, 42 ms)" in md
    assert '"expression": "17 * 23"' in md
    # the result holds a run of four backticks: its fence is five, so it cannot be closed early
    assert "`````\n391\n````\nstill the result\n`````" in md
    assert "**Tool call: `write_file`** (failed, denied)" in md
    assert md.index("calculator") < md.index("It is 391.")
    assert [line for line in md.splitlines() if line.startswith("## ")] == ["## You", "## alpha-q4"]


def test_an_empty_reply_and_one_cut_off_say_so(history):
    cid = history.create_conversation("\n# Odd\ttitle\n").id
    history.append_message(cid, "user", "Hi")
    _turn(history, cid, [TurnMessage("assistant", "", extra=AUTHOR)])
    history.append_message(cid, "user", "Go on")
    cut = {**AUTHOR, "stats": {"finish_reason": "length", "generated_tokens": 4}}
    _turn(history, cid, [TurnMessage("assistant", "abcd", extra=cut)])
    md = conversation_markdown(history.load_conversation(cid))
    assert md.startswith("# Odd title\n")  # one line, no heading marks of its own
    assert "*(empty reply)*" in md and "abcd\n\n*(cut off by the max-tokens limit)*" in md


def test_json_keeps_every_stored_field(history):
    cid = _filled(history)
    conv = history.load_conversation(cid)
    data = json.loads(conversation_json(conv))
    assert data["format"] == "callisto.conversation" and data["version"] == 1
    assert data["title"] == conv.title and data["model_path"] == "/models/alpha-q4.gguf"
    assert [m["role"] for m in data["messages"]] == [m.role for m in conv.messages]
    assert base64.b64decode(data["messages"][0]["images"][0]) == PNG
    reply = next(m for m in data["messages"] if m["role"] == "assistant")
    assert reply["content"] == "The product is 391." and reply["extra"]["made_model"] == "helper"
    assert data["versions"] == {str(conv.messages[0].position): [2, 2]}


def test_the_file_is_written_by_its_suffix_and_replaced_whole(history, tmp_path):
    conv = history.load_conversation(_filled(history))
    md = export_conversation(conv, tmp_path / "chat.md")
    written, made = md.read_text(encoding="utf-8").splitlines(), conversation_markdown(conv).splitlines()
    assert written[2].startswith("*Exported from Callisto on ")
    del written[2], made[2]  # the line that says when it was exported
    assert written == made
    as_json = export_conversation(conv, tmp_path / "chat.JSON")
    assert json.loads(as_json.read_text(encoding="utf-8"))["format"] == "callisto.conversation"
    other = export_conversation(conv, tmp_path / "chat.txt")  # any other name: Markdown
    assert other.read_text(encoding="utf-8").startswith("# Sea")
    forced = export_conversation(conv, tmp_path / "chat.txt", "json")
    assert json.loads(forced.read_text(encoding="utf-8"))["title"] == conv.title
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("chat")) == [
        "chat.JSON",
        "chat.md",
        "chat.txt",
    ]  # no temporary file left beside them


def test_a_write_that_cannot_be_made_raises_and_leaves_nothing(history, tmp_path):
    conv = history.load_conversation(_filled(history))
    with pytest.raises(OSError, match="folder"):
        export_conversation(conv, tmp_path)
    with pytest.raises(OSError):
        export_conversation(conv, tmp_path / "missing" / "chat.md")
    with pytest.raises(ValueError, match="unknown export format"):
        export_conversation(conv, tmp_path / "chat.md", "html")
    assert not (tmp_path / "missing").exists() and not (tmp_path / "chat.md").exists()


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ('Sea: a/b "poem"?', "Sea a b poem.md"),
        ("  ...  ", "Chat.md"),
        ("CON\x00<x>|y*", "CON x y.md"),
        ("a" * 200, "a" * 80 + ".md"),
        ("con", "con (chat).md"),  # names Windows keeps for devices
        ("Com1.backup", "Com1.backup (chat).md"),
        ("Console", "Console.md"),
    ],
)
def test_the_file_name_comes_from_the_title(history, title, name):
    conv = history.create_conversation(title)
    assert export_file_name(conv) == name
    assert export_file_name(conv, "json") == name[: -len(".md")] + ".json"


# -- reading an export back ----------------------------------------------------------------------


def _same(a, b) -> bool:
    """Two stored messages hold the same (ids, positions and the history's image facts aside)."""
    keep = lambda m: {k: v for k, v in m.to_dict().items() if k not in ("id", "conversation_id", "position")}  # noqa: E731
    da, db = keep(a), keep(b)
    for d in (da, db):
        for tc in d["tool_calls"]:
            tc.pop("id"), tc.pop("message_id")
    return da == db


def test_a_json_export_comes_back_as_a_new_conversation_with_everything(history, tmp_path):
    cid = _filled(history)
    history.update_partial(history.begin_assistant_message(cid).id, "half a repl")  # being written
    conv = history.load_conversation(cid)
    path = export_conversation(conv, tmp_path / "chat.json")
    with History(tmp_path / "other.sqlite3") as other:  # another machine's history
        new = other.restore_conversation(read_export(path))
        back = other.load_conversation(new.id)
    assert (back.title, back.created, back.updated, back.model_path, back.settings) == (
        conv.title,
        conv.created,
        conv.updated,
        conv.model_path,
        conv.settings,
    )
    assert len(back.messages) == len(conv.messages)
    for a, b in zip(conv.messages[:-1], back.messages[:-1], strict=True):
        assert _same(a, b), (a, b)
    assert back.messages[0].images == [PNG] and back.messages[0].image_info == conv.messages[0].image_info
    # the reply being written when it was exported comes back stopped, with its text
    assert (back.messages[-1].status, back.messages[-1].content) == ("interrupted", "half a repl")
    md_back, md_conv = conversation_markdown(back).splitlines(), conversation_markdown(conv).splitlines()
    assert md_conv[-1] == "*(being written when exported)*" and md_back[-1] == "*(stopped before it ended)*"
    assert md_back[3:-1] == md_conv[3:-1]  # the chat reads the same (but for when it was exported)
    # the same file twice: two conversations, and the first is untouched
    with History(tmp_path / "other.sqlite3") as other:
        again = other.restore_conversation(read_export(path))
        assert again.id != new.id and len(other.list_conversations()) == 2
        assert other.search("391") and {c.id for c in other.search("391")} == {new.id, again.id}


def _export_of(history) -> dict:
    return json.loads(conversation_json(history.load_conversation(_filled(history), kept=True)))


def _reply_said(records) -> list[tuple]:
    """What a reply's messages say (their ids and positions aside)."""
    return [
        (
            m.role,
            m.content,
            m.reasoning,
            m.tool_call_id,
            [(c.call_id, c.name, c.arguments, c.result) for c in m.tool_calls],
        )
        for m in records
    ]


def test_a_json_export_keeps_the_replies_regenerate_kept_and_they_can_be_switched_to(history, tmp_path):
    cid = _filled(history)
    conv = history.load_conversation(cid, kept=True)
    pos = conv.messages[0].position
    assert [(k.user_index, k.number, k.messages is None) for k in conv.kept_replies] == [
        (0, 1, False),
        (0, 2, True),
    ]
    earlier = history.reply_version(cid, pos, 1)
    path = export_conversation(conv, tmp_path / "chat.json")
    assert (
        json.loads(path.read_text(encoding="utf-8"))["kept_replies"][0]["messages"][2]["content"]
        == "It is **391**."
    )
    with History(tmp_path / "other.sqlite3") as other:  # another machine's history
        new = other.restore_conversation(read_export(path)).id
        back = other.load_conversation(new)
        upos = back.messages[0].position
        assert back.versions == {upos: (2, 2)}  # "2 / 2" under the reply, as it was
        assert _reply_said(other.reply_version(new, upos, 1)) == _reply_said(earlier)
        with pytest.raises(HistoryError, match="only the last reply"):
            other.select_reply_version(new, upos, 1)  # (as in the first: later turns follow it)
        other.truncate_after(new, back.messages[1].position)  # the later turns gone: it may switch
        other.select_reply_version(new, upos, 1)
        shown = other.load_conversation(new).messages
        assert [m.content for m in shown[1:]] == ["", "391", "It is **391**."] and shown[1].tool_calls[
            0
        ].name == "calculator"


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (lambda d: d.update(format="something.else"), "not a chat exported by Callisto"),
        (lambda d: d.pop("format"), "not a chat exported by Callisto"),
        (lambda d: d.update(version=99), "newer Callisto"),
        (lambda d: d.update(version="1"), "version is not a whole number"),
        (lambda d: d.update(version=True), "version is not a whole number"),
        (lambda d: d.update(messages={"role": "user"}), "messages must be a list"),
        (lambda d: d.update(title=["x"]), "title must be text"),
        (lambda d: d.update(created=float("inf")), "created must be a number"),
        (lambda d: d.update(settings="all"), "settings must be a JSON object"),
        (lambda d: d["messages"].append("hello"), "is not a JSON object"),
        (lambda d: d["messages"][0].update(role="wizard"), "message 1: role must be one of"),
        (lambda d: d["messages"][0].update(content=5), "message 1: content must be text"),
        (lambda d: d["messages"][0].update(status="done"), "message 1: status must be one of"),
        (lambda d: d["messages"][0].update(images=["***not base64***"]), "message 1: image 1 is not base64"),
        (lambda d: d["messages"][0].update(images="aGk="), "message 1: images must be a list"),
        (lambda d: d["messages"][1].update(images=["aGk="]), "message 2: only a user message has images"),
        (lambda d: d["messages"][1].update(prompt_tokens=-3), "prompt_tokens must be a whole number"),
        (
            lambda d: d["messages"][1].update(completion_tokens=2.5),
            "completion_tokens must be a whole number",
        ),
        (lambda d: d["messages"][1].update(notices=["x"]), "notice 1 is not a JSON object"),
        (lambda d: d["messages"][1].update(notices=[{"message": "hi"}]), "notice 1 needs its code"),
        (lambda d: d["messages"][1].update(notices=[{"code": "c", "setting": 3}]), "setting must be text"),
        (lambda d: d["messages"][1].update(created=1e300), "created must be a number from 0"),
        (lambda d: d.update(updated=-1), "updated must be a number from 0"),
        (lambda d: d["messages"][1].update(prompt_tokens=10**30), "prompt_tokens must be a whole number"),
        (lambda d: d["messages"][1].update(turn_settings=[1]), "turn_settings must be a JSON object"),
        (
            lambda d: d["messages"][1].update(tool_calls=[{"name": "calc"}]),
            "call 1: a call needs its call_id",
        ),
        (
            lambda d: d["messages"][1].update(tool_calls=[{"call_id": "c", "name": "x", "duration_s": "1s"}]),
            "duration_s",
        ),
        (lambda d: d.update(kept_replies={}), "kept_replies must be a list"),
        (lambda d: d["kept_replies"].append("v"), "kept reply 3 is not a JSON object"),
        (lambda d: d["kept_replies"][0].update(user_index=1), "kept reply 1: user_index must name a user"),
        (lambda d: d["kept_replies"][0].update(user_index=99), "kept reply 1: user_index must be a whole"),
        (lambda d: d["kept_replies"][0].update(user_index=None), "kept reply 1: user_index must name"),
        (lambda d: d["kept_replies"][0].update(number=0), "kept reply 1: number must be a version number"),
        (lambda d: d["kept_replies"][0].update(number=2), "kept reply 2: number must be a version number"),
        (lambda d: d["kept_replies"][0].update(messages=None), "only one version of a reply is the one"),
        (lambda d: d["kept_replies"][0]["messages"][0].update(role="user"), "a reply's messages are the"),
        (lambda d: d["kept_replies"][0]["messages"][0].update(content=7), "content must be text"),
    ],
)
def test_a_file_that_is_no_good_export_is_refused_saying_where(history, tmp_path, spoil, said):
    data = _export_of(history)
    spoil(data)
    with pytest.raises(ValueError, match=said):
        conversation_from_json(json.dumps(data))
    with History(tmp_path / "other.sqlite3") as other:
        assert other.list_conversations() == []  # nothing was stored


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b"\xff\xfe\x00garbage",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"format": 1}',
        b'{"format": "callisto.conversation", "version": 1, "settings": '
        + b'{"a": ' * 5000
        + b"1"
        + b"}" * 5001,
    ],
)
def test_what_is_not_json_or_not_an_export_is_refused(text):
    with pytest.raises(ValueError):
        conversation_from_json(text)


def test_what_an_import_keeps_of_a_replys_extra_is_only_what_callisto_reads(history):
    data = _export_of(history)
    reply = data["messages"][1]
    reply["extra"].update(
        stats="fast", incomplete_calls=["x", {"raw": "<tool_call>", "reason": "truncated"}], anything={"a": 1}
    )
    conv = conversation_from_json(json.dumps(data))
    extra = conv.messages[1].extra
    assert "stats" not in extra and "anything" not in extra
    assert extra["incomplete_calls"] == [{"raw": "<tool_call>", "reason": "truncated"}]
    assert extra["made_model"] == "helper" and extra["model"] == "/models/alpha-q4.gguf"


def test_a_picture_over_the_bound_stores_nothing_and_says_so(history, tmp_path):
    from app.storage.history import ImageTooLargeError

    conv = conversation_from_json(conversation_json(history.load_conversation(_filled(history))))
    with History(tmp_path / "other.sqlite3") as other:
        other.max_image_bytes = 1024
        with pytest.raises(ImageTooLargeError):
            other.restore_conversation(conv)
        assert other.list_conversations() == []


def test_a_file_too_large_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import app.storage.export as export

    path = tmp_path / "big.json"
    path.write_bytes(b" " * 2048)
    monkeypatch.setattr(export, "MAX_IMPORT_BYTES", 1024)
    with pytest.raises(ValueError, match="larger than"):
        export.read_export(path)
    with pytest.raises(OSError):
        export.read_export(tmp_path / "missing.json")
