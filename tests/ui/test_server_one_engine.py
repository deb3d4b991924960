"""One engine for the window, its server and its check: the server's requests and the window's
turns share one host (one loaded model object, one KV cache, one bounded queue); a request for
another library model swaps the window's model (the window follows and says so, the conversation
kept) unless ``server.max_loaded_models`` keeps both; the Check page runs on the same host.

Real window (pytest-qt), real server on a free loopback port, the official ``openai`` client,
scripted GGUFs on real llama.cpp."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest
from PySide6.QtCore import Qt

from app.storage.settings import Settings, load_settings
from tests.support.host_hold import hold
from tests.support.ports import free_port as _free_port
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf
from tests.ui.turns import send_turn

DONE_TIMEOUT = 30_000


def _settings(max_loaded: int = 1) -> Settings:
    s = Settings()
    s.sampling.max_tokens = 8  # the scripted model never stops: every window turn ends at 8 tokens
    s.server.port = _free_port()
    s.server.max_loaded_models = max_loaded
    s.server.parallel = 1  # one slot: one context in turns (the slots: test_window_slots.py)
    return s


def _model(folder: Path, name: str) -> Path:
    return write_scripted_gguf(
        folder / f"{name}.gguf", chat_template=CHATML, script=streaming_script(), default_next="a", name=name
    )


def _send(qtbot, w, text: str):
    return send_turn(qtbot, w, text, timeout=DONE_TIMEOUT, enter=True)


def _server(w):
    page = w.show_page("server")
    assert page.start(), page.status.text()
    return page


def _client(page):
    from openai import OpenAI

    return OpenAI(base_url=page.address.text() + "/v1", api_key="unused", max_retries=0, timeout=60)


def _ask(client, model: str, text: str = "Say the alphabet"):
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}], max_tokens=4
    )


@pytest.fixture
def alpha(tmp_path) -> Path:
    return _model(tmp_path, "alpha")


@pytest.fixture
def beta(tmp_path) -> Path:
    """A second model of the library (a server request may name it)."""
    from app.engine.models.library import Library

    path = _model(tmp_path, "beta")
    Library().import_in_place(path)
    return path


def test_the_window_and_its_server_share_one_model_and_one_kv_cache(qtbot, make_window, alpha):
    w = make_window(alpha, settings=_settings())
    host = w.worker.host
    page = _server(w)
    assert page.server.host is host and not page.server.owns_host
    client = _client(page)

    first = _ask(client, "alpha")
    again = _ask(client, "alpha")
    prompt, cached = again.usage.prompt_tokens, again.usage.prompt_tokens_details.cached_tokens
    assert first.choices[0].message.content and prompt > 5
    assert cached >= prompt - 1  # the same prompt again: its prefix is in the KV cache

    done = _send(qtbot, w, "Something else entirely, please")  # the window's turn, on the same context
    assert done.finish_reason == "length"

    after = _ask(client, "alpha")
    assert after.usage.prompt_tokens == prompt
    # the window's prompt replaced the cached one: only the template's common opening is reused,
    # which only happens when the window and the server generate on one llama context
    assert after.usage.prompt_tokens_details.cached_tokens < cached
    assert host.loaded_paths == [alpha.resolve()]
    assert w.worker.model is host.model(alpha)
    assert [e.finish_reason for e in page.server.finished] == ["length"] * 3
    assert w.worker.generation_thread_ident == host.thread_ident  # the window's turn ran on the host


def test_a_window_turn_waits_behind_a_request_and_the_bound_counts_it(qtbot, make_window, alpha):
    w = make_window(alpha, settings=_settings())
    host = w.worker.host
    host.queue_size = 2
    page = _server(w)
    url = page.address.text()
    body = {"model": "alpha", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}

    release = hold(host)  # the engine is busy with a request of the server's
    w.compose.setPlainText("Are you there?")
    qtbot.keyClick(w.compose, Qt.Key.Key_Return)
    qtbot.waitUntil(
        lambda: w.load_label.text() == "Waiting for the server's request to finish…", timeout=30_000
    )
    assert host.pending_owners() == ["window"]
    assert w.worker.jobs.waiting_behind() == "the server's request to finish"  # the window names it

    answers: list[httpx.Response] = []
    queued = threading.Thread(
        target=lambda: answers.append(httpx.post(url + "/v1/chat/completions", json=body, timeout=60))
    )
    queued.start()
    qtbot.waitUntil(lambda: host.pending == 2, timeout=30_000)  # the window's turn plus one request
    refused = httpx.post(url + "/v1/chat/completions", json=body, timeout=30)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert "busy" in refused.json()["error"]["message"]

    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        release.set()
    assert blocker.args[0].finish_reason == "length"
    queued.join(60)
    assert [a.status_code for a in answers] == [200]
    assert w.load_label.text() == ""  # no longer waiting
    assert httpx.post(url + "/v1/chat/completions", json=body, timeout=60).status_code == 200


def test_a_request_for_another_model_swaps_it_and_the_window_follows(qtbot, make_window, alpha, beta):
    w = make_window(alpha, settings=_settings())
    host = w.worker.host
    _send(qtbot, w, "Remember this")
    conversation = w.worker.conversation_id
    page = _server(w)

    reply = _ask(_client(page), "beta")
    assert reply.model == "beta" and reply.choices[0].message.content
    assert host.loaded_paths == [beta.resolve()]  # one model at a time: alpha was closed for it
    qtbot.waitUntil(lambda: Path(w.model_info.path).resolve() == beta.resolve(), timeout=30_000)
    assert any("loaded beta.gguf" in t for t in w.window_notice_texts())
    assert w.worker.model is host.model(beta)
    # the conversation goes on: its messages are kept in the session and in history
    assert [m.role for m in w.worker.session.messages] == ["user", "assistant"]
    assert w.worker.conversation_id == conversation
    saved = w.history.load_conversation(conversation)
    assert [m.role for m in saved.messages][:2] == ["user", "assistant"]

    done = _send(qtbot, w, "And now?")
    assert done.finish_reason == "length"
    assert [m.role for m in w.worker.session.messages] == ["user", "assistant"] * 2
    assert page.model_label.text() == "beta"


def test_two_loaded_models_keep_the_windows(qtbot, make_window, alpha, beta):
    w = make_window(alpha, settings=_settings(max_loaded=2))
    host = w.worker.host
    assert host.max_loaded == 2
    page = _server(w)
    assert page.max_loaded.value() == 2

    assert _ask(_client(page), "beta").model == "beta"
    assert host.loaded_paths == [alpha.resolve(), beta.resolve()]
    assert Path(w.model_info.path).resolve() == alpha.resolve() and w.worker.model is host.model(alpha)
    assert not any("loaded beta" in t for t in w.window_notice_texts())
    assert _send(qtbot, w, "Still alpha?").finish_reason == "length"
    assert host.loaded_paths == [beta.resolve(), alpha.resolve()]  # alpha is the most recently used

    page.max_loaded.setValue(1)  # the setting on the Server page: saved, and the engine keeps one model
    assert host.max_loaded == 1 and load_settings()[0].server.max_loaded_models == 1
    host.call(lambda m: None)  # after the engine's queue
    assert host.loaded_paths == [alpha.resolve()]  # beta, the least recently used, was closed
    assert w.worker.model is host.model(alpha)
    assert _ask(_client(page), "beta").model == "beta"
    assert host.loaded_paths == [beta.resolve()]
    qtbot.waitUntil(lambda: Path(w.model_info.path).resolve() == beta.resolve(), timeout=30_000)


def test_the_check_page_runs_on_the_windows_engine(qtbot, make_window, alpha, tmp_path):
    w = make_window(alpha, settings=_settings())
    host = w.worker.host
    model = w.worker.model
    page = w.show_page("check")
    assert page.host is host
    before = host.jobs_run
    spec = {
        "kind": "in_process",
        "path": str(alpha),
        "tool_format": "hermes",
        "selection": "quick",
        "max_tokens": 4,
        "out_dir": str(tmp_path),
    }
    with qtbot.waitSignal(page.sig_run_finished, timeout=60_000) as blocker:
        assert page.start(spec)
    qtbot.waitUntil(lambda: not page.running, timeout=30_000)
    total = blocker.args[0]["summary"]["total"]
    assert total >= 5
    assert host.jobs_run - before >= total + 1  # the load and every scenario were jobs of the host
    assert host.loaded_paths == [alpha.resolve()] and host.model(alpha) is model  # no copy, no reload
    assert w.worker.model is model
    assert _send(qtbot, w, "After the check").finish_reason == "length"
