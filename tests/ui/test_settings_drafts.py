"""Speculative decoding in the window (issue 31): Settings -> Model (global) and This model show and
save n-gram drafting and the draft model, through to the load settings the window's model gets;
a reply's stats line says how many drafted tokens were accepted, live and reopened."""

from __future__ import annotations

from dataclasses import replace

from app.storage.settings import ModelOverride, Settings, model_key
from app.ui.settings_dialog import SettingsDialog
from app.ui.window_state import engine_config_for
from tests.ui.turns import send_turn


def _dialog(qtbot, s: Settings, path: str) -> SettingsDialog:
    dlg = SettingsDialog(s, detected_label=None, model_path=path, model_name="m")
    qtbot.addWidget(dlg)
    return dlg


def test_the_model_tabs_show_and_save_the_draft_settings(qtbot, tmp_path, tiny_gguf):
    path, draft, other = str(tmp_path / "m.gguf"), str(tiny_gguf()), str(tiny_gguf())
    s = Settings()
    s.set_override(model_key(path), ModelOverride(draft_model=other))
    dlg = _dialog(qtbot, s, path)
    assert dlg.open_at("model.ngram_draft") is dlg.ngram_draft
    assert dlg.ngram_draft.currentData() is True and dlg.draft_model.text() == ""
    assert dlg.model_ngram_draft is not None and dlg.model_ngram_draft.currentData() is None
    assert dlg.model_draft_model is not None and dlg.model_draft_model.currentData() == other

    dlg.ngram_draft.setCurrentIndex(dlg.ngram_draft.findData(False))
    dlg.draft_model.setText(draft)
    dlg.model_ngram_draft.setCurrentIndex(dlg.model_ngram_draft.findData(True))
    out = dlg.result_settings()
    assert (out.model.ngram_draft, out.model.draft_model) == (False, draft)
    ov = out.override_for(path)
    assert ov is not None and (ov.ngram_draft, ov.draft_model) == (True, other)
    cfg = engine_config_for(out, path)  # the worker's config: the override on top
    assert (cfg.ngram_draft, cfg.draft_model) == (True, other)
    assert (engine_config_for(out, str(tmp_path / "x.gguf")).draft_model, cfg.kv_type) == (draft, "f16")

    # This model: no draft model, whatever the global one; then a file chosen with Browse…
    dlg.model_draft_model.setCurrentIndex(dlg.model_draft_model.findData(""))
    out = dlg.result_settings()
    assert out.override_for(path).draft_model == "" and engine_config_for(out, path).draft_model is None
    dlg.choose_draft_model(draft)
    assert dlg.model_draft_model.currentData() == draft
    # back to the global values everywhere: the override is removed
    dlg.model_draft_model.setCurrentIndex(0)
    dlg.model_ngram_draft.setCurrentIndex(0)
    assert dlg.result_settings().override_for(path) is None


def test_a_file_that_cannot_be_a_draft_model_is_not_saved(qtbot, tmp_path):
    dlg = _dialog(qtbot, Settings(), str(tmp_path / "m.gguf"))
    dlg.draft_model.setText(str(tmp_path / "missing.gguf"))
    dlg._on_buttons_accepted()  # Save
    assert "Not saved" in dlg.error_label.text() and "does not exist" in dlg.error_label.text()
    assert dlg.result() != SettingsDialog.DialogCode.Accepted
    dlg.draft_model.setText("   ")  # empty: no draft model
    assert dlg.result_settings().model.draft_model is None


def test_a_saved_draft_model_whose_file_is_away_is_kept(qtbot, tmp_path):
    s = Settings()
    s.model.draft_model = str(tmp_path / "on-a-drive-not-mounted.gguf")
    dlg = _dialog(qtbot, s, str(tmp_path / "m.gguf"))
    assert dlg.result_settings().model.draft_model == s.model.draft_model


def test_the_worker_loads_with_the_draft_settings():
    from app.ui.engine_types import EngineConfig, EngineState
    from app.ui.worker_session import Sessions

    def load_settings(config: EngineConfig):
        state = EngineState(config=config)
        return Sessions(state, host=None, signals=None, mcp_host=None, approvals=None).load_settings()  # type: ignore[arg-type]

    ls = load_settings(EngineConfig(ngram_draft=False, draft_model="/models/draft.gguf"))
    assert (ls.ngram_draft, ls.draft_model) == (False, "/models/draft.gguf")
    assert (load_settings(EngineConfig()).ngram_draft, load_settings(EngineConfig()).draft_model) == (
        True,
        None,
    )


def test_the_stats_line_says_how_many_drafted_tokens_were_accepted(
    qtbot, make_window, streaming_model, monkeypatch
):
    """A turn whose engine drafted (its done event counts 60 drafted, 42 accepted): the line under
    the reply says so, and again when the conversation is reopened; a turn that drafted nothing
    says nothing of drafts."""
    from app.engine import loop

    s = Settings()
    s.sampling.max_tokens = 8
    w = make_window(streaming_model, settings=s)
    first = send_turn(qtbot, w, "Hello", timeout=30_000)
    said = f"· {first.draft_accepted} of {first.draft_tokens} drafted tokens accepted"
    assert w.chat.current_assistant().stats.text().endswith(said) == (first.draft_tokens > 0)

    real = loop._Tally.done
    monkeypatch.setattr(
        loop._Tally,
        "done",
        lambda self, *a, **k: replace(real(self, *a, **k), draft_tokens=60, draft_accepted=42),
    )
    done = send_turn(qtbot, w, "Tell me more", timeout=30_000)
    assert (done.draft_tokens, done.draft_accepted) == (60, 42)
    live = w.chat.current_assistant().stats.text()
    assert live.endswith("· 42 of 60 drafted tokens accepted") and "tok/s" in live

    cid = w.conversation_id
    w.new_chat()
    w.open_conversation(cid)
    replies = w.chat.assistant_messages()
    assert replies[-1].stats.text() == live  # the same words from the stored statistics
    assert replies[0].stats.text().endswith(said) == (first.draft_tokens > 0)


def test_a_reply_that_drafted_nothing_says_nothing_of_drafts():
    from app.ui.chat.live import stats_text
    from app.ui.chat.records import stored_stats_text

    assert stats_text(12, 30.0, 0.5, draft_tokens=0, draft_accepted=0) == "12 tokens · 30.0 tok/s · 500 ms"
    assert stats_text(1, None, 0.1) == "1 token · 100 ms"  # one token, not "1 tokens"
    assert stats_text(12, 30.0, 0.5, draft_tokens=9, draft_accepted=0).endswith(
        "· 0 of 9 drafted tokens accepted"
    )
    # a reply stored before drafts were counted reads as it did
    assert stored_stats_text({"generated_tokens": 12, "tokens_per_s": 30.0, "elapsed_s": 0.5}) == (
        "12 tokens · 30.0 tok/s · 500 ms"
    )
    stored = {"generated_tokens": 1200, "draft_tokens": 1500, "draft_accepted": 1100}
    assert stored_stats_text(stored) == "1,200 tokens · 1,100 of 1,500 drafted tokens accepted"


def test_a_replys_time_reads_as_a_person_says_it():
    """Not "0.0 s" for a quick reply, nor "185.3 s" for a long one."""
    from app.ui.chat.live import elapsed_text, stats_text

    cases = [(0.0, "0 ms"), (0.023, "23 ms"), (0.9994, "999 ms"), (0.9996, "1.0 s"), (2.74, "2.7 s")]
    cases += [(59.94, "59.9 s"), (59.96, "1 min 00 s"), (185.3, "3 min 05 s"), (3725.0, "1 h 02 min")]
    assert [elapsed_text(s) for s, _ in cases] == [text for _, text in cases]
    assert stats_text(600, 3.2, 185.3, 1.5) == "600 tokens · 3.2 tok/s · 3 min 05 s · first token 1.5 s"
