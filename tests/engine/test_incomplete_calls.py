"""A call cut off by the token limit, through the real chat loop and the real history: the loop
passes it on as an event (raw text and name), never runs it, keeps it out of the reply's text,
stores it with the assistant message, and a reopened conversation reads it back."""

from __future__ import annotations

from app.calls import IncompleteCall
from app.engine.chat import ChatSession
from app.engine.events import DoneEvent, TextEvent, ToolCallIncomplete, ToolCallStartedEvent, event_to_dict
from app.engine.llm import load_model
from app.engine.messages import Message
from app.engine.recorder import TurnRecorder
from app.storage.history import open_history
from app.tools.registry import ToolRegistry
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

# One user token: the reply is a Hermes call cut in the middle of its arguments.
CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'


def _registry(ran: list) -> ToolRegistry:
    registry = ToolRegistry()

    def get_weather(city: str) -> str:
        """The weather of a city.

        Args:
            city: The city.
        """
        ran.append(city)
        return "sunny"

    registry.register_function(get_weather)
    return registry


def test_a_cut_call_is_an_event_kept_with_the_reply_and_stored(tmp_path):
    path = write_scripted_gguf(
        tmp_path / "cut.gguf",
        chat_template=CHATML,
        user_tokens=[CUT],
        script={"\n": CUT, CUT: CUT},
        default_next="\n",
        name="cut-call",
    )
    model = load_model(path, n_ctx=1024, n_threads=1)
    try:
        ran: list = []
        session = ChatSession(model, tool_format="hermes", registry=_registry(ran), max_tokens=1)
        history, _notice = open_history(tmp_path / "history.db")
        cid = history.create_conversation("cut").id
        recorder = TurnRecorder(history, cid, model="cut.gguf")
        recorder.user_message("Weather in Paris?")
        recorder.begin()
        events = []
        for ev in session.send("Weather in Paris?"):
            recorder.observe(ev)
            events.append(ev)
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.finish_reason == "length"
        assert recorder.finish(done, session.messages)
    finally:
        model.close()

    cut = [e for e in events if isinstance(e, ToolCallIncomplete)]
    assert [(e.call.name, e.call.raw, e.call.reason) for e in cut] == [("get_weather", CUT, "truncated")]
    assert not [e for e in events if isinstance(e, ToolCallStartedEvent)] and ran == []
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == ""  # no markup in the text
    assert event_to_dict(cut[0]) == {
        "type": "tool_call_incomplete",
        "raw": CUT,
        "name": "get_weather",
        "reason": "truncated",
    }
    reply = session.messages[-1]
    assert reply.role == "assistant" and reply.content == ""
    assert reply.incomplete_calls == [IncompleteCall(CUT, "get_weather", "truncated")]

    stored = [m for m in history.load_conversation(cid).messages if m.role == "assistant"]
    assert stored[-1].extra["incomplete_calls"] == [
        {"raw": CUT, "name": "get_weather", "reason": "truncated"}
    ]
    again = Message.from_dict(stored[-1].to_chat_dict())
    assert again.incomplete_calls == reply.incomplete_calls
    assert Message.from_dict(reply.to_dict()) == reply
