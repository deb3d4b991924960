"""Callisto parsing with the template of a Hugging Face repository: read through huggingface_hub
from a real local hub (``tests.support.fake_hub``, HTTP on loopback, ``HF_ENDPOINT`` pointing at
it): ``chat_template`` as a string or a named list, ``chat_template.jinja`` taking precedence, the
special tokens; a missing repository, a gated one and one with no template are clear errors. The
CLI takes the repository id in ``--template``."""

from __future__ import annotations

import json

import pytest

from app.engine.remote import RemoteChatSession, is_repo_id, load_template, template_from_hub
from tests.support.fake_hub import FakeHub

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TOOLS_TEMPLATE = "{% if tools %}<tools>{{ tools | tojson }}</tools>{% endif %}" + CHATML


def _config(template, **extra) -> bytes:
    return json.dumps(
        {"chat_template": template, "bos_token": None, "eos_token": "<|im_end|>", **extra}
    ).encode()


@pytest.fixture
def hf(monkeypatch, tmp_path):
    hub = FakeHub()
    hub.add_repo("acme/plain", {"tokenizer_config.json": _config(CHATML), "README.md": b"x"})
    named = [{"name": "default", "template": CHATML}, {"name": "tool_use", "template": TOOLS_TEMPLATE}]
    hub.add_repo("acme/named", {"tokenizer_config.json": _config(named)})
    hub.add_repo(
        "acme/jinja",
        {
            "tokenizer_config.json": json.dumps(
                {"eos_token": {"content": "</s>"}, "add_bos_token": True}
            ).encode(),
            "chat_template.jinja": TOOLS_TEMPLATE.encode(),
        },
    )
    hub.add_repo("acme/no-template", {"tokenizer_config.json": json.dumps({"eos_token": "</s>"}).encode()})
    hub.add_repo("acme/gated", {"tokenizer_config.json": _config(CHATML)})
    hub.gated["acme/gated"] = "hf_right_token"
    hub.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    yield hub
    hub.stop()


def test_a_string_template_and_its_special_tokens(hf):
    t = load_template("acme/plain")
    assert t.chat_template == CHATML and t.eos_token == "<|im_end|>" and t.bos_token == ""
    assert t.source == "hf:acme/plain" and t.tool_use_template is None
    assert any("/acme/plain/resolve/" in p and "tokenizer_config.json" in p for _m, p, _r in hf.requests)


def test_a_named_list_gives_the_default_and_tool_use_templates(hf):
    t = template_from_hub("acme/named")
    assert t.chat_template == CHATML and t.tool_use_template == TOOLS_TEMPLATE


def test_chat_template_jinja_wins_and_added_token_shapes_are_read(hf):
    t = template_from_hub("acme/jinja")
    assert t.chat_template == TOOLS_TEMPLATE and t.eos_token == "</s>" and t.add_bos is True


@pytest.mark.parametrize(
    ("repo", "message"),
    [
        ("acme/missing", "there is no Hugging Face repository acme/missing"),
        ("acme/gated", "the Hugging Face repository acme/gated is gated: accept its licence"),
        ("acme/no-template", "the Hugging Face repository acme/no-template has no chat template"),
    ],
)
def test_a_repository_that_gives_no_template_is_a_clear_error(hf, repo, message):
    with pytest.raises(ValueError, match=message):
        template_from_hub(repo)


def test_a_gated_repository_reads_with_the_users_token(hf):
    assert template_from_hub("acme/gated", token="hf_right_token").chat_template == CHATML


def test_repo_ids_and_files_are_told_apart(tmp_path):
    assert is_repo_id("Qwen/Qwen3-0.6B") and is_repo_id("acme/plain")
    assert not is_repo_id("tokenizer_config.json") and not is_repo_id("models/x.gguf")
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "name").write_text("{}")
    assert not is_repo_id(tmp_path / "org" / "name")


def test_a_session_renders_with_the_repos_template(hf, callisto_server, remote_models):
    from app.engine.events import DoneEvent
    from app.engine.remote import Provider

    session = RemoteChatSession(
        Provider(callisto_server.url, kind="openai"),
        "loop-hermes",
        parser="callisto",
        template="acme/plain",
        max_tokens=4,
    )
    events = list(session.send("Hi"))
    assert isinstance(events[-1], DoneEvent) and events[-1].template_source == "hf:acme/plain"
    assert session.last_raw_prompt == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_cli_template_flag_takes_a_repo_id_and_a_bad_one_is_one_line(hf, capsys):
    from app.cli import main

    rc = main(
        [
            "chat",
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--parser",
            "callisto",
            "--template",
            "acme/missing",
            "hi",
        ]
    )
    err = capsys.readouterr().err
    assert rc != 0 and "there is no Hugging Face repository acme/missing" in err
