"""Issue 30: the thinking control beside the Tools control, in the real window on a real model
that thinks unless its template's switch is off (``tests.support.thinker``): what the control
shows is what the next message sends, it is remembered per model (in the settings store, so it
survives a restart), and it is disabled for a model whose template has no switch."""

from __future__ import annotations

from app.engine.thinking import Thinking
from app.storage.settings import Settings, load_settings, model_key
from tests.support.thinker import ANSWER, THOUGHT, write_thinker
from tests.ui.scripted_gguf import write_scripted_gguf
from tests.ui.turns import send_turn

DONE_TIMEOUT = 60_000
LLAMA = "meta-llama-Llama-3.1-8B-Instruct.jinja"


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT, enter=True)


def _settings(max_tokens: int = 12) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    s.chat.tool_choice = "none"  # no tools in the prompt: the reply is the thinker's alone
    return s


def _pick(box, label: str) -> None:
    labels = [box.mode.itemText(i) for i in range(box.mode.count())]
    box.mode.setCurrentIndex(labels.index(label))


def test_the_choice_shown_is_sent_and_survives_a_restart(qtbot, make_window, tmp_path):
    path = write_thinker(tmp_path / "thinker.gguf")
    w = make_window(path, settings=_settings())
    box = w.chat_ctl.thinking.box
    qtbot.waitUntil(lambda: box.mode.isEnabled(), timeout=DONE_TIMEOUT)
    assert box.value() is None and w.worker.thinking is None  # Auto: the template's default
    _send(qtbot, w, "Hi")
    reply = w.worker.session.messages[-1]
    assert reply.reasoning.count(THOUGHT) >= 4 and not reply.content.strip()

    _pick(box, "Thinking: Off")
    assert w.worker.thinking == Thinking("off")  # what the control shows is what is sent
    _send(qtbot, w, "Again")
    reply = w.worker.session.messages[-1]
    assert reply.content.strip() == ANSWER and not reply.reasoning
    assert w.worker.session.last_prompt.thinking == "enable_thinking=False"
    stored = load_settings()[0].override_for(path)
    assert stored is not None and (stored.thinking, stored.thinking_budget) == ("off", None)
    w.shutdown()

    # a restart: the model's choice comes back from the settings file and is sent again
    w2 = make_window(path, settings=load_settings()[0])
    box2 = w2.chat_ctl.thinking.box
    qtbot.waitUntil(lambda: box2.mode.isEnabled(), timeout=DONE_TIMEOUT)
    assert box2.mode.currentText() == "Thinking: Off" and w2.worker.thinking == Thinking("off")
    _send(qtbot, w2, "Hi")
    assert w2.worker.session.messages[-1].content.strip() == ANSWER

    # On with a budget: the reasoning is closed after it and the answer follows
    _pick(box2, "Thinking: On")
    box2.budget.setValue(4)
    assert w2.worker.thinking == Thinking("on", budget=4)
    w2.worker.session.max_tokens = 40
    _send(qtbot, w2, "Think a little")
    reply = w2.worker.session.messages[-1]
    assert reply.reasoning.count(THOUGHT) == 3 and reply.content.strip() == ANSWER, reply
    stored = load_settings()[0].model_overrides[model_key(path)]
    assert (stored.thinking, stored.thinking_budget) == ("on", 4)


def test_the_control_is_disabled_for_a_template_without_a_switch(qtbot, make_window, tmp_path):
    from tests.support.thinker import TEMPLATES

    path = write_scripted_gguf(
        tmp_path / "plain.gguf",
        chat_template=(TEMPLATES / LLAMA).read_text(),
        control_tokens=("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
        bos="<|begin_of_text|>",
        eos="<|eot_id|>",
        script={},
        default_next="<|eot_id|>",
    )
    w = make_window(path, settings=_settings())
    box = w.chat_ctl.thinking.box
    assert w.model_info.thinking_kind == "none"
    assert not box.mode.isEnabled() and not box.budget.isEnabled()
    assert box.value() is None and w.worker.thinking is None


def test_levels_come_from_the_template():
    from app.ui.thinking_control import ThinkingBox, choice_of, setting_of

    box = ThinkingBox()
    box.set_kind("effort")
    box.set_levels(("low", "medium", "high"))
    assert box.levels() == ["low", "medium", "high"]
    _pick(box, "Thinking: high")
    assert box.value() == Thinking("on", effort="high")
    assert setting_of(box.value()) == ("high", None) and choice_of("high", None) == box.value()
    box.set_levels(())  # a model without levels: the level falls back to Auto
    assert box.mode.currentText() == "Thinking: Auto"


def test_settings_this_model_shows_and_sets_the_choice(qtbot, make_window, tmp_path):
    path = write_thinker(tmp_path / "thinker.gguf")
    w = make_window(path, settings=_settings(max_tokens=40))
    box = w.chat_ctl.thinking.box
    qtbot.waitUntil(lambda: box.mode.isEnabled(), timeout=DONE_TIMEOUT)
    _pick(box, "Thinking: Off")
    dlg = w.open_settings("model_override.tool_format")
    assert dlg.model_thinking.currentData() == "off"  # This model shows the control's choice
    dlg.model_thinking.setCurrentIndex(dlg.model_thinking.findData("on"))
    dlg.model_thinking_budget.setValue(5)
    dlg._on_buttons_accepted()
    # the control shows what the dialog stored, and the next message sends it
    qtbot.waitUntil(lambda: box.mode.currentText() == "Thinking: On", timeout=DONE_TIMEOUT)
    assert box.budget.value() == 5 and w.worker.thinking == Thinking("on", budget=5)
    stored = load_settings()[0].model_overrides[model_key(path)]
    assert (stored.thinking, stored.thinking_budget) == ("on", 5)
    _send(qtbot, w, "Hi")
    reply = w.worker.session.messages[-1]
    assert reply.reasoning.count(THOUGHT) == 4 and reply.content.strip() == ANSWER, reply
