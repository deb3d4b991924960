"""N12: a slow chat template costs one render time limit in all, whichever paths render it
(detection, inspect, the library, the check's identity, lint), and no single filter call can run
for seconds on its own."""

from __future__ import annotations

import uuid

import pytest

from app.engine.errors import TemplateRenderError
from app.engine.templates import (
    MAX_RENDER_SECONDS,
    MAX_WORD_FILTER_CHARS,
    render_deadline,
    render_template,
)
from tests.support.clock import TickClock

USER = [{"role": "user", "content": "hi"}]

# The review's slow template: each step sorts and dedupes a list that doubles, far past any limit.
SLOW = (
    "{% set ns = namespace(l=range(100000) | list) %}{% for i in range(20) %}"
    "{% set ns.l = (ns.l + ns.l) | list | sort | unique | list %}{% endfor %}{{ ns.l | length }}"
    "{% for m in messages %}{{ m.content }}{% endfor %}"
)


def _fresh(source: str) -> str:
    """The same template under a text no other test used (the renders' caches are by text)."""
    return f"{{# {uuid.uuid4().hex} #}}" + source


def test_n12_every_path_shares_one_time_limit_for_a_slow_template(tiny_gguf, capsys):
    from app.check.forensics import lint_gguf
    from app.check.targets import file_identity
    from app.cli import main
    from app.engine.models._gguf import read_summary

    gguf = tiny_gguf(chat_template=_fresh(SLOW))
    # Every render below runs in this thread and reads this clock (an outer block's clock is kept by
    # the nested ones), which the renders' own checks move: the same count on any machine.
    clock = TickClock()
    with render_deadline(10_000.0, clock=clock):
        assert main(["inspect", str(gguf)]) == 0
        out = capsys.readouterr()
        assert "took too long" in out.out and "tool_format      none" in out.out
        summary = read_summary(gguf)  # the library and the Models page
        assert summary.tool_format == "none" and summary.template_problem
        assert "took too long" in summary.template_problem
        assert file_identity(gguf)["detected_format"] is None  # the check's identity of the model
        # Before: inspect alone rendered it to the limit three times (detection, then two renders
        # asking why it fails); the library's summary twice more.
        assert clock.now < 2 * MAX_RENDER_SECONDS, clock.now
        report = lint_gguf(gguf)  # inspect --lint, and every check's forensics
        assert [f["id"] for f in report["findings"]] == ["template_error"]
        assert report["findings"][0]["title"] == "The template takes too long to render"
        with pytest.raises(TemplateRenderError, match="took too long"):
            render_template(_read_template(gguf), USER)
    # Before: lint rendered it to the limit a dozen times more (48 s), the check 60 s. Now the first
    # render that runs out of time is the only one that runs.
    assert clock.now < 2 * MAX_RENDER_SECONDS, clock.now


def _read_template(gguf) -> str:
    from app.engine.models.metadata import read_metadata

    source = read_metadata(gguf).chat_template
    assert source is not None
    return source


def test_n12_a_template_cut_by_a_caller_s_short_deadline_is_not_marked_slow():
    # Detection shares one deadline between a model's two templates: a render that only got the
    # last moments of it did not run long itself, so its template is not remembered as slow.
    source = _fresh("{% for i in range(20000) %}{% endfor %}{{ messages[0].content }}")
    with render_deadline(0.3, clock=TickClock()):
        with pytest.raises(TemplateRenderError, match="took too long"):
            render_template(source, USER)
    assert render_template(source, USER) == "hi"  # the real clock: 20,000 steps take well under 5 s


@pytest.mark.parametrize(
    "expression",
    [
        "('x ' * 150000) | wordwrap(1)",
        "('x ' * 150000) | wordwrap(5)",
        "('a.b ' * 60000) | urlize",
        "('ab ' * 100000) | title",
        "('ab ' * 100000) | wordcount",
    ],
)
def test_n12_word_by_word_filters_refuse_inputs_over_their_cap(expression):
    # One call of these runs for seconds in Python with no deadline check inside (wordwrap(1) on
    # 2 MB: 3.6 s holding the lock for 0.9 s at a time); past the cap they are refused up front.
    with pytest.raises(TemplateRenderError, match=f"too slow to run \\(limit {MAX_WORD_FILTER_CHARS}\\)"):
        render_template("{{ (" + expression + ") | string | length }}", USER)


def test_n12_word_filters_still_work_on_ordinary_text():
    out = render_template(
        "{{ 'hello big world' | wordwrap(5) }}|{{ 'tool result' | title }}|{{ 'a b c' | wordcount }}", USER
    )
    assert out == "hello\nbig\nworld|Tool Result|3"


def test_n12_unique_of_a_long_string_is_bounded_like_a_list():
    with pytest.raises(TemplateRenderError, match="more than 1000000 items"):
        render_template("{{ ('xy' * 1000000) | unique | list | length }}", USER)
    assert render_template("{{ 'abcabc' | unique | join }}", USER) == "abc"


def test_n12_a_template_remembered_slow_still_stops_by_a_smaller_operation_budget():
    """The memory of slow templates is per operation budget: a render that ran out of time with the
    full budget does not hide that a render with a small budget stops by its operation count (an
    earlier render elsewhere in the process must not change what this one says)."""
    from app.engine.templates import render_deadline

    src = "{% set ys = [1] %}{% for y in ys %}{% set _ = ys.append(y) %}{% endfor %}{# n12 budget #}"
    with render_deadline(10_000.0, clock=TickClock()), pytest.raises(TemplateRenderError, match="too long"):
        render_template(src, USER)  # the full budget: stopped by the (ticking) clock, remembered
    with pytest.raises(TemplateRenderError, match="operations"):
        render_template(src, USER, max_operations=50_000)
