"""API keys in the keychain (an in-memory ``keyring`` backend here), providers in settings without
their keys, and ``python -m app chat --endpoint`` as a real subprocess against a loopback endpoint:
the key reaches the server and no file Callisto writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.events import DoneEvent, TextEvent, ToolCallFinishedEvent
from tests.engine.remote.misbehaving import MisbehavingServer, openai_chunk, sse

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-remote-test-7a1c9e"


def calculator_endpoint(seen: list[dict]):
    """An OpenAI endpoint that wants the key: the first reply calls the calculator (its arguments in
    fragments), the reply after the tool result says the result back."""

    def handler(req):
        if req.path == "/v1/models":
            req.status(200, {"object": "list", "data": [{"id": "calc-model", "object": "model"}]})
            return
        if req.body is None:  # /props and the like: not this server
            req.status(404, {"error": {"message": "not found"}})
            return
        if req.headers.get("Authorization") != f"Bearer {KEY}":
            req.status(401, {"error": {"message": "no key"}})
            return
        seen.append(req.body)
        req.start_stream()
        tool = [m for m in req.body["messages"] if m["role"] == "tool"]
        if tool:
            req.send(
                openai_chunk(f"The answer is {tool[-1]['content']}.")
                + openai_chunk(finish="stop")
                + sse("[DONE]")
            )
            return
        start = {
            "index": 0,
            "id": "call_remote_1",
            "type": "function",
            "function": {"name": "calculator", "arguments": '{"expression": '},
        }
        rest = {"index": 0, "function": {"arguments": '"6*7"}'}}
        req.send(
            sse({"choices": [{"index": 0, "delta": {"tool_calls": [start]}, "finish_reason": None}]})
            + sse({"choices": [{"index": 0, "delta": {"tool_calls": [rest]}, "finish_reason": None}]})
            + openai_chunk(finish="tool_calls")
            + sse({"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9}})
            + sse("[DONE]")
        )

    return handler


def test_tests_and_the_processes_they_start_never_reach_a_real_keychain():
    """Without ``memory_keyring`` a test gets keyring's "fail" backend, and so does a process it
    starts, even where the machine's keyring configuration names another backend."""
    import keyring
    from keyring.backends.fail import Keyring

    assert isinstance(keyring.get_keyring(), Keyring)
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "python_keyring" / "keyringrc.cfg"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[backend]\ndefault-keyring=keyring.backends.null.Keyring\n", encoding="utf-8")
    probe = "import keyring; b = keyring.get_keyring(); print(type(b).__module__, type(b).__name__)"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["keyring.backends.fail", "Keyring"]


def test_keys_are_stored_read_and_deleted_through_keyring(memory_keyring):
    from app.engine.remote.keys import KEYRING_SERVICE, delete_api_key, load_api_key, store_api_key

    assert load_api_key("gpu-box") is None
    store_api_key("gpu-box", KEY)
    assert memory_keyring.store == {(KEYRING_SERVICE, "remote:gpu-box"): KEY}
    assert load_api_key("gpu-box") == KEY
    assert delete_api_key("gpu-box") is True and load_api_key("gpu-box") is None
    assert delete_api_key("gpu-box") is False
    with pytest.raises(ValueError, match="empty"):
        store_api_key("gpu-box", "")


def test_saved_provider_chats_with_its_keychain_key_and_no_file_holds_the_key(memory_keyring, tmp_path):
    from app.engine.remote import RemoteChatSession, list_models
    from app.engine.remote.keys import provider_from_settings, store_api_key
    from app.engine.session import build_tools
    from app.storage.history import History
    from app.storage.settings import RemoteProviderSettings, Settings, load_settings, save_settings

    seen: list[dict] = []
    with MisbehavingServer(calculator_endpoint(seen)) as srv:
        settings = Settings()
        # A key handed to the settings is dropped: keys live in the keychain only.
        settings.remote = [RemoteProviderSettings(name="gpu-box", url=srv.url, kind="openai", api_key=KEY)]
        store_api_key("gpu-box", KEY)
        save_settings(settings, tmp_path / "settings.json")
        loaded, notice = load_settings(tmp_path / "settings.json")
        assert notice is None and loaded.remote[0].url == srv.url and loaded.remote[0].mode == "api"

        provider = provider_from_settings(loaded.remote[0])
        assert KEY not in repr(provider)
        assert list_models(provider) == ["calc-model"]
        tools = build_tools(workspace=None)
        session = RemoteChatSession(
            provider, "calc-model", registry=tools.registry, dispatcher=tools.dispatcher
        )
        events = list(session.send("What is 6 times 7?"))

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop", done
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    assert [(e.call.name, e.call.arguments, e.outcome.content) for e in finished] == [
        ("calculator", {"expression": "6*7"}, "42")
    ]
    assert finished[0].call.id == "call_remote_1"  # the endpoint's id goes back with the result
    assert seen[1]["messages"][-1] == {"role": "tool", "content": "42", "tool_call_id": "call_remote_1"}
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == "The answer is 42."
    assert done.generated_tokens >= 9 and done.prompt_tokens == 20

    history = History(tmp_path / "history.sqlite3")
    try:
        conv = history.create_conversation("remote", model_path=f"{srv.url}#calc-model")
        for m in session.messages:
            history.append_message(conv.id, m.role, m.content)
    finally:
        history.close()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and all(KEY.encode() not in p.read_bytes() for p in written)


def _cli(*args, env_extra=None, home):
    env = dict(os.environ, CALLISTO_HOME=str(home), QT_QPA_PLATFORM="offscreen", **(env_extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "app", "chat", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_chats_with_an_endpoint_and_saves_without_the_key(tmp_path):
    seen: list[dict] = []
    with MisbehavingServer(calculator_endpoint(seen)) as srv:
        res = _cli(
            "--endpoint",
            srv.url,
            "--model",
            "calc-model",
            "--api-key-env",
            "REMOTE_TEST_KEY",
            "--kind",
            "openai",
            "--parser",
            "api",
            "--json",
            "--save",
            "What is 6 times 7?",
            env_extra={"REMOTE_TEST_KEY": KEY},
            home=tmp_path,
        )
    assert res.returncode == 0, res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines() if x.strip()]
    types = [x["type"] for x in lines]
    assert types[:2] == ["tool_call_started", "tool_call_finished"] and types[-1] == "done"
    assert lines[1]["name"] == "calculator" and lines[1]["result"] == "42"
    assert lines[-1]["finish_reason"] == "stop" and lines[-1]["parser"] == "api"
    assert "".join(x["text"] for x in lines if x["type"] == "text") == "The answer is 42."
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix.startswith(".sqlite") or "history" in p.name for p in written), written
    assert all(KEY.encode() not in p.read_bytes() for p in written)
    assert KEY not in res.stdout + res.stderr


def test_cli_failed_request_exits_1_with_the_sentence(tmp_path):
    with MisbehavingServer(lambda req: req.status(401, {"error": {"message": "bad key"}})) as srv:
        res = _cli("--endpoint", srv.url, "--model", "m", "--tools", "none", "Hi", home=tmp_path)
    assert res.returncode == 1
    assert "refused the API key (HTTP 401)" in res.stderr and "bad key" in res.stderr


def test_cli_missing_key_variable_is_a_usage_error(tmp_path):
    res = _cli(
        "--endpoint",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--api-key-env",
        "REMOTE_UNSET_VAR_X",
        "Hi",
        home=tmp_path,
    )
    assert res.returncode == 2 and "REMOTE_UNSET_VAR_X" in res.stderr
