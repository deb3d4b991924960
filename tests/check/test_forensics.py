"""Template forensics: each finding on a template written to trigger it, none of them on a clean template
or where it does not apply, a report for every fixture template, and the three known real-world quirks."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.check.forensics import FINDING_IDS, lint_gguf, lint_template

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
QWEN25_GGUF = Path(__file__).resolve().parent / "fixtures" / "qwen2.5-gguf-doubled-braces.jinja"

# A clean ChatML-style template: renders tools, calls with ids, results with ids, null-safe content.
CLEAN = """{%- if tools %}<|im_start|>system
Tools: {% for t in tools %}{{ t | tojson }}{% endfor %}
Answer with <tool_call>NAME ARGS</tool_call>.<|im_end|>
{% endif %}
{%- for m in messages -%}
{%- if m.role == 'assistant' and m.tool_calls -%}
<|im_start|>assistant
{{ m.content or '' }}{% for c in m.tool_calls %}<tool_call>{{ c.id }} {{ c.function.name }} {{ c.function.arguments | tojson }}</tool_call>{% endfor %}<|im_end|>
{% elif m.role == 'tool' -%}
<|im_start|>tool
[{{ m.tool_call_id }}] {{ m.content }}<|im_end|>
{% elif m.role == 'system' -%}
<|im_start|>system
{{ m.content }}<|im_end|>
{% else -%}
<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}"""

TRIGGERS = {
    "no_tools_variable": lambda t: t.replace("{%- if tools %}", "{%- if false %}").replace(
        "{% for t in tools %}{{ t | tojson }}{% endfor %}", ""
    ),
    "tool_results_dropped": lambda t: t.replace("[{{ m.tool_call_id }}] {{ m.content }}", "(hidden)"),
    "call_ids_dropped": lambda t: t.replace("{{ c.id }} ", "").replace("[{{ m.tool_call_id }}] ", ""),
    "call_id_length_9": lambda t: t.replace(
        "{% for c in m.tool_calls %}",
        "{% for c in m.tool_calls %}{% if c.id|length != 9 %}{{ raise_exception('call ids must be 9 long') }}{% endif %}",
    ),
    "strict_alternation": lambda t: (
        "{%- for m in messages %}{% if loop.index0 > 0 and m.role == messages[loop.index0 - 1].role %}"
        "{{ raise_exception('Conversation roles must alternate') }}{% endif %}{% endfor %}\n" + t
    ),
    "system_dropped_after_tool": lambda t: t.replace(
        "{% elif m.role == 'system' -%}\n<|im_start|>system\n{{ m.content }}<|im_end|>",
        "{% elif m.role == 'system' -%}\n{% if messages[-1].role == 'user' %}<|im_start|>system\n{{ m.content }}"
        "<|im_end|>{% endif %}",
    ),
    "content_null_on_call": lambda t: t.replace(
        "{{ m.content or '' }}{% for c", "{{ m.content + '' }}{% for c"
    ),
    "doubled_braces": lambda t: t.replace(
        "Answer with <tool_call>NAME ARGS</tool_call>.",
        '{{ \'Answer with <tool_call>{{"name": NAME, "arguments": ARGS}}</tool_call>.\' }}',
    ),
    "reasoning_not_stripped": lambda t: t.replace(
        "<|im_start|>{{ m.role }}\n{{ m.content }}", "<|im_start|>{{ m.role }}\n{{ m.content }}{# </think> #}"
    ),
}


def _ids(report) -> set[str]:
    return {f.id for f in report.findings}


def test_the_clean_template_has_no_finding():
    assert lint_template(CLEAN).findings == []


@pytest.mark.parametrize("finding", sorted(TRIGGERS))
def test_each_finding_is_detected_on_a_template_written_to_trigger_it(finding):
    source = TRIGGERS[finding](CLEAN)
    assert source != CLEAN
    report = lint_template(source, name="probe")
    hits = [f for f in report.findings if f.id == finding]
    assert hits, (finding, _ids(report))
    f = hits[0]
    assert f.severity in ("error", "warning", "info") and f.title and f.explanation and f.callisto
    assert "\n" not in f.explanation  # one line
    if finding != "no_tools_variable":
        assert f.line is not None and f.line_text.rstrip("…") in source.splitlines()[f.line - 1].strip()
    # each trigger adds only its own finding (the reasoning probe also marks what it changed)
    assert _ids(report) - {finding, "call_ids_dropped"} <= set(), (finding, _ids(report))


def test_every_fixture_template_gets_a_report_without_an_exception():
    files = sorted(TEMPLATES.rglob("*.jinja"))
    assert len(files) > 60
    for f in files:
        report = lint_template(f.read_text(encoding="utf-8"), name=f.name)
        assert {x.id for x in report.findings} <= set(FINDING_IDS), f.name
        assert report.official_match is not None, f.name  # an official template is its own official
        assert "differs_from_official" not in _ids(report), f.name
        for x in report.findings:
            assert x.line is None or x.line >= 1


@pytest.mark.parametrize(
    "name",
    [
        "Qwen-Qwen2.5-7B-Instruct.jinja",
        "Qwen-Qwen3-0.6B.jinja",
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "ibm-granite-granite-4.0.jinja",
    ],
)
def test_findings_that_do_not_apply_are_not_reported_on_official_templates(name):
    report = lint_template((TEMPLATES / name).read_text(encoding="utf-8"), name=name)
    assert not _ids(report) & {
        "no_tools_variable",
        "tool_results_dropped",
        "call_id_length_9",
        "strict_alternation",
        "system_dropped_after_tool",
        "doubled_braces",
        "differs_from_official",
    }


def test_qwen25_gguf_doubled_braces_quirk_and_what_changed():
    report = lint_template(QWEN25_GGUF.read_text(encoding="utf-8"), name="chat_template")
    by_id = {f.id: f for f in report.findings}
    assert by_id["doubled_braces"].line == 13 and '{{\\"name\\"' in by_id["doubled_braces"].line_text
    diff = by_id["differs_from_official"]
    assert report.closest_official == "Qwen-Qwen2.5-7B-Instruct.jinja" and diff.line == 13
    assert '{{\\\\"name' in diff.explanation or '{{\\"name' in diff.explanation.replace("\\\\", "\\")
    official = lint_template((TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8"))
    assert "doubled_braces" not in _ids(official)


def test_mistral_nine_character_ids_on_the_real_template():
    src = (TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja").read_text(encoding="utf-8")
    f = next(f for f in lint_template(src).findings if f.id == "call_id_length_9")
    assert "length != 9" in f.line_text and "9 letters and digits" in f.callisto


def test_phi4_mini_missing_tools_variable_on_the_real_template():
    src = (TEMPLATES / "microsoft-Phi-4-mini-instruct.jinja").read_text(encoding="utf-8")
    report = lint_template(src)
    f = next(f for f in report.findings if f.id == "no_tools_variable")
    assert report.tools_mode == "system_message" and f.line == 1 and "message['tools']" in f.line_text
    assert "system message's tools key" in f.callisto


# -- the vocabulary checks on real GGUF files ---------------------------------------------------------------

QWEN25 = TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"


@pytest.mark.parametrize(
    "controls, users, eos, template, expected",
    [
        (
            ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"],
            [],
            "<|im_end|>",
            None,
            {"marker_is_control_token"},
        ),
        (["<|im_start|>", "<|im_end|>"], [], "<|im_end|>", None, {"marker_not_single_token"}),
        (["<|im_start|>", "</s>"], ["<tool_call>", "</tool_call>"], "</s>", None, {"eot_not_in_vocab"}),
        (
            ["<|im_start|>", "<|turn_end|>", "</s>"],
            ["<tool_call>", "</tool_call>"],
            "</s>",
            "turn_end",
            {"eot_not_eog"},
        ),
        (["<|im_start|>", "<|im_end|>"], ["<tool_call>", "</tool_call>"], "<|im_end|>", None, set()),
    ],
)
def test_vocabulary_findings_from_the_gguf(tiny_gguf, controls, users, eos, template, expected):
    source = QWEN25.read_text(encoding="utf-8")
    if template == "turn_end":
        source = source.replace("<|im_end|>", "<|turn_end|>")
    path = tiny_gguf(chat_template=source, control_tokens=controls, user_tokens=users, bos=None, eos=eos)
    report = lint_gguf(path)
    assert report["vocab_read"]
    vocab_ids = {"marker_is_control_token", "marker_not_single_token", "eot_not_in_vocab", "eot_not_eog"}
    assert {f["id"] for f in report["findings"]} & vocab_ids == expected


def test_a_gguf_without_a_template_and_named_variants(tiny_gguf):
    report = lint_gguf(tiny_gguf(chat_template=None))
    assert [f["id"] for f in report["findings"]] == ["no_tools_variable"]
    src = QWEN25_GGUF.read_text(encoding="utf-8")
    both = lint_gguf(
        tiny_gguf(
            chat_template=CLEAN,
            named_templates={"tool_use": src},
            control_tokens=["<|im_start|>", "<|im_end|>"],
            eos="<|im_end|>",
            bos=None,
        )
    )
    assert [t["template"] for t in both["templates"]] == ["chat_template", "chat_template.tool_use"]
    assert any(
        f["id"] == "doubled_braces" and f["template"] == "chat_template.tool_use" for f in both["findings"]
    )


def test_a_template_that_walks_the_system_message_s_tool_list():
    """GLM-4-9B-chat's shape: the tools are a list on the message that carries them."""
    src = (
        "{% for item in messages %}{% if item['tools'] is defined %}<|system|>\nTools:"
        "{% for tool in item['tools'] %}\n## {{ tool['function']['name'] }}{% endfor %}{% endif %}"
        "{% if item['content'] %}<|{{ item['role'] }}|>\n{{ item['content'] }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    report = lint_template(src)
    f = next(f for f in report.findings if f.id == "no_tools_variable")
    assert report.tools_mode == "system_list" and f.severity == "warning"
    assert "the tool list" in f.explanation and "the tool list" in f.callisto
