"""Issue 30: ``--think``, ``--no-think``, ``--reasoning-budget`` and ``--reasoning-effort`` in the
CLI, run as a real subprocess on a tiny model that thinks unless its template's switch is off
(``tests.support.thinker``), locally and against a real server (``--endpoint``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.thinker import ANSWER, THOUGHT, write_thinker

REPO = Path(__file__).resolve().parent.parent


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


@pytest.fixture(scope="module")
def thinker(tmp_path_factory) -> Path:
    return write_thinker(tmp_path_factory.mktemp("cli-thinker") / "thinker.gguf")


def chat(model: Path, *flags: str, max_tokens: int = 10) -> tuple[str, str, dict]:
    proc = run_app(
        "chat",
        "--model",
        str(model),
        "--tools",
        "none",
        "--threads",
        "1",
        "--n-ctx",
        "2048",
        "--max-tokens",
        str(max_tokens),
        "--json",
        *flags,
        "Hi",
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    reasoning = "".join(e["text"] for e in events if e["type"] == "reasoning")
    text = "".join(e["text"] for e in events if e["type"] == "text")
    return reasoning, text, events[-1]


def test_no_think_renders_the_switch_and_the_model_answers(thinker):
    reasoning, text, done = chat(thinker)
    assert reasoning.count(THOUGHT) >= 5 and not text.strip() and done["finish_reason"] == "length"
    reasoning, text, done = chat(thinker, "--no-think")
    assert text.strip() == ANSWER and not reasoning and done["finish_reason"] == "stop"
    reasoning, text, done = chat(thinker, "--think")
    assert reasoning.count(THOUGHT) >= 5 and not text.strip()


def test_reasoning_budget_closes_the_reasoning_and_the_answer_follows(thinker):
    reasoning, text, done = chat(thinker, "--reasoning-budget", "4", max_tokens=40)
    assert reasoning.count(THOUGHT) == 3 and "Time to answer." in reasoning, reasoning
    assert text.strip() == ANSWER and done["finish_reason"] == "stop"
    # a budget of 0 is thinking off
    reasoning, text, _done = chat(thinker, "--reasoning-budget", "0")
    assert text.strip() == ANSWER and not reasoning


@pytest.mark.parametrize(
    "flags",
    [
        ("--think", "--no-think"),
        ("--reasoning-budget", "-1"),
        ("--reasoning-budget", "many"),
        ("--reasoning-budget", "100000000"),
        ("--reasoning-effort", "sometimes"),
        ("--no-think", "--reasoning-effort", "high"),
    ],
)
def test_a_bad_thinking_flag_is_a_usage_error(thinker, flags):
    proc = run_app("chat", "--model", str(thinker), *flags, "Hi")
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "error" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("kind", ["openai", "ollama", "anthropic"])
def test_no_think_reaches_a_remote_endpoint(thinker, kind):
    from app.server import ApiServer, ServerConfig

    srv = ApiServer(ServerConfig(port=0, models=[str(thinker)], use_library=False, n_ctx=2048, n_threads=1))
    srv.start()
    try:
        proc = run_app(
            "chat",
            "--endpoint",
            srv.url,
            "--kind",
            kind,
            "--parser",
            "api",
            "--model",
            "thinker",
            "--tools",
            "none",
            "--max-tokens",
            "10",
            "--json",
            "--no-think",
            "Hi",
        )
    finally:
        srv.stop()
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    text = "".join(e["text"] for e in events if e["type"] == "text")
    assert text.strip() == ANSWER and not any(e["type"] == "reasoning" for e in events)
