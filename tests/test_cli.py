"""The headless CLI, run as a real subprocess (`python -m app ...`) on real GGUF files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QWEN3 = (REPO / "tests" / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja").read_text()
QWEN_USER = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>", "</tool_response>"]


def run_app(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def qwen3_tiny(tiny_gguf) -> Path:
    return tiny_gguf(
        chat_template=QWEN3,
        control_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        user_tokens=QWEN_USER,
        bos=None,
        eos="<|im_end|>",
    )


def test_inspect_prints_metadata_and_detected_format(qwen3_tiny):
    proc = run_app("inspect", str(qwen3_tiny))
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(None, 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines["architecture"] == "llama"
    assert lines["quantization"] == "F32"
    assert lines["eos_token"] == "<|im_end|>"
    assert lines["tool_format"] == "hermes"
    proc = run_app("inspect", "--json", str(qwen3_tiny))
    info = json.loads(proc.stdout)
    assert info["tool_format"] == "hermes" and info["chat_template"] == QWEN3
    assert info["context_length"] == 4096 and info["parameters"] > 0


def test_inspect_rejects_a_corrupt_file_clearly(tmp_path, qwen3_tiny):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(qwen3_tiny.read_bytes()[:5000])
    proc = run_app("inspect", str(bad))
    assert proc.returncode == 1
    assert str(bad) in proc.stderr and "truncated" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_chat_streams_a_reply_and_json_events(tmp_path, qwen3_tiny):
    grammar = tmp_path / "reply.gbnf"
    grammar.write_text('root ::= "Hello from the engine."\n')
    proc = run_app(
        "chat",
        "--model",
        str(qwen3_tiny),
        "--grammar-file",
        str(grammar),
        "--threads",
        "1",
        "--n-ctx",
        "4096",
        "hi",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hello from the engine."
    assert "[done] stop" in proc.stderr

    proc = run_app(
        "chat",
        "--model",
        str(qwen3_tiny),
        "--grammar-file",
        str(grammar),
        "--threads",
        "1",
        "--n-ctx",
        "4096",
        "--json",
        "--tools",
        "none",
        "hi",
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert "".join(e["text"] for e in events if e["type"] == "text") == "Hello from the engine."
    assert events[-1]["type"] == "done" and events[-1]["finish_reason"] == "stop"
    assert events[-1]["generated_tokens"] == len("Hello from the engine.")


def test_chat_max_tokens_and_tool_format_none(tmp_path, qwen3_tiny):
    grammar = tmp_path / "g.gbnf"
    grammar.write_text('root ::= "abcdefghijklmnopqrstuvwxyz"\n')
    proc = run_app(
        "chat",
        "--model",
        str(qwen3_tiny),
        "--grammar-file",
        str(grammar),
        "--max-tokens",
        "5",
        "--tool-format",
        "none",
        "--json",
        "--threads",
        "1",
        "--n-ctx",
        "4096",
        "hi",
    )
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert not [e for e in events if e["type"] == "notice"]
    assert events[-1]["finish_reason"] == "length" and events[-1]["generated_tokens"] == 5


def test_chat_errors_are_clear(tmp_path, qwen3_tiny):
    proc = run_app("chat", "--model", str(tmp_path / "missing.gguf"), "hi")
    assert proc.returncode == 1 and "missing.gguf" in proc.stderr and "file not found" in proc.stderr
    bad = tmp_path / "bad.gbnf"
    bad.write_text('root ::= "unterminated\n')
    proc = run_app(
        "chat",
        "--model",
        str(qwen3_tiny),
        "--grammar-file",
        str(bad),
        "--threads",
        "1",
        "--n-ctx",
        "4096",
        "hi",
    )
    assert proc.returncode == 1 and "grammar" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_app("chat", "--model", str(qwen3_tiny), "--tool-format", "klingon", "hi")
    assert proc.returncode == 2 and "klingon" in proc.stderr


@pytest.mark.live
def test_live_chat_with_smollm2(smollm2_path):
    proc = run_app(
        "chat",
        "--model",
        str(smollm2_path),
        "--max-tokens",
        "32",
        "--temperature",
        "0",
        "--system",
        "Answer in one short sentence.",
        "--n-ctx",
        "1024",
        "--json",
        "What is the capital of France?",
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    notices = [e for e in events if e["type"] == "notice"]
    assert [n["code"] for n in notices] == ["no_tool_format"] and notices[0]["setting"] == "chat.tool_format"
    reply = "".join(e["text"] for e in events if e["type"] == "text")
    assert "Paris" in reply
    proc = run_app("inspect", str(smollm2_path))
    assert "tool_format      none" in proc.stdout
