"""The check's reasoning dimension (issue 30): the same scenario with the model's thinking switch on
and off, run in-process on a real scripted GGUF with Qwen3's template."""

from __future__ import annotations

import json
from pathlib import Path

from app.check.corpus import load_corpus
from app.check.runner import run_check
from app.check.targets import InProcessTarget
from app.engine.llm import load_model
from tests.ui.scripted_gguf import write_scripted_gguf

TEMPLATE = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja"
CALL = '<tool_call>\n{"name": "fetch_record", "arguments": {"record_id": "REC-5150"}}\n</tool_call>'


def test_the_reasoning_dimension_runs_a_scenario_with_thinking_on_and_off(tmp_path):
    corpus = load_corpus()
    variants = [s for s in corpus.scenarios if s.id.startswith("reason-switch-thinking-")]
    assert [s.thinking for s in variants] == ["on", "off"]
    # After the generation prompt the model thinks ("<think>h</think>") and then calls; after a
    # pre-closed block (Qwen3's enable_thinking=False) it calls at once.
    path = write_scripted_gguf(
        tmp_path / "qwen3.gguf",
        chat_template=TEMPLATE.read_text(),
        script={"\n": "<think>", "<think>": "h", "h": "</think>\n\n", "</think>\n\n": CALL},
        default_next="<|im_end|>",
        control_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        user_tokens=["<think>", "</think>\n\n", CALL],
    )
    model = load_model(path, n_ctx=4096, n_threads=1)
    try:
        result = run_check(InProcessTarget(model, tool_format="hermes", max_tokens=64), variants)
    finally:
        model.close()
    rows = {r["id"]: r for r in result["results"]}
    assert [rows[s.id]["outcome"] for s in variants] == ["pass", "pass"], rows
    by_id = {}
    for data in result["_transcripts"].values():
        t = json.loads(data) if isinstance(data, bytes | str) else data
        by_id[t["scenario"]] = t
    on, off = by_id["reason-switch-thinking-on"], by_id["reason-switch-thinking-off"]
    assert on["request"]["thinking"] == "on" and off["request"]["thinking"] == "off"
    reasoning = {
        name: "".join(e.get("text", "") for e in t["events"] if e.get("type", "").startswith("reasoning"))
        for name, t in (("on", on), ("off", off))
    }
    assert reasoning["on"].strip() == "h" and reasoning["off"] == ""  # the switch reached the model
