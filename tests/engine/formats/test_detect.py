"""Detection from the template itself, over every official template in the fixtures.

Data-driven from sources.json / families.json: a template whose family is registered must be
detected as that family, every other template (family null, or a family not registered yet) as
None. When a later issue registers a family, its templates are checked here automatically.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from app.engine.formats import FORMATS, PROBE_TOOLS, detect, detect_template
from app.engine.formats.detect import call_texts, probe_texts
from app.engine.templates import render_template

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"
SOURCES = json.loads((TEMPLATES / "sources.json").read_text())["templates"]
FAMILIES = json.loads((TEMPLATES / "families.json").read_text())["templates"]
THIS_ISSUE = {"hermes", "qwen-xml", "llama3", "mistral"}


def _expected(name: str) -> str | None:
    fam = FAMILIES[name]["family"]
    return fam if fam in FORMATS else None


def test_fixtures_match_their_recorded_sha256():
    assert set(SOURCES) == set(FAMILIES)
    for name, meta in SOURCES.items():
        digest = hashlib.sha256((TEMPLATES / name).read_bytes()).hexdigest()
        assert digest == meta["sha256"] == FAMILIES[name]["sha256"], name


def test_every_family_of_this_issue_is_registered():
    assert THIS_ISSUE <= set(FORMATS)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_detects_expected_family(name):
    source = (TEMPLATES / name).read_text()
    got = detect_template(source, bos_token="<s>")
    if FAMILIES[name]["required"]:
        assert got == _expected(name)
    else:  # a long-tail template: its family's detection may come later, a wrong family never
        assert got in (_expected(name), None)


@pytest.mark.parametrize("name", sorted(n for n in FAMILIES if FAMILIES[n]["family"] in THIS_ISSUE))
def test_detects_with_the_gguf_eos_token(name):
    source = (TEMPLATES / name).read_text()
    for eos in ("</s>", "<|im_end|>", "<|eot_id|>", "<|endoftext|>"):
        assert detect_template(source, bos_token="<s>", eos_token=eos) == FAMILIES[name]["family"]


def _render(source: str):
    def render(messages, tools):
        return render_template(source, messages, tools=tools, bos_token="<s>",
                               add_generation_prompt=messages[-1]["role"] != "assistant")
    return render


@pytest.mark.parametrize("name", sorted(n for n in FAMILIES if _expected(n) and FAMILIES[n]["required"]))
def test_a_real_call_rendered_by_the_template_parses_back_typed(name):
    """Render a call with tricky values through the template; the detected parser reads it typed."""
    source = (TEMPLATES / name).read_text()
    fmt = FORMATS[_expected(name)]
    tools = [{"type": "function", "function": {"name": "lookup", "description": "d", "parameters": {
        "type": "object", "properties": {
            "zip": {"type": "string"}, "limit": {"type": "integer"}, "exact": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}}}}}}]
    args = {"zip": "02139", "limit": 10, "exact": False, "tags": ["a b", "c"]}
    texts = call_texts(_render(source), tools, "lookup", args)
    assert texts, name
    ok = []
    for prompt, text in texts:
        reply = fmt.parse(text, tools, in_reasoning=fmt.opens_in_reasoning(prompt))
        ok.append([(c.name, c.arguments) for c in reply.tool_calls] == [("lookup", args)]
                  and not reply.content.strip())
    assert any(ok), (name, texts)


def test_tool_use_template_is_preferred():
    hermes = (TEMPLATES / "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja").read_text()
    plain = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    assert detect_template(plain) is None
    assert detect_template(plain, tool_use=hermes) == "hermes"
    assert detect_template("{% bad", tool_use=hermes) == "hermes"


@pytest.mark.parametrize("source", [
    "{{ raise_exception('no tools') }}",
    "{% for %}",
    "{% set xs = [1] %}{% for x in xs %}{% set _ = xs.append(x) %}{% endfor %}",
    "{{ ''.__class__.__mro__ }}",
    "",
])
def test_bad_templates_detect_as_none(source):
    assert detect_template(source) is None


def test_detect_with_a_render_callable_that_raises():
    def render(messages, tools):
        raise RuntimeError("boom")
    assert detect(render, "") is None


def test_detect_learns_the_end_of_turn_without_eos():
    source = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    texts = probe_texts(_render(source), "")
    assert texts and all(t.rstrip().endswith("</tool_call>") for _p, t in texts)
    assert detect(_render(source), "") == "hermes"


def test_probe_tools_exercise_typing():
    props = PROBE_TOOLS[0]["function"]["parameters"]["properties"]
    assert {p["type"] for p in props.values()} == {"string", "integer", "boolean"}
