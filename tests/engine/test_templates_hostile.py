"""Hostile chat templates: every render is bounded in time and memory and changes nothing outside it."""

from __future__ import annotations

import copy
import sys
import threading
import time

import pytest

from app.engine.errors import TemplateRenderError
from app.engine.templates import (
    MAX_TEMPLATE_CHARS,
    compile_template,
    render_template,
)
from tests.support.clock import TickClock
from tests.support.memory import peak_rss_mb

USER = [{"role": "user", "content": "hi"}]

# Each builds (or loops towards) a value far beyond the output cap, in one operation or a few.
GROWERS = {
    "int_squaring": "{% set ns = namespace(n=3) %}{% for i in range(31) %}{% set ns.n = ns.n * ns.n %}{% endfor %}"
    "{{ ns.n }}",
    "int_power": "{{ (2 ** 64) ** 64 }}",
    "tilde_doubling": "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}",
    "replace_filter": "{{ ('x' * 1000000) | replace('x', 'y' * 1000) }}",
    "replace_method": "{{ ('x' * 1000000).replace('x', 'y' * 1000) }}",
    "center_filter": "{{ 'x' | center(1000000000) }}",
    "ljust_method": "{{ 'x'.ljust(1000000000) }}",
    "format_filter": "{{ '%01000000000d' | format(1) }}",
    "percent_operator": "{{ '%01000000000d' % 1 }}",
    "percent_star": "{{ '%*d' % (1000000000, 1) }}",
    "str_format": "{{ '{:>1000000000}'.format('') }}",
    "join_filter": "{{ range(1000000) | join('y' * 1000) }}",
    "join_shared_item": "{{ (['x' * 4000000] * 1000000) | join }}",
    "join_method": "{{ ('y' * 1000).join(range(1000000) | map('string')) }}",
    "list_extend": "{% set l = [1] %}{% for i in range(40) %}{% set _ = l.extend(l) %}{% endfor %}",
    "list_output": "{{ ['x' * 4000000] * 100 }}",
    "indent_width": "{{ ('a\\n' * 100000) | indent(1000000) }}",
    "sum_of_lists": "{{ ([['x'] * 100000] * 1000) | sum(start=[]) }}",
    "lipsum": "{{ lipsum(200000) }}",
    "nested_loops": "{% set l = range(100000) | list %}{% for a in l %}{% for b in l %}{% endfor %}{% endfor %}",
    "sort_loop": "{% set ns = namespace(l=range(200000) | list) %}{% for i in range(400) %}"
    "{% set ns.l = ns.l | sort | unique | list %}{% endfor %}",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(GROWERS))
def test_h2_value_growing_templates_stop_with_a_clear_error(name):
    before = peak_rss_mb()
    start = time.thread_time()  # this thread's CPU time: other work on the machine does not count
    with pytest.raises(TemplateRenderError) as info:
        render_template(GROWERS[name], USER, max_seconds=2.0)
    elapsed = time.thread_time() - start
    assert str(info.value)  # says what failed
    assert elapsed < 6.0, elapsed  # the 2 s deadline holds, plus one bounded step (before: 8 s to never)
    assert peak_rss_mb() - before < 400  # no ~1 GB intermediate value was built


def test_h2_a_hostile_render_does_not_freeze_other_threads():
    gaps: list[float] = []
    stop = threading.Event()

    def ticker() -> None:
        last = time.monotonic()
        while not stop.is_set():
            time.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    t = threading.Thread(target=ticker)
    t.start()
    try:
        for name in ("int_squaring", "int_power", "str_format", "join_filter"):
            with pytest.raises(TemplateRenderError):
                render_template(GROWERS[name], USER, max_seconds=2.0)
    finally:
        stop.set()
        t.join()
    # Before, one big-integer multiplication held the GIL for 35 s (a loaded machine's scheduler
    # adds well under a second).
    assert max(gaps) < 10.0, max(gaps)


def test_h2_ordinary_growth_still_renders():
    src = (
        "{% set ns = namespace(s='', n=1) %}{% for i in range(20) %}{% set ns.s = ns.s ~ i %}"
        "{% set ns.n = ns.n * 3 %}{% endfor %}{{ ns.s }} {{ ns.n }} {{ 'ab' | center(6) }}|{{ '%5d' % 42 }}|"
        "{{ '{:>4}'.format('x') }}|{{ [1, 2] | join(', ') }}|{{ 'a-b' | replace('-', '--') }}"
    )
    out = render_template(src, USER)
    assert out == "012345678910111213141516171819 3486784401   ab  |   42|   x|1, 2|a--b"


def test_h12_renders_work_on_deep_copies():
    tools = [
        {
            "type": "function",
            "function": {"name": "calc", "parameters": {"type": "object", "properties": {"x": {}}}},
        }
    ]
    messages = [{"role": "user", "content": "hi", "extra": {"k": [1]}}]
    kept_tools, kept_messages = copy.deepcopy(tools), copy.deepcopy(messages)
    hostile = (
        "{% set _ = tools[0].function.parameters.clear() %}{% set _ = tools.append(1) %}"
        "{% set _ = messages[0].update({'content': 'owned'}) %}{% set _ = messages[0].extra.k.append(2) %}"
        "{% set _ = flags.update({'x': 1}) %}{{ messages[0].content }}"
    )
    flags: dict = {}
    assert render_template(hostile, messages, tools=tools, flags=flags) == "owned"
    assert tools == kept_tools and messages == kept_messages and flags == {}


def test_h12_a_hostile_render_cannot_change_later_tool_mode_detection():
    from app.engine import templates

    qwen_like = "{% for t in tools %}{{ t.function.name }}{% endfor %}{{ messages[-1].content }}"
    hostile = "{% set _ = tools[0].function.update({'name': 'x'}) %}{{ messages[-1].content }}"
    templates.template_tools_mode.cache_clear()
    assert templates.template_tools_mode(hostile) == "none"
    assert templates.template_tools_mode(qwen_like) == "variable"


def test_h14_compiling_is_bounded():
    start = time.thread_time()  # CPU time: a busy machine does not count
    with pytest.raises(TemplateRenderError, match="too long to compile"):
        compile_template("{{ a }}" * 200_000)  # 1.4 MB: 9 s and 660 MB to compile before
    with pytest.raises(TemplateRenderError, match="too complex"):
        compile_template("{{a}}" * (MAX_TEMPLATE_CHARS // 5 - 10))
    assert time.thread_time() - start < 10


def test_h6_lone_surrogates_never_reach_the_rendered_prompt():
    messages = [
        {"role": "user", "content": "bad \ud800 text"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "calc", "arguments": {"x": "\udfff"}}}],
        },
    ]
    out = render_template(
        "{% for m in messages %}{{ m.content }}{{ m.tool_calls | default([]) | tojson }}{% endfor %}",
        messages,
    )
    out.encode("utf-8")  # what the tokenizer does; raised UnicodeEncodeError before
    assert "bad \ufffd text" in out


SLOW = (
    "{% set ns = namespace(l=range(1000000) | list) %}{% for i in range(200) %}"
    "{% set ns.l = ns.l | sort | unique | list %}{% endfor %}{{ messages[0].content }}"
)


@pytest.mark.slow
def test_h2_library_scan_with_hostile_templates_finishes_and_marks_them(tmp_path):
    from app.engine.models.library import Library
    from app.engine.models.tiny import write_tiny_gguf

    models = tmp_path / "models"
    chatml = (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    write_tiny_gguf(models / "bomb.gguf", chat_template=GROWERS["int_squaring"])
    write_tiny_gguf(models / "slow.gguf", chat_template=SLOW)
    write_tiny_gguf(models / "good.gguf", chat_template=chatml, control_tokens=["<|im_start|>", "<|im_end|>"])
    start = time.thread_time()  # the scan runs in this thread; its CPU time, whatever the load
    found = {m.path.name: m for m in Library(models_dir=models, hf_cache_dir=False).scan()}
    elapsed = time.thread_time() - start
    # Before: the scan never finished. Now: the slow one costs one render's time limit at most
    # (about 11 s of CPU time for the three, 16 s of wall time on an idle machine, 43 s on a busy one).
    assert elapsed < 30, elapsed
    assert set(found) == {"bomb.gguf", "slow.gguf", "good.gguf"}
    for name in ("bomb.gguf", "slow.gguf"):
        summary = found[name].summary
        assert summary is not None and summary.template_problem and summary.tool_format == "none"
    assert found["good.gguf"].summary.template_problem is None


def test_h2_detection_renders_share_one_deadline():
    import uuid

    from app.engine.templates import render_deadline

    # A text no other test rendered: a template that ran out of time once is not run again (N12),
    # which would hide the shared deadline this test is about.
    source = f"{{# {uuid.uuid4().hex} #}}" + SLOW
    clock = TickClock()
    with render_deadline(1.0, clock=clock):
        for i in range(6):  # detection's renders of one template
            with pytest.raises(TemplateRenderError, match="too long") as info:
                render_template(source, USER)
            if i:  # the first render used the time up: the others do not start
                assert "used up" in str(info.value)
    # 1 s of this clock is 100 reads; 6 renders x 5 s each (before) were 3,000
    assert clock.now < 4.0 and clock.reads < 400, (clock.now, clock.reads)


def test_h17_macro_recursion_stops_before_a_small_thread_stack_overflows():
    # A thread with a 256 KB stack (what some platforms give secondary threads) segfaulted the whole
    # process on a recursion bomb before Python's recursion limit was reached.
    import subprocess

    script = (
        "import threading\n"
        "from app.engine.templates import render_template\n"
        "from app.engine.errors import TemplateRenderError\n"
        "src = \"{% macro f(n) %}{% for x in [1] %}{{ f(n + 1) | string ~ 'a' }}{% endfor %}{% endmacro %}{{ f(0) }}\"\n"
        "def run():\n"
        "    try:\n"
        "        render_template(src, [{'role': 'user', 'content': 'x'}])\n"
        "    except TemplateRenderError as exc:\n"
        "        print('refused:', exc)\n"
        "threading.stack_size(256 * 1024)\n"
        "t = threading.Thread(target=run)\n"
        "t.start()\n"
        "t.join()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]),
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-400:])
    assert "refused: template raised an exception: macro calls nested more than" in proc.stdout


def test_a_string_joined_with_a_long_separator_is_refused_before_it_is_built():
    # ``s | join(sep)`` puts sep between each two characters of s: three rounds of this grow 1 -> 2,002
    # -> 2 million -> 2 billion characters. The size check ran only for lists, so the last round built
    # a 2 GB string before its result was looked at (found by the growing-template fuzz).
    source = (
        "{% set ns = namespace(v='x') %}{% for i in range(20) %}"
        "{% set ns.v = ('x' + ns.v) | join('y' * 1000) %}{% endfor %}{{ ns.v }}"
    )
    before = peak_rss_mb()
    with pytest.raises(TemplateRenderError, match=r"\|join would build a string"):
        render_template(source, USER)
    assert peak_rss_mb() - before < 400
    assert render_template("{{ 'abc' | join('-') }}", USER) == "a-b-c"
