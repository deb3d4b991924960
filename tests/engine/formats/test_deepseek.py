"""DeepSeek families through their official templates: parallel calls with tricky values rendered
by each template parse back typed; reasoning prompts; streaming cost stays linear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.formats import FORMATS, detect_template, fold_events, tool_format_choices
from app.engine.formats.deepseek import DSML_OPENERS, SECTION_BEGIN
from app.engine.formats.events import ToolCallDone
from app.engine.templates import render_template
from tests.engine.formats.harness import TOOLS, fold_split

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"
EOT = "<｜end▁of▁sentence｜>"
USER = [{"role": "user", "content": "Weather in Zürich and the time, please."}]

# Values that must survive a template round trip exactly (the DSML wire writes strings raw).
CALLS = [
    ("set_port", {"port": "8080", "zip": "02139", "blob": 'Zürich 東京 "quoted" \\ back\nline {not json}'}),
    (
        "search",
        {
            "query": "a <｜tool▁calls▁end｜> b </｜DSML｜function_calls> c",
            "limit": 10,
            "filters": {"year": 2020},
            "tags": ["x", "y z"],
            "score": None,
        },
    ),
    ("get_time", {}),
]

TEMPLATE_FAMILIES = [
    ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-v3"),
    ("llama-cpp-deepseek-r1.jinja", "deepseek-v3"),
    ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3.1"),
    ("older/deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3.1"),
    ("deepseek-ai-DeepSeek-V3.2.jinja", "deepseek-dsml"),
    ("deepseek-ai-DeepSeek-V4.jinja", "deepseek-dsml"),
]


def _assistant(calls, content, as_string):
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"call{i:05d}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a, ensure_ascii=False) if as_string else a},
            }
            for i, (n, a) in enumerate(calls)
        ],
    }


def rendered_reply(
    source: str, calls, *, content: str | None = None, openers=(), eot: str = EOT, **extra
) -> str:
    """The assistant turn the template writes for ``calls`` (arguments as an object, else as a JSON
    string), from its first call opener (or its content) to the end of the turn."""
    last_error: Exception | None = None
    for as_string in (False, True):
        try:
            full = render_template(
                source,
                [*USER, _assistant(calls, content, as_string)],
                tools=TOOLS,
                add_generation_prompt=False,
                **extra,
            )
        except Exception as e:  # noqa: BLE001 - the other argument shape may render
            last_error = e
            continue
        after_user = full.index(USER[0]["content"]) + len(USER[0]["content"])
        starts = [
            i for i in (full.find(m, after_user) for m in ((content,) if content else openers)) if i != -1
        ]
        if not starts:
            continue
        start = min(starts)
        return full[start : full.index(eot, start)]
    raise AssertionError(f"no call rendered: {last_error}")


def _openers(family: str) -> tuple[str, ...]:
    return DSML_OPENERS if family == "deepseek-dsml" else (SECTION_BEGIN,)


@pytest.mark.parametrize(("name", "family"), TEMPLATE_FAMILIES)
def test_parallel_tricky_calls_rendered_by_the_template_parse_back_typed(name, family):
    source = (TEMPLATES / name).read_text()
    fmt = FORMATS[family]
    text = rendered_reply(source, CALLS, openers=_openers(family))
    reply = fmt.parse(text, TOOLS)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == CALLS, text
    assert reply.content.strip() == "" and reply.reasoning == ""
    # Streaming, one character at a time, gives the same reply.
    streamed, _ = fold_split(fmt, list(text), TOOLS)
    assert streamed == reply
    # No other family reads a call out of it.
    for other, ofmt in FORMATS.items():
        if other != family:
            assert not ofmt.parse(text, TOOLS).tool_calls, other


@pytest.mark.parametrize(
    ("name", "family"), [p for p in TEMPLATE_FAMILIES if p[0] != "older/deepseek-ai-DeepSeek-V3.1.jinja"]
)
def test_template_is_detected(name, family):
    assert (
        detect_template((TEMPLATES / name).read_text(), bos_token="<｜begin▁of▁sentence｜>", eos_token=EOT)
        == family
    )


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3.1"),
        ("deepseek-ai-DeepSeek-V3.2.jinja", "deepseek-dsml"),
        ("deepseek-ai-DeepSeek-V4.jinja", "deepseek-dsml"),
    ],
)
def test_text_before_the_calls_stays_content(name, family):
    source = (TEMPLATES / name).read_text()
    text = rendered_reply(source, CALLS[:1], content="Let me look that up.")
    reply = FORMATS[family].parse(text, TOOLS)
    assert reply.content.strip() == "Let me look that up."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == CALLS[:1]


@pytest.mark.parametrize(
    ("name", "family", "extra", "opens"),
    [
        ("llama-cpp-deepseek-r1.jinja", "deepseek-v3", {}, True),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-v3", {}, False),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek-v3", {"enable_thinking": True}, True),
        ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3.1", {}, False),
        ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek-v3.1", {"thinking": True}, True),
        ("deepseek-ai-DeepSeek-V3.2.jinja", "deepseek-dsml", {"thinking": True}, True),
        ("deepseek-ai-DeepSeek-V4.jinja", "deepseek-dsml", {"thinking": True}, True),
        ("deepseek-ai-DeepSeek-V4.jinja", "deepseek-dsml", {}, False),
    ],
)
def test_thinking_prompt_opens_in_reasoning(name, family, extra, opens):
    fmt = FORMATS[family]
    prompt = render_template(
        (TEMPLATES / name).read_text(), USER, tools=TOOLS, add_generation_prompt=True, **extra
    )
    assert fmt.opens_in_reasoning(prompt) is opens
    section = rendered_reply((TEMPLATES / name).read_text(), CALLS[2:], openers=_openers(family))
    reply = fmt.parse(
        "The user wants the time.\n</think>\n\n" + section if opens else section, TOOLS, in_reasoning=opens
    )
    assert [(c.name, c.arguments) for c in reply.tool_calls] == CALLS[2:]
    assert reply.reasoning == ("The user wants the time.\n" if opens else "")


def test_r1_distill_templates_that_never_close_a_section_have_no_format():
    # These templates write no <｜tool▁calls▁end｜> after a single call: no usable call shape.
    for name in (
        "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
        "older/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    ):
        assert detect_template((TEMPLATES / name).read_text(), eos_token=EOT) is None


def test_settings_choices_list_the_deepseek_families():
    choices = dict(tool_format_choices())
    for family in ("deepseek-v3", "deepseek-v3.1", "deepseek-dsml"):
        assert choices[family] == FORMATS[family].label and "DeepSeek" in choices[family]


@pytest.mark.parametrize("family", ["deepseek-v3", "deepseek-v3.1", "deepseek-dsml"])
def test_cost_is_linear_in_the_reply(family):
    """Streamed one character per delta (the engine's case), the work grows with the reply."""
    source = (TEMPLATES / dict((f, n) for n, f in TEMPLATE_FAMILIES)[family]).read_text()
    section = rendered_reply(source, CALLS, openers=_openers(family))
    fmt = FORMATS[family]

    def ops(k: int) -> tuple[int, int]:
        text = "<think>plan</think>" + ("Some words before. " * 5 + section + "\n") * k
        s = fmt.stream(TOOLS)
        calls = 0
        for ch in text:
            calls += sum(1 for e in s.feed(ch) if isinstance(e, ToolCallDone))
        calls += sum(1 for e in s.finish() if isinstance(e, ToolCallDone))
        assert calls == 3 * k
        return s.ops, len(text)

    small, _ = ops(4)
    big, n_big = ops(16)
    assert big <= 4.5 * small
    assert big <= 10 * n_big


@pytest.mark.parametrize("family", ["deepseek-v3", "deepseek-v3.1", "deepseek-dsml"])
def test_region_scanner_is_linear_on_one_big_section(family):
    """The scanner examines each character of a region a bounded number of times."""
    source = (TEMPLATES / dict((f, n) for n, f in TEMPLATE_FAMILIES)[family]).read_text()
    fmt = FORMATS[family]
    for k in (10, 40):
        section = rendered_reply(source, CALLS * k, openers=_openers(family))
        opener = next(o for o in _openers(family) if section.startswith(o))
        body = section[len(opener) :]
        sc = fmt.region_scanner(opener)
        consumed, ended = sc.scan(body, True)
        assert ended and consumed == len(body)
        assert sc.ops <= 3 * len(body)
        calls, leftover = fmt.parse_region(opener, body, at_end=False, truncated=False, tools=TOOLS)
        assert len(calls) == 3 * k and leftover == ""


D = "｜DSML｜"
PE, IE, TCE = f"</{D}parameter>", f"</{D}invoke>", f"</{D}tool_calls>"
# shape -> (the reply for k, what it reads as: (content, number of calls, number of arguments))
_DEGENERATE = {
    # every parameter without its closing tag
    "params-left-open": (
        lambda k: (
            f'<{D}tool_calls>\n<{D}invoke name="search">\n'
            + "".join(f'<{D}parameter name="p{i}" string="true">v <b> w\n' for i in range(k))
            + f"{IE}\n{TCE}"
        ),
        lambda k: ("", 1, k),
    ),
    # a value full of the invoke's closing tag, closed at last
    "value-full-of-invoke-closes": (
        lambda k: (
            f'<{D}tool_calls>\n<{D}invoke name="search">\n<{D}parameter name="query" string="true">'
            + f"a{IE}  b " * k
            + f"{PE}\n{IE}\n{TCE}"
        ),
        lambda k: ("", 1, 1),
    ),
    "stray-closers": (lambda k: f"Fine.{PE}\n{IE}\n{TCE} " * k, lambda k: ("Fine.\n\n " * k, 0, 0)),
    "stray-closers-in-reasoning": (
        lambda k: "<think>" + f"Fine.{PE}\n{IE}\n{TCE} " * k + "</think>ok",
        lambda k: ("ok", 0, 0),
    ),
    "broken-bare-blocks": (
        lambda k: f'<{D}invoke name="get_time">\noops{PE}\n{IE}\n{TCE} ' * k,
        lambda k: (f'<{D}invoke name="get_time">\noops{PE}\n{IE}\n{TCE} ' * k, 0, 0),
    ),
    "loose-tag-lines": (
        lambda k: f'Use <parameter name="x">v{IE}{PE} then.{PE}\n' * k,
        lambda k: (f'Use <parameter name="x">v{IE}{PE} then.\n' * k, 0, 0),
    ),
}


@pytest.mark.parametrize("shape", list(_DEGENERATE))
def test_degenerate_dsml_costs_stay_linear(shape):
    """Values left open, closing tags inside a value, stray closing tags, broken bare blocks and
    loose parameter tags, streamed one character per delta: the work grows with the reply."""
    fmt = FORMATS["deepseek-dsml"]
    write, reads = _DEGENERATE[shape]

    def ops(k: int) -> tuple[int, int]:
        text = write(k)
        s = fmt.stream(TOOLS)
        events = []
        for ch in text:
            events += s.feed(ch)
        events += s.finish()
        reply = fold_events(events)
        content, calls, args = reads(k)
        assert (reply.content, len(reply.tool_calls)) == (content, calls)
        assert all(len(c.arguments) == args for c in reply.tool_calls)
        return s.ops, len(text)

    small, _ = ops(8)
    big, n_big = ops(32)
    assert big <= 4.5 * small
    assert big <= 30 * n_big
