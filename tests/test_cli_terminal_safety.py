"""The CLI against hostile output and hostile settings (review 2: N1, N15, N17): real processes,
real models; what reaches a terminal is one line per error and never a control sequence."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.quiet_http import QuietHTTPServer
from tests.test_cli_hostile_input import hermes_call, tool_call_model
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

ROOT = Path(__file__).resolve().parent.parent

# what a model, a remote engine or a file name may hold to take over a terminal
HOSTILE = (
    "\x1b]0;PWNED-TITLE\x07"  # OSC: set the window title
    "\x1b[2J"  # CSI: clear the screen
    "\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\"  # OSC 8 hyperlink
    "ok\rXX\bY\x9b31m"  # carriage return, backspace, 8-bit CSI
    "\u202eevil\u2066"  # bidirectional override and isolate
)
RAW_CONTROLS = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))] + [
    "\u202e",
    "\u2066",
]


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        errors="surrogateescape",
        env=dict(os.environ, **(env or {})),
    )


def assert_terminal_safe(text: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text if c in RAW_CONTROLS})
    assert not bad, f"control characters reached the terminal: {bad}\n{text!r}"


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# -- N1 ---------------------------------------------------------------------------------------------


def test_n1_a_call_in_a_chat_without_tools_is_refused_not_a_traceback(tmp_path):
    model = tool_call_model(tmp_path, hermes_call('{"expression": "6*7"}'))
    text = run_cli("chat", "--model", str(model), "--tools", "none", "--threads", "1", "hi")
    assert text.returncode == 0, text.stderr
    assert "Traceback" not in text.stderr
    assert "Unknown tool 'calculator'" in text.stderr
    # the calculator never ran: no result line (the [done] line's figures may hold any digits)
    assert not [ln for ln in text.stderr.splitlines() if ln.startswith("[tool] calculator ->") and "42" in ln]
    assert "42" not in text.stdout
    assert text.stdout.strip() == "Done."  # the turn goes on after the refusal

    js = run_cli("chat", "--model", str(model), "--tools", "none", "--threads", "1", "--json", "hi")
    assert js.returncode == 0, js.stderr
    assert "Traceback" not in js.stderr
    events = [json.loads(line) for line in js.stdout.splitlines()]
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert [e["name"] for e in finished] == ["calculator"]
    assert finished[0]["result"] is None and "Unknown tool" in finished[0]["error"]
    assert events[-1]["type"] == "done" and events[-1]["finish_reason"] == "stop"


# -- N15 --------------------------------------------------------------------------------------------


def test_n15_control_sequences_from_the_model_are_escaped_on_the_terminal(tmp_path):
    model = write_scripted_gguf(
        tmp_path / "ctrl.gguf",
        chat_template=CHATML,
        user_tokens=[HOSTILE],
        script={"\n": HOSTILE, HOSTILE: "<|im_end|>"},
        default_next="\n",
    )
    proc = run_cli("chat", "--model", str(model), "--tools", "none", "--threads", "1", "hi")
    assert proc.returncode == 0, proc.stderr
    assert_terminal_safe(proc.stdout + proc.stderr)
    # every character is still there to read, as an escape
    out = proc.stdout
    assert "\\x1b]0;PWNED-TITLE\\x07" in out and "\\x1b[2J" in out and "ok\\x0dXX\\x08Y\\x9b31m" in out
    assert "\\u202eevil\\u2066" in out
    # --json keeps the exact text, JSON-escaped
    js = run_cli("chat", "--model", str(model), "--tools", "none", "--threads", "1", "--json", "hi")
    events = [json.loads(line) for line in js.stdout.splitlines()]
    assert "".join(e["text"] for e in events if e["type"] == "text") == HOSTILE
    assert "\x1b" not in js.stdout


def test_n15_file_names_in_tool_results_are_escaped(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "e\x1b]0;T\x07.txt").write_text("x")
    (ws / "r\rl\u202et.txt").write_text("y")
    call = '<tool_call>\n{"name": "list_files", "arguments": {"path": "."}}\n</tool_call>'
    model = tool_call_model(tmp_path, call)
    proc = run_cli("chat", "--model", str(model), "--workspace", str(ws), "--yes", "--threads", "1", "hi")
    assert proc.returncode == 0, proc.stderr
    assert_terminal_safe(proc.stdout + proc.stderr)
    # both names are listed, each character still readable as an escape
    assert "e\\x1b]0;T\\x07.txt" in proc.stderr and "l\\u202et.txt" in proc.stderr


def test_n15_terminal_text_keeps_lines_and_escapes_every_control():
    from app.cli import terminal_text

    assert terminal_text("a\tb\nc\r\nd") == "a\tb\nc\nd"
    for c in RAW_CONTROLS:
        assert c not in terminal_text(f"x{c}y")
    assert terminal_text("é ü 中文 🙂") == "é ü 中文 🙂"


class _Endpoint(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint (HTTP/1.0: one response per connection) whose reply holds
    ``HOSTILE`` and whose llama-server ``/props`` template never renders (its integers grow past
    every limit)."""

    def log_message(self, *args):
        pass

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.split("?")[0].endswith("/props"):
            bomb = "{% set ns = namespace(n=7) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n }}"
            body = {"chat_template": bomb, "bos_token": "<s>", "eos_token": "</s>"}
            self._send(200, "application/json", json.dumps(body).encode())
        elif self.path.endswith("/v1/models"):
            self._send(
                200, "application/json", b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'
            )
        else:
            self._send(404, "application/json", b'{"error": "no"}')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            data = {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [choice],
            }
            return b"data: " + json.dumps(data).encode() + b"\n\n"

        body = chunk({"content": HOSTILE}) + chunk({}, "stop") + b"data: [DONE]\n\n"
        self._send(200, "text/event-stream", body)


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = QuietHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_n15_control_sequences_from_a_remote_engine_are_escaped(endpoint):
    proc = run_cli("chat", "--endpoint", endpoint, "--model", "m", "--tools", "none", "--parser", "api", "hi")
    assert proc.returncode == 0, proc.stderr
    assert_terminal_safe(proc.stdout + proc.stderr)
    assert "\\x1b]0;PWNED-TITLE\\x07" in proc.stdout and "\\u202eevil" in proc.stdout


# -- N17 --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lib", ["missing", "garbage"])
def test_n17_a_broken_llama_library_is_one_line(tmp_path, tiny_gguf, lib):
    folder = tmp_path / "lib"
    folder.mkdir()
    if lib == "garbage":
        for name in ("libllama.so", "libllama.dylib", "llama.dll"):
            (folder / name).write_bytes(os.urandom(4096))
    proc = run_cli(
        "chat",
        "--model",
        str(tiny_gguf()),
        "--tools",
        "none",
        "hi",
        env={"LLAMA_CPP_LIB_PATH": str(folder if lib == "garbage" else tmp_path / "nonexistent")},
    )
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert line.startswith("error: Cannot load ") and "llama.cpp library could not be loaded" in line


def test_n17_a_remote_template_that_never_renders_is_one_line(endpoint):
    proc = run_cli("chat", "--endpoint", endpoint, "--model", "m", "--parser", "callisto", "hi")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and "template" in errors[0], proc.stderr


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_n17_a_port_out_of_range_is_one_line(port):
    proc = run_cli("serve", "--port", port, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "--port" in proc.stderr.splitlines()[-1]


@pytest.mark.parametrize("kind", ["device", "fifo", "deep"])
def test_n17_a_response_format_file_that_never_ends_or_nests_too_deep_is_one_line(tmp_path, tiny_gguf, kind):
    if kind == "device":
        path = Path(os.devnull if sys.platform == "win32" else "/dev/zero")
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        path = tmp_path / "schema.json"
        os.mkfifo(path)  # nobody ever writes: reading it would block forever
    else:
        path = tmp_path / "schema.json"
        path.write_text("[" * 200_000)
    proc = run_cli("chat", "--model", str(tiny_gguf()), "--response-format", str(path), "hi", timeout=60)
    assert proc.returncode == 2
    assert one_line_error(proc).startswith("error: ")
