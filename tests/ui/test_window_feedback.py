"""The window's feedback to a newcomer, each case reproduced with its steps on the real window.

Each test is named after the defect it reproduces (``test_dN_...``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.storage.settings import Settings
from tests.ui.turns import send_turn

DONE_TIMEOUT = 30_000


def _settings(max_tokens: int = 64) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    return s


def _approval(qtbot, w):
    w.compose.setPlainText("Write a note")
    assert w.send()
    qtbot.waitUntil(
        lambda: w.approval_dialog is not None and w.approval_dialog.isVisible(), timeout=DONE_TIMEOUT
    )
    return w.approval_dialog


def test_d18_approval_shows_full_path_that_the_file_is_overwritten_and_a_countdown(
    qtbot, make_window, tool_model, tmp_path
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "note.txt").write_text("old words")
    path = tool_model("write_file", '{"path": "note.txt", "content": "hi"}', answer="Done.")
    s = _settings()
    s.tools.workspace = str(ws)
    w = make_window(path, settings=s)
    dlg = _approval(qtbot, w)
    full = str((ws / "note.txt").resolve())
    assert dlg.path_label.text() == full
    assert "already exists" in dlg.effect_label.text() and "OVERWRITTEN" in dlg.effect_label.text()
    texts = " ".join(lbl.text() for lbl in dlg.findChildren(type(dlg.path_label)))
    # the model-facing description is not what the person reads
    assert "asks the user first" not in texts and "workspace (" not in texts
    first = dlg.remaining_s()
    assert first is not None and "Denied automatically in 5:00" in dlg.countdown.text()
    qtbot.waitUntil(
        lambda: dlg.countdown.text() != "Denied automatically in 5:00 if you don't answer.", timeout=30_000
    )
    assert "Denied automatically in 4:5" in dlg.countdown.text()
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(dlg.btn_deny, Qt.MouseButton.LeftButton)
    assert (ws / "note.txt").read_text() == "old words"


def test_d18_approval_of_a_new_file_and_of_a_path_the_tool_refuses(qtbot):
    import tempfile
    from pathlib import Path

    from app.tools.types import ApprovalRequest
    from app.ui.approval_dialog import ApprovalDialog

    with tempfile.TemporaryDirectory() as tmp:
        new = ApprovalRequest(
            "c1", "write_file", "model text", {"path": "sub/new.md", "content": "x"}, timeout_s=30
        )
        dlg = ApprovalDialog(new, workspace=tmp)
        qtbot.addWidget(dlg)
        assert dlg.path_label.text() == str(Path(tmp).resolve() / "sub" / "new.md")
        assert "new file will be created" in dlg.effect_label.text()
        assert dlg.countdown.text() == "Denied automatically in 0:30 if you don't answer."
        out = ApprovalRequest("c2", "write_file", "model text", {"path": "../escape.txt", "content": "x"})
        dlg2 = ApprovalDialog(out, workspace=tmp)
        qtbot.addWidget(dlg2)
        assert "will be refused" in dlg2.effect_label.text() and "'..'" in dlg2.effect_label.text()
        assert dlg2.countdown is None


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT)


def test_d17_d22_failed_file_tool_links_to_the_workspace_setting_and_the_reply_is_flagged(
    qtbot, make_window, tool_model
):
    path = tool_model("write_file", '{"path": "note.txt", "content": "hi"}', answer="Done: I wrote note.txt.")
    w = make_window(path, settings=_settings())  # no workspace folder: the file tools do not exist
    _send(qtbot, w, "Write a note")
    reply = w.chat.current_assistant()
    (card,) = reply.cards.values()
    assert card.failed()
    # D17: the failing call says how to get the file tools, and the link opens that very setting
    assert card.fix_button is not None and not card.fix_button.isHidden()
    assert "workspace folder" in card.fix_button.text()
    qtbot.mouseClick(card.fix_button, Qt.MouseButton.LeftButton)
    dlg = w.settings_dialog
    assert dlg is not None and dlg.isVisible() and dlg.focused_key == "tools.workspace"
    assert dlg.tabs.tabText(dlg.tabs.currentIndex()) == "Tools"
    dlg.reject()
    # D22: the text claims success under a failed call; the reply says the call did not run
    assert reply.text() == "Done: I wrote note.txt."
    assert reply.error_box is not None and reply.error_box.property("kind") == "info"
    assert "did not run" in reply.error_box.message


def test_d22_a_reply_whose_calls_worked_is_not_flagged(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}', answer="42.")
    w = make_window(path, settings=_settings())
    _send(qtbot, w, "What is 6*7?")
    reply = w.chat.current_assistant()
    (card,) = reply.cards.values()
    assert not card.failed() and card.fix_button is None
    assert reply.error_box is None


def test_d28_gpu_layers_default_is_automatic_and_follows_the_llama_cpp_build(
    qtbot, make_window, streaming_model
):
    from llama_cpp import llama_cpp as lib

    from app.engine.inprocess import resolve_gpu_layers
    from app.storage.settings import load_settings, save_settings

    s = _settings(max_tokens=4)
    assert s.model.gpu_layers is None  # a newcomer gets the GPU where there is one, not CPU speed
    w = make_window(streaming_model, settings=s)
    assert w.state.config_for(w.model_info.path).n_gpu_layers is None
    expected = -1 if lib.llama_supports_gpu_offload() else 0
    assert resolve_gpu_layers(None) == expected and resolve_gpu_layers(3) == 3
    assert w.worker.model.n_gpu_layers == expected  # what is offloaded: -1 every layer
    # Settings → Model says so in words, and each choice round-trips through the settings file
    dlg = w.open_settings("model.gpu_layers")
    spin = dlg.gpu_layers
    assert spin.text() == "automatic" and "automatic" in spin.toolTip() and "GPU backend" in spin.toolTip()
    spin.setValue(-1)
    assert spin.text() == "all" and dlg.result_settings().model.gpu_layers == -1
    spin.setValue(0)
    assert dlg.result_settings().model.gpu_layers == 0
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin, "automatic")
    spin.interpretText()
    new = dlg.result_settings()
    assert new.model.gpu_layers is None
    dlg.reject()
    save_settings(new)
    assert load_settings()[0].model.gpu_layers is None


def test_theme_change_while_the_app_runs_renders_shown_markdown_again(qtbot, make_window, markdown_model):
    from PySide6.QtWidgets import QApplication

    from app.ui.theme import apply_theme

    app = QApplication.instance()
    style, pal, sheet = app.style().name(), app.palette(), app.styleSheet()
    s = _settings(max_tokens=160)
    s.window.theme = "light"
    try:
        w = make_window(markdown_model, settings=s)
        apply_theme(app, "light")
        _send(qtbot, w, "Explain the loader")
        run = w.chat.current_assistant().blocks[0]
        user_view = w.chat.user_messages()[0].view

        def html() -> str:
            return "".join(v.toHtml().lower() for v in run.views)

        assert "#f4f4f4" in html() and "#272822" not in html()  # a light code block
        text, n_code = run.raw, len(run.code_blocks)
        dark = s.model_copy(deep=True)
        dark.window.theme = "dark"
        w.apply_settings(dark)  # Settings → Appearance → Dark, accepted
        assert w.chat.rendered_dark
        assert "#272822" in html() and "#f4f4f4" not in html()  # the same reply, now in dark colours
        assert run.raw == text and len(run.code_blocks) == n_code and len(run.views) > 1
        assert user_view.raw == "Explain the loader" and user_view.render_count >= 2
        # the copy links still copy the right block after the rebuild
        first = run.code_blocks[0]
        assert first.startswith("def stage_0(")
    finally:
        apply_theme(app, "system")
        app.setStyle(style)
        app.setPalette(pal)
        app.setStyleSheet(sheet)


def test_d10_processing_prompt_shows_how_much_of_the_prompt_is_read(qtbot):
    from app.ui.chat import AssistantMessage

    reply = AssistantMessage()
    qtbot.addWidget(reply)
    reply.show()
    state: dict[str, tuple[int, int] | None] = {"p": None}
    reply.watch_prompt(lambda: state["p"], interval_ms=20)
    assert reply.status_label.text() == "Processing prompt…" and reply.progress.maximum() == 0  # busy bar
    state["p"] = (512, 1300)  # what the engine writes after the first batch
    qtbot.waitUntil(lambda: reply.status_label.text() == "Processing prompt… 39%", timeout=30_000)
    assert reply.progress.maximum() == 100 and reply.progress.value() == 39
    state["p"] = (1024, 1300)
    qtbot.waitUntil(lambda: reply.progress.value() == 78, timeout=30_000)
    reply.append_text("Hello")  # the first token: the bar goes, the polling stops
    assert reply.progress.isHidden() and not reply._prompt_timer.isActive()
    assert reply.status_label.text() == "…"


def test_d10_the_window_watches_the_engine_while_a_long_prompt_is_read(qtbot, make_window, streaming_model):
    s = _settings(max_tokens=4)
    s.model.context_length = 4096
    w = make_window(streaming_model, settings=s)
    long_text = " ".join(f"word{i}" for i in range(150))
    assert len(w.worker.model.tokenize(long_text)) > 512  # more than one batch
    w.compose.setPlainText(long_text)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        assert w.send()
        reply = w.chat.current_assistant()
        assert reply.prompt_source is not None and reply._prompt_timer.isActive()
    done = blocker.args[0]
    assert done.finish_reason == "length", (done.finish_reason, done.error)
    assert reply.text() == "abcd" and reply.progress.isHidden() and not reply._prompt_timer.isActive()
    assert w.worker.model.prompt_progress is None and reply.prompt_source() is None


def test_d26_unset_sampling_values_show_what_is_used_and_where_it_comes_from(qtbot, tmp_path):
    from app.engine.models.metadata import read_metadata
    from app.engine.models.tiny import write_tiny_gguf
    from app.engine.sampling import resolve_sampling
    from app.ui.settings_dialog import SettingsDialog

    path = write_tiny_gguf(
        tmp_path / "rec.gguf", extra_metadata={"general.sampling.temp": 0.3, "general.sampling.top_k": 20}
    )
    dlg = SettingsDialog(Settings(), model_path=str(path))
    qtbot.addWidget(dlg)
    form = dlg.sampling
    used = resolve_sampling(read_metadata(path).sampling, {})  # nothing set in the settings
    for name in ("temperature", "top_p", "top_k", "min_p", "repeat_penalty"):
        assert not form.checks[name].isChecked()
        # the greyed figure is the value the engine will use for this model
        assert round(form.spins[name].value(), 2) == round(getattr(used, name), 2), name
        assert form.spins[name].toolTip(), name  # every parameter explains itself
    assert form.notes["temperature"].text() == "not set: the model file's recommended value"
    assert form.notes["top_k"].text() == "not set: the model file's recommended value"
    assert form.notes["repeat_penalty"].text() == "not set: Callisto's default"
    assert form.spins["repeat_penalty"].value() == 1.0  # not a made-up 1.10
    plain = SettingsDialog(Settings())  # no model loaded: nothing is claimed for a model
    qtbot.addWidget(plain)
    assert all(
        plain.sampling.notes[n].text() == "not set: Callisto's default"
        for n in ("temperature", "top_p", "top_k", "min_p", "repeat_penalty")
    )


def test_d37_opened_files_stay_in_the_picker_as_recent_models(
    qtbot, make_window, streaming_model, tool_model
):
    from app.storage.settings import load_settings

    other = tool_model("calculator", '{"expression": "1+1"}')  # neither file is in the library
    w = make_window(streaming_model, settings=_settings(max_tokens=4))
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        w.load_model(str(other))  # what "Open a GGUF file…" does with the chosen file

    def listed(win) -> list[str]:
        return [str(win.model_picker.itemData(i)) for i in range(win.model_picker.count())]

    assert str(streaming_model) in listed(w) and str(other) in listed(w)
    assert w.model_picker.currentData() == str(other)
    saved = load_settings()[0]
    assert saved.model.recent_models[:2] == [str(other), str(streaming_model)]
    # the next start lists both again
    w2 = make_window(None, settings=saved)
    assert str(streaming_model) in listed(w2) and str(other) in listed(w2)
    # a recent file that was deleted leaves the picker
    streaming_model.unlink()
    w2.model_bar.fill_model_picker()
    assert str(streaming_model) not in listed(w2)


def test_d36_search_results_recommend_a_quantisation_and_say_when_nothing_matched(qtbot, tmp_path):
    from app.engine.models.hub import HubClient
    from app.engine.models.library import Library
    from app.engine.models.manager import ModelManager
    from app.engine.models.tiny import write_tiny_gguf
    from app.ui.models_page import ModelsPage, recommended_file
    from tests.support.fake_hub import FakeHub

    # the rule: the preferred quantisation that fits, else the largest that fits, else none
    assert recommended_file([("Q8_0", 8, "fits"), ("Q4_K_M", 4, "fits"), ("F16", 16, "tight")]) == 1
    assert recommended_file([("Q8_0", 8, "fits"), ("Q4_K_M", 4, "too large")]) == 0
    assert recommended_file([("Q6_K", 6, "fits"), ("Q2_K", 2, "fits")]) == 0
    assert recommended_file([("Q4_K_M", 4, "too large")]) is None

    def gguf(seed: int) -> bytes:
        return write_tiny_gguf(tmp_path / f"s{seed}.gguf", seed=seed).read_bytes()

    hub = FakeHub()
    card = (
        "---\nlicense: apache-2.0\ntags: [gguf]\n---\n# Tiny\n\nA **small** chat model that calls tools.\n\n"
        "<script>alert(1)</script>\n"
    )
    hub.add_repo(
        "acme/Tiny-GGUF",
        {
            "Tiny-Q8_0.gguf": gguf(0),
            "Tiny-Q4_K_M.gguf": gguf(1),
            "Tiny-F16.gguf": gguf(2),
            "README.md": card.encode(),
        },
    )
    hub.add_repo("acme/NoCard-GGUF", {"NoCard-Q4_K_M.gguf": gguf(3)})
    hub.start()
    lib = Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    page = ModelsPage(ModelManager(hub=HubClient(hub.url), library=lib, backoff_base=0.01))
    qtbot.addWidget(page)
    page.resize(1100, 760)
    page.show()
    try:
        page.search_edit.setText("acme")
        with qtbot.waitSignal(page.sig_search_done, timeout=30_000):
            page.search_button.click()
        row_of = {
            page.results_list.item(i).data(Qt.ItemDataRole.UserRole): i
            for i in range(page.results_list.count())
        }
        with qtbot.waitSignal(page.sig_card_shown, timeout=30_000):
            page.results_list.setCurrentRow(row_of["acme/Tiny-GGUF"])
        qtbot.waitUntil(lambda: not page._calls, timeout=30_000)
        # the model card, without its metadata block and with its HTML shown as text, never run
        shown = page.card_view.toPlainText()
        assert page.card_view.isVisible() and page.card_repo == "acme/Tiny-GGUF"
        assert "A small chat model that calls tools." in shown and "license:" not in shown
        assert "<script>alert(1)</script>" in shown
        t = page.files_table
        row = page.recommended_row
        assert row is not None and t.item(row, 2).text() == "Q4_K_M" and t.item(row, 2).font().bold()
        assert "Recommended" in t.item(row, 2).toolTip()
        assert page.files_hint.isVisible() and "Tiny-Q4_K_M" in page.files_hint.text()
        assert not any(t.item(r, 2).font().bold() for r in range(t.rowCount()) if r != row)
        # a repository without a card shows none (and not the previous repository's)
        with qtbot.waitSignal(page.sig_files_done, timeout=30_000):
            page.results_list.setCurrentRow(row_of["acme/NoCard-GGUF"])
        qtbot.waitUntil(lambda: not page._calls, timeout=30_000)
        assert not page.card_view.isVisible() and page.card_repo is None
        # a search that finds nothing says so in the list instead of leaving it blank
        page.search_edit.setText("zzzz-nothing")
        with qtbot.waitSignal(page.sig_search_done, timeout=30_000):
            page.search_button.click()
        assert page.results_list.count() == 1
        item = page.results_list.item(0)
        assert (
            "No GGUF models match “zzzz-nothing”" in item.text()
            and not item.flags() & Qt.ItemFlag.ItemIsSelectable
        )
        page.results_list.setCurrentRow(0)  # the line is not a repository: nothing is listed
        assert not page._calls
    finally:
        page.shutdown()
        hub.stop()
