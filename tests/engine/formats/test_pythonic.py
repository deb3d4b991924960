"""Pythonic calls: literal reading without eval, python tags, detection from a pythonic template."""

from __future__ import annotations

import pytest

from app.engine.formats import FORMATS, detect_template, tool_format_choices
from app.engine.formats.events import TextDelta, ToolCallDone
from app.engine.formats.pycalls import parse_call_list
from tests.engine.formats.harness import TOOLS

P = FORMATS["pythonic"]

# A Llama-4-style template that writes past calls as a Python list (the official one is gated).
LLAMA4_LIKE = (
    "{% for m in messages %}<|header_start|>{{ m.role }}<|header_end|>\n\n"
    "{% if m.tool_calls %}<|python_start|>["
    "{% for c in m.tool_calls %}{{ c.function.name }}("
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }}{{ ', ' if not loop.last }}{% endfor %})"
    "{{ ', ' if not loop.last }}{% endfor %}]<|python_end|>"
    "{% else %}{{ m.content }}{% endif %}<|eot|>{% endfor %}"
    "{% if add_generation_prompt %}<|header_start|>assistant<|header_end|>\n\n{% endif %}"
)


def test_pythonic_template_detects_as_pythonic():
    assert detect_template(LLAMA4_LIKE, eos_token="<|eot|>") == "pythonic"
    assert detect_template(LLAMA4_LIKE) == "pythonic"


def test_never_evaluates(tmp_path):
    marker = tmp_path / "pwned"
    payloads = [
        f"[f(x=open({str(marker)!r}, 'w').write('x'))]",
        f"[f(x=__import__('pathlib').Path({str(marker)!r}).touch())]",
        "[f(x=(lambda: 1)())]",
        "[f(x=[i for i in range(10**9)])]",
        "[f(x=9**9**9)]",
        "[f(**{'a': 1})]",
        "[f(x=f'{1}')]",
        "[f(x={1, 2})]",
        "[f(x=b'bytes')]",
        "[f(x={1: 2})]",
    ]
    for text in payloads:
        reply = P.parse(text, TOOLS)
        assert reply.tool_calls == [] and reply.content == text, text
    assert not marker.exists()


@pytest.mark.parametrize(
    ("src", "want"),
    [
        ("[a()]", [("a", {})]),
        ("b(x=1)", [("b", {"x": 1})]),
        (
            "[m.n(x=-1, y=+2.5, z=(1, [None]), w={'k': {'j': True}})]",
            [("m.n", {"x": -1, "y": 2.5, "z": [1, [None]], "w": {"k": {"j": True}}})],
        ),
        (
            "[s(t='''multi\nline''', u=\"\\u00e9\\\\\", v=r'\\d')]",
            [("s", {"t": "multi\nline", "u": "é\\", "v": "\\d"})],
        ),
    ],
)
def test_parse_call_list(src, want):
    got = parse_call_list(src)
    assert got is not None and [(n, a) for n, a, _raw in got] == want


@pytest.mark.parametrize(
    "src",
    [
        "[]",
        "[1]",
        "[a]",
        "[a(1)]",
        "[a()",
        "[a(x=y)]",
        "[a(x=1)][b()]",
        "",
        "[a(x=" + "[" * 500 + "]" * 500 + ")]",
        "x" * 300_000,
    ],
)
def test_parse_call_list_rejects(src):
    assert parse_call_list(src) is None


def test_ordinary_brackets_are_not_held_back():
    s = P.stream(TOOLS)
    assert "".join(e.text for e in s.feed("[1] is a footnote") if isinstance(e, TextDelta)).startswith("[1]")
    s = P.stream(TOOLS)
    ev = s.feed("[get_time(")
    assert ev == []
    ev = s.feed(")] done") + s.finish()
    assert [e.call.name for e in ev if isinstance(e, ToolCallDone)] == ["get_time"]


def test_typed_by_schema():
    reply = P.parse("[search(query=2020, limit='7', tags=['x'], score='null')]", TOOLS)
    assert reply.tool_calls[0].arguments == {"query": 2020, "limit": 7, "tags": ["x"], "score": None}


def test_setting_choice_has_the_label():
    assert ("pythonic", P.label) in tool_format_choices()


def test_a_reply_the_compiler_warns_about_prints_nothing():
    """A Windows path (``\\k`` is an invalid escape) or a literal the compiler frowns at is read
    or refused quietly, with every warning turned on: nothing about the model's text reaches the
    user's console or a server log. In a fresh interpreter, where no test runner filters warnings."""
    import subprocess
    import sys

    probe = (
        "from app.engine.formats.pycalls import parse_call_list\n"
        "print(parse_call_list(r'[f(a=\"C:\\kit\\dir\", b=1)]'))\n"
        "print(parse_call_list('[f(a=1if 1 else 2)]'))\n"
        "print(parse_call_list('[f(a=(1, 2)(3))]'))\n"
        "import ast\n"
        "ast.parse(r'\"\\k\"', filename='<elsewhere>')\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "default", "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[('f', {'a': 'C:\\\\kit\\\\dir', 'b': 1}, 'f(a=\"C:\\\\kit\\\\dir\", b=1)')]"
    assert lines[1:] == ["None", "None"]
    # Only the model's text is quiet: the same warning about any other source still shows.
    assert out.stderr.count("Warning") == 1 and "<elsewhere>:1" in out.stderr, out.stderr
