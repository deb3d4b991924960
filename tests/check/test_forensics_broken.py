"""N13: ``inspect --lint`` on a template that does not compile, raises, tries an unsafe
attribute, bombs or recurses reports that, as one ``template_error`` finding, and never crashes."""

from __future__ import annotations

import json

import pytest

from app.check.forensics import FINDING_IDS, lint_template
from app.cli import main

BROKEN = {
    "syntax": ("{% for %}{{ messages }}", "The template does not compile"),
    "unclosed": ("{% if messages %}{{ messages[0].content }}", "The template does not compile"),
    "ssti": (
        "{{ cycler.__init__.__globals__.os.popen('touch {marker}').read() }}",
        "The template tries an unsafe operation",
    ),
    "int_bomb": (
        "{% set ns = namespace(n=3) %}{% for i in range(31) %}{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n }}",
        "The template fails to render",
    ),
    "str_bomb": (
        "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
        "The template fails to render",
    ),
    "recursion": (
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        "The template fails to render",
    ),
    "raises": (
        "{{ raise_exception('This model does not chat') }}",
        "The template raises an error on a plain conversation",
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_n13_a_broken_template_is_reported_as_broken(kind, tmp_path):
    source, title = BROKEN[kind]
    marker = tmp_path / "ssti-ran"
    report = lint_template(source.replace("{marker}", str(marker)), name="t.jinja")
    assert [f.id for f in report.findings] == ["template_error"], [(f.id, f.title) for f in report.findings]
    finding = report.findings[0]
    assert finding.severity == "error" and finding.title == title
    assert finding.explanation and finding.callisto
    assert report.detected_format is None and report.tools_mode == "none"
    assert not marker.exists()  # the sandbox held
    assert "template_error" in FINDING_IDS


def test_n13_a_syntax_error_names_its_line():
    report = lint_template("{{ messages[0].content }}\n{% for %}\n", name="t.jinja")
    finding = report.findings[0]
    assert finding.line == 2 and finding.line_text == "{% for %}"
    assert "syntax error at line 2" in finding.explanation


def test_n13_inspect_lint_prints_the_finding_for_a_template_file(tmp_path, capsys):
    path = tmp_path / "syntax.jinja"
    path.write_text(BROKEN["syntax"][0])
    assert main(["inspect", str(path), "--lint"]) == 0
    out = capsys.readouterr().out
    assert "1 finding(s)" in out and "[error] template_error" in out and "does not compile" in out
    assert "no_tools_variable" not in out
    assert main(["inspect", str(path), "--lint", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["id"] for f in data["findings"]] == ["template_error"]


def test_n13_a_template_that_needs_tools_is_not_reported_broken():
    # tool_use templates render only with tools: that is not a broken template
    source = "{% if not tools %}{{ raise_exception('tools required') }}{% endif %}{{ tools | tojson }}"
    report = lint_template(source, name="t.jinja")
    assert "template_error" not in [f.id for f in report.findings]


@pytest.mark.parametrize(
    "name", ["CohereForAI-c4ai-command-r-plus-tool_use.jinja", "fireworks-ai-llama-3-firefunction-v2.jinja"]
)
def test_n13_official_templates_that_render_only_their_own_way_are_not_broken(name):
    from tests.conftest import FIXTURES

    path = next((FIXTURES / "chat_templates").rglob(name))
    report = lint_template(path.read_text(encoding="utf-8"), name=name)
    assert "template_error" not in [f.id for f in report.findings]
    assert report.tools_mode != "none"
