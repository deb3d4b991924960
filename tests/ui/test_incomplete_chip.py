"""A call the model did not finish is shown as a chip, never as text: from the engine's event
through the turn streamer to the chat view (live), and from a stored reply (reopened)."""

from __future__ import annotations

from app.calls import IncompleteCall
from app.engine.events import DoneEvent, TextEvent, ToolCallIncomplete
from app.ui.chat import ChatView
from app.ui.turn_stream import TurnSinks, stream_turn

RAW = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'


def test_the_turn_streamer_passes_a_cut_call_to_its_sink():
    got: list = []
    texts: list[str] = []
    sinks = TurnSinks(
        text=texts.append,
        reasoning=texts.append,
        tool_started=got.append,
        tool_finished=got.append,
        notice=got.append,
        incomplete=got.append,
    )
    ev = ToolCallIncomplete(IncompleteCall(RAW, "get_weather", "truncated"))
    done, _n = stream_turn(
        lambda: [TextEvent("Let me check."), ev, DoneEvent("length")],
        sinks,
        None,
        flush_s=0.0,
        cancelled=lambda: False,
    )
    assert got == [ev] and texts == ["Let me check."] and done.finish_reason == "length"


def test_the_chat_view_shows_a_cut_call_as_a_chip(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_user("Weather in Paris?")
    view.append_text("Let me check.")
    chip = view.add_incomplete_call(IncompleteCall(RAW, "get_weather"))
    reply = view.current_assistant()
    assert chip.text() == "cut off while writing a call to get_weather" and chip.toolTip() == RAW
    assert reply.incomplete == [chip] and reply.text() == "Let me check."  # the markup is not text
    unnamed = view.add_incomplete_call(IncompleteCall("<tool_call>"))
    assert unnamed.text() == "cut off while writing a call to a tool"
    rejected = reply.add_incomplete(IncompleteCall("to=python", "python", "undeclared"))
    assert rejected.text() == "not run: python was not offered to the model"
