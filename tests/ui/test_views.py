"""View-level tests: the chat view, Markdown rendering, the settings dialog, the tool panel."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QGuiApplication

from app.calls import ToolCall, ToolResult
from app.storage.settings import Settings, effective_settings, model_key
from app.ui.call_view import CallView
from app.ui.chat import ChatView
from app.ui.markdown_render import render_markdown, split_fences
from app.ui.settings_dialog import SettingsDialog
from app.ui.tool_panel import ToolCallPanel


def test_markdown_highlights_code_and_never_passes_model_html_through():
    r = render_markdown("Hi **there** <img src=x onerror=y>\n\n```python\nprint('x')\n```\nafter")
    assert "<strong>there</strong>" in r.html
    assert "<img" not in r.html and "&lt;img" in r.html
    assert r.code_blocks == ["print('x')"]
    assert 'href="copy:0"' in r.html and "style=" in r.html  # pygments inline colours


def test_unclosed_fence_while_streaming_is_code():
    assert split_fences("text\n```js\nlet a") == [("text", "text\n", ""), ("code", "let a", "js")]
    assert render_markdown("```\nx = 1").code_blocks == ["x = 1"]


def test_code_block_copy_link_copies_raw_code(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_user("show me")
    view.append_text("Here:\n\n```python\nx = 1\ny = 2\n```\n")
    m = view.current_assistant()
    m.flush()
    run = m.blocks[0]
    assert run.code_blocks == ["x = 1\ny = 2"]
    code_view = run.views[-1]  # "Here:" and the closed fence are finished blocks
    assert code_view.raw.startswith("```python")
    QGuiApplication.clipboard().setText("")
    code_view.anchorClicked.emit(QUrl("copy:0"))
    assert QGuiApplication.clipboard().text() == "x = 1\ny = 2"


def test_thinking_block_is_collapsed_and_expands(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.show()
    view.append_reasoning("Let me think")
    view.append_reasoning(" about it.")
    view.append_text("Answer.")
    m = view.current_assistant()
    assert not m.thinking.isHidden() and m.thinking.body.isHidden()
    m.thinking.toggle.click()
    assert not m.thinking.body.isHidden() and m.thinking.body.text() == "Let me think about it."
    assert m.text() == "Answer."


def test_streamed_reasoning_is_rendered_at_the_render_pace_not_per_piece(qtbot):
    """Reasoning arrives a token at a time; its (folded) view takes what was added at each paced
    render, appended, so a long reasoning costs its length once per render."""
    view = ChatView()
    qtbot.addWidget(view)
    view.show()
    view.append_reasoning("Start.")
    body = view.current_assistant().thinking.body
    changes: list[int] = []
    body.document().contentsChange.connect(lambda _at, _removed, added: changes.append(added))
    pieces = [f" step {k}" for k in range(200)]
    for piece in pieces:
        view.append_reasoning(piece)
    assert changes == []  # nothing rendered per piece
    qtbot.waitUntil(lambda: body.text() == "Start." + "".join(pieces))
    assert len(changes) <= 2 and body.toPlainText() == body.text()  # one render (or two), appended
    view.append_reasoning(" Done.")
    qtbot.waitUntil(lambda: body.text().endswith(" Done."))
    assert body.isHidden()  # folded all along


def test_text_and_chips_keep_their_order_and_chip_click_is_reported(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.show()
    view.append_text("Before the call.")
    chip = view.show_call(CallView(ToolCall("c1", "calculator"))).chip
    view.append_text("After the call.")
    view.end_assistant("done")
    m = view.current_assistant()
    kinds = [type(b).__name__ for b in m.blocks]
    assert kinds == ["TextRun", "QWidget", "TextRun"]
    assert m.text() == "Before the call.After the call."
    with qtbot.waitSignal(view.sig_chip_clicked) as blocker:
        qtbot.mouseClick(chip, Qt.MouseButton.LeftButton)
    assert blocker.args == ["c1"]


def test_notice_shows_once_per_conversation_and_link_names_setting(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    b = view.add_notice("no_tool_format", "No format.", "chat.tool_format")
    assert b is not None and view.add_notice("no_tool_format", "No format.", "chat.tool_format") is None
    with qtbot.waitSignal(view.sig_open_setting) as blocker:
        b.label.linkActivated.emit("setting:chat.tool_format")
    assert blocker.args == ["chat.tool_format"]
    view.clear()
    assert view.add_notice("no_tool_format", "No format.", "chat.tool_format") is not None


def test_streaming_renders_markdown_at_a_throttled_rate(qtbot):
    """2,000 deltas cost far fewer Markdown renders than deltas (bounded work, not time)."""
    view = ChatView()
    qtbot.addWidget(view)
    view.show()
    for i in range(2000):
        view.append_text(f"w{i} ")
        if i % 100 == 0:
            qtbot.wait(1)  # let the render timer fire now and then, as a stream would
    view.end_assistant("done")
    m = view.current_assistant()
    assert m.text().startswith("w0 w1 ") and m.text().endswith("w1999 ")
    assert 1 <= m.blocks[0].render_count <= 60


def test_settings_dialog_tool_format_choices_and_per_model_override(qtbot, tmp_path):
    from app.engine.formats import tool_format_choices

    s = Settings()
    dlg = SettingsDialog(s, detected_label="Hermes JSON", model_path=str(tmp_path / "m.gguf"), model_name="m")
    qtbot.addWidget(dlg)
    choices = tool_format_choices()
    assert [dlg.tool_format.itemData(i) for i in range(dlg.tool_format.count())] == [v for v, _ in choices]
    assert dlg.tool_format.itemText(0) == "Automatic — detected: Hermes JSON"
    labels = dict(choices)
    assert [dlg.tool_format.itemText(i) for i in range(1, dlg.tool_format.count())] == [
        labels[v] for v, _ in choices[1:]
    ]
    assert dlg.open_at("chat.tool_format") is dlg.tool_format
    # per-model: tool format none and temperature 0.1 for this model only
    dlg.model_tool_format.setCurrentIndex(dlg.model_tool_format.findData("none"))
    dlg.model_sampling.checks["temperature"].setChecked(True)
    dlg.model_sampling.spins["temperature"].setValue(0.1)
    dlg.sampling.spins["max_tokens"].setValue(333)
    out = dlg.result_settings()
    eff = effective_settings(out, tmp_path / "m.gguf")
    assert eff.tool_format == "none" and eff.sampling.temperature == 0.1 and eff.max_tokens == 333
    other = effective_settings(out, tmp_path / "other.gguf")
    assert other.tool_format == "auto" and other.sampling.temperature is None
    assert model_key(tmp_path / "m.gguf") in out.model_overrides
    assert s.model_overrides == {}  # the original is untouched until saved


def test_tool_panel_shows_typed_arguments_result_error(qtbot):
    panel = ToolCallPanel()
    qtbot.addWidget(panel)
    raw = '<tool_call>{"name": "read_file"}'
    read = CallView(ToolCall("a", "read_file", {"path": "x.txt", "limit": 3}, raw=raw))
    panel.show_call(read)
    missing = ToolResult("a", "read_file", error="No such file: x.txt", duration_s=0.002)
    panel.show_call(read.finished(missing))
    panel.show_call(CallView(ToolCall("b", "calculator", {"expression": "1+1"})))
    assert panel.select_call("a")
    text = panel.detail_text()
    assert json.dumps({"path": "x.txt", "limit": 3}, indent=2) in text
    assert "No such file: x.txt" in text and "2.0 ms" in text and '<tool_call>{"name": "read_file"}' in text
    assert panel.entries["a"].status == "error" and panel.entries["b"].status == "running"
    assert panel.list.count() == 2
