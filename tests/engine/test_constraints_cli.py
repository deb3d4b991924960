"""--tool-choice, --no-parallel-tool-calls and --response-format through the real CLI (a
subprocess on a tiny random-weight model: only the constraint shapes what it writes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content or '' }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def run_app(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=180
    )


@pytest.fixture
def tiny(tiny_gguf) -> Path:
    return tiny_gguf(
        chat_template=TEMPLATE,
        control_tokens=["<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        user_tokens=["<tool_call>", "</tool_call>"],
        bos="<s>",
        eos="<|im_end|>",
        seed=11,
    )


def events(proc: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def test_an_undeclared_tool_name_exits_2_with_one_line(tiny):
    proc = run_app(
        "chat", "--model", str(tiny), "--tool-format", "hermes", "--tool-choice", "book_flight", "hi"
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'book_flight', which is not a declared tool" in lines[0], proc.stderr
    assert proc.stdout == ""


def test_a_named_tool_choice_gives_that_held_call(tiny):
    proc = run_app(
        "chat",
        "--model",
        str(tiny),
        "--tool-format",
        "hermes",
        "--tool-choice",
        "current_datetime",
        "--no-parallel-tool-calls",
        "--max-tokens",
        "300",
        "--max-rounds",
        "2",
        "--seed",
        "4",
        "--temperature",
        "1",
        "--json",
        "what time is it?",
    )
    assert proc.returncode == 0, proc.stderr
    started = [e for e in events(proc) if e["type"] == "tool_call_started"]
    assert started and started[0]["name"] == "current_datetime", proc.stdout
    assert started[0]["constrained"] == "tool current_datetime, hermes"
    finished = [e for e in events(proc) if e["type"] == "tool_call_finished"]
    assert finished and finished[0]["error"] is None, finished


def test_none_offers_no_tools_and_calls_nothing(tiny):
    proc = run_app(
        "chat",
        "--model",
        str(tiny),
        "--tool-format",
        "hermes",
        "--tool-choice",
        "none",
        "--max-tokens",
        "30",
        "--seed",
        "4",
        "--json",
        "what time is it?",
    )
    assert proc.returncode == 0, proc.stderr
    assert not [e for e in events(proc) if e["type"].startswith("tool_call")]
    assert events(proc)[-1]["constraint"] is None


def test_response_format_schema_file_holds_the_reply(tiny, tmp_path):
    schema = {
        "type": "object",
        "properties": {"answer": {"enum": ["yes", "no"]}, "n": {"type": "integer"}},
        "required": ["answer", "n"],
        "additionalProperties": False,
    }
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    proc = run_app(
        "chat",
        "--model",
        str(tiny),
        "--tools",
        "none",
        "--response-format",
        str(path),
        "--max-tokens",
        "200",
        "--seed",
        "2",
        "--temperature",
        "1",
        "--json",
        "answer in JSON",
    )
    assert proc.returncode == 0, proc.stderr
    text = "".join(e["text"] for e in events(proc) if e["type"] == "text")
    jsonschema.validate(json.loads(text), schema)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = run_app("chat", "--model", str(tiny), "--response-format", str(bad), "hi")
    assert proc.returncode == 2 and "is not JSON" in proc.stderr
