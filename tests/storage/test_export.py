"""Exporting a stored conversation (``app.storage.export``): Markdown that reads as the chat did,
JSON that keeps every stored field, a file name from the title, and writes that fail plainly. On a
real SQLite history, filled the way the turn recorder fills it."""

from __future__ import annotations

import base64
import json

import pytest

from app.calls import ToolCall, ToolResult
from app.storage.export import (
    conversation_json,
    conversation_markdown,
    export_conversation,
    export_file_name,
)
from app.storage.history import History, TurnMessage

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
