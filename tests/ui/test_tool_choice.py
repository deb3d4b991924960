"""The tool-choice control by the message box and its default in Settings, in the real window on
a real (scripted) model: None keeps the tools out, a named tool is called under a constraint (the
side panel says so), each conversation keeps its choice."""

from __future__ import annotations

from app.storage.settings import Settings, load_settings
from tests.ui.turns import send_turn

DONE_TIMEOUT = 60_000


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT, enter=True)


def _settings(max_tokens: int = 400, **chat) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    for k, v in chat.items():
        setattr(s.chat, k, v)
    return s


def _labels(box) -> list[str]:
    return [box.itemText(i) for i in range(box.count())]


def test_control_lists_the_choices_and_each_tool(qtbot, make_window, tool_model):
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=_settings())
    box = w.tool_choice_box
    qtbot.waitUntil(lambda: "Call calculator" in _labels(box), timeout=DONE_TIMEOUT)
    assert _labels(box)[:3] == ["Tools: Auto", "Tools: Required", "Tools: None"]
    assert box.value() == "auto"
    box.setCurrentIndex(_labels(box).index("Call calculator"))
    assert box.value() == {"type": "function", "function": {"name": "calculator"}}
    assert w.worker.tool_choice == box.value()


def test_none_offers_no_tools_and_runs_no_call(qtbot, make_window, tool_model):
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=_settings(max_tokens=24))
    box = w.tool_choice_box
    box.setCurrentIndex(_labels(box).index("Tools: None"))
    done = _send(qtbot, w, "What is 6*7?")
    assert done.rounds == 1 and done.constraint is None
    assert w.tool_panel.entries == {}
    assert "calculator" not in w.worker.session.last_prompt.text


def test_a_named_tool_is_called_under_the_constraint_and_the_panel_says_so(qtbot, make_window, tool_model):
    # the scripted model writes its call as one token the grammar does not hold: under the
    # constraint it must spell a call to the chosen tool instead
    s = _settings(max_tokens=1500)
    s.sampling.temperature, s.sampling.seed, s.sampling.top_k = 1.0, 3, 0
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=s)
    box = w.tool_choice_box
    qtbot.waitUntil(lambda: "Call current_datetime" in _labels(box), timeout=DONE_TIMEOUT)
    box.setCurrentIndex(_labels(box).index("Call current_datetime"))
    w.worker.session.parallel_tool_calls = False  # one call: a random model might go on calling
    _send(qtbot, w, "What time is it?")
    entries = list(w.tool_panel.entries.values())
    assert entries and entries[0].call.name == "current_datetime", w.worker.session.messages
    assert entries[0].constrained == "tool current_datetime, hermes"
    w.tool_panel.list.setCurrentRow(0)
    assert "held to its schema (tool current_datetime, hermes)" in w.tool_panel.detail_text()


def test_each_conversation_keeps_its_choice(qtbot, make_window, tool_model):
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=_settings(max_tokens=16))
    box = w.tool_choice_box
    box.setCurrentIndex(_labels(box).index("Tools: None"))
    _send(qtbot, w, "first conversation")
    first = w.conversation_id
    assert first is not None and box.value() == "none"  # saving the new chat kept its choice
    w.new_chat()
    assert box.value() == "auto"  # a new conversation starts at the default
    box.setCurrentIndex(_labels(box).index("Tools: Required"))
    w.open_conversation(first)
    assert box.value() == "none"


def test_settings_dropdown_sets_the_default(qtbot, make_window, tool_model):
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=_settings())
    dlg = w.open_settings("chat.tool_choice")
    combo = dlg.tool_choice
    assert [combo.itemData(i) for i in range(combo.count())] == ["auto", "required", "none"]
    combo.setCurrentIndex(combo.findData("required"))
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        dlg._on_buttons_accepted()
    assert load_settings()[0].chat.tool_choice == "required"
    w.new_chat()
    assert w.tool_choice_box.value() == "required"


def test_unknown_setting_values_fall_back_to_auto():
    s = Settings.model_validate({"chat": {"tool_choice": "sometimes"}})
    assert s.chat.tool_choice == "auto"
