"""Issue 32, through the real chat loop with a real (scripted) model: a model that writes the
same call over and over, within a reply and round after round, as small models made to call do.

The model's next token depends only on the current one: after the prompt's last newline it
writes one whole Hermes call (one token), and after that call the same call again, forever."""

from __future__ import annotations

from app.engine.chat import ChatSession
from app.engine.events import DoneEvent, NoticeEvent, TextEvent, ToolCallFinishedEvent, ToolCallStartedEvent
from app.engine.llm import load_model
from app.engine.loop import REPEAT_NOTE
from app.tools.registry import ToolRegistry
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
MAX_TOKENS = 64


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


def test_i32_a_model_that_repeats_its_call_is_stopped_answered_once_and_ends_at_the_round_limit(tmp_path):
    path = write_scripted_gguf(
        tmp_path / "again.gguf",
        chat_template=CHATML,
        user_tokens=[CALL],
        script={"\n": CALL, CALL: CALL},
        default_next="\n",
        name="again-and-again",
    )
    model = load_model(path, n_ctx=2048, n_threads=1)
    try:
        ran: list = []
        session = ChatSession(
            model, tool_format="hermes", registry=_registry(ran), max_tokens=MAX_TOKENS, max_rounds=3
        )
        events = list(session.send("Weather in Paris?"))
    finally:
        model.close()

    done = events[-1]
    assert isinstance(done, DoneEvent)
    # each reply stopped at its repeat (one call, then the same call again): never the token limit
    assert (done.finish_reason, done.rounds) == ("rounds", 3)
    assert done.generated_tokens <= 3 * 2 < MAX_TOKENS
    # the call ran once; round 2 repeated it and got the earlier result with a note
    assert ran == ["Paris"]
    started = [e for e in events if isinstance(e, ToolCallStartedEvent)]
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    assert len(started) == len(finished) == 2
    assert finished[1].outcome.content == "sunny\n\n" + REPEAT_NOTE.format(name="get_weather")
    tools = [m for m in session.messages if m.role == "tool"]
    assert [m.content for m in tools] == ["sunny", "sunny\n\n" + REPEAT_NOTE.format(name="get_weather")]
    # one notice for the repeats within replies, one for the round limit (naming its setting)
    notices = [(n.code, n.setting) for n in events if isinstance(n, NoticeEvent)]
    notices = [n for n in notices if n[0] not in ("tool_format_override", "no_chat_template")]
    assert notices == [("repeated_call", None), ("round_limit", "chat.max_tool_rounds")]
    # nothing lost: the last reply's call is kept as its text, shown and in the conversation
    last = session.messages[-1]
    assert last.role == "assistant" and last.content == CALL and not last.tool_calls
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == CALL
    assert [m.role for m in session.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
