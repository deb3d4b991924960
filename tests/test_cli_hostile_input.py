"""The CLI against hostile input: one-line errors, no tracebacks, no hangs (real processes, real models)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tool_done import write_tool_done_model

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        errors="replace",
    )


def hermes_call(arguments: str) -> str:
    return f'<tool_call>\n{{"name": "calculator", "arguments": {arguments}}}\n</tool_call>'


def tool_call_model(tmp_path: Path, call: str) -> Path:
    """Qwen 2.5's template; the first reply is the one token ``call``, the next "Done."."""
    return write_tool_done_model(tmp_path / "call.gguf", call, "Done.")


@pytest.mark.parametrize(
    "call, tool_format, words",
    [
        (hermes_call('{"expression": "\\ud800"}'), "auto", "lone surrogate"),
        ("[calculator(expression=0x" + "f" * 3600 + ")]", "pythonic", "4300 digits"),
    ],
)
def test_h6_h7_unencodable_arguments_end_in_a_tool_error_and_the_turn_goes_on(
    tmp_path, call, tool_format, words
):
    model = tool_call_model(tmp_path, call)
    # A grammar of our own (any printable text) keeps the scripted reply free of the engine's
    # call constraint, as a model writing outside the constraint would.
    grammar = tmp_path / "any.gbnf"
    grammar.write_text("root ::= [ -~\\n]*\n")
    for mode in (["--json"], []):
        proc = run_cli(
            "chat",
            *mode,
            "--model",
            str(model),
            "--tool-format",
            tool_format,
            "--n-ctx",
            "16384",
            "--max-tokens",
            "50",
            "--grammar-file",
            str(grammar),
            "hi",
        )
        assert proc.returncode == 0, proc.stderr[-800:]
        assert "Traceback" not in proc.stderr
        out = proc.stdout + proc.stderr
        assert words in out
        assert "Done." in out  # the next round rendered the history and answered (it was poisoned before)
        if mode:
            for line in proc.stdout.splitlines():
                json.loads(line)


def test_h17_grammar_file_that_is_a_device_or_a_fifo_is_refused(tmp_path):
    fifo = tmp_path / "g.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        proc = run_cli(
            "chat", "--model", str(tmp_path / "unused.gguf"), "--grammar-file", path, "hi", timeout=60
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().count("\n") == 0 and "not a regular file" in proc.stderr, proc.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_h17_invalid_temperature_is_a_one_line_error(tmp_path, value):
    proc = run_cli(
        "chat", "--model", str(tmp_path / "unused.gguf"), f"--temperature={value}", "hi", timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--temperature" in proc.stderr, proc.stderr


def test_h17_inspect_into_a_closed_pipe_exits_quietly(tmp_path):
    from app.engine.models.tiny import write_tiny_gguf

    model = write_tiny_gguf(tmp_path / "m.gguf", chat_template="{{ messages[0].content }}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "inspect", str(model)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before the first line (``| head -0``)
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.wait(60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_h17_inspect_warns_when_the_template_never_renders(tmp_path):
    from app.engine.models.tiny import write_tiny_gguf

    model = write_tiny_gguf(tmp_path / "m.gguf", chat_template="{{ raise_exception('no way') }}")
    proc = run_cli("inspect", str(model), timeout=60)
    assert proc.returncode == 0
    assert "warning: the chat template does not render: template raised an exception: no way" in proc.stderr
    assert "template_error" in proc.stdout


@pytest.mark.parametrize(
    "command, option, value, words",
    [
        ("serve", "--parallel", "0", "--parallel must be 1 to 256"),
        ("serve", "--parallel", "257", "--parallel must be 1 to 256"),
        ("serve", "--n-ctx", "0", "argument --n-ctx: must be 1 or more, got 0"),
        ("serve", "--n-ctx", "-256", "argument --n-ctx: must be 1 or more, got -256"),
        ("serve", "--threads", "0", "argument --threads: must be 1 or more (or -1: automatic), got 0"),
        ("serve", "--threads", "-2", "argument --threads: must be -1 or more, got -2"),
        ("serve", "--gpu-layers", "-2", "argument --gpu-layers: must be -1 or more, got -2"),
        ("chat", "--n-ctx", "0", "argument --n-ctx: must be 1 or more, got 0"),
        ("check", "--threads", "x", "argument --threads: not a whole number: 'x'"),
    ],
)
def test_a_load_option_no_model_can_take_is_refused_before_anything_starts(
    tmp_path, command, option, value, words
):
    # serve used to start with --n-ctx 0 and answer every request with a 500, and to take
    # --parallel 100000 and fail each load with llama.cpp's bare "Failed to create llama_context"
    args = ["--model", str(tmp_path / "unused.gguf"), f"{option}={value}"]
    proc = run_cli(command, *args, *(["hi"] if command == "chat" else []), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_threads_minus_one_is_automatic_as_llama_cpp_reads_it():
    from app.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["serve", "--threads", "-1"]).threads is None  # automatic, as when it is left out
    assert parse(["serve"]).threads is None
    assert parse(["chat", "--model", "m.gguf", "--threads", "3", "hi"]).threads == 3
