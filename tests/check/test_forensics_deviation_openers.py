"""Forensics on the official templates of families that also read a deviation (issue 27): an opener
that is not the family's published call marker (command-r's ``<co>`` citations and response
markers, Hy3's suffix-less ``<tool_calls>``, Qwen2.5-Coder's ``<tools>`` and fence, DeepSeek V4's bare DSML ``invoke``, Qwen3-Coder's bare
``<function=``) never gives a "marker is not one token" or "is a control token" finding. A real
tiny GGUF holds the official template and the family's real markers as tokens, as its model does."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.check.forensics import lint_gguf

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
MARKER_FINDINGS = {"marker_not_single_token", "marker_is_control_token"}

CASES = [
    (
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
        "command-r",
        ["<|START_ACTION|>", "<|END_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"],
        [],
        ["<co>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"],
    ),
    ("Qwen3-Coder.jinja", "qwen-xml", [], ["<tool_call>", "</tool_call>"], ["<function="]),
    # Qwen2.5-Coder's strays: its tool-list tag and a fenced call (neither is a marker token)
    ("Qwen-Qwen2.5-7B-Instruct.jinja", "hermes", [], ["<tool_call>", "</tool_call>"], ["<tools>", "```"]),
    (
        "tencent-Hy3.jinja",
        "hunyuan",
        [],
        ["<tool_calls:opensource>", "</tool_calls:opensource>"],
        ["<tool_calls>"],
    ),
    ("deepseek-ai-DeepSeek-V4.jinja", "deepseek-dsml", [], [], ["<｜DSML｜invoke"]),
    ("google-gemma-4-31B-it.jinja", "gemma4", [], ["<|tool_call>", "<tool_call|>"], ["<|tool_call>"]),
]


@pytest.mark.parametrize("name, family, controls, users, deviations", CASES, ids=[c[1] for c in CASES])
def test_deviation_openers_give_no_marker_finding_on_official_templates(
    tiny_gguf, name, family, controls, users, deviations
):
    source = (TEMPLATES / name).read_text(encoding="utf-8")
    path = tiny_gguf(chat_template=source, control_tokens=["<s>", "</s>", *controls], user_tokens=users)
    report = lint_gguf(path)
    assert report["vocab_read"]
    assert [t["detected_format"] for t in report["templates"]] == [family]
    marker_titles = [f["title"] for f in report["findings"] if f["id"] in MARKER_FINDINGS]
    for opener in deviations:
        if family == "gemma4":  # its bare opener is its own marker: a user token here, so no finding
            assert marker_titles == []
        else:
            assert not [t for t in marker_titles if f" {opener} " in t], marker_titles
