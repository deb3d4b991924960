"""The Check page runs a tiny GGUF of each family added with issue 27 (its published template or,
where none was found, a stand-in; random weights, the family forced) through the tool-choice
scenarios: every scenario ends as a pass or a fail, never as a harness error."""

from __future__ import annotations

import pytest

from app.ui.check_page import CheckPage
from tests.engine.formats.test_added_families import IDS, MODELS, template_source


@pytest.fixture
def page(qtbot):
    p = CheckPage(load_saved=False)
    qtbot.addWidget(p)
    yield p
    if p.runner is not None:
        p.runner.stop()
        p.runner.wait(10_000)


@pytest.mark.parametrize(("template", "family", "control", "user", "bos", "eos"), MODELS, ids=IDS)
def test_the_check_page_runs_the_family_without_a_harness_error(
    qtbot, page, tiny_gguf, tmp_path, template, family, control, user, bos, eos
):
    path = tiny_gguf(
        chat_template=template_source(template),
        control_tokens=control,
        user_tokens=user,
        bos=bos,
        eos=eos,
    )
    spec = {
        "kind": "in_process",
        "path": str(path),
        "tool_format": family,
        "selection": "tool_choice",
        "max_tokens": 32,
        "out_dir": str(tmp_path),
    }
    with qtbot.waitSignal(page.sig_run_finished, timeout=300_000) as blocker:
        assert page.start(spec)
    qtbot.waitUntil(lambda: not page.running, timeout=60_000)
    result = blocker.args[0]
    assert result["model"]["tool_format"] == family
    rows = [(r["id"], r["outcome"], r["message"]) for r in result["results"]]
    assert rows and all(outcome in ("pass", "fail") for _id, outcome, _m in rows), rows
    assert result["summary"]["errors"] == 0
