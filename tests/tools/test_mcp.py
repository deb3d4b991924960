"""MCP servers for real: stdio servers written in tests/tools, started with the SDK, called
through the same dispatcher and approval, misbehaving in every way a server can."""

from __future__ import annotations

import json
import sys
import time

import pytest

from app.tools import Dispatcher, ToolCall, ToolRegistry, register_builtin_tools
from app.tools.mcp import McpConfigError, McpManager, McpServerConfig, load_mcp_config, parse_mcp_config
from tests.support.mcp_servers import RAW_SERVER, alive, server_argv


def server(name: str, mode: str = "good", **env: str) -> McpServerConfig:
    command, *args = server_argv(mode)
    return McpServerConfig(name=name, command=command, args=tuple(args), env=dict(env))


def wait_gone(pid: int, seconds: float = 30.0) -> bool:  # returns as soon as it is gone
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


# -- mcp.json ------------------------------------------------------------------------------


def test_mcp_json_in_the_common_shape(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {
                        "command": "npx",
                        "args": ["-y", "server-filesystem", "/tmp"],
                        "env": {"DEBUG": "1"},
                    },
                    "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer t"}},
                    "off": {"command": "x", "disabled": True},
                }
            }
        )
    )
    files, remote, off = load_mcp_config(path)
    assert (files.name, files.command, files.args, files.env, files.transport) == (
        "files",
        "npx",
        ("-y", "server-filesystem", "/tmp"),
        {"DEBUG": "1"},
        "stdio",
    )
    assert remote.url == "http://127.0.0.1:9/mcp" and remote.transport == "http"
    assert remote.headers == {"Authorization": "Bearer t"}
    assert off.disabled
    assert load_mcp_config(tmp_path / "missing.json") == []


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "top level must be an object"),
        ('{"servers": 1}', '"mcpServers" must be an object'),
        ('{"other": {}}', 'missing the "mcpServers"'),
        ('{"mcpServers": {"a": {}}}', "server 'a' needs a \"command\""),
        ('{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}', "both"),
        ('{"mcpServers": {"a": {"command": "x", "args": "--flag"}}}', '"args" must be a list'),
        ('{"mcpServers": {"a": {"url": "ftp://h"}}}', "http:// or https://"),
        ('{"mcpServers": {"a": {"command": "x", "env": ["A=1"]}}}', '"env" must be an object'),
    ],
)
def test_bad_mcp_json_is_a_clear_error(tmp_path, document, message):
    path = tmp_path / "mcp.json"
    path.write_text(document)
    with pytest.raises(McpConfigError, match="mcp.json") as info:
        load_mcp_config(path)
    assert message in str(info.value)
    assert path.read_text() == document  # bad input loses nothing


def test_parse_rejects_duplicate_names():
    configs = parse_mcp_config({"mcpServers": {"a": {"command": "x"}}}) * 2
    with pytest.raises(McpConfigError, match="two MCP servers are named 'a'"):
        McpManager(configs)


# -- a healthy pair of servers ---------------------------------------------------------------


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    pidfile = tmp_path_factory.mktemp("pids") / "good.pid"
    manager = McpManager(
        [
            server("good", MCP_TEST_PIDFILE=str(pidfile)),
            server("other", "other"),
            server("broken", "exit_on_start"),
            McpServerConfig(name="missing", command="/nonexistent/mcp-server"),
            McpServerConfig(name="off", command="/nonexistent/x", disabled=True),
            McpServerConfig(name="down", url="http://127.0.0.1:9/mcp"),
        ],
        start_timeout_s=20,
        call_timeout_s=10,
    )
    manager.start()
    yield manager, int(pidfile.read_text())
    manager.close()


def test_servers_start_and_failures_are_reported(pair):
    manager, _ = pair
    states = {s.name: (s.state, s.error) for s in manager.statuses()}
    assert states["good"] == ("running", None)
    assert states["other"] == ("running", None)
    assert states["broken"][0] == "failed"
    assert "fatal: missing API key" in states["broken"][1]  # the server's own last words
    assert states["missing"] == ("failed", "its command '/nonexistent/mcp-server' was not found")
    assert states["off"] == ("stopped", None)
    assert states["down"][0] == "failed"
    assert states["down"][1].startswith("cannot use http://127.0.0.1:9/mcp (")
    assert manager.status("good").tools[:2] == ("add", "remember")


def test_tools_are_registered_and_namespaced_on_clashes(pair):
    manager, _ = pair
    registry = ToolRegistry()
    register_builtin_tools(registry)
    manager.register_tools(registry)
    names = registry.names()
    # 'add' exists on both servers; 'calculator' clashes with the built-in
    assert {"good.add", "other.add", "other.calculator", "remember", "hang"} <= set(names)
    assert "add" not in names
    assert registry.get("calculator").source == "builtin"
    assert registry.get("other.calculator").source == "mcp:other"
    add = registry.get("good.add")
    assert add.parameters["required"] == ["a", "b"]
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.description == "Add two integers."
    # N6: a server's annotations are hints, not permissions: every MCP tool asks until allowed
    assert add.side_effects is True and add.trust.hints == ("only reads",)
    assert registry.get("remember").side_effects is True and registry.get("remember").trust.hints == ()
    assert (add.trust.key, registry.get("other.add").trust.key) == ("mcp:good/add", "mcp:other/add")
    rendered = {t["function"]["name"] for t in registry.openai_tools()}
    assert "good.add" in rendered


def test_calls_go_through_the_same_dispatcher_and_approval(pair):
    manager, _ = pair
    registry = ToolRegistry()
    register_builtin_tools(registry)
    manager.register_tools(registry)
    asked = []

    def approve(request):
        asked.append(request)
        return "deny" if request.arguments.get("note") == "no" else "allow_once"

    d = Dispatcher(registry, approval=approve)
    assert d.dispatch(ToolCall("1", "good.add", {"a": 2, "b": 3})).content == "5"
    assert d.dispatch(ToolCall("2", "other.add", {"a": 2, "b": 3})).content == "1005"
    assert d.dispatch(ToolCall("3", "other.calculator", {"expression": "1+1"})).content == "other:1+1"
    assert d.dispatch(ToolCall("4", "calculator", {"expression": "1+1"})).content == "2"
    # the MCP tools asked, even those whose server says they only read; the built-in calculator did not
    assert [r.tool_name for r in asked] == ["good.add", "other.add", "other.calculator"]
    asked.clear()
    ok = d.dispatch(ToolCall("5", "remember", {"note": "milk"}))
    assert (ok.content, ok.approval) == ("stored: milk", "allowed_once")
    assert asked[0].source == "mcp:good" and asked[0].arguments == {"note": "milk"}
    denied = d.dispatch(ToolCall("6", "remember", {"note": "no"}))
    assert denied.approval == "denied" and denied.error == "The user denied permission to run 'remember'."
    bad = d.dispatch(ToolCall("7", "good.add", {"a": "two", "b": 3}))
    assert bad.error == "Parameter 'a' must be an integer, got string \"two\"."
    failing = d.dispatch(ToolCall("8", "fail", {"reason": "nope"}))
    assert failing.error is not None and failing.content is None
    big = Dispatcher(registry, approval=approve, result_budget=500).dispatch(
        ToolCall("9", "big", {"n": 3000})
    )
    assert big.truncated and "of 3000 characters" in big.content
    assert manager.status("good").state == "running"


def test_close_stops_the_servers(tmp_path):
    pidfile = tmp_path / "pid"
    manager = McpManager([server("solo", MCP_TEST_PIDFILE=str(pidfile))], call_timeout_s=10)
    with manager:
        pid = int(pidfile.read_text())
        assert alive(pid)
        assert manager.call("solo", "add", {"a": 1, "b": 1}) == "2"
    assert wait_gone(pid)
    assert manager.status("solo").state == "stopped"
    manager.close()  # twice is fine


# -- misbehaving servers ---------------------------------------------------------------------


def _dispatcher(manager: McpManager) -> tuple[Dispatcher, ToolRegistry]:
    registry = ToolRegistry()
    manager.register_tools(registry)
    return Dispatcher(registry, approval=lambda r: "allow_once"), registry


def test_server_crashing_mid_call(tmp_path):
    pidfile = tmp_path / "pid"
    with McpManager(
        [server("c", MCP_TEST_PIDFILE=str(pidfile)), server("o", "other")], call_timeout_s=10
    ) as m:
        d, _ = _dispatcher(m)
        result = d.dispatch(ToolCall("1", "crash", {}))
        assert result.error.startswith("MCP server 'c' crashed or closed the connection")
        assert "it was marked failed" in result.error
        assert m.status("c").state == "failed"
        assert wait_gone(int(pidfile.read_text()))
        # the chat goes on: the failed server's tools answer clearly, the other server still works
        again = d.dispatch(ToolCall("2", "c.add", {"a": 1, "b": 2}))
        assert again.error.startswith("MCP server 'c' is not running (crashed")
        assert d.dispatch(ToolCall("3", "o.add", {"a": 1, "b": 2})).content == "1003"


@pytest.mark.slow
def test_server_hanging_on_start():
    # The limit leaves a real server time to start on a loaded machine (1.5 s was not enough).
    with McpManager([server("slow", "hang_on_start"), server("fine")], start_timeout_s=6) as m:
        assert m.status("slow").state == "failed"
        assert m.status("slow").error == "did not start within 6 s"
        assert m.status("fine").state == "running"


@pytest.mark.slow
def test_servers_hanging_or_writing_garbage_fail_alone(tmp_path):
    """Hang, garbage on the wire, an invalid result: each is a clear error result, that server
    is marked failed and stopped, and the others go on. (One manager, so they stop in parallel.)"""
    pidfile = tmp_path / "pid"
    raw = (RAW_SERVER,)
    configs = [
        server("h", MCP_TEST_PIDFILE=str(pidfile)),
        McpServerConfig("g", sys.executable, raw),
        McpServerConfig("b", sys.executable, raw),
        server("o", "other"),
    ]
    with McpManager(configs, call_timeout_s=1) as m:
        d, _ = _dispatcher(m)
        assert [s.state for s in m.statuses()] == ["running"] * 4
        assert d.dispatch(ToolCall("1", "g.echo", {"text": "hi"})).content == "hi"
        refused = d.dispatch(ToolCall("2", "g.echo", {"text": 1}))
        assert refused.error == "Parameter 'text' must be a string, got integer 1."
        # a JSON-RPC error answer is the tool's error, not a failure of the server
        with pytest.raises(Exception, match="refused the call: Unknown tool: nope"):
            m.call("b", "nope", {})
        assert m.status("b").state == "running"

        hang = d.dispatch(ToolCall("3", "hang", {}))
        assert (
            hang.error == "MCP server 'h' did not answer a call to 'hang' within 1 s; it was marked failed."
        )
        garbage = d.dispatch(ToolCall("4", "g.garbage", {}))
        assert garbage.error == (
            "MCP server 'g' wrote output that is not MCP JSON-RPC: '<html>502 Bad Gateway</html>'; "
            "it was marked failed."
        )
        invalid = d.dispatch(ToolCall("5", "b.bad_result", {}))
        assert invalid.error == (
            "MCP server 'b' returned a result that is not a valid MCP tool result; it was marked failed."
        )
        assert {s.name: s.state for s in m.statuses()} == {
            "h": "failed",
            "g": "failed",
            "b": "failed",
            "o": "running",
        }
        assert d.dispatch(ToolCall("6", "o.add", {"a": 1, "b": 1})).content == "1002"
        assert d.dispatch(ToolCall("7", "g.echo", {"text": "hi"})).error.startswith(
            "MCP server 'g' is not running"
        )
    assert wait_gone(int(pidfile.read_text()))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_server_by_url(tmp_path):
    import socket
    import subprocess

    port = _free_port()
    log = open(tmp_path / "http-server.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(server_argv("http", str(port)), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp_path / "http-server.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP MCP server did not start listening"
                time.sleep(0.05)
        config = parse_mcp_config({"mcpServers": {"web": {"url": f"http://127.0.0.1:{port}/mcp"}}})
        with McpManager(config, call_timeout_s=10) as m:
            assert m.status("web").state == "running", m.status("web").error
            d, registry = _dispatcher(m)
            assert registry.get("add").source == "mcp:web"
            assert d.dispatch(ToolCall("1", "add", {"a": 20, "b": 22})).content == "42"
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
