"""A model the in-window server loads itself is loaded with what the chat's model loads with: the
context, GPU layers, threads, the KV cache's type, flash attention and speculative decoding (the
effective settings: the global ones with the chat's model's override on top), and a change in
Settings while the server runs reaches the next model it loads.

Real window (pytest-qt), real server on a free loopback port, scripted GGUFs on real llama.cpp;
``tests.support.load_spy`` records each load's settings (the real loader still loads)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import httpx

from app.storage.settings import ModelOverride, Settings, model_key
from tests.support.load_spy import spy_on_loads
from tests.support.ports import free_port
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

DONE = 30_000


def _model(folder: Path, name: str, *, library: bool = False) -> Path:
    """A scripted model whose heads are 32 wide (a quantized KV cache needs blocks of 32)."""
    from app.engine.models.library import Library

    path = write_scripted_gguf(
        folder / f"{name}.gguf",
        chat_template=CHATML,
        script=streaming_script(),
        default_next="a",
        name=name,
        embedding_length=128,
    )
    if library:
        Library().import_in_place(path)
    return path


def _ask(page, model: str) -> None:
    r = httpx.post(
        page.address.text() + "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
        timeout=60,
    )
    assert r.status_code == 200, r.text


def _as_loaded(settings):
    """A load's settings, less what the window's own loads add (its KV store) and the slots."""
    return replace(settings, kv_store=None, parallel=None)


def test_a_model_the_server_loads_gets_the_chats_load_settings(qtbot, monkeypatch, make_window, tmp_path):
    alpha, beta = _model(tmp_path, "alpha"), _model(tmp_path, "beta", library=True)
    s = Settings()
    s.sampling.max_tokens = 8
    s.server.port = free_port()
    s.server.max_loaded_models = 2  # the chat's model stays beside the server's
    s.server.parallel = 1
    s.model.kv_type = "q8_0"
    s.model.ngram_draft = False
    s.model.threads = 2
    s.set_override(model_key(str(alpha)), ModelOverride(kv_type="q4_0"))  # the chat's model's own: it wins
    seen = spy_on_loads(monkeypatch)
    w = make_window(alpha, settings=s)
    chat = w.worker.host.settings  # what the chat's model loaded with
    assert (chat.kv_type, chat.ngram_draft, chat.n_threads) == ("q4_0", False, 2)

    page = w.show_page("server")
    assert page.start(), page.status.text()
    _ask(page, "beta")  # not loaded: the server loads it
    assert w.worker.host.model(beta) is not None
    assert _as_loaded(seen[-1]) == _as_loaded(chat)  # what the chat's model loads with

    changed = w.settings.model_copy(deep=True)  # Settings while the server runs: the next load has it
    changed.model.ngram_draft = True
    changed.set_override(model_key(str(alpha)), None)
    w.apply_settings(changed)
    qtbot.waitUntil(lambda: w.worker.host.settings.kv_type == "q8_0", timeout=DONE)  # the chat's reloaded
    gamma = _model(tmp_path, "gamma", library=True)
    _ask(page, "gamma")
    assert w.worker.host.model(gamma) is not None
    assert (seen[-1].kv_type, seen[-1].ngram_draft, seen[-1].n_threads) == ("q8_0", True, 2)
    assert _as_loaded(seen[-1]) == _as_loaded(w.worker.host.settings)
