"""Inkling and Muse Glimmer (``app.engine.formats.blocks``): their stand-in templates are known by
their rendered calls, a generation prompt that opens a reasoning message starts the reply in it,
and their grammars hold what their models write around a call (reasoning first where the prompt
or the request opens it; ``auto``: Inkling's thinking and text blocks before its calls)."""

from __future__ import annotations

import pytest

from app.engine import load_model
from app.engine.constraints import compile_constraint
from app.engine.formats import FORMATS, detect_template
from app.engine.formats.detect import call_texts
from tests.engine.formats.cases import inkling, muse_glimmer
from tests.engine.formats.harness import TOOLS

CASES = {"inkling": inkling, "muse-glimmer": muse_glimmer}


@pytest.mark.parametrize("family", sorted(CASES))
def test_the_stand_in_is_known_by_its_rendered_call(family):
    mod = CASES[family]
    eos = mod.TINY_MODELS[0][4]
    assert detect_template(mod.STAND_IN) == family
    assert detect_template(mod.STAND_IN, eos_token=eos) == family


def test_the_stand_ins_render_a_whole_tool_round():
    from app.engine.templates import render_template

    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "reasoning_content": "Look it up.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    ]
    ink = render_template(inkling.STAND_IN, messages, add_generation_prompt=True, tools=TOOLS)
    assert ink.startswith("<|message_system|>tool_declare<|content_xml|>[")
    assert "<|message_model|><|content_thinking|>Look it up.<|end_message|>" in ink
    assert "<|message_model|>get_weather<|content_invoke_tool_json|>" in ink
    assert "<|message_tool|>get_weather<|content_text|>18C<|end_message|>" in ink
    assert ink.endswith("<|message_model|>")
    muse = render_template(muse_glimmer.STAND_IN, messages, add_generation_prompt=True, tools=TOOLS)
    assert '# Valid recipients: "self", "get_weather.*"' in muse
    assert "<|start|>assistant to=self<|message|>Look it up.<|eom|>" in muse
    assert (
        '<|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name="get_weather">'
        in muse
    )
    assert '<|start|>tool get_weather<|message|><tool_output name="get_weather">\n18C\n</tool_output>' in muse
    assert muse.endswith("<|start|>assistant")


@pytest.mark.parametrize("family", sorted(CASES))
def test_the_probe_call_of_the_stand_in_parses_back(family):
    from app.engine.formats import PROBE_CALL, PROBE_TOOLS
    from app.engine.templates import render_template

    def render(messages, tools):
        last = messages[-1]["role"]
        return render_template(
            CASES[family].STAND_IN, messages, add_generation_prompt=last != "assistant", tools=tools
        )

    fmt = FORMATS[family]
    for prompt, text in call_texts(render, PROBE_TOOLS, *PROBE_CALL):
        reply = fmt.parse(text, PROBE_TOOLS, in_reasoning=fmt.opens_in_reasoning(prompt))
        assert [(c.name, c.arguments) for c in reply.tool_calls] == [PROBE_CALL], (text, reply)


def test_a_prompt_that_opens_reasoning_starts_the_reply_in_it():
    ink, muse = FORMATS["inkling"], FORMATS["muse-glimmer"]
    assert ink.opens_in_reasoning("<|message_model|><|content_thinking|>")
    assert not ink.opens_in_reasoning("<|message_model|>")
    assert muse.opens_in_reasoning("<|start|>assistant to=self<|message|>")
    assert not muse.opens_in_reasoning("<|start|>assistant")
    reply = ink.parse("plan<|end_message|><|message_model|><|content_text|>Hi", TOOLS, in_reasoning=True)
    assert (reply.reasoning, reply.content) == ("plan", "Hi")
    reply = muse.parse("plan<|eom|><|start|>assistant to=user<|message|>Hi<|eot|>", TOOLS, in_reasoning=True)
    assert (reply.reasoning, reply.content) == ("plan", "Hi")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from app.engine.models.tiny import write_tiny_gguf

    markers = [
        *inkling._MARKERS,
        *[m for m in muse_glimmer._MARKERS if not m.endswith('"')],
    ]
    path = write_tiny_gguf(
        tmp_path_factory.mktemp("blocks") / "tiny.gguf",
        control_tokens=["<s>", "</s>"],
        user_tokens=markers,
        bos="<s>",
        eos="</s>",
        seed=3,
    )
    m = load_model(path, n_ctx=1024, n_threads=1, isolate=False)
    yield m
    m.close()


WEATHER = TOOLS[:1]
INK_CALL = FORMATS["inkling"].example_call("get_weather", {"city": "Paris"})
MUSE_CALL = FORMATS["muse-glimmer"].example_call("get_weather", {"city": "Paris"})


@pytest.mark.parametrize(
    ("family", "kwargs", "text"),
    [
        ("inkling", {"in_reasoning": True}, "plan<|end_message|><|message_model|>" + INK_CALL),
        (
            "inkling",
            {"reasoning": True},
            "<|content_thinking|>plan<|end_message|><|message_model|>" + INK_CALL,
        ),
        (
            "inkling",
            {"tool_choice": "auto"},
            "<|content_thinking|>plan<|end_message|><|message_model|>"
            "<|content_text|>Checking.<|end_message|><|message_model|>" + INK_CALL,
        ),
        (
            "inkling",
            {"tool_choice": "auto"},
            "<|content_thinking|>plan<|end_message|><|message_model|><|content_text|>It is sunny.",
        ),
        ("muse-glimmer", {"in_reasoning": True}, "plan<|eom|>" + MUSE_CALL),
        ("muse-glimmer", {"reasoning": True}, " to=self<|message|>plan<|eom|>" + MUSE_CALL),
        ("muse-glimmer", {}, MUSE_CALL[len("<|start|>assistant") :]),
        ("muse-glimmer", {"tool_choice": "auto"}, "<|message|>It is sunny."),
    ],
)
def test_the_grammar_holds_what_the_model_writes_around_a_call(model, family, kwargs, text):
    args = {"tool_choice": "required", **kwargs}
    c = compile_constraint(model, family=family, tools=WEATHER, parallel_tool_calls=False, **args)
    c.after(text)  # fits (raises otherwise)
    reply = FORMATS[family].parse(text, WEATHER, in_reasoning=kwargs.get("in_reasoning", False))
    assert reply.tool_calls or reply.content, reply
