"""Fuzzing a chat file brought in (``app.storage.export.conversation_from_json``): a real export
with one field anywhere replaced by any JSON value. Each case ends with the reader's ValueError,
or the history's own error, or a stored conversation that loads, exports and reads back as the
window and the chat loop read it. Derandomized: the same cases every run."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.calls import ToolCall, ToolResult
from app.storage.export import conversation_from_json, conversation_json, conversation_markdown
from app.storage.history import History, HistoryError, TurnMessage

FUZZ = settings(
    max_examples=80,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64, 10**30, -(10**30)]),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["", "\x00", "\ud800", "a\udfffb", "aGk=", "user", "assistant", "tool", "interrupted"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
TOP = [
    "title",
    "created",
    "updated",
    "model_path",
    "settings",
    "messages",
    "versions",
    "format",
    "version",
    "system_prompt",
]
MESSAGE = [
    "role",
    "content",
    "reasoning",
    "status",
    "created",
    "prompt_tokens",
    "completion_tokens",
    "tool_call_id",
    "name",
    "error",
    "tool_calls",
    "notices",
    "extra",
    "turn_settings",
    "images",
]
CALL = ["call_id", "name", "arguments", "raw", "result", "error", "duration_s", "approval"]
EXTRA = [
    "model",
    "model_name",
    "made_model",
    "settings",
    "stats",
    "incomplete_calls",
    "call_decoding",
    "call_parsers",
]


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> dict:
    """A real chat's JSON export: a picture, a call with its result, a banner, thinking, stats."""
    with History(tmp_path_factory.mktemp("fuzz") / "h.sqlite3") as h:
        cid = h.create_conversation("Calc", model_path="/m/a.gguf", settings={"tool_format": "auto"}).id
        h.append_message(cid, "user", "17 * 23?", images=[b"\x89PNG\r\n\x1a\n" + b"\x00" * 64])
        partial = h.begin_assistant_message(cid)
        call = ToolCall(id="c1", name="calculator", arguments={"expression": "17 * 23"})
        h.record_turn(
            cid,
            partial.id,
            [
                TurnMessage(
                    "assistant",
                    "",
                    reasoning="Use it.",
                    tool_calls=(call,),
                    results={"c1": ToolResult(call_id="c1", name="calculator", content="391")},
                    notices=({"code": "no_tools", "message": "Tools are off"},),
                    extra={
                        "model": "/m/a.gguf",
                        "stats": {"finish_reason": "stop"},
                        "call_decoding": {"c1": None},
                    },
                ),
                TurnMessage("tool", "391", tool_call_id="c1", name="calculator"),
                TurnMessage("assistant", "391.", extra={"model": "/m/a.gguf", "incomplete_calls": []}),
            ],
        )
        return json.loads(conversation_json(h.load_conversation(cid)))


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    with History(tmp_path_factory.mktemp("fuzz-target") / "h.sqlite3") as h:
        yield h


@st.composite
def spoiled(draw, export: dict) -> dict:
    data = json.loads(json.dumps(export))
    where = draw(st.sampled_from(["top", "message", "call", "extra"]))
    value = draw(VALUES)
    if where == "top":
        data[draw(st.sampled_from(TOP))] = value
    elif where == "message":
        data["messages"][draw(st.integers(0, len(data["messages"]) - 1))][draw(st.sampled_from(MESSAGE))] = (
            value
        )
    elif where == "call":
        data["messages"][1]["tool_calls"][0][draw(st.sampled_from(CALL))] = value
    else:
        data["messages"][draw(st.sampled_from([1, 3]))]["extra"][draw(st.sampled_from(EXTRA))] = value
    return data


@FUZZ
@given(data=st.data())
def test_any_field_of_any_value_is_refused_plainly_or_comes_in_whole(export, target, data):
    spoilt = data.draw(spoiled(export))
    try:
        conv = conversation_from_json(json.dumps(spoilt, allow_nan=True))
    except ValueError:
        return
    try:
        new = target.restore_conversation(conv)
    except HistoryError:
        return
    back = target.load_conversation(new.id)
    assert len(back.messages) == len(conv.messages)
    conversation_markdown(back)
    assert json.loads(conversation_json(back))["title"] == back.title
    for m in back.messages:
        m.to_chat_dict()
        _ = m.shown_notices, m.incomplete_calls
        for tc in m.tool_calls:
            _ = tc.call, tc.outcome
