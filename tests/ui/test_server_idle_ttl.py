"""The Server page's idle time to live (issue 31): shown and saved in the one settings store, handed
to the server it starts and to a running one; in the window, the server unloads the idle models
its requests loaded but never the chat's own model.

Real page and window (pytest-qt, offscreen), real server on a free loopback port, scripted GGUFs."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.ports import free_port as _free_port
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf


def _model(folder: Path, name: str) -> Path:
    return write_scripted_gguf(
        folder / f"{name}.gguf", chat_template=CHATML, script=streaming_script(), default_next="a", name=name
    )


@pytest.fixture
def page(make_server_page, tmp_path):
    return make_server_page(_model(tmp_path, "alpha"), n_ctx=2048)


def test_the_page_shows_and_saves_the_idle_time_to_live(page):
    from app.storage.settings import load_settings

    box = page.idle_ttl
    assert box.objectName() == "serverIdleTtl" and box.value() == 0 and box.text() == "never"
    box.setValue(120)
    assert load_settings()[0].server.idle_ttl_s == 120 and page.settings.server.idle_ttl_s == 120
    assert box.text() == "120 s"

    assert page.start(), page.status.text()
    config = page.server.state.config
    assert config.idle_ttl_s == 120  # the server it starts has it
    box.setValue(30)
    assert config.idle_ttl_s == 30 and load_settings()[0].server.idle_ttl_s == 30  # a running one too
    with page.store.edit() as s:  # changed elsewhere (Settings): the page shows it, the server takes it
        s.server.idle_ttl_s = 45
    assert box.value() == 45 and config.idle_ttl_s == 45
    box.setValue(0)
    assert config.idle_ttl_s == 0 and box.text() == "never"


def test_the_window_keeps_its_own_model_and_the_server_unloads_its_others(qtbot, make_window, tmp_path):
    from openai import OpenAI

    from app.engine.models.library import Library
    from app.storage.settings import Settings

    alpha = _model(tmp_path, "alpha")
    beta = _model(tmp_path, "beta")
    Library().import_in_place(beta)
    settings = Settings()
    settings.sampling.max_tokens = 8
    settings.server.port = _free_port()
    settings.server.max_loaded_models = 2
    w = make_window(alpha, settings=settings)
    host = w.worker.host
    page = w.show_page("server")
    assert page.start(), page.status.text()
    client = OpenAI(base_url=page.address.text() + "/v1", api_key="unused", max_retries=0, timeout=60)
    user = [{"role": "user", "content": "hi"}]

    reply = client.chat.completions.create(model="beta", messages=user, max_tokens=4, extra_body={"ttl": 0})
    assert reply.model == "beta"
    assert page.server.reaper.wait_unloaded(beta, timeout=30), "beta was not unloaded"
    assert host.loaded_paths == [alpha.resolve()]

    # the chat's own model: a request's ttl 0 or a sweep past any time never closes it under the window
    client.chat.completions.create(model="alpha", messages=user, max_tokens=4, extra_body={"ttl": 0})
    r = httpx.post(page.address.text() + "/api/chat", json={"model": "alpha", "keep_alive": 0}, timeout=30)
    assert r.status_code == 200 and r.json()["done_reason"] == "unload"
    assert page.server.reaper.sweep(wait=True) == []
    assert host.loaded_paths == [alpha.resolve()] and w.worker.model is host.model(alpha)
    assert not w.worker.model.closed
