"""Hostile tool calls: the calculator bounds its work, the workspace survives a symlink race."""

from __future__ import annotations

import os
import threading
import time

import pytest

from app.tools import Dispatcher, ToolCall, ToolRegistry, Workspace, register_builtin_tools
from app.tools.calculator import MAX_ROUND_DIGITS, evaluate
from app.tools.types import ToolError


@pytest.fixture
def calc() -> Dispatcher:
    reg = ToolRegistry()
    register_builtin_tools(reg)
    return Dispatcher(reg)


@pytest.mark.parametrize("expression", ["round(7, -5000)", "round(7, -100000000)", "round(1.5, 10**7)"])
def test_h5_round_digits_are_bounded_before_computing(expression):
    # round(7, -N) builds 10**N in C with the GIL held (499 s for 10**8): refused up front.
    with pytest.raises(ToolError, match=f"at most {MAX_ROUND_DIGITS} digits"):
        evaluate(expression)


def test_h5_round_still_rounds():
    assert evaluate("round(1234.5678, 2)") == 1234.57
    assert evaluate("round(1234, -2)") == 1200
    assert evaluate(f"round(7, -{MAX_ROUND_DIGITS})") == 0
    assert evaluate("round(2.5)") == 2
    with pytest.raises(ToolError, match="whole number of digits"):
        evaluate("round(2.5, 0.5)")


@pytest.mark.parametrize(
    "expression, words",
    [
        ("1 << 100000000", "not supported"),
        ("2 ** 100000000", "too large"),
        ("factorial(100000)", "limited to"),
        ("(10**1000) * (10**1000)", "too large"),
        ("0.5 ** 100000000", "exponent is too large"),
    ],
)
def test_h5_every_exploding_operation_is_refused_at_once(expression, words):
    start = time.process_time()
    with pytest.raises(ToolError, match=words):
        evaluate(expression)
    assert time.process_time() - start < 1.0


# -- workspace: the intermediate-folder race ------------------------------------------------


def _swapper(ws, outside, names, stop):
    """Keep swapping each ``ws/<name>`` folder with a symlink to ``outside``."""
    while not stop.is_set():
        for name in names:
            real, held = ws / name, ws / f".{name}-held"
            try:
                os.rename(real, held)
                os.symlink(outside, real)
                time.sleep(0)
                os.unlink(real)
                os.rename(held, real)
            except OSError:
                pass


def test_h4_intermediate_folder_race_never_escapes(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    (ws / "new").mkdir()
    outside.mkdir()
    (ws / "sub" / "secret.txt").write_text("inside\n")
    (outside / "secret.txt").write_text("OUTSIDE\n")
    workspace = Workspace(ws)
    stop = threading.Event()
    swapper = threading.Thread(target=_swapper, args=(ws, outside, ["sub", "new"], stop), daemon=True)
    swapper.start()
    reads = escaped_reads = writes = 0
    # 3 s of racing, and on a busy machine on until both ways ran (bounded: 60 s)
    least, most = time.monotonic() + 3.0, time.monotonic() + 60.0
    try:
        i = 0
        while time.monotonic() < least or (not (reads and writes) and time.monotonic() < most):
            i += 1
            try:
                text = workspace.read_file("sub/secret.txt")
                reads += 1
                escaped_reads += "OUTSIDE" in text
            except ToolError:
                pass
            try:
                workspace.write_file(f"new/w{i}.txt", "x")
                writes += 1
            except ToolError:
                pass
    finally:
        stop.set()
        swapper.join(5)
    landed_outside = sorted(p.name for p in outside.iterdir() if p.name != "secret.txt")
    assert escaped_reads == 0
    assert landed_outside == []
    assert reads > 0 and writes > 0  # the race really ran both ways
    assert (outside / "secret.txt").read_text() == "OUTSIDE\n"


def test_h4_a_swapped_folder_is_refused_with_a_clear_sentence(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE")
    workspace = Workspace(ws)
    real = workspace.resolve("sub/f.txt")  # checked while 'sub' is a real folder
    os.rmdir(ws / "sub")
    os.symlink(outside, ws / "sub")  # then swapped before the open
    with pytest.raises(ToolError, match="became a symbolic link"):
        workspace._open_dir(workspace._parts(real.parent), "sub/f.txt")


def test_h17_overlong_names_give_a_sentence_without_the_workspace_path(tmp_path):
    reg = ToolRegistry()
    register_builtin_tools(reg, Workspace(tmp_path))
    d = Dispatcher(reg)
    name = "a" * 300
    for tool, args in (
        ("list_files", {"path": name}),
        ("search_files", {"query": "x", "path": name}),
        ("read_file", {"path": name}),
    ):
        result = d.dispatch(ToolCall("c", tool, args))
        assert result.error is not None
        assert str(tmp_path) not in result.error, result.error
        assert "Tool failed" not in result.error, result.error


# -- arguments no encoder can take ------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, words",
    [
        ({"expression": "1 + \ud800"}, "lone surrogate escape"),
        ({"expression": "1", "\udc00": 1}, "lone surrogate escape"),
        ('{"expression": "\\ud800"}', "lone surrogate escape"),
        ({"expression": 16**3600}, "more than 4300 digits"),
        ('{"expression": ' + "9" * 5000 + "}", "more than 4300 digits"),
        ({"expression": [[["x\udfff"]]]}, "parameter 'expression[0][0][0]'"),
    ],
)
def test_h6_h7_unencodable_arguments_are_a_clear_tool_error(calc, arguments, words):
    result = calc.dispatch(ToolCall("c", "calculator", arguments))
    assert result.error is not None and words in result.error, result.error
    result.error.encode("utf-8")
    assert "\n" not in result.error and "Traceback" not in result.error


def test_h6_h7_scrubbed_copies_are_encodable_and_share_nothing():
    from app.tools.validation import scrub_value

    value = {"a": ["x\ud800y", 16**3600, {"b": ("\udfff",)}], "n": 5, "f": 1.5, "t": True, "z": None}
    clean = scrub_value(value)
    import json

    json.dumps(clean, ensure_ascii=False).encode("utf-8")
    assert clean == {
        "a": ["x\ufffdy", "<integer of more than 4300 digits>", {"b": ["\ufffd"]}],
        "n": 5,
        "f": 1.5,
        "t": True,
        "z": None,
    }
    clean["a"].append(1)
    assert len(value["a"]) == 3
