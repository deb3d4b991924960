"""``python -m app check --endpoint URL --parser api|callisto|both``: the check through Callisto's remote
client, against Callisto's own server on loopback. With ``both`` one model on one server gives two
result rows, the engine's parsing and Callisto's, written side by side."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

SINGLE = """category = "single"

[[scenario]]
id = "weather-in-a-named-city"
tools = ["get_weather", "get_time"]
prompt = "What is the weather in Oslo?"
expect = [{ name = "get_weather", arguments = { city = "Oslo" }, match = "subset" }]
rationale = "The city is a literal of the prompt; the time tool is a distractor."
"""

NEGATIVE = """category = "negative"

[[scenario]]
id = "a-greeting-needs-no-tool"
tools = ["get_weather"]
prompt = "Just say hello to me."
expect = []
rationale = "Nothing in a greeting asks for the weather: any call is wrong."
"""


@pytest.fixture
def scenarios(tmp_path) -> Path:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "single.toml").write_text(SINGLE)
    (folder / "negative.toml").write_text(NEGATIVE)
    return folder


def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", "check", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_both_parsers_give_two_rows_side_by_side(callisto_server, remote_models, scenarios, tmp_path):
    out = tmp_path / "result.json"
    proc = _check(
        "--endpoint",
        callisto_server.url,
        "--model",
        "loop-hermes",
        "--parser",
        "both",
        "--model-file",
        str(remote_models["loop"]),
        "--scenarios",
        str(scenarios),
        "--stack",
        "callisto-server",
        "--max-tokens",
        "64",
        "--tool-format",
        "hermes",
        "--out",
        str(out),
    )
    assert proc.returncode == 1, proc.stderr[-3000:]  # the scripted model calls even when greeted
    from app.check.runner import load_result

    rows = {p: load_result(tmp_path / f"result-{p}.json") for p in ("api", "callisto")}  # valid results
    assert rows["api"]["stack"]["name"] == "callisto-server · engine's parsing (API tools)"
    assert rows["callisto"]["stack"]["name"] == "callisto-server · Callisto parsing"
    assert (
        rows["callisto"]["model"]["tool_format_setting"] == "hermes"
    )  # --tool-format reaches Callisto parsing
    for parser, result in rows.items():
        assert result["target"]["kind"] == "remote" and result["stack"]["parser"] == parser
        assert result["settings"]["parser"] == parser
        assert result["model"]["name"] == "loop-hermes" and result["model"]["file_name"] == "loop-hermes.gguf"
        outcomes = {r["id"]: r["outcome"] for r in result["results"]}
        assert outcomes == {"weather-in-a-named-city": "pass", "a-greeting-needs-no-tool": "fail"}, result[
            "results"
        ]
    header = next(line for line in proc.stdout.splitlines() if "engine's parsing" in line)
    assert header.index("engine's parsing (API tools)") < header.index("Callisto parsing")
    single = next(line for line in proc.stdout.splitlines() if line.strip().startswith("single"))
    assert single.split()[1:] == ["1/1", "100%", "1/1", "100%"]
    assert f"results in {tmp_path / 'result-api.json'}, {tmp_path / 'result-callisto.json'}" in proc.stdout


def test_one_parser_writes_the_named_file_and_bad_combinations_are_usage_errors(
    callisto_server, remote_models, scenarios, tmp_path
):
    out = tmp_path / "only-api.json"
    proc = _check(
        "--endpoint",
        callisto_server.url,
        "--model",
        "loop-hermes",
        "--parser",
        "api",
        "--kind",
        "ollama",
        "--scenarios",
        str(scenarios),
        "--scenario",
        "weather-in-a-named-city",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["stack"]["api"] == "ollama" and result["summary"]["passed"] == 1

    proc = _check("--model", "loop-hermes", "--parser", "callisto", "--scenarios", str(scenarios))
    assert proc.returncode == 2 and "--parser goes with --endpoint" in proc.stderr
    proc = _check(
        "--endpoint",
        callisto_server.url,
        "--model",
        "m",
        "--parser",
        "callisto",
        "--kind",
        "anthropic",
        "--scenarios",
        str(scenarios),
    )
    assert proc.returncode == 2 and "Anthropic API" in proc.stderr
