"""A chat template set for a model in place of its own (``LoadSettings.chat_template``: Settings >
This model, ``--chat-template-file``, the server's ``chat_templates``): every prompt is rendered
with it and the tool-call family is detected from it; one that cannot be compiled is a
ModelLoadError before anything loads. A scripted GGUF whose reply is known from the prompt's last
token shows which template rendered the prompt."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.cli import main
from app.engine.chat import ChatSession, detect_model_format
from app.engine.errors import ModelLoadError
from app.engine.llm import LoadSettings, load_model
from tests.engine.test_model_lifetime import engine_children
from tests.server.conftest import FAMILIES, TEMPLATES
from tests.server.test_idle_ttl import FakeClock, _server
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

OWN, OTHER = "Nope.", "Other."
# the model's own template ends its prompt in "\n"; this one in "GO"
GO = CHATML.replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant\\nGO'")


@pytest.fixture(scope="module")
def scripted(tmp_path_factory) -> Path:
    return write_scripted_gguf(
        tmp_path_factory.mktemp("override") / "plain.gguf",
        chat_template=CHATML,
        control_tokens=FAMILIES["hermes"].control,
        user_tokens=[OWN, OTHER, "GO"],
        script={"\n": OWN, "GO": OTHER, OWN: "<|im_end|>", OTHER: "<|im_end|>"},
        default_next="<|im_end|>",
        name="plain",
    )


def _reply(model) -> str:
    session = ChatSession(model, max_tokens=8)
    list(session.send("Hi"))
    return session.messages[-1].content


def test_the_template_set_for_a_model_renders_its_prompts(scripted):
    own = load_model(scripted, n_ctx=512, isolate=False)
    try:
        assert _reply(own) == OWN
    finally:
        own.close()
    hermes = (TEMPLATES / FAMILIES["hermes"].template).read_text(encoding="utf-8")
    for isolate in (False, True):
        model = load_model(scripted, settings=LoadSettings(n_ctx=512, chat_template=GO), isolate=isolate)
        try:
            assert model.chat_template == GO and model.tool_use_template is None
            assert not model.template_is_fallback
            assert _reply(model) == OTHER
        finally:
            model.close()
    # the family is read from it: Qwen 2.5's template makes a ChatML model a Hermes one
    model = load_model(scripted, settings=LoadSettings(n_ctx=512, chat_template=hermes), isolate=False)
    try:
        assert detect_model_format(model) == "hermes"
    finally:
        model.close()


def test_a_template_that_cannot_be_read_loads_nothing(scripted):
    before = engine_children()
    with pytest.raises(ModelLoadError, match="chat template set for this model cannot be read"):
        load_model(scripted, settings=LoadSettings(n_ctx=512, chat_template="{% for m in messages %}"))
    assert engine_children() == before


def test_chat_and_serve_take_a_chat_template_file(scripted, tmp_path, capsys):
    good = tmp_path / "go.jinja"
    good.write_text(GO, encoding="utf-8")
    chat = ["chat", "--model", str(scripted), "--tools", "none", "--max-tokens", "8", "--threads", "1"]
    assert main([*chat, "--chat-template-file", str(good), "Hi"]) == 0
    assert capsys.readouterr().out.strip() == OTHER
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% if %}", encoding="utf-8")
    for path, why in ((bad, "not a chat template"), (tmp_path / "none.jinja", "is not a file")):
        assert main([*chat, "--chat-template-file", str(path), "Hi"]) == 2
        assert why in capsys.readouterr().err
        assert main(["serve", "--model", str(scripted), "--chat-template-file", str(path)]) == 2
        assert why in capsys.readouterr().err
    assert main(["serve", "--chat-template-file", str(good)]) == 2
    assert "--chat-template-file is for a --model file" in capsys.readouterr().err


def test_the_server_loads_a_model_with_the_template_set_for_it(scripted):
    from app.server._state import template_key

    for templates, said in (({}, OWN), ({template_key(scripted): GO}, OTHER)):
        gen = _server({"plain": scripted}, FakeClock(), chat_templates=templates)
        server = next(gen)
        try:
            r = httpx.post(
                server.url + "/v1/chat/completions",
                json={"model": "plain", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8},
                timeout=120,
            )
            assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == said
            # what the server says of the model's template is the one it renders with
            template = templates.get(template_key(scripted), CHATML)
            props = httpx.get(server.url + "/props", params={"model": "plain"}, timeout=60).json()
            assert props["chat_template"] == template
            shown = httpx.post(server.url + "/api/show", json={"model": "plain"}, timeout=60).json()
            assert shown["template"] == template
        finally:
            gen.close()


def test_a_load_over_the_api_sets_the_template_and_a_later_load_takes_it_away(scripted):
    """``/v1/models/load``'s ``chat_template``: the model is loaded again to render with it (and
    ``/props`` says so); ``""`` brings back the model's own; a template that cannot be read is a
    400 naming the option, and the model stays as it was."""
    from app.server._state import template_key

    gen = _server({"plain": scripted}, FakeClock(), chat_templates={template_key(scripted): GO})
    server = next(gen)

    def load(**body) -> httpx.Response:
        return httpx.post(server.url + "/v1/models/load", json={"model": "plain", **body}, timeout=120)

    def said() -> str:
        r = httpx.post(
            server.url + "/v1/chat/completions",
            json={"model": "plain", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8},
            timeout=120,
        )
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["message"]["content"]

    def props_template() -> str:
        return httpx.get(server.url + "/props", params={"model": "plain"}, timeout=60).json()["chat_template"]

    try:
        assert said() == OTHER  # the server's template for the file
        r = load(chat_template="")  # the model's own, for this load
        assert r.status_code == 200, r.text
        assert r.json()["load_config"]["chat_template"] is None
        assert said() == OWN and props_template() == CHATML
        r = load(chat_template=GO)
        assert r.status_code == 200 and r.json()["load_config"]["chat_template"] == GO
        assert said() == OTHER and props_template() == GO
        shown = httpx.post(server.url + "/api/show", json={"model": "plain"}, timeout=60).json()
        assert shown["template"] == GO
        # loaded so already: kept as it is
        (path,) = server.host.loaded_paths
        pid = server.host.model(path).engine.pid
        assert load(chat_template=GO).status_code == 200 and server.host.model(path).engine.pid == pid

        for bad in ("{% for m in messages %}", "{{ .Prompt }}", 7):
            r = load(chat_template=bad)
            assert r.status_code == 400, r.text
            assert r.json()["error"]["param"] == "chat_template"
        assert server.host.model(path).engine.pid == pid and said() == OTHER
    finally:
        gen.close()
