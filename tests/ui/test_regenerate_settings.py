"""Issue 28, Must show 3 (U3): "Regenerate uses the turn's own tool choice and settings".

A turn is sent with settings A; the settings are then changed to B through the window's settings
store (and its thinking control); Regenerate and Continue still reply with A: the thinking
choice, the sampling values and max_tokens (the tool choice has its own test in
``test_reply_versions``), in a conversation reopened after a restart too. The real window,
worker and a real model: the thinker (``tests.support.thinker``) thinks (``x`` until max_tokens
cuts it) unless its template's switch is off (then it answers ``A``), so max_tokens and the
thinking choice show in the reply; the sampling is what the session was asked for
(``ChatSession.last_sampling``) or, from a remote engine, what its requests held."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.engine.thinking import Thinking
from app.storage.history import History
from app.storage.settings import Settings, load_settings
from tests.support.history import history_before
from tests.support.thinker import ANSWER, THOUGHT, write_thinker
from tests.ui.turns import send_turn

DONE_TIMEOUT = 60_000
MAX_A, MAX_B = 6, 40
SAMPLING_A = {"temperature": 0.3, "seed": 11}
SAMPLING_B = {"temperature": 0.9, "seed": 5}


def _settings_a() -> Settings:
    s = Settings()
    s.sampling.max_tokens = MAX_A
    s.sampling.temperature, s.sampling.seed = SAMPLING_A["temperature"], SAMPLING_A["seed"]
    s.chat.tool_choice = "none"  # no tools in the prompt: the reply is the thinker's alone
    return s


def _pick(box, label: str) -> None:
    labels = [box.mode.itemText(i) for i in range(box.mode.count())]
    box.mode.setCurrentIndex(labels.index(label))


def _change_to_b(qtbot, w) -> None:
    """Settings B, through the store the window uses (and the thinking control, which writes the
    model's choice there): a longer max_tokens, other sampling values, thinking off."""
    with w.state.store.edit() as s:
        s.sampling.max_tokens = MAX_B
        s.sampling.temperature, s.sampling.seed = SAMPLING_B["temperature"], SAMPLING_B["seed"]
    _pick(w.chat_ctl.thinking.box, "Thinking: Off")
    assert w.worker.thinking == Thinking("off")
    qtbot.waitUntil(lambda: w.worker.state.config.max_tokens == MAX_B, timeout=DONE_TIMEOUT)


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT)


def _click(qtbot, button, w):
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def _thought_until_cut_at_a(w, done) -> None:
    """The reply A makes: thinking on (Auto), cut at MAX_A tokens, no answer; sampled with A's."""
    assert done.finish_reason == "length" and done.generated_tokens == MAX_A, done
    reply = w.worker.session.messages[-1]
    assert THOUGHT in reply.reasoning and ANSWER not in reply.content, reply
    assert w.worker.session.last_sampling == SAMPLING_A
    assert w.chat.current_assistant().status_label.text() == "(max tokens reached)"


def _ready(qtbot, w) -> None:
    qtbot.waitUntil(w.chat_ctl.thinking.box.mode.isEnabled, timeout=DONE_TIMEOUT)


def test_u3_regenerate_uses_the_turns_thinking_sampling_and_max_tokens_after_a_restart_too(
    qtbot, make_window, tmp_path
):
    """U3 (Must show 3): sent with A, settings changed to B, Regenerate replies with A; the reply's
    record says A (what it was made with); after a restart on the same history, Regenerate of the
    reopened turn still replies with A, while a new message is sent with B."""
    path = write_thinker(tmp_path / "thinker.gguf")
    w = make_window(path, settings=_settings_a())
    _ready(qtbot, w)
    _thought_until_cut_at_a(w, _send(qtbot, w, "Hi"))

    _change_to_b(qtbot, w)
    _thought_until_cut_at_a(w, _click(qtbot, w.chat.current_assistant().btn_regen, w))
    assert w.chat.current_assistant().version == (2, 2)
    conv = w.history.load_conversation(w.conversation_id)
    user, reply = conv.messages[0], conv.messages[-1]
    assert user.turn_settings is not None and user.turn_settings["max_tokens"] == MAX_A
    assert user.turn_settings["sampling"] == SAMPLING_A and user.turn_settings["tool_choice"] == "none"
    made_with = reply.extra["settings"]  # the reply's info stays truthful: A, not B
    assert (made_with["max_tokens"], made_with["sampling"]) == (MAX_A, SAMPLING_A)
    assert made_with["thinking"]["mode"] == "auto"

    cid, history = w.conversation_id, w.history
    w.shutdown()
    w2 = make_window(path, settings=load_settings()[0], history=history)  # B, from the settings file
    _ready(qtbot, w2)
    assert w2.worker.thinking == Thinking("off")
    qtbot.waitUntil(lambda: w2.worker.state.config.max_tokens == MAX_B, timeout=DONE_TIMEOUT)
    w2.open_conversation(cid)
    _thought_until_cut_at_a(w2, _click(qtbot, w2.chat.current_assistant().btn_regen, w2))
    assert w2.chat.current_assistant().version == (3, 3)

    done = _send(qtbot, w2, "Again")  # a new message: B (thinking off, so the answer; B's sampling)
    assert done.finish_reason == "stop" and w2.worker.session.messages[-1].content.strip() == ANSWER
    assert w2.worker.session.last_sampling == SAMPLING_B


def test_u3_continue_goes_on_with_the_turns_own_settings(qtbot, make_window, tmp_path):
    """U3 (Must show 3): a reply cut at A's max_tokens, settings changed to B; Continue goes on
    with A (thinking on, cut again at A's max_tokens, A's sampling), not with B."""
    w = make_window(write_thinker(tmp_path / "thinker.gguf"), settings=_settings_a())
    _ready(qtbot, w)
    _thought_until_cut_at_a(w, _send(qtbot, w, "Hi"))
    _change_to_b(qtbot, w)
    cut = w.chat.current_assistant()
    _thought_until_cut_at_a(w, _click(qtbot, cut.error_box.buttons["Continue"], w))
    assert w.chat.assistant_messages() == [cut]  # in place


def _history_from_before_the_turn_settings(path) -> History:
    """A history written before turns kept their settings (the migrations before
    ``m010_turn_settings``): one turn, its reply with no record of its settings."""
    history_before(
        path,
        "m010_turn_settings",
        """
        INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old chat', 1.0, 2.0);
        INSERT INTO messages (conversation_id, position, role, content, created) VALUES (1, 0, 'user', 'Hi', 1.0);
        INSERT INTO messages (conversation_id, position, role, content, created) VALUES (1, 1, 'assistant', 'Hello.', 2.0);
        """,
    )
    return History(path)


def test_u3_an_older_turn_without_a_record_regenerates_with_the_current_settings(
    qtbot, make_window, tmp_path
):
    """U3 (Must show 3): a turn from a history made before the settings were kept (the migration
    adds their column) regenerates with the current settings, and keeps them from then on."""
    history = _history_from_before_the_turn_settings(tmp_path / "old.sqlite3")
    assert history.applied_migrations == ["m010_turn_settings"]
    assert history.load_conversation(1).messages[0].turn_settings is None
    w = make_window(write_thinker(tmp_path / "thinker.gguf"), settings=_settings_a(), history=history)
    _ready(qtbot, w)
    w.open_conversation(1)
    _thought_until_cut_at_a(w, _click(qtbot, w.chat.current_assistant().btn_regen, w))
    _change_to_b(qtbot, w)  # what it was regenerated with is its record now
    _thought_until_cut_at_a(w, _click(qtbot, w.chat.current_assistant().btn_regen, w))
    assert w.chat.current_assistant().version == (3, 3)


def _echo_endpoint(handler_requests: list):
    """An OpenAI endpoint with one model that answers every chat request "Hello." (the request
    bodies are kept)."""
    from tests.engine.remote.misbehaving import openai_chunk, sse

    def handler(req):
        if req.path == "/v1/models":
            req.status(200, {"object": "list", "data": [{"id": "echo", "object": "model"}]})
            return
        handler_requests.append(req.body)
        req.start_stream()
        req.send(openai_chunk("Hello.") + openai_chunk(finish="stop") + sse("[DONE]"))

    return handler


def test_u3_a_remote_regenerate_requests_the_turns_own_settings(qtbot, make_window, memory_keyring):
    """U3 (Must show 3) with a remote engine: Regenerate's request holds the turn's max_tokens,
    sampling and thinking choice (A), not the ones changed since (B); a new message's holds B."""
    from app.engine.remote.keys import remote_key
    from tests.engine.remote.misbehaving import MisbehavingServer
    from tests.ui.test_remote_window import _add_provider, _choose

    bodies: list = []
    with MisbehavingServer(_echo_endpoint(bodies)) as server:
        s = _settings_a()
        s.sampling.max_tokens = 50
        w = make_window(None, settings=s)
        _add_provider(qtbot, w, name="Echo", url=server.url, kind="openai", mode="api")
        _choose(qtbot, w, remote_key("Echo", "echo"))
        _pick(w.chat_ctl.thinking.box, "Thinking: Off")
        assert _send(qtbot, w, "Hi").finish_reason == "stop"
        sent = bodies[-1]
        assert (sent["max_tokens"], sent["temperature"], sent["seed"]) == (50, 0.3, 11)
        assert sent["chat_template_kwargs"] == {"enable_thinking": False}

        with w.state.store.edit() as b:
            b.sampling.max_tokens = 80
            b.sampling.temperature, b.sampling.seed = SAMPLING_B["temperature"], SAMPLING_B["seed"]
        _pick(w.chat_ctl.thinking.box, "Thinking: Auto")
        qtbot.waitUntil(lambda: w.worker.state.config.max_tokens == 80, timeout=DONE_TIMEOUT)
        assert _click(qtbot, w.chat.current_assistant().btn_regen, w).finish_reason == "stop"
        again = bodies[-1]
        assert (again["max_tokens"], again["temperature"], again["seed"]) == (50, 0.3, 11)
        assert again["chat_template_kwargs"] == {"enable_thinking": False}
        assert w.chat.current_assistant().version == (2, 2)

        assert _send(qtbot, w, "Hi again").finish_reason == "stop"
        new = bodies[-1]
        assert (new["max_tokens"], new["temperature"], new["seed"]) == (80, 0.9, 5)
        assert "chat_template_kwargs" not in new


def test_u3_a_turn_record_reads_what_it_names_and_the_current_settings_stand_in_for_the_rest():
    """U3 (Must show 3): the record a turn keeps, read back; a reply's ``settings`` from before the
    thinking choice was kept names no thinking (the current one stands in), and a record not
    understood names nothing (all current)."""
    from app.ui.chat.turn_settings import TurnSettings

    sent = TurnSettings("none", Thinking("on", budget=4), dict(SAMPLING_A), MAX_A)
    assert TurnSettings.from_record(sent.to_record()) == sent
    current = TurnSettings("auto", Thinking("off"), dict(SAMPLING_B), MAX_B)
    old = TurnSettings.from_record(
        {"tool_format": "auto", "tool_choice": "required", "max_tokens": 64, "sampling": {}}
    )
    assert old == TurnSettings("required", None, {}, 64)
    assert old.over(current) == TurnSettings("required", Thinking("off"), {}, 64)
    garbage = {
        "tool_choice": 3,
        "thinking": {"mode": "sideways"},
        "sampling": {"warmth": 1},
        "max_tokens": True,
    }
    assert TurnSettings.from_record(garbage) == TurnSettings() and TurnSettings().over(current) == current
    assert TurnSettings.from_record(None) == TurnSettings()
