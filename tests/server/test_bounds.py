"""What one client can hold of the server, and what one request can ask of the engine, is bounded
(review hostile-inputs-2: N3, N4, N14, N16, N19).

* N3: a request's headers and body must arrive within their timeouts (408, then closed); at most
  ``max_connections`` connections are open, idle ones give way to new ones, and a server under a
  low open-file limit keeps serving (and does not flood its log) while hundreds of connections
  trickle headers.
* N4: past ``max_tools`` tools or ``max_schema_bytes`` of tool and response schemas a request is a
  quick 400 that names the limit, before any engine work (no model is loaded for it).
* N14: ``serve --api-key ""`` is refused; listening beyond this machine without a key is warned of.
* N16: an integer of thousands of digits anywhere in a body is a 400, never a 500.
* N19: a client's long value is not echoed back whole; ``/v1/models`` lists each id once;
  a ``logit_bias`` that cannot be read is a 400; ``--max-loaded-models -1`` is refused.

Deadlines here are short (1 s) and the waits for them long (a minute), so the tests hold on a
loaded machine and still fail when a deadline is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import TOOLS, write_loop_model
from tests.server.test_hostile import check_shape
from tests.server.test_serve_cli import REPO, _interrupt, _serve

U = [{"role": "user", "content": "hi"}]
WAIT_S = 60.0  # how long a test waits for a 1 s deadline to act


def _server(**config: Any) -> Iterator[Any]:
    from app.server import ApiServer, ServerConfig

    server = ApiServer(ServerConfig(port=0, use_library=False, n_ctx=2048, n_threads=1, **config))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def loop_model(tmp_path_factory) -> Path:
    return write_loop_model(tmp_path_factory.mktemp("bounds"))


@pytest.fixture(scope="module")
def quick_timeouts(loop_model) -> Iterator[Any]:
    yield from _server(models=[str(loop_model)], header_timeout_s=1.0, body_timeout_s=1.0)


@pytest.fixture(scope="module")
def plain(loop_model) -> Iterator[Any]:
    """A server with the default bounds."""
    yield from _server(models=[str(loop_model)])


@pytest.fixture
def fresh(loop_model) -> Iterator[Any]:
    """A server that has run nothing yet (no model loaded)."""
    yield from _server(models=[str(loop_model)])


def _connect(server: Any) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def _trickle_until_answered(sock: socket.socket, first: bytes, byte: bytes = b"a") -> tuple[bytes, bool]:
    """Send ``first``, then one byte every 0.2 s, until the server closes the connection or
    ``WAIT_S`` passes: (what the server sent, whether it closed)."""
    sock.sendall(first)
    sock.settimeout(0.2)
    got = b""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            sock.sendall(byte)
        except OSError:
            pass
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return got, True
        if not chunk:
            return got, True
        got += chunk
    return got, False


def _closed_by_server(sock: socket.socket, wait: float) -> bool:
    """True when the server closed ``sock`` (EOF or reset) within ``wait`` seconds."""
    sock.settimeout(wait)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
    except TimeoutError:
        return False
    except OSError:
        return True


def _closed_of(socks: list[socket.socket], at_least: int, wait: float) -> int:
    """How many of ``socks`` the server closed (EOF or reset), read all at once: as soon as
    ``at_least`` are, or when ``wait`` seconds have passed (those it keeps open are not each
    waited for in turn)."""
    import selectors

    closed = 0
    with selectors.DefaultSelector() as sel:
        for sock in socks:
            sock.setblocking(False)
            sel.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + wait
        while closed < at_least and sel.get_map() and (left := deadline - time.monotonic()) > 0:
            for key, _ in sel.select(left):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    gone = not sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    gone = True
                if gone:
                    sel.unregister(sock)
                    closed += 1
    return closed


# -- N3: slow clients ------------------------------------------------------------------------------


def test_n3_trickled_headers_get_408_and_are_closed(quick_timeouts):
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{quick_timeouts.port}\r\nX-Pad: ".encode()
    with _connect(quick_timeouts) as s:
        got, closed = _trickle_until_answered(s, head)
    assert closed and got.startswith(b"HTTP/1.1 408"), got[:200]
    assert b"headers did not arrive within 1 s" in got


def test_n3_a_connection_that_sends_nothing_is_closed(quick_timeouts):
    with _connect(quick_timeouts) as s:
        assert _closed_by_server(s, WAIT_S)


def test_n3_trickled_body_gets_408_and_is_closed(quick_timeouts):
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{quick_timeouts.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
    ).encode()
    with _connect(quick_timeouts) as s:
        got, closed = _trickle_until_answered(s, head, b" ")
    assert closed and got.startswith(b"HTTP/1.1 408"), got[:200]
    assert b"body did not arrive within 1 s" in got


def test_n3_a_route_that_ignores_the_body_still_bounds_it(quick_timeouts):
    """The body deadline is the connection's, not the route's: a GET with a trickled body too."""
    head = (
        f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{quick_timeouts.port}\r\nContent-Length: 100000\r\n\r\n"
    ).encode()
    with _connect(quick_timeouts) as s:
        got, closed = _trickle_until_answered(s, head, b" ")
    assert got.startswith(b"HTTP/1.1 200"), got[:200]  # answered,
    assert closed  # and then closed at the body deadline


def test_whole_requests_on_a_kept_alive_connection_are_not_cut(loop_model):
    """The header deadline starts with a request's first byte, not with the connection."""
    for server in _server(models=[str(loop_model)], header_timeout_s=3.0):
        with httpx.Client(base_url=server.url, timeout=60) as http:
            for _ in range(2):
                assert http.get("/v1/models").status_code == 200
                time.sleep(2.0)  # less than the keep-alive timeout; together more than the header timeout
            assert http.get("/v1/models").status_code == 200
            assert http.get("/v1/models").status_code == 200


def test_n3_idle_connections_give_way_past_the_connection_limit(loop_model):
    for server in _server(models=[str(loop_model)], max_connections=8, header_timeout_s=600):
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Pad: ".encode()
        slow = []
        for _ in range(30):
            s = _connect(server)
            s.sendall(head)
            slow.append(s)
        try:
            r = httpx.get(server.url + "/v1/models", timeout=60)
            assert r.status_code == 200
            closed = _closed_of(slow, 30 - 8, WAIT_S)
            assert closed >= 30 - 8, f"only {closed} of 30 idle connections were closed"
        finally:
            for s in slow:
                s.close()


def test_n3_past_the_limit_with_every_connection_busy_is_503(loop_model):
    """Connections each in the middle of a request's body are not dropped; a new one is told to
    retry."""
    for server in _server(models=[str(loop_model)], max_connections=4, body_timeout_s=600):
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            "Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n"
        ).encode()
        busy = []
        try:
            for _ in range(4):
                s = _connect(server)
                s.sendall(head)
                s.settimeout(WAIT_S)
                # the server read the headers and its route waits for the body
                assert s.recv(65536).startswith(b"HTTP/1.1 100")
                s.sendall(b"{")
                busy.append(s)
            deadline = time.monotonic() + WAIT_S
            answer = b""
            while time.monotonic() < deadline and not answer.startswith(b"HTTP/1.1 503"):
                with _connect(server) as s:
                    s.sendall(f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
                    s.settimeout(WAIT_S)
                    answer = s.recv(65536)
                time.sleep(0.2)
            assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
            assert b"retry-after: 1" in answer.lower()
            assert not any(_closed_by_server(s, 0.5) for s in busy)
        finally:
            for s in busy:
                s.close()


# ``serve`` with at most 200 open files (the limit is set in the child itself, not in a preexec_fn)
LOW_NOFILE_SERVE = (
    "import resource, runpy, sys\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))\n"
    "sys.argv = ['app'] + sys.argv[1:]\n"
    "runpy.run_module('app', run_name='__main__')\n"
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")
def test_n3_hundreds_of_slow_connections_under_a_low_file_limit(loop_model):
    """The review's reproduction: ``serve`` under a low open-file limit, 400 connections trickling
    headers. Service goes on (the connection limit stays under the file limit) and stderr stays
    small (the accept error is not logged thousands of times)."""
    import os

    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-c", LOW_NOFILE_SERVE, "serve", "--model", str(loop_model), "--port", "0"]
        + ["--threads", "1"],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    slow: list[socket.socket] = []
    try:
        assert proc.stderr is not None
        banner = b""
        while b"Ctrl-C" not in banner:
            line = proc.stderr.readline()
            assert line, f"serve ended: {banner!r}"
            banner += line
        m = re.search(rb"on http://127\.0\.0\.1:(\d+)", banner)
        assert m, banner
        port = int(m.group(1))
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: ".encode()
        for _ in range(400):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(head)
                slow.append(s)
            except OSError:
                pass
        statuses = []
        for _ in range(3):
            try:
                statuses.append(httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=30).status_code)
            except httpx.HTTPError as exc:
                statuses.append(type(exc).__name__)
        assert statuses == [200, 200, 200]
        for s in slow:
            s.close()
        slow.clear()
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={"model": "loop-hermes", "messages": U, "tools": TOOLS},
            timeout=60,
        )
        assert r.status_code == 200, r.text[:2000]
    finally:
        for s in slow:
            s.close()
        rc = _interrupt(proc)
    err = proc.stderr.read() if proc.stderr else b""
    assert rc == 0
    assert len(err) < 20_000, err[-3000:]


# -- N4: tools and schemas ---------------------------------------------------------------------------


def _tools(n: int) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    return [{"type": "function", "function": {"name": f"t{i}", "parameters": schema}} for i in range(n)]


def _anthropic_tools(n: int) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    return [{"name": f"t{i}", "input_schema": schema} for i in range(n)]


BIG_SCHEMA = {
    "type": "object",
    "properties": {f"p{i}": {"type": "string", "description": "d" * 100} for i in range(2500)},
}

TOO_MANY = [
    ("/v1/chat/completions", {"messages": U, "tools": _tools(129), "tool_choice": "required"}),
    ("/v1/messages", {"max_tokens": 8, "messages": U, "tools": _anthropic_tools(129)}),
    ("/v1/messages/count_tokens", {"messages": U, "tools": _anthropic_tools(10_000)}),
    ("/api/chat", {"stream": False, "messages": U, "tools": _tools(10_000)}),
]
TOO_BIG = [
    (
        "/v1/chat/completions",
        {
            "messages": U,
            "tools": [{"type": "function", "function": {"name": "f", "parameters": BIG_SCHEMA}}],
            "tool_choice": "required",
        },
    ),
    (
        "/v1/chat/completions",
        {"messages": U, "response_format": {"type": "json_schema", "json_schema": {"schema": BIG_SCHEMA}}},
    ),
    ("/v1/messages", {"max_tokens": 8, "messages": U, "tools": [{"name": "f", "input_schema": BIG_SCHEMA}]}),
    ("/api/chat", {"stream": False, "messages": U, "format": BIG_SCHEMA}),
]


@pytest.mark.parametrize(("path", "body"), TOO_MANY, ids=[p for p, _ in TOO_MANY])
def test_n4_too_many_tools_is_a_quick_400_before_any_engine_work(fresh, path, body):
    r = httpx.post(fresh.url + path, json={"model": "loop-hermes", **body}, timeout=60)
    assert r.status_code == 400, r.text
    message = check_shape(path, r.json())
    assert "at most 128 tools" in message and "panic" not in message
    assert fresh.host.current is None  # no model was loaded for it
    assert not fresh.finished


@pytest.mark.parametrize(("path", "body"), TOO_BIG, ids=[f"{p}-{i}" for i, (p, _) in enumerate(TOO_BIG)])
def test_n4_oversized_schemas_are_a_quick_400_before_any_engine_work(fresh, path, body):
    r = httpx.post(fresh.url + path, json={"model": "loop-hermes", **body}, timeout=60)
    assert r.status_code == 400, r.text
    message = check_shape(path, r.json())
    assert f"at most {256 * 1024} bytes" in message
    assert fresh.host.current is None
    assert not fresh.finished


def test_a_request_at_the_tool_bounds_is_served(fresh):
    r = httpx.post(
        fresh.url + "/v1/chat/completions",
        json={"model": "loop-hermes", "max_tokens": 8, "messages": U, "tools": _tools(128)},
        timeout=120,
    )
    # the tools are taken; the tiny context cannot hold their prompt, which the engine says
    assert r.status_code in (200, 400), r.text
    if r.status_code == 400:
        assert "context" in check_shape("/v1", r.json())


def test_n4_a_native_panic_never_reaches_the_client():
    from app.engine.errors import ConstraintError
    from app.server._errors import client_message

    panic = ConstraintError(
        "the hermes constraint does not compile: panic: assertion failed: grammar.symbols.len() < "
        "u16::MAX\n<backtrace>\n   0: <unknown>\n   1: <unknown>\n"
    )
    text = client_message(panic)
    assert "backtrace" not in text and "<unknown>" not in text and "panic" not in text
    assert text.startswith("the hermes constraint does not compile: the constraint engine cannot hold it")
    one_line = ConstraintError(str(panic).replace("\n", " "))  # as llguidance writes it
    assert client_message(one_line) == text


# -- N14: serve's API key ----------------------------------------------------------------------------


def _run_serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", "serve", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("key", ["", "   "])
def test_n14_an_empty_api_key_is_refused(key):
    r = _run_serve("--host", "0.0.0.0", "--port", "0", "--api-key", key)
    assert r.returncode == 2, r.stderr
    assert "--api-key is empty" in r.stderr and "Traceback" not in r.stderr


def test_n14_listening_beyond_this_machine_without_a_key_is_warned_of():
    proc = _serve("--host", "0.0.0.0", "--port", "0")
    try:
        assert proc.stderr is not None
        said = ""
        while "Ctrl-C" not in said:
            line = proc.stderr.readline()
            assert line, said
            said += line
        assert "without an API key" in said and "0.0.0.0" in said
    finally:
        assert _interrupt(proc) == 0


def test_n14_loopback_or_a_key_gives_no_warning():
    from app.server._app import serve_warnings

    assert serve_warnings("127.0.0.1", None, 8453) == []
    assert serve_warnings("::1", None, 8453) == []
    assert serve_warnings("0.0.0.0", "k", 8453) == []
    assert serve_warnings("192.168.1.5", None, 8453)


# -- N16: huge integers --------------------------------------------------------------------------------

ENDPOINTS = [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/api/chat",
    "/api/generate",
    "/api/show",
    "/v1/embeddings",
    "/v1/responses",
    "/completion",
    "/infill",
    "/v1/rerank",
    "/tokenize",
    "/detokenize",
    "/apply-template",
    "/api/embed",
    "/api/embeddings",
    "/api/v1/chat",
    "/api/v0/chat/completions",
    "/api/create",
    "/api/copy",
]
HUGE = "9" * 5000


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("where", ["max_tokens", "metadata", "nested"])
def test_n16_an_integer_of_5000_digits_is_a_400(plain, path, where):
    fragment = {
        "max_tokens": f'"max_tokens": {HUGE}',
        "metadata": f'"metadata": {{"n": -{HUGE}}}',
        "nested": f'"messages": [{{"role": "user", "content": [{HUGE}]}}]',
    }[where]
    raw = '{"model": "loop-hermes", "prompt": "hi", ' + fragment + "}"
    r = httpx.post(plain.url + path, content=raw.encode(), timeout=60)
    assert r.status_code == 400, r.text
    message = check_shape(path, r.json())
    assert "5000 digits" in message and len(message) < 300


# -- N19: minor items -----------------------------------------------------------------------------------


def test_n19_a_long_model_name_is_not_echoed_whole(plain):
    name = "m" * (1 << 20)
    r = httpx.post(plain.url + "/v1/chat/completions", json={"model": name, "messages": U}, timeout=60)
    assert r.status_code == 404
    message = check_shape("/v1", r.json())
    assert len(message) < 1000 and "1048578 characters" in message and "loop-hermes" in message


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/chat/completions", {"messages": [{"role": "x" * 100_000, "content": "hi"}]}, "role"),
        ("/v1/messages", {"max_tokens": 4, "messages": U, "tool_choice": {"type": "y" * 100_000}}, "type"),
        ("/api/generate", {"prompt": "hi", "options": {"num_predict": 1e300}}, "num_predict"),
        ("/v1/chat/completions", {"messages": U, "temperature": 10**300}, "temperature"),
    ],
)
def test_n19_error_messages_stay_short(plain, path, body, field):
    r = httpx.post(plain.url + path, json={"model": "loop-hermes", **body}, timeout=60)
    assert r.status_code == 400, r.text
    message = check_shape(path, r.json())
    assert field in message and len(message) < 400, message
    assert not re.search(r"(.)\1{100}", message), message  # no 100 of one character (digits, a name)


def test_n19_models_lists_each_id_once_and_each_file_is_reachable(tmp_path, loop_model):
    copy = tmp_path / "copy" / loop_model.name
    copy.parent.mkdir()
    shutil.copy(loop_model, copy)
    for server in _server(models=[str(loop_model), str(copy)]):
        ids = [m["id"] for m in httpx.get(server.url + "/v1/models", timeout=30).json()["data"]]
        assert ids == ["loop-hermes", "loop-hermes-2"]
        for model_id in ids:
            r = httpx.post(
                server.url + "/v1/chat/completions",
                json={"model": model_id, "max_tokens": 4, "messages": U},
                timeout=120,
            )
            assert r.status_code == 200 and r.json()["model"] == model_id


def test_n19_logit_bias_in_a_form_that_cannot_be_read_is_a_400_never_ignored(plain):
    """(What a bias does: ``tests/server/test_logprobs.py``.)"""
    url = plain.url + "/v1/chat/completions"
    body = {"model": "loop-hermes", "max_tokens": 4, "messages": U}
    for bad, words in (
        ("x", "logit_bias must be an object"),
        ({"hello": 1}, "logit_bias keys must be token ids"),
        ({"-3": 1}, "logit_bias keys must be token ids"),
        ({"5": 101}, "must be a number from -100 to 100"),
        ({"5": "1"}, "must be a number from -100 to 100"),
        ({str(i): 1 for i in range(1025)}, "at most 1024"),
        ({"99999999": 1}, "outside the model's vocabulary"),
    ):
        r = httpx.post(url, json={**body, "logit_bias": bad}, timeout=60)
        assert r.status_code == 400 and words in check_shape("/v1", r.json()), (bad, r.text)
        assert r.json()["error"]["param"] == "logit_bias", r.text
    assert httpx.post(url, json={**body, "logit_bias": {}}, timeout=120).status_code == 200


@pytest.mark.parametrize(
    "args", [("--max-loaded-models", "-1"), ("--max-loaded-models", "0"), ("--queue", "0")]
)
def test_n19_serve_refuses_counts_below_one(args):
    r = _run_serve("--port", "0", *args)
    assert r.returncode == 2 and f"{args[0]} must be at least 1" in r.stderr, r.stderr


def test_a_stream_is_still_readable_after_the_body_deadline(loop_model):
    """A request whose body came whole is never cut by the body deadline, however long its
    response takes to read."""
    for server in _server(models=[str(loop_model)], body_timeout_s=1.0):
        _read_a_stream_slowly(server)


def _read_a_stream_slowly(server: Any) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        with http.stream(
            "POST",
            "/v1/chat/completions",
            json={"model": "loop-hermes", "stream": True, "messages": U, "tools": TOOLS},
        ) as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            first = next(lines)
            time.sleep(1.5)  # past both deadlines
            rest = "\n".join(lines)
    assert first.startswith("data: ") and "[DONE]" in rest and json.loads(first[6:])["object"]
