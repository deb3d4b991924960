"""The Check page: a real run off the UI thread (progress, stop), the matrix coloured by pass ratio,
a cell opening its scenarios, transcript and forensics, export, compare and saved results."""

from __future__ import annotations

import json
import time

import pytest

from app.check.corpus import load_corpus
from app.check.reference import ReferenceServer, expected_reply
from app.check.remote_target import RemoteTarget
from app.check.runner import run_check, validate_result, write_result
from app.engine.remote import Provider
from app.ui.check_page import CheckPage, cell_colour
from tests.check.reference_model import FREE_GRAMMAR, expected_replies, write_reply_model

CORPUS = load_corpus()
TOTAL = len(CORPUS.scenarios)  # every scenario, each counted once
PARALLEL = sum(s.category == "parallel" for s in CORPUS.scenarios)


def _half_right(s, turn, body):
    """Right in every category but parallel, where it makes a single call."""
    if s.category == "parallel":
        return {"tool_calls": [{"name": e.name, "arguments": e.arguments} for e in s.turns[turn].expect[:1]]}
    return expected_reply(s, turn)


@pytest.fixture
def page(qtbot):
    p = CheckPage(load_saved=False)
    qtbot.addWidget(p)
    p.resize(1100, 760)
    yield p
    if p.runner is not None:
        p.runner.stop()
        p.runner.wait(10_000)


def _run(qtbot, page, spec, timeout=60_000):
    with qtbot.waitSignal(page.sig_run_finished, timeout=timeout) as blocker:
        assert page.start(spec)
    qtbot.waitUntil(lambda: not page.running, timeout=30_000)
    return blocker.args[0]


def test_endpoint_run_fills_a_coloured_matrix_and_a_cell_opens_its_scenarios(qtbot, page, tmp_path):
    served = write_reply_model(tmp_path / "served.gguf", ["Hello."])  # the GGUF the endpoint serves
    with ReferenceServer(CORPUS, reply_for=_half_right) as srv:
        result = _run(
            qtbot,
            page,
            {
                "kind": "endpoint",
                "endpoint": srv.url + "/chat/completions",  # a pasted completions URL works too
                "model": "half-right",
                "api_key": "sk-page-secret",
                "model_file": str(served),
                "stack": "reference-server",
                "selection": "all",
                "out_dir": str(tmp_path),
            },
        )
        keys = {r["headers"].get("Authorization") for r in srv.requests}
    assert validate_result({k: v for k, v in result.items() if not k.startswith("_")}) == []
    # the remote client ran it (API tools), with the key sent and never written
    assert result["target"]["kind"] == "remote" and result["stack"]["parser"] == "api"
    assert result["stack"]["name"] == "reference-server · engine's parsing (API tools)"
    assert keys == {"Bearer sk-page-secret"}
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".gguf")
    assert b"sk-page-secret" not in written
    # the model file: its identity and its template's forensics
    assert result["model"]["file_name"] == "served.gguf" and result["model"]["sha256"]
    assert any(f["id"] == "no_tools_variable" for f in page.findings_for(result, "single"))
    m = page.matrix
    assert m.rowCount() == 1 and m.columnCount() == len(page.categories) + 1
    col = {c: i for i, c in enumerate([*page.categories, "all"])}
    assert m.item(0, col["parallel"]).text() == f"0/{PARALLEL}"
    single = sum(s.category == "single" for s in CORPUS.scenarios)
    assert m.item(0, col["single"]).text() == f"{single}/{single}"
    assert m.item(0, col["parallel"]).background().color() == cell_colour(0.0)
    assert m.item(0, col["single"]).background().color() == cell_colour(1.0)
    assert (
        f"Done: {TOTAL - PARALLEL} of {TOTAL} passed" in page.status.text()
        and "elapsed" not in page.status.text()
    )
    page.open_cell(0, col["parallel"])
    t = page.scenario_table
    assert t.rowCount() == 8 and {t.item(i, 2).text() for i in range(8)} == {"no_call"}
    page.open_scenario(0)
    html = page.detail.toPlainText()
    assert "no_call" in html and "Transcript" in html and "chat/completions" in html


def test_progress_stop_and_an_unfinished_result(qtbot, page, tmp_path):
    def slow(s, turn, body):
        time.sleep(0.15)
        return expected_reply(s, turn)

    with ReferenceServer(CORPUS, reply_for=slow) as srv:
        progress = []
        page.start(
            {
                "kind": "endpoint",
                "endpoint": srv.url,
                "model": "slow",
                "selection": "all",
                "out_dir": str(tmp_path),
            }
        )
        page.runner.sig_progress.connect(lambda i, n, c, sid: progress.append((i, n, c)))
        qtbot.waitUntil(lambda: len(progress) >= 3, timeout=30_000)
        assert "Scenario" in page.status.text() and f" of {TOTAL} · " in page.status.text()
        assert page.stop_button.isEnabled() and not page.run_button.isEnabled()
        with qtbot.waitSignal(page.sig_run_finished, timeout=30_000) as blocker:
            page.stop()
        qtbot.waitUntil(lambda: not page.running, timeout=30_000)
    result = blocker.args[0]
    assert result["complete"] is False and 3 <= result["summary"]["total"] < TOTAL
    assert "stopped early" in page.status.text() and page.run_button.isEnabled()


def test_in_process_run_records_the_model_score(qtbot, page, tmp_path):
    from app.check.scores import score_label

    scenario = CORPUS.by_id("single-string-opaque-id")
    model = write_reply_model(tmp_path / "ref.gguf", expected_replies(scenario))
    result = _run(
        qtbot,
        page,
        {
            "kind": "in_process",
            "path": str(model),
            "tool_format": "hermes",
            "selection": "single",
            "grammar": FREE_GRAMMAR,
            "out_dir": str(tmp_path),
        },
    )
    s = result["summary"]
    assert s["total"] == 15 and s["passed"] >= 1  # the scripted model answers every prompt with one call
    assert score_label("ref.gguf", model.stat().st_size) == f"check {s['passed']}/15"
    assert any(f["id"] == "no_tools_variable" for f in page.findings_for(result, "single"))


def _result(tmp_path, name, reply_for):
    with ReferenceServer(CORPUS, reply_for=reply_for) as srv:
        target = RemoteTarget(Provider(srv.url), name)
        result = run_check(target, CORPUS.select(["parallel", "negative"]), corpus_sha256=CORPUS.sha256)
        target.close()
    path = tmp_path / f"{name}.json"
    write_result(result, path)
    return path


def test_compare_export_and_open(qtbot, page, tmp_path):
    a = page.open_result(_result(tmp_path, "good", lambda s, t, b: expected_reply(s, t)))
    b = page.open_result(_result(tmp_path, "half", _half_right))
    assert (a, b) == (0, 1)
    assert page.compare(0, 1) == 8
    t = page.scenario_table
    assert t.columnCount() == 3 and sum(t.item(i, 0).text().startswith("≠") for i in range(t.rowCount())) == 8
    page.matrix.selectRow(0)
    assert not page.compare_selected()  # one row selected
    out = page.export_result(1, tmp_path / "export" / "copy.json")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (
        validate_result(data) == [] and len(list((tmp_path / "export" / "copy.transcripts").iterdir())) == 18
    )
    assert page.open_result(out) == 2
    page.open_cell(2, page.categories.index("parallel"))
    page.open_scenario(0)
    assert "edited" not in page.detail.toPlainText() and "Transcript" in page.detail.toPlainText()
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    assert page.open_result(bad) is None and "not a valid check result" in page.status.text()
    assert page.matrix.rowCount() == 3


def test_an_incomplete_form_does_not_start(page):
    assert not page.start({"kind": "endpoint", "endpoint": "", "model": "m"})
    assert "URL" in page.status.text()
    assert not page.start({"kind": "in_process", "path": "/nowhere/x.gguf"})
    assert page.runner is None


def test_screenshot_state_check_shows_a_finished_result(tmp_path, streaming_model):
    """``--state check``: a real quick check of the loaded model (a scripted model that only ever writes
    letters: every call scenario is red, the no-call one green), saved once the result is in."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from PySide6.QtGui import QImage

    out = tmp_path / "check.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CALLISTO_HOME": str(tmp_path / "home")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "--screenshot",
            str(out),
            "--state",
            "check",
            "--model",
            str(streaming_model),
            "--quit-after",
            "120",
        ],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        "check: 1/7 passed" in proc.stdout and "negative 1/1" in proc.stdout and "single 0/1" in proc.stdout
    )
    img = QImage(str(out))
    assert not img.isNull() and img.width() > 300
    saved = list((tmp_path / "home").rglob("check/results/*.json"))
    assert len(saved) == 1  # the finished result is saved, so the Models page can show the score


def test_models_page_shows_the_last_check_score(qtbot, tmp_path):
    from app.check.scores import record_score
    from app.check.targets import InProcessTarget
    from app.engine.llm import load_model
    from app.engine.models.hub import HubClient
    from app.engine.models.library import Library
    from app.engine.models.manager import ModelManager
    from app.ui.models_page import ModelsPage

    scenario = CORPUS.by_id("single-empty-arguments")
    path = write_reply_model(tmp_path / "scored.gguf", expected_replies(scenario))
    model = load_model(path, n_ctx=4096, n_threads=1)
    try:
        result = run_check(
            InProcessTarget(model, tool_format="hermes", grammar=FREE_GRAMMAR),
            [scenario, CORPUS.by_id("single-integer")],
        )
    finally:
        model.close()
    write_result(result, tmp_path / "scored-result.json")
    record_score(result, tmp_path / "scored-result.json")
    lib = Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    page = ModelsPage(ModelManager(hub=HubClient("http://127.0.0.1:9"), library=lib))
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: not page._calls)
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.import_file(path)
    row = page.library_row("scored")
    assert page.library_table.item(row, 7).text().endswith("check 1/2")
    page.shutdown()
