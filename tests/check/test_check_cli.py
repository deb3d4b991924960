"""``python -m app check`` and ``python -m app inspect --lint``: exit codes, --json lines, result files."""

from __future__ import annotations

import json

from app.check.corpus import load_corpus
from app.check.reference import ReferenceServer
from app.check.runner import validate_result
from app.cli import main
from tests.check.reference_model import FREE_GRAMMAR, expected_replies, write_reply_model

CORPUS = load_corpus()


def test_endpoint_check_writes_a_valid_result_and_one_json_line_per_scenario(tmp_path, capsys):
    out = tmp_path / "r.json"
    with ReferenceServer(CORPUS) as srv:
        rc = main(
            [
                "check",
                "--endpoint",
                srv.url,
                "--model",
                "reference",
                "--category",
                "parallel",
                "--category",
                "tool_choice",
                "--out",
                str(out),
                "--json",
            ]
        )
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    n = len(CORPUS.select(["parallel", "tool_choice"]))
    assert rc == 0
    assert [x["type"] for x in lines] == ["scenario"] * n + ["summary"]
    assert lines[-1]["passed"] == n and lines[0]["outcome"] == "pass"
    data = json.loads(out.read_text(encoding="utf-8"))
    # the remote client chat --endpoint uses, with the engine's own tool calling
    assert validate_result(data) == [] and data["target"]["kind"] == "remote"
    assert data["stack"]["parser"] == "api" and data["settings"]["parser"] == "api"
    assert set(data["summary"]["by_category"]) == {"parallel", "tool_choice"}
    assert len(list((tmp_path / "r.transcripts").iterdir())) == n


def test_exit_1_when_a_scenario_fails_and_4_when_a_request_fails(tmp_path, capsys):
    with ReferenceServer(CORPUS, reply_for=lambda s, t, b: {"content": "no"}) as srv:
        assert main(["check", "--endpoint", srv.url, "--model", "m", "--scenario", "single-integer"]) == 1
    with ReferenceServer(CORPUS, reply_for=lambda s, t, b: {"status": 503, "error": "busy"}) as srv:
        assert main(["check", "--endpoint", srv.url, "--model", "m", "--scenario", "single-integer"]) == 4
    out = capsys.readouterr().out
    assert "FAIL" in out and "no_call" in out and "ERROR" in out


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["check"]) == 2
    assert main(["check", "--model", str(tmp_path / "missing.gguf")]) == 2
    assert main(["check", "--model", "m", "--category", "bogus"]) == 2
    assert (
        main(["check", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--scenario", "no-such-id"])
        == 2
    )
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.toml").write_text(
        'category = "single"\n[[scenario]]\nid = "a"\n', encoding="utf-8"
    )
    assert (
        main(
            [
                "check",
                "--endpoint",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--scenarios",
                str(tmp_path / "bad"),
            ]
        )
        == 2
    )
    assert main(["check", "--model", "x.gguf", "--api-key", "k"]) == 2
    assert "rationale is required" in capsys.readouterr().err


def test_in_process_check_of_a_scripted_model_records_its_identity(tmp_path, capsys):
    scenario = CORPUS.by_id("parallel-three-records")
    model = write_reply_model(tmp_path / "ref.gguf", expected_replies(scenario))
    out = tmp_path / "in.json"
    grammar = tmp_path / "free.gbnf"
    grammar.write_text(FREE_GRAMMAR, encoding="utf-8")
    rc = main(
        [
            "check",
            "--model",
            str(model),
            "--tool-format",
            "hermes",
            "--scenario",
            scenario.id,
            "--grammar-file",
            str(grammar),
            "--out",
            str(out),
        ]
    )
    assert rc == 0, capsys.readouterr()
    data = json.loads(out.read_text(encoding="utf-8"))
    assert validate_result(data) == []
    m = data["model"]
    assert m["file_name"] == "ref.gguf" and len(m["sha256"]) == 64 and m["tool_format"] == "hermes"
    assert m["template_sha256"] and "quantization" in m and data["stack"]["name"] == "callisto-in-process"
    assert any(
        f["id"] == "no_tools_variable" for f in data["forensics"]
    )  # the script's template lists no tools


def test_inspect_lint_reports_a_gguf_and_a_template_file(tiny_gguf, tmp_path, capsys):
    from pathlib import Path

    src = (Path(__file__).parent / "fixtures" / "qwen2.5-gguf-doubled-braces.jinja").read_text(
        encoding="utf-8"
    )
    path = tiny_gguf(
        chat_template=src, control_tokens=["<|im_start|>", "<|im_end|>"], bos=None, eos="<|im_end|>"
    )
    assert main(["inspect", str(path), "--lint"]) == 0
    text = capsys.readouterr().out
    assert "doubled_braces (line 13)" in text and "closest official: Qwen-Qwen2.5-7B-Instruct.jinja" in text
    assert "marker_not_single_token" in text and "Callisto:" in text
    assert main(["inspect", str(path), "--lint", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {f["id"] for f in report["findings"]} >= {"doubled_braces", "differs_from_official"}
    bad = tmp_path / "nothing.gguf"
    bad.write_bytes(b"GGUF\x03\x00")
    assert main(["inspect", str(bad), "--lint"]) == 1
