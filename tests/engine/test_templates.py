"""The sandboxed chat-template renderer: HF conventions work, untrusted code cannot escape."""

from __future__ import annotations

import json

import pytest

from app.engine.errors import TemplateRenderError
from app.engine.templates import render_template

MSGS = [{"role": "user", "content": "hi"}]


def test_renders_messages_with_hf_conventions():
    src = (
        "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    assert render_template(src, MSGS, bos_token="<s>", eos_token="</s>") == "<s><user>hi</s>\n<assistant>"


def test_trim_and_lstrip_blocks():
    src = "{% for m in messages %}\n    {% if true %}\n{{ m.content }}\n    {% endif %}\n{% endfor %}"
    assert render_template(src, MSGS) == "hi\n"


def test_loop_controls_generation_tag_and_mutation():
    src = (
        "{% set acc = [] %}{% set d = {} %}{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}"
        "{% if i == 4 %}{% break %}{% endif %}{% set _ = acc.append(i) %}{% endfor %}{% set _ = d.update({'k': 1}) %}"
        "{% generation %}{{ acc | join(',') }}|{{ d.k }}{% endgeneration %}"
    )
    assert render_template(src, MSGS) == "0,2,3|1"


def test_a_dotted_set_writes_into_a_mapping_of_the_render_only():
    """llama.cpp's engine lets ``{% set obj.key = v %}`` write into a mapping (MiroThinker's
    published template marks each tool so); Jinja only into a namespace(). The mapping is the
    render's own copy: nothing reaches the caller's tools or the next render."""
    src = (
        "{% for t in tools %}{% if t.seen is not defined %}{{ t.name }};{% endif %}{% set t.seen = 1 %}"
        "{% endfor %}{% for t in tools %}{{ t.seen }}{% endfor %}"
        "{% set ns = namespace(n=0) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}"
    )
    tools = [{"name": "a"}, {"name": "b"}]
    assert render_template(src, [], tools=tools) == "a;b;111"
    assert render_template(src, [], tools=tools) == "a;b;111"  # the first render marked nothing here
    assert tools == [{"name": "a"}, {"name": "b"}]
    for target in ("'text'", "[1]", "none", "42"):
        with pytest.raises(TemplateRenderError, match="non-namespace"):
            render_template(f"{{% set x = {target} %}}{{% set x.k = 1 %}}", [])


def test_a_macro_call_leaving_out_a_parameter_gets_the_caller_s_variable():
    """llama.cpp's engine runs a macro in its caller's variables, so a published template may
    call ``m()`` for ``m(message)`` inside its loop (MiroThinker's does). Such a parameter is lent
    the caller's variable of its name; one with a default, or one the call gives, is not; where
    the caller has no such variable it stays undefined."""
    src = (
        "{% macro m(a, b, c='c') %}{{ a }}|{{ b }}|{{ c }}{% endmacro %}"
        "{% set a = 'A' %}{{ m() }};"
        "{% for b in ['B'] %}{% set c = 'C' %}{{ m('x') }}{% endfor %};"
        "{{ m(b='y') }};{{ m('p', 'q', 'r') }}"
    )
    assert render_template(src, []) == "A||c;x|B|c;A|y|c;p|q|r"
    loop = "{% macro show(message) %}{{ message.content }}{% endmacro %}{% for message in messages %}{{ show() }}{% endfor %}"
    assert (
        render_template(loop, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
        == "hiyo"
    )


def test_tojson_keyword_arguments_and_unicode():
    src = "{{ tools | tojson(indent=2, sort_keys=True) }}|{{ {'b': 'é', 'a': 1} | tojson(separators=(',', ':')) }}"
    out = render_template(src, MSGS, tools=[{"b": 1, "a": "<x>"}])
    first, second = out.split("|")
    assert json.loads(first) == [{"a": "<x>", "b": 1}] and '"a": "<x>"' in first and "\n  " in first
    assert second == '{"b":"é","a":1}'
    assert render_template("{{ 'é' | tojson(ensure_ascii=True) }}", MSGS) == '"\\u00e9"'


def test_strftime_now_and_extra_variables():
    out = render_template("{{ strftime_now('%Y') }} {{ enable_thinking }}", MSGS, enable_thinking=False)
    year, flag = out.split()
    assert year.isdigit() and len(year) == 4 and flag == "False"


def test_raise_exception_is_a_render_error():
    with pytest.raises(TemplateRenderError, match="Only user and assistant roles"):
        render_template("{{ raise_exception('Only user and assistant roles are supported') }}", MSGS)


def test_syntax_error_says_where():
    with pytest.raises(TemplateRenderError, match="syntax error at line 2"):
        render_template("ok\n{% for %}", MSGS)


@pytest.mark.parametrize(
    "payload",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os.popen('echo PWNED').read() }}",
        "{{ joiner.__init__.__globals__ }}",
        "{% for c in ().__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
        "{{ messages.__class__ }}",
        "{{ namespace.__init__.__globals__['__builtins__'] }}",
        "{{ lipsum.__globals__['os'].system('echo PWNED') }}",
        "{{ messages[0]._private }}",
    ],
)
def test_cve_2024_34359_payloads_cannot_escape(payload, tmp_path, capfd):
    try:
        out = render_template(payload, [{"role": "user", "content": "hi", "_private": "x"}])
    except TemplateRenderError:
        out = ""
    assert "PWNED" not in out and "subclasses" not in out.lower()
    assert "<class" not in out and "builtins" not in out and "function" not in out.lower()
    assert "PWNED" not in capfd.readouterr().out


def test_dunder_access_raises_render_error():
    with pytest.raises(TemplateRenderError, match="unsafe|undefined|attribute"):
        render_template("{{ cycler.__init__.__globals__.os.popen('id').read() }}", MSGS)


def test_infinite_loop_is_stopped_by_the_operation_budget():
    src = "{% set xs = [1] %}{% for x in xs %}{% set _ = xs.append(x) %}{% endfor %}"
    with pytest.raises(TemplateRenderError, match="operations"):
        render_template(src, MSGS, max_operations=50_000)


def test_nested_silent_loops_are_stopped():
    src = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(TemplateRenderError, match="operations"):
        render_template(src, MSGS, max_operations=100_000)


def test_huge_output_is_stopped():
    with pytest.raises(TemplateRenderError, match="characters|too large"):
        render_template(
            "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", MSGS, max_output_chars=1_000_000
        )
    with pytest.raises(TemplateRenderError, match="too large"):
        render_template("{{ 'x' * 100000000 }}", MSGS)


def test_recursion_is_a_render_error():
    src = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
    with pytest.raises(TemplateRenderError):
        render_template(src, MSGS)


def test_non_string_source_is_a_render_error():
    with pytest.raises(TemplateRenderError, match="must be a string"):
        render_template(None, MSGS)  # type: ignore[arg-type]


def test_tojson_lists_generators_like_jinja():
    """``tools | map(attribute=...) | tojson`` (llama.cpp's older DeepSeek R1 template) gives a JSON list."""
    src = "{{ tools | map(attribute='name') | tojson }}|{{ tools | selectattr('name') | list | tojson }}"
    out = render_template(src, [], tools=[{"name": "a"}, {"name": "b"}], add_generation_prompt=False)
    assert out == '["a", "b"]|[{"name": "a"}, {"name": "b"}]'
