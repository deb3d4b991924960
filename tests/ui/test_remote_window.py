"""Remote engines in the real window, against real servers on loopback: Callisto's own API server
serving a scripted GGUF whose first reply calls the calculator, and misbehaving HTTP servers.

A provider is added through its dialog (its key kept by an in-memory keychain backend), its models
join the picker marked as remote, and choosing one makes the worker chat through the remote session:
the call runs here, shows in the side panel with the parser that read it, the turn is saved, and
the key is in no file Callisto wrote."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tests.engine.remote.misbehaving import MisbehavingServer, openai_chunk, sse
from tests.support.tool_done import write_tool_done_model
from tests.ui.conftest import call_token

KEY = "sk-window-remote-5f3b2d9e"
ANSWER = "The product is 391."
PROMPT = "What is 17 * 23?"


def write_calculator_model(folder: Path) -> Path:
    """Qwen 2.5's template (Hermes): the first reply calls the calculator, the reply after the tool
    result is ``ANSWER`` (the generation prompt after a tool message ends in a marker token)."""
    call = call_token("calculator", '{"expression": "17 * 23"}')
    return write_tool_done_model(folder / "remote-calc.gguf", call, ANSWER, name="remote-calc")


@pytest.fixture(scope="module")
def calc_model(tmp_path_factory) -> Path:
    return write_calculator_model(tmp_path_factory.mktemp("remote-window"))


@pytest.fixture(scope="module")
def keyed_server(calc_model):
    """Callisto's API server on a free loopback port that wants ``KEY``."""
    from app.server import ApiServer, ServerConfig

    server = ApiServer(
        ServerConfig(
            port=0,
            models=[str(calc_model)],
            use_library=False,
            n_ctx=2048,
            n_threads=1,
            queue_size=8,
            api_key=KEY,
        )
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _add_provider(qtbot, w, **values):
    dlg = w.remote_engines.open_provider_dialog()
    dlg.set_values(**values)
    dlg.accept()
    assert dlg.result() == 1, dlg.error_label.text()
    qtbot.waitUntil(lambda: values["name"] in w.remote_engines.models, timeout=30_000)
    return dlg


def _choose(qtbot, w, key):
    picker = w.model_picker
    index = picker.findData(key)
    assert index >= 0, [picker.itemText(i) for i in range(picker.count())]
    picker.setCurrentIndex(index)
    picker.activated.emit(index)
    qtbot.waitUntil(lambda: w.model_info is not None and w.model_info.path == key, timeout=30_000)


def _turn(qtbot, w, text=PROMPT, timeout=30_000):
    w.chat_ctl.last_done = None
    assert w.send(text)
    qtbot.waitUntil(lambda: w.last_done is not None, timeout=timeout)
    return w.last_done


def _files_hold(folder: Path, secret: str) -> list[str]:
    hits = []
    for root, _dirs, files in os.walk(folder):
        for name in files:
            p = Path(root) / name
            if secret.encode() in p.read_bytes():
                hits.append(str(p))
    return hits


@pytest.mark.parametrize(
    ("kind", "mode", "read_by"),
    [
        ("openai", "api", "the engine's function calling (OpenAI API)"),
        ("anthropic", "api", "the engine's function calling (Anthropic API)"),
        ("openai", "callisto", "Callisto's parser (Hermes JSON)"),
    ],
)
def test_a_remote_model_chosen_in_the_picker_calls_a_tool_shown_with_its_parser(
    qtbot, make_window, memory_keyring, keyed_server, calc_model, kind, mode, read_by
):
    from app.engine.remote.keys import remote_key
    from app.storage.paths import settings_path

    w = make_window(None)
    template = str(calc_model) if mode == "callisto" else ""
    _add_provider(
        qtbot, w, name="Lab box", url=keyed_server.url, kind=kind, mode=mode, key=KEY, template=template
    )
    assert memory_keyring.store == {("callisto", "remote:Lab box"): KEY}
    assert [(e.name, e.kind, e.mode) for e in w.settings.remote] == [("Lab box", kind, mode)]
    key = remote_key("Lab box", "remote-calc")
    labels = [w.model_picker.itemText(i) for i in range(w.model_picker.count())]
    assert "remote-calc · Lab box (remote)" in labels, labels

    _choose(qtbot, w, key)
    assert w.model_info.remote == "Lab box" and w.format_badge.text() == "Remote: Lab box"
    assert w.model_bar.badge_action.isVisible()  # the picker's model is marked as remote in the toolbar
    assert w.model_picker.currentData() == key and w.send_button.isEnabled()

    done = _turn(qtbot, w)
    assert done.finish_reason == "stop", done
    assert done.parser == mode
    assert w.worker.generation_thread_ident != threading.get_ident()  # the turn ran on the worker thread
    reply = w.chat.current_assistant()
    assert ANSWER in reply.text()
    entries = list(w.tool_panel.entries.values())
    assert [(e.call.name, e.status, e.outcome.content) for e in entries] == [("calculator", "ok", "391")]
    w.tool_dock.setVisible(True)
    assert w.tool_panel.select_call(entries[0].call.id)
    detail = w.tool_panel.detail_text()
    assert f"Read by: {read_by}" in detail, detail

    conv = w.history.load_conversation(w.conversation_id)
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[0].content == PROMPT and conv.messages[2].content == "391"
    assert conv.messages[3].content == ANSWER
    assert conv.model_path == key
    # the reply's head names the engine and its model, live and reopened
    assert reply.who.text() == "remote-calc · Lab box"
    assert {m.extra.get("model_name") for m in conv.messages if m.role == "assistant"} == {
        "remote-calc · Lab box"
    }
    w.open_conversation(w.conversation_id)
    assert [r.who.text() for r in w.chat.assistant_messages()] == ["remote-calc · Lab box"]

    w.shutdown()  # settings and window state written
    assert json.loads(settings_path().read_text())["remote"][0]["name"] == "Lab box"
    assert _files_hold(Path(os.environ["CALLISTO_HOME"]), KEY) == []


def test_the_same_conversation_gives_the_same_call_through_the_local_model(
    qtbot, make_window, calc_model, keyed_server, memory_keyring
):
    w = make_window(calc_model)
    done = _turn(qtbot, w)
    assert done.finish_reason == "stop"
    local = [(e.call.name, e.call.arguments, e.outcome.content) for e in w.tool_panel.entries.values()]
    assert all(e.parser is None for e in w.tool_panel.entries.values())  # local calls: no remote parser label
    from app.engine.remote.keys import remote_key

    _add_provider(qtbot, w, name="Box", url=keyed_server.url, kind="ollama", mode="api", key=KEY)
    w.new_chat()
    _choose(qtbot, w, remote_key("Box", "remote-calc"))
    assert w.worker.model is None  # the local model was closed once the remote one was chosen
    # the Server and Check pages are not handed a remote key as a file
    assert w.work_pages.local_model_path() is None
    assert (
        w.context_meter.format() == "Context —" and w.stat_ctx.text() == "context —"
    )  # no local figure stays
    done = _turn(qtbot, w)
    assert done.finish_reason == "stop" and done.remote == "ollama"
    assert [
        (e.call.name, e.call.arguments, e.outcome.content) for e in w.tool_panel.entries.values()
    ] == local


def _slow_endpoint(gone: threading.Event, shown: threading.Event):
    """An OpenAI endpoint whose reply streams a word at a time until the client goes away."""

    def handler(req):
        if req.path == "/v1/models":
            req.status(200, {"object": "list", "data": [{"id": "slow", "object": "model"}]})
            return
        if req.body is None:
            req.status(404, {"error": {"message": "not found"}})
            return
        req.start_stream()
        for _ in range(2000):
            if not req.send(openai_chunk("word ")):
                gone.set()
                return
            shown.set()
            gone.wait(0.05)
        req.send(openai_chunk(finish="stop") + sse("[DONE]"))

    return handler


def test_stop_cancels_the_remote_request_and_keeps_what_was_shown(qtbot, make_window, memory_keyring):
    from app.engine.remote.keys import remote_key

    gone, shown = threading.Event(), threading.Event()
    with MisbehavingServer(_slow_endpoint(gone, shown)) as server:
        w = make_window(None)
        _add_provider(qtbot, w, name="Slow", url=server.url, kind="openai", mode="api")
        assert memory_keyring.store == {}  # no key given: nothing in the keychain
        _choose(qtbot, w, remote_key("Slow", "slow"))
        w.chat_ctl.last_done = None
        assert w.send("Talk for a long time.")
        qtbot.waitUntil(lambda: "word" in (w.chat.current_assistant().text() or ""), timeout=30_000)
        w.stop()
        qtbot.waitUntil(lambda: w.last_done is not None, timeout=30_000)
        assert w.last_done.finish_reason == "cancelled"
        assert gone.wait(10), "the server still streams: the request was not closed"
        assert not w.busy and w.send_button.text() == "Send"
        conv = w.history.load_conversation(w.conversation_id)
        assert [m.role for m in conv.messages] == ["user", "assistant"]
        assert conv.messages[1].content.startswith("word")


def _failing_endpoint(status: int, message: str):
    def handler(req):
        if req.path == "/v1/models":
            req.status(200, {"object": "list", "data": [{"id": "flaky", "object": "model"}]})
            return
        req.status(status, {"error": {"message": message}})

    return handler


def test_a_failing_endpoint_is_shown_in_the_reply_and_the_question_is_kept(
    qtbot, make_window, memory_keyring
):
    from app.engine.remote.keys import remote_key

    with MisbehavingServer(_failing_endpoint(401, "invalid api key")) as server:
        w = make_window(None)
        _add_provider(qtbot, w, name="Locked", url=server.url, kind="openai", mode="api", key="sk-wrong")
        _choose(qtbot, w, remote_key("Locked", "flaky"))
        done = _turn(qtbot, w, "Hello there")
        assert done.finish_reason == "error" and done.error_code == "unauthorized"
        box = w.chat.current_assistant().error_box
        assert (
            box is not None
            and box.message.startswith("The reply failed: ")
            and "invalid api key" in box.message
        )
        assert sum(1 for r in server.requests if r.body is not None) == 1  # a bad key is not retried
        conv = w.history.load_conversation(w.conversation_id)
        assert [m.role for m in conv.messages] == ["user", "assistant"] and conv.messages[
            0
        ].content == "Hello there"
        assert conv.messages[1].status == "error" and "invalid api key" in conv.messages[1].error


def test_5xx_retries_are_told_in_the_reply_then_the_failure(qtbot, make_window, memory_keyring):
    from app.engine.remote.keys import remote_key

    with MisbehavingServer(_failing_endpoint(503, "overloaded")) as server:
        w = make_window(None)
        _add_provider(qtbot, w, name="Busy", url=server.url, kind="openai", mode="api")
        _choose(qtbot, w, remote_key("Busy", "flaky"))
        done = _turn(qtbot, w, "Hello")
        assert done.finish_reason == "error"
        reply = w.chat.current_assistant()
        notices = [b.message for b in reply.banners]
        assert len(notices) >= 1 and all("Trying again" in n for n in notices), notices
        assert "overloaded" in reply.error_box.message


def test_an_endpoint_that_cannot_be_reached_is_a_banner_and_the_picker_keeps_working(
    qtbot, make_window, memory_keyring
):
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    w = make_window(None)
    dlg = w.remote_engines.open_provider_dialog()
    dlg.set_values(name="Gone", url=f"http://127.0.0.1:{port}", kind="openai", mode="api")
    dlg.accept()
    qtbot.waitUntil(lambda: any("could not be listed" in t for t in w.window_notice_texts()), timeout=30_000)
    text = next(t for t in w.window_notice_texts() if "could not be listed" in t)
    assert text.startswith("The models of Gone could not be listed:") and f"127.0.0.1:{port}" in text
    assert "Gone" not in w.remote_engines.models
    assert [w.model_picker.itemText(i) for i in range(w.model_picker.count())][-2:] == [
        "Add a remote engine…",
        "Open a GGUF file…",
    ]


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"name": "", "url": "http://127.0.0.1:1"}, "Give the engine a name"),
        ({"name": "A", "url": "127.0.0.1:8080"}, "starts with http:// or https://"),
        ({"name": "taken", "url": "http://127.0.0.1:1"}, "already a remote engine named 'taken'"),
        (
            {"name": "A", "url": "http://127.0.0.1:1", "kind": "anthropic", "mode": "callisto"},
            "Anthropic API does not",
        ),
    ],
)
def test_the_dialog_refuses_bad_values_and_adds_nothing(qtbot, make_window, memory_keyring, values, problem):
    from app.storage.settings import RemoteProviderSettings

    w = make_window(None)
    w.settings.remote = [RemoteProviderSettings(name="taken", url="http://127.0.0.1:9")]
    dlg = w.remote_engines.open_provider_dialog()
    dlg.set_values(key="sk-never-stored", **values)
    dlg.accept()
    assert dlg.isVisible() and dlg.result() != 1
    assert problem in dlg.error_label.text()
    assert [e.name for e in w.settings.remote] == ["taken"] and memory_keyring.store == {}


@pytest.fixture
def no_keychain():
    """The keyring of a machine with no keychain installed (keyring's own "fail" backend)."""
    import keyring
    from keyring.backends.fail import Keyring

    previous = keyring.get_keyring()
    keyring.set_keyring(Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(previous)


def test_without_a_keychain_a_keyless_provider_works_and_a_key_is_refused_plainly(
    qtbot, make_window, no_keychain, keyed_server
):
    with MisbehavingServer(_failing_endpoint(500, "unused")) as server:
        w = make_window(None)
        _add_provider(qtbot, w, name="Open box", url=server.url, kind="openai", mode="api")
        assert w.remote_engines.models["Open box"] == ["flaky"]
    from app.storage.settings import RemoteProviderSettings

    assert not w.remote_engines.add_remote_provider(
        RemoteProviderSettings(name="Keyed", url=keyed_server.url), KEY
    )
    banner = next(t for t in w.window_notice_texts() if t.startswith("Keyed was not added"))
    assert "keychain did not store the API key" in banner and KEY not in banner
    assert [e.name for e in w.settings.remote] == ["Open box"]


def test_the_remote_screenshot_state_shows_a_call_read_by_callistos_parser(tmp_path, calc_model):
    import subprocess
    import sys

    from PySide6.QtGui import QImage

    out = tmp_path / "remote.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CALLISTO_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "--screenshot",
            str(out),
            "--state",
            "remote",
            "--model",
            str(calc_model),
            "--quit-after",
            "60",
            "--theme",
            "dark",
        ],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        "remote (model: remote-calc; tool calls: 1; selected: calculator (ok); read by: callisto:hermes)"
        in proc.stdout
    ), proc.stdout
    img = QImage(str(out))
    assert not img.isNull() and img.width() > 300


CALC_TOOLS = {
    "calculator": {
        "description": "Evaluate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "The expression."}},
            "required": ["expression"],
        },
    }
}
CALC_SCENARIO = """category = "single"

[[scenario]]
id = "product-of-two-numbers"
tools = ["calculator"]
prompt = "What is 17 * 23?"
expect = [{ name = "calculator", arguments = { expression = "17 * 23" } }]
rationale = "The expression is a literal of the prompt."
"""


def test_the_check_page_shows_both_parsers_of_one_remote_model_as_two_rows(
    qtbot, tmp_path, keyed_server, calc_model
):
    """``check --endpoint ... --parser both`` writes two results; opened in the Check page they are
    two rows of its matrix, side by side, named by who read the calls."""
    from app.check.corpus import load_corpus
    from app.check.remote_target import RemoteTarget
    from app.check.runner import run_check, write_result
    from app.engine.remote import Provider
    from app.ui.check_page import CheckPage

    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "tools.json").write_text(json.dumps(CALC_TOOLS))
    (folder / "single.toml").write_text(CALC_SCENARIO)
    corpus = load_corpus(folder)
    provider = Provider(keyed_server.url, api_key=KEY)
    page = CheckPage(load_saved=False)
    qtbot.addWidget(page)
    for parser in ("api", "callisto"):
        target = RemoteTarget(
            provider, "remote-calc", parser=parser, model_file=str(calc_model), max_tokens=64
        )
        result = run_check(target, corpus.select(None, None), corpus_sha256=corpus.sha256)
        assert result["summary"]["passed"] == 1, result["results"]
        path = write_result(result, tmp_path / f"result-{parser}.json")
        assert KEY not in (tmp_path / f"result-{parser}.json").read_text()
        assert all(KEY not in p.read_text() for p in Path(path).glob("*.json"))  # transcripts: key redacted
        assert page.open_result(tmp_path / f"result-{parser}.json") is not None
    labels = [page.matrix.verticalHeaderItem(r).text() for r in range(page.matrix.rowCount())]
    assert labels == [
        "remote-calc.gguf · openai-compatible · engine's parsing (API tools)",
        "remote-calc.gguf · openai-compatible · Callisto parsing",
    ]
    assert page.cell_ratio(0, "single") == page.cell_ratio(1, "single") == 1.0


@pytest.mark.parametrize(("kind", "mode"), [("openai", "api"), ("anthropic", "api"), ("ollama", "callisto")])
def test_continue_goes_on_in_the_same_reply_with_a_remote_engine_that_reads_a_prefill(
    qtbot, make_window, memory_keyring, tmp_path, kind, mode
):
    """A reply cut by the max-tokens limit goes on in place (the local engine's Continue) where the
    endpoint can: no "Continue" message is sent, the reply reads once, whole, and history keeps it.
    Before, every remote engine was sent a message asking it to go on."""
    from PySide6.QtCore import Qt

    from app.server import ApiServer, ServerConfig
    from app.storage.settings import Settings
    from tests.engine.remote.test_remote_continue import WHOLE, _words_model
    from tests.ui.scripted_gguf import CHATML

    model = _words_model(tmp_path / "words.gguf", CHATML, "words")
    server = ApiServer(ServerConfig(port=0, models=[str(model)], use_library=False, n_ctx=1024, n_threads=1))
    server.start()
    try:
        settings = Settings()
        settings.sampling.max_tokens = 3
        w = make_window(None, settings=settings)
        template = str(model) if mode == "callisto" else ""
        _add_provider(qtbot, w, name="Box", url=server.url, kind=kind, mode=mode, key="", template=template)
        from app.engine.remote.keys import remote_key

        _choose(qtbot, w, remote_key("Box", "words"))
        done = _turn(qtbot, w, "Hi")
        assert done.finish_reason == "length", done
        reply = w.chat.current_assistant()
        assert reply.error_box is not None and "Continue" in reply.error_box.buttons
        with qtbot.waitSignal(w.sig_turn_done, timeout=30_000):
            qtbot.mouseClick(reply.error_box.buttons["Continue"], Qt.MouseButton.LeftButton)
        # the Anthropic API is sent the cut text without its trailing space (which it refuses), so
        # the model writes the space again: its rest is then 4 tokens, one past the limit of 3
        assert w.last_done.finish_reason == ("length" if kind == "anthropic" else "stop"), w.last_done
        assert w.chat.assistant_messages() == [reply] and len(w.chat.user_messages()) == 1
        assert WHOLE in reply.text()
        conv = w.history.load_conversation(w.conversation_id)
        assert [(m.role, m.content) for m in conv.messages] == [("user", "Hi"), ("assistant", WHOLE)]
        w.shutdown()
    finally:
        server.stop()
