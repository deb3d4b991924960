"""The shared machinery: plain replies stream at once (``orphan_close=False``) and
``Format.expects_orphan_close`` chooses it from the template and the rendered prompt."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from app.engine.formats import FORMATS, Reply, fold_events
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone
from tests.engine.formats import cases as cases_pkg
from tests.engine.formats.harness import TOOLS, Case, check_events, fold_split, splits

REASONING_FAMILIES = sorted(n for n, f in FORMATS.items() if f.reasoning)


def _cases() -> list:
    out = []
    for info in sorted(pkgutil.iter_modules(cases_pkg.__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"{cases_pkg.__name__}.{info.name}")
        out.extend(pytest.param(mod.FAMILY, c, id=f"{mod.FAMILY}-{c.id}") for c in mod.CASES)
    return out


CASES = _cases()


def _orphan(fmt, case: Case) -> bool:
    """The case closes reasoning it did not open (the one thing ``orphan_close`` changes)."""
    if not fmt.reasoning or case.in_reasoning:
        return False
    open_tag, close_tag = fmt.reasoning
    return not case.text.lstrip().startswith(open_tag) and close_tag in case.text


def _fold(fmt, parts, *, in_reasoning=False, truncated=False, orphan_close=False):
    s = fmt.stream(TOOLS, in_reasoning=in_reasoning, orphan_close=orphan_close)
    events = []
    for p in parts:
        events += s.feed(p)
    events += s.finish(truncated=truncated)
    return fold_events(events), events


@pytest.mark.parametrize("family", REASONING_FAMILIES)
def test_plain_reply_streams_from_its_first_characters(family):
    fmt = FORMATS[family]
    reply = "The answer is four, because two and two make four."
    s = fmt.stream(TOOLS, orphan_close=False)
    seen = ""
    first_at = None
    for i, c in enumerate(reply):
        got = "".join(e.text for e in s.feed(c) if isinstance(e, TextDelta))
        if got and first_at is None:
            first_at = i
        seen += got
    assert first_at is not None and first_at <= 2, f"{family}: first text after {first_at} characters"
    assert len(seen) >= len(reply) - 2  # only a possible marker start may be held back
    assert seen + "".join(e.text for e in s.finish() if isinstance(e, TextDelta)) == reply
    # The default keeps the old rule: nothing before the end, in case a closing tag follows.
    s = fmt.stream(TOOLS)
    assert not [e for c in reply for e in s.feed(c)]
    assert fold_events(s.finish()).content == reply


@pytest.mark.parametrize("family", REASONING_FAMILIES)
def test_orphan_close_false_rules(family):
    fmt = FORMATS[family]
    open_tag, close_tag = fmt.reasoning
    # Opening with the tag: reasoning as before.
    got = fmt.parse(f"{open_tag}plan{close_tag}Hi", TOOLS, orphan_close=False)
    assert (got.reasoning, got.content) == ("plan", "Hi")
    # A closing tag right at the start (after whitespace) ends an empty block.
    got = fmt.parse(f" \n{close_tag}Hi", TOOLS, orphan_close=False)
    assert (got.reasoning, got.content) == (" \n", "Hi")
    assert got == fmt.parse(f" \n{close_tag}Hi", TOOLS)
    # Later, a closing tag is just text.
    text = f"thinking{close_tag}Hi"
    got = fmt.parse(text, TOOLS, orphan_close=False)
    # (A family whose closing tag is a control token that never reaches content drops it.)
    assert got == Reply(content="thinkingHi" if close_tag in fmt.openers else text)
    assert fmt.parse(text, TOOLS) == Reply(content="Hi", reasoning="thinking")  # default unchanged
    # Starting inside reasoning (prefilled tag) is unaffected by the option.
    for oc in (True, False):
        got = fmt.parse(f"plan{close_tag}Hi", TOOLS, in_reasoning=True, orphan_close=oc)
        assert (got.reasoning, got.content) == ("plan", "Hi")
    for t in (text, f" \n{close_tag}Hi", f"{open_tag}a{close_tag}b", "x", "", open_tag[:-1], close_tag[:-1]):
        want = fmt.parse(t, TOOLS, orphan_close=False)
        for parts in splits(t):
            got, events = _fold(fmt, parts)
            assert got == want, f"{family}: {parts!r}"
            check_events(events)


@pytest.mark.parametrize(("family", "case"), CASES)
def test_cases_without_orphan_closes_parse_the_same_and_stream_like_parse(family, case):
    fmt = FORMATS[family]
    tools = case.tool_list()
    want = fmt.parse(
        case.text, tools, in_reasoning=case.in_reasoning, truncated=case.truncated, orphan_close=False
    )
    if not _orphan(fmt, case):
        assert want == fmt.parse(case.text, tools, in_reasoning=case.in_reasoning, truncated=case.truncated)
        assert (want.content, want.reasoning, [(c.name, c.arguments) for c in want.tool_calls]) == (
            case.content,
            case.reasoning,
            case.calls,
        )
    for parts in splits(case.text, seeds=3):
        s = fmt.stream(tools, in_reasoning=case.in_reasoning, orphan_close=False)
        events = []
        for p in parts:
            events += s.feed(p)
        events += s.finish(truncated=case.truncated)
        assert fold_events(events) == want, f"{case.id}: split {parts[:6]!r}..."
        check_events(events)


def test_a_call_after_plain_text_still_parses_and_text_before_it_streams():
    fmt = FORMATS["hermes"]
    text = 'Checking.\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    s = fmt.stream(TOOLS, orphan_close=False)
    early = s.feed(text[:12])
    assert "".join(e.text for e in early if isinstance(e, TextDelta)) == "Checking.\n"
    rest = s.feed(text[12:]) + s.finish()
    assert [e.call.name for e in rest if isinstance(e, ToolCallDone)] == ["get_time"]
    assert not [e for e in early + rest if isinstance(e, ReasoningDelta)]


def test_harness_fold_split_default_is_unchanged():
    fmt = FORMATS["qwen-xml"]
    reply, _ = fold_split(fmt, list("a</think>b"), TOOLS)
    assert reply == Reply(content="b", reasoning="a")


QWEN3 = "{% if '</think>' in content %}{{ content.split('</think>')[-1] }}{% endif %}<|im_start|>assistant\n"


@pytest.mark.parametrize(
    ("family", "source", "prompt", "expected"),
    [
        ("hermes", QWEN3, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", True),
        ("hermes", QWEN3, "<|im_start|>assistant\n<think>\n\n</think>\n\n", False),  # enable_thinking=False
        ("hermes", QWEN3, "<|im_start|>assistant\n<think>\n", True),  # in reasoning: no matter
        (
            "hermes",
            "{{ messages[0].content }}<|im_start|>assistant\n",
            "<|im_start|>assistant\n",
            False,
        ),  # Qwen2.5
        ("mistral", "{{ '[THINK]' }}{{ x }}{{ '[/THINK]' }}", "[INST]hi[/INST]", True),
        ("mistral", "[INST]{{ x }}[/INST]", "[INST]hi[/INST]", False),
        ("llama3", "</think>", "x", False),  # no reasoning tags: nothing to close
        ("hermes", None, "x", True),  # unknown: the cautious default
    ],
)
def test_expects_orphan_close(family, source, prompt, expected):
    assert FORMATS[family].expects_orphan_close(source, prompt) is expected


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_every_family_accepts_the_option(family):
    fmt = FORMATS[family]
    for oc in (True, False):
        s = fmt.stream(TOOLS, in_reasoning=False, orphan_close=oc)
        assert isinstance(fold_events(s.feed("Hello") + s.finish()).content, str)
        assert fmt.parse("Hello", TOOLS, orphan_close=oc).content == "Hello"
    assert isinstance(fmt.expects_orphan_close("", ""), bool)


# -- detection cost ------------------------------------------------------------------------------


def _counting_renderer(source: str):
    from app.engine.templates import render_template

    calls = []

    def render(messages, tools):
        calls.append(len(messages))
        last = messages[-1].get("role") if messages else None
        return render_template(
            source, messages, tools=tools, add_generation_prompt=last != "assistant", bos_token="<s>"
        )

    return render, calls


def test_detection_stops_at_the_first_variant_a_family_reads():
    from pathlib import Path

    from app.engine.formats import detect
    from app.engine.formats.detect import probe_texts

    source = (
        Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"
    ).read_text()
    render, calls = _counting_renderer(source)
    assert detect(render) == "hermes"
    assert len(calls) == 3  # the prompt, the end of turn, the first assistant-call variant
    render, calls = _counting_renderer(source)
    # probe_texts still renders every variant: four, then the four followed by the call's result
    assert len(probe_texts(render)) >= 1 and len(calls) == 10


def test_common_prefix_length_matches_commonprefix():
    import os
    import random

    from app.engine.formats.detect import _common_prefix_len

    rnd = random.Random(7)
    for _ in range(3000):
        a = "".join(rnd.choice("ab") for _ in range(rnd.randint(0, 14)))
        b = "".join(rnd.choice("ab") for _ in range(rnd.randint(0, 14)))
        assert _common_prefix_len(a, b) == len(os.path.commonprefix([a, b])), (a, b)
    big = "x" * 100_000
    assert _common_prefix_len(big + "a", big + "b") == 100_000


def test_unoptimized_sandbox_still_blocks_what_constant_folding_would_have_touched():
    from app.engine.errors import TemplateRenderError
    from app.engine.templates import render_template

    assert render_template("{{ 'a' ~ 'b' }}{{ 2 * 3 }}{{ [1, 2]|length }}", []) == "ab62"
    with pytest.raises(TemplateRenderError):
        render_template("{{ 'x' * 10000000 }}", [])
    assert render_template("{{ ''.__class__ }}", []) == ""  # blocked attribute: undefined
