"""Step-3 under a forced tool choice writes the call its template teaches: a newline after
``<｜tool_calls_begin｜>``, after ``<｜tool_call_begin｜>`` and after each ``<｜tool_call_end｜>``,
none inside the invoke (the published template's system text; tests/fixtures/chat_templates/
sources.txt). The parser reads that spelling and the servers' (the cases in cases/step3.py)."""

from __future__ import annotations

import pytest

from app.engine import load_model
from app.engine.constraints import compile_constraint
from app.engine.errors import ConstraintError
from app.engine.formats import FORMATS
from tests.engine.formats.cases.step3 import CLOSE, OPEN, SEP, B, E, call, taught
from tests.engine.formats.harness import TOOLS
from tests.engine.formats.test_added_families import STAND_INS

STAND_IN = STAND_INS["stand-in:step3"]
ARGS = [("city", "Paris"), ("days", "3")]


@pytest.fixture
def model(tiny_gguf):
    path = tiny_gguf(
        chat_template=STAND_IN,
        control_tokens=["<|BOT|>", "<|EOT|>"],
        user_tokens=[OPEN, CLOSE, B, E, SEP],
        eos="<|EOT|>",
    )
    m = load_model(path, n_ctx=1024)
    yield m
    m.close()


def test_the_example_call_is_the_taught_spelling_and_the_stand_in_renders_it():
    taught_call = OPEN + "\n" + taught("get_weather", ARGS) + "\n" + CLOSE
    assert FORMATS["step3"].example_call("get_weather", {"city": "Paris", "days": "3"}) == taught_call
    from jinja2 import Environment

    history = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": dict(ARGS)}}],
        },
    ]
    text = Environment().from_string(STAND_IN).render(messages=history, tools=TOOLS)
    assert taught_call in text
    # the system text teaches the same spelling
    assert f"{OPEN}\n{B}\nfunction{SEP}<steptml:invoke name=" in text.split("<|BOT|>")[0]


@pytest.mark.parametrize(
    "choice",
    ["required", {"type": "function", "function": {"name": "get_weather"}}],
    ids=["required", "named"],
)
def test_a_forced_call_is_written_as_the_template_teaches(model, choice):
    c = compile_constraint(model, family="step3", tools=TOOLS, tool_choice=choice, parallel_tool_calls=False)
    done = c.after(OPEN + "\n" + taught("get_weather", ARGS) + "\n" + CLOSE)
    allowed = done.start().allowed()
    assert {int(t) for t in allowed.nonzero()[0]} <= set(model.eog_ids)  # the call is whole
    servers = OPEN + "\n" + call("get_weather", ARGS)
    for other in (
        OPEN + B,  # no newline after the section opener
        OPEN + "\n" + B + "function",  # the servers' spelling: no newline after the call opener
        OPEN + "\n" + B + "\n\n",
        OPEN
        + "\n"
        + B
        + "\nfunction"
        + SEP
        + '<steptml:invoke name="get_weather">\n',  # newline in the invoke
        servers,
    ):
        with pytest.raises(ConstraintError):
            c.after(other)
