"""Built-in tools through the real dispatcher: calculator, clock, and the confined workspace."""

from __future__ import annotations

import os
import re
import socket
from datetime import UTC, datetime, timedelta

import pytest

from app.tools import (
    FILE_TOOL_NAMES,
    Dispatcher,
    ToolCall,
    ToolRegistry,
    Workspace,
    WorkspaceError,
    register_builtin_tools,
)
from app.tools.calculator import evaluate
from app.tools.cancel import CallControl, ToolCancelled, run_under


def run(dispatcher: Dispatcher, name: str, **arguments):
    return dispatcher.dispatch(ToolCall("c", name, arguments))


@pytest.fixture
def calc() -> Dispatcher:
    reg = ToolRegistry()
    register_builtin_tools(reg)
    return Dispatcher(reg)


# -- calculator ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("2 ** 10", "1024"),
        ("2^10", "1024"),
        ("-3 + +4", "1"),
        ("7 // 2", "3"),
        ("7 % 4", "3"),
        ("10 / 4", "2.5"),
        ("sqrt(16)", "4"),
        ("sqrt(2)", "1.4142135623731"),
        ("round(sin(pi / 2), 6)", "1"),
        ("log(e)", "1"),
        ("log10(1000)", "3"),
        ("factorial(20)", "2432902008176640000"),
        ("max(3, 9, 4)", "9"),
        ("2 ** 100", str(2**100)),
    ],
)
def test_calculator_computes(calc, expression, expected):
    result = run(calc, "calculator", expression=expression)
    assert result.content == expected, result.error


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("__import__('os').system('echo hi')", "Unknown function '__import__('os').system'"),
        ("__import__('os')", "Unknown function '__import__'"),
        ("().__class__.__bases__", "is not allowed"),
        ("open('/etc/passwd')", "Unknown function 'open'"),
        ("x + 1", "Unknown name 'x'"),
        ("'a' * 3", "Only numbers are allowed"),
        ("[1, 2]", "is not allowed"),
        ("lambda: 1", "is not allowed"),
        ("1 / 0", "Division by zero"),
        ("9 ** 9 ** 9", "too large"),
        ("10 ** 100000", "too large"),
        ("2.0 ** 5000", "too large for a floating-point number"),
        ("factorial(100000)", "limited"),
        ("sqrt(-1)", "cannot be computed"),
        ("1 +", "syntax error"),
        ("", "empty"),
        ("1" + "+1" * 400, "too"),
        ("sqrt", "is a function"),
    ],
)
def test_calculator_refuses_clearly(calc, expression, error):
    result = run(calc, "calculator", expression=expression)
    assert result.content is None
    assert error in result.error, result.error


def test_calculator_never_uses_eval(monkeypatch):
    import builtins

    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec must not be used")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    assert evaluate("3 * (2 + 1)") == 9


# -- clock ---------------------------------------------------------------------------------


def test_current_datetime(calc):
    utc = run(calc, "current_datetime", timezone="UTC").content
    stamp = re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", utc).group(0)
    assert abs(datetime.fromisoformat(stamp) - datetime.now(UTC)) < timedelta(minutes=5)
    assert utc.endswith("(UTC)")
    tokyo = run(calc, "current_datetime", timezone="Asia/Tokyo").content
    assert "+09:00" in tokyo
    assert run(calc, "current_datetime").ok
    bad = run(calc, "current_datetime", timezone="Mars/Olympus")
    assert bad.error == "Unknown time zone 'Mars/Olympus'. Use an IANA name such as 'Europe/Paris' or 'UTC'."
    assert run(calc, "current_datetime", timezone="../../etc/passwd").error.startswith("Unknown time zone")


# -- workspace -----------------------------------------------------------------------------


@pytest.fixture
def world(tmp_path):
    """A workspace folder next to an outside folder holding a secret."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("TOP SECRET\n")
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "notes.txt").write_text("alpha\nbeta\ngamma\ndelta\n")
    (ws / "main.py").write_text("def main():\n    return 42\n")
    return ws, outside, secret


def make_dispatcher(ws, *, approval=lambda request: "allow_once", max_read_bytes=None):
    reg = ToolRegistry()
    workspace = Workspace(ws) if max_read_bytes is None else Workspace(ws, max_read_bytes=max_read_bytes)
    register_builtin_tools(reg, workspace)
    return Dispatcher(reg, approval=approval)


def test_file_tools_work_inside_the_workspace(world):
    ws, _, _ = world
    d = make_dispatcher(ws)
    listing = run(d, "list_files").content
    assert "docs/" in listing and "main.py (" in listing
    assert "notes.txt" in run(d, "list_files", path="docs").content
    assert run(d, "read_file", path="docs/notes.txt", start_line=2, end_line=3).content == (
        "docs/notes.txt (lines 2-3 of 4):\nbeta\ngamma"
    )
    assert run(d, "read_file", path="main.py").content.endswith("return 42")
    assert run(d, "read_file", path="docs/notes.txt", start_line=9).error == (
        "start_line 9 is past the end of 'docs/notes.txt', which has 4 lines."
    )
    found = run(d, "search_files", query="gamma").content
    assert "docs/notes.txt:3: gamma" in found
    found = run(d, "search_files", query=r"ret\w+ \d+", regex=True).content
    assert "main.py:2: return 42" in found
    assert "invalid" in run(d, "search_files", query="(", regex=True).error
    wrote = run(d, "write_file", path="out/new.txt", content="hello")
    assert wrote.content == "Wrote 5 bytes to out/new.txt." and wrote.approval == "allowed_once"
    assert (ws / "out" / "new.txt").read_text() == "hello"
    assert run(d, "write_file", path="main.py", content="x = 1\n").ok
    assert (ws / "main.py").read_text() == "x = 1\n"


def test_write_file_asks_and_a_denial_writes_nothing(world):
    ws, _, _ = world
    requests = []

    def deny(request):
        requests.append(request)
        return "deny"

    result = run(make_dispatcher(ws, approval=deny), "write_file", path="a.txt", content="data")
    assert result.error == "The user denied permission to run 'write_file'."
    assert requests[0].arguments == {"path": "a.txt", "content": "data"}
    assert not (ws / "a.txt").exists()


def test_no_workspace_means_no_file_tools(tmp_path):
    reg = ToolRegistry()
    register_builtin_tools(reg)
    assert reg.names() == ["calculator", "current_datetime"]
    register_builtin_tools(reg, tmp_path)
    assert set(FILE_TOOL_NAMES) <= set(reg.names())
    reg.set_enabled("calculator", False)
    register_builtin_tools(reg, None)  # the user cleared the workspace setting
    assert reg.names() == ["calculator", "current_datetime"]
    assert not reg.is_enabled("calculator")
    result = Dispatcher(reg).dispatch(ToolCall("c", "read_file", {"path": "x"}))
    assert result.error.startswith("Unknown tool 'read_file'")
    with pytest.raises(WorkspaceError, match="does not exist"):
        register_builtin_tools(reg, tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError, match="not a folder"):
        Workspace(tmp_path / "file")


def _escapes(ws, outside, secret):
    """Build the hostile entries inside the workspace and return (tool, arguments) attempts."""
    (ws / "link_out").symlink_to(outside, target_is_directory=True)
    (ws / "link_secret").symlink_to(secret)
    (ws / "dangling_out").symlink_to(outside / "not-yet.txt")
    (ws / "loop_a").symlink_to(ws / "loop_b")
    (ws / "loop_b").symlink_to(ws / "loop_a")
    (ws / "zero").symlink_to("/dev/zero")
    (ws / "docs" / "up").symlink_to("../..")
    os.mkfifo(ws / "fifo")
    os.link(secret, ws / "hardlink")
    with open(ws / "huge.bin", "wb") as fh:
        fh.truncate(5 * 1024 * 1024)  # sparse: 5 MB over the read limit, no real disk use
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "sock"))
    read = "read_file"
    return sock, [
        (read, {"path": "../outside/secret.txt"}),
        (read, {"path": "docs/../../outside/secret.txt"}),
        (read, {"path": str(secret)}),
        (read, {"path": "/etc/passwd"}),
        (read, {"path": "~/.bashrc"}),
        (read, {"path": "~root/.profile"}),
        (read, {"path": "link_out/secret.txt"}),
        (read, {"path": "link_secret"}),
        (read, {"path": "docs/up/outside/secret.txt"}),
        (read, {"path": "loop_a"}),
        (read, {"path": "loop_a/x"}),
        (read, {"path": "zero"}),
        (read, {"path": "fifo"}),
        (read, {"path": "sock"}),
        (read, {"path": "hardlink"}),
        (read, {"path": "huge.bin"}),
        (read, {"path": "main.py\x00.txt"}),
        (read, {"path": "..\\outside\\secret.txt"}),
        (read, {"path": "C:\\Windows\\win.ini"}),
        (read, {"path": "C:/Windows/win.ini"}),
        (read, {"path": "\\\\server\\share\\secret.txt"}),
        (read, {"path": "//server/share/secret.txt"}),
        (read, {"path": "docs"}),
        (read, {"path": "a/" * 600}),
        ("list_files", {"path": ".."}),
        ("list_files", {"path": "link_out"}),
        ("list_files", {"path": "/"}),
        ("search_files", {"query": "SECRET", "path": ".."}),
        ("search_files", {"query": "SECRET", "path": "link_out"}),
        ("write_file", {"path": "../outside/pwned.txt", "content": "x"}),
        ("write_file", {"path": "link_secret", "content": "overwritten"}),
        ("write_file", {"path": "link_out/pwned.txt", "content": "x"}),
        ("write_file", {"path": "dangling_out", "content": "x"}),
        ("write_file", {"path": "hardlink", "content": "overwritten"}),
        ("write_file", {"path": str(outside / "pwned.txt"), "content": "x"}),
        ("write_file", {"path": "fifo", "content": "x"}),
        ("write_file", {"path": "docs/up/outside/pwned.txt", "content": "x"}),
    ]


def test_escape_attempts_are_all_refused(world):
    ws, outside, secret = world
    sock, attempts = _escapes(ws, outside, secret)
    try:
        assert len(attempts) >= 15
        d = make_dispatcher(ws, max_read_bytes=1024 * 1024)
        for tool, arguments in attempts:
            result = d.dispatch(ToolCall("c", tool, arguments))
            assert result.error is not None, (tool, arguments, result.content)
            assert "TOP SECRET" not in result.to_model_text(), (tool, arguments)
            # one clear sentence, no traceback
            assert "Traceback" not in result.error and "\n" not in result.error, result.error
        # the whole-workspace search does not follow links out either
        found = run(d, "search_files", query="SECRET").to_model_text()
        assert "TOP SECRET" not in found
        listing = run(d, "list_files").content
        assert "link_out (symbolic link)" in listing and "fifo (special file)" in listing
    finally:
        sock.close()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert secret.read_text() == "TOP SECRET\n"


def test_escape_messages_say_why(world):
    ws, outside, secret = world
    sock, _ = _escapes(ws, outside, secret)
    try:
        d = make_dispatcher(ws, max_read_bytes=1024 * 1024)
        expect = {
            "../outside/secret.txt": "goes up out of the folder",
            "/etc/passwd": "is an absolute path",
            "~/.bashrc": "home folder",
            "link_out/secret.txt": "leads outside the workspace",
            "loop_a": "symbolic link loop",
            "zero": "leads outside the workspace",
            "fifo": "not a regular file",
            "hardlink": "more than one hard link",
            "huge.bin": "over the 1.0 MB limit",
            "C:\\Windows\\win.ini": "drive letter",
            "\\\\server\\share\\secret.txt": "network (UNC) path",
            "..\\outside\\secret.txt": "backslash",
            "main.py\x00.txt": "NUL character",
            "docs": "is a folder",
        }
        for path, words in expect.items():
            error = run(d, "read_file", path=path).error
            assert words in error, (path, error)
    finally:
        sock.close()


# -- edge cases: non-finite numbers, empty paths, hostile regexes, writes stopped in time ----


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("1e308 * 10", "overflows to infinity"),
        ("1e308 + 1e308", "overflows to infinity"),
        ("1 / (1e308 * 10)", "overflows to infinity"),
        ("inf", "'inf' is not a finite number"),
        ("-inf", "'inf' is not a finite number"),
        ("nan", "'nan' is not a finite number"),
        ("1e999", "overflows to infinity"),
    ],
)
def test_calculator_refuses_non_finite_values(calc, expression, error):
    result = run(calc, "calculator", expression=expression)
    assert result.content is None
    assert error in result.error, result.error


def test_calculator_missing_expression_names_its_type(calc):
    assert calc.dispatch(ToolCall("c", "calculator", {})).error == (
        "Missing required parameter 'expression': expected a string, got nothing."
    )


def test_empty_paths_are_refused_not_taken_for_the_root(world):
    ws, _, _ = world
    d = make_dispatcher(ws)
    for blank in ("", "   "):
        for tool, arguments in (
            ("read_file", {"path": blank}),
            ("write_file", {"path": blank, "content": "x"}),
            ("list_files", {"path": blank}),
            ("search_files", {"query": "alpha", "path": blank}),
        ):
            result = d.dispatch(ToolCall("c", tool, arguments))
            assert (
                result.error
                == 'The path is empty; give a path relative to the workspace ("." is the workspace folder).'
            )
    assert sorted(p.name for p in ws.iterdir()) == ["docs", "main.py"]
    # the defaults (and an explicit ".") still mean the workspace folder
    assert run(d, "list_files").content.startswith(".: 2 entries")
    assert run(d, "list_files", path=".").ok
    assert "docs/notes.txt:1: alpha" in run(d, "search_files", query="alpha").content


def test_hostile_regex_stops_with_a_clear_error_and_never_freezes_other_threads(tmp_path):
    import threading
    import time

    (tmp_path / "a.txt").write_text("a" * 3000 + "!\n")
    reg = ToolRegistry()
    register_builtin_tools(reg, Workspace(tmp_path, search_timeout_s=1.0))
    d = Dispatcher(reg, timeout_s=60)
    gaps: list[float] = []
    stop = threading.Event()

    def heartbeat():
        last = time.monotonic()
        while not stop.wait(0.005):
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        result = run(d, "search_files", query="(a+)+$", regex=True)  # exponential backtracking
    finally:
        stop.set()
        beat.join()
    assert result.content is None
    assert result.error.startswith(
        "The regular expression took too long (over 1 s of matching, stopped at a.txt:1)"
    )
    assert "backtracks catastrophically" in result.error
    # The match ran for the whole call, with the GIL released: the heartbeat kept ticking, never
    # held up for more than a part of it (the `re` engine held every thread for all of it; the
    # margin is for a busy machine's scheduler).
    assert len(gaps) >= 10
    assert max(gaps) < result.duration_s / 2, (max(gaps), result.duration_s)


def test_regex_search_bounds_the_pattern_and_the_line(world):
    ws, _, _ = world
    (ws / "long.txt").write_text("needle " + "x" * 6000 + " needle\n")
    d = make_dispatcher(ws)
    too_long = run(d, "search_files", query="a" * 1001, regex=True)
    assert too_long.error == "The query is too long (more than 1000 characters)."
    assert run(d, "search_files", query="(unclosed", regex=True).error.startswith(
        "The regular expression is invalid"
    )
    found = run(d, "search_files", query=r"needle$", regex=True).content
    assert found.startswith("No matches")  # the end of the line is past the 4096 characters searched
    assert "1 lines longer than 4096 characters were searched only in their first 4096" in found
    assert "long.txt:1" in run(d, "search_files", query=r"^needle", regex=True).content
    assert "long.txt:1" in run(d, "search_files", query=" needle").content  # plain text: the whole line


def test_a_write_stopped_before_its_commit_point_leaves_the_workspace_unchanged(world):
    ws, _, _ = world
    workspace = Workspace(ws)
    before = {p.relative_to(ws): p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    for target in ("main.py", "new/folder/file.txt"):
        stopped = CallControl()
        stopped.cancel()  # the dispatcher's time ran out while the tool was preparing
        with pytest.raises(ToolCancelled):
            run_under(stopped, lambda target=target: workspace.write_file(target, "changed"))
    after = {p.relative_to(ws): p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    assert after == before  # no new content, no temporary file, no new folder
    assert not (ws / "new").exists()
    # once committed, the write goes through even if the time runs out afterwards
    live = CallControl()
    assert run_under(live, lambda: workspace.write_file("new/folder/file.txt", "hello")) == (
        "Wrote 5 bytes to new/folder/file.txt."
    )
    assert live.committed and live.cancel() is False
    assert (ws / "new/folder/file.txt").read_text() == "hello"
    assert [p.name for p in ws.rglob(".callisto-*")] == []
