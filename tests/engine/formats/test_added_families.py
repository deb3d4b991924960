"""The families added with issue 27 (Granite 3.x, xLAM, InternLM, LongCat, Granite 20B FC,
Phi-4-mini, Jamba, Hunyuan-A13B, ...) as users meet them: each is a settings choice named by its
models, ``python -m app inspect`` names it for a tiny real GGUF built with its published
template, and ``python -m app check`` runs a tiny GGUF of it (its template, random weights, the
family forced) through the tool-choice scenarios without a harness error. LongCat, Step-3 and
ERNIE 4.5 have no published template in the fixtures: their tiny GGUFs carry a stand-in written
from what their model cards and servers document (``STAND_INS``)."""

from __future__ import annotations

import json

import pytest

from app.cli import main
from app.engine.formats import FORMATS, detect_template, tool_format_choices
from tests.engine.formats.harness import case_modules
from tests.test_cli import REPO, run_app

TEMPLATES = REPO / "tests" / "fixtures" / "chat_templates"

# family -> words its settings label holds (the model names users know)
NAMES = {
    "granite": ("Granite 3.0", "3.3"),
    "xlam": ("xLAM-2", "Llama-xLAM"),
    "internlm": ("InternLM2", "InternLM2.5", "Intern-S1"),
    "longcat": ("LongCat-Flash",),
    "granite-20b-fc": ("granite-20b-functioncalling",),
    "phi4-mini": ("Phi-4-mini-instruct",),
    "jamba": ("Jamba 1.5", "1.7"),
    "hunyuan-a13b": ("Hunyuan-A13B",),
    "minimax-m1": ("MiniMax-M1",),
    "olmo3": ("OLMo 3",),
    "functiongemma": ("FunctionGemma",),
    "step3": ("Step-3",),
    "ernie45": ("ERNIE-4.5",),
}

# template, family, control tokens, user-defined tokens, bos, eos
MODELS = [
    (
        "ibm-granite-granite-3.3-2B-Instruct.jinja",
        "granite",
        ["<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "<|tool_call|>"],
        [],
        "<|end_of_text|>",
        "<|end_of_text|>",
    ),
    ("Salesforce-xLAM-2-qwen.jinja", "xlam", ["<|im_start|>", "<|im_end|>"], [], None, "<|im_end|>"),
    (
        "internlm2-tool.jinja",
        "internlm",
        ["<s>", "<|im_start|>", "<|im_end|>", "<|action_start|>", "<|action_end|>", "<|plugin|>"],
        [],
        "<s>",
        "<|im_end|>",
    ),
    (
        "ibm-granite-20b-functioncalling.jinja",
        "granite-20b-fc",
        ["<|endoftext|>"],
        ["<function_call>"],
        None,
        "<|endoftext|>",
    ),
    (
        "microsoft-Phi-4-mini-instruct.jinja",
        "phi4-mini",
        ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|tool|>", "<|/tool|>"],
        [],
        None,
        "<|end|>",
    ),
    (
        "ai21labs-AI21-Jamba-Mini-1.7.jinja",
        "jamba",
        ["<|startoftext|>", "<|bom|>", "<|eom|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"],
        ["<tool_calls>", "</tool_calls>"],
        "<|startoftext|>",
        "<|eom|>",
    ),
    (
        "tencent-Hunyuan-A13B.jinja",
        "hunyuan-a13b",
        ["<|startoftext|>", "<|extra_0|>", "<|extra_4|>", "<|eos|>"],
        ["<tool_calls>", "</tool_calls>", "<think>", "</think>", "<answer>", "</answer>"],
        None,
        "<|eos|>",
    ),
    (
        "MiniMax-M1.jinja",
        "minimax-m1",
        ["<begin_of_document>", "<beginning_of_sentence>", "<end_of_sentence>"],
        ["<tool_calls>", "</tool_calls>", "<think>", "</think>"],
        "<begin_of_document>",
        "<end_of_sentence>",
    ),
    ("allenai-OLMo-3.jinja", "olmo3", ["<|im_start|>", "<|im_end|>"], [], None, "<|im_end|>"),
    (
        "google-functiongemma-litert-lm.jinja",
        "functiongemma",
        ["<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"],
        ["<start_function_call>", "<end_function_call>", "<escape>", "<start_function_response>"],
        "<bos>",
        "<end_of_turn>",
    ),
]

# Families whose published template could not be found (the search is recorded in
# tests/fixtures/chat_templates/sources.txt): a stand-in that renders tools, calls and results
# the way their model cards (LongCat's "[Round N] USER:" turns and tool description) and their
# servers' parsers document, so their tiny GGUFs have a template to render. Not fixtures: no
# detection claim rests on them beyond their rendered call.
STAND_INS = {
    "stand-in:longcat": (
        "{%- if tools %}## Tools\nYou have access to the following tools: \n\n### Tool namespace: function\n"
        "{% for t in tools %}\n#### Tool name: {{ t.function.name }}\n\nDescription: {{ t.function.description }}"
        "\n\nInputSchema: \n{{ t.function.parameters | tojson(indent=2) }}\n{% endfor %}\n**Note**: For each "
        "function call, return a json object with function name and arguments within "
        "<longcat_tool_call></longcat_tool_call> XML tags.\n\n## Messages\n{% endif %}"
        "{%- set ns = namespace(round=0) %}{% for m in messages %}{% if m.role == 'system' %}SYSTEM:{{ m.content }}"
        "{%- elif m.role in ('user', 'tool') %}{{ '' if loop.first else ' ' }}[Round {{ ns.round }}] USER:"
        "{%- if m.role == 'tool' %}<longcat_tool_response>\n{{ m.content }}\n</longcat_tool_response>"
        "{%- else %}{{ m.content }}{% endif %} ASSISTANT:{% set ns.round = ns.round + 1 %}"
        "{%- else %}{{ m.content or '' }}{% for c in m.tool_calls or [] %}<longcat_tool_call>\n"
        '{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}\n'
        "</longcat_tool_call>{% endfor %}</longcat_s>{% endif %}{% endfor %}"
    ),
    # Step-3: the published template (seen in part, sources.txt) writes the tools into the system
    # text and teaches the call as <｜tool_calls_begin｜>\n<｜tool_call_begin｜>\nfunction<｜tool_sep｜>
    # <steptml:invoke name=...><steptml:parameter name=...>V</steptml:parameter></steptml:invoke>
    # <｜tool_call_end｜>\n...<｜tool_calls_end｜>; the stand-in teaches it and renders calls so.
    "stand-in:step3": (
        "{%- for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
        "{%- if tools %}# Tools\nYou may call one or more tools. Their schemas are within <tools></tools> "
        "XML tags: <tools>{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools> Make tool calls in this "
        'format: <｜tool_calls_begin｜>\n<｜tool_call_begin｜>\nfunction<｜tool_sep｜><steptml:invoke name="NAME">'
        '<steptml:parameter name="KEY">VALUE</steptml:parameter>...</steptml:invoke><｜tool_call_end｜>\n'
        "<｜tool_calls_end｜>\n{% endif %}"
        "{%- for m in messages %}{% if m.role in ('user', 'tool') %}<|BOT|>{{ m.role }}\n{{ m.content }}<|EOT|>"
        "{%- elif m.role == 'assistant' %}<|BOT|>assistant\n{{ m.content or '' }}"
        "{%- if m.tool_calls %}<｜tool_calls_begin｜>\n{% for c in m.tool_calls %}"
        '<｜tool_call_begin｜>\nfunction<｜tool_sep｜><steptml:invoke name="{{ c.function.name }}">'
        '{% for k, v in c.function.arguments.items() %}<steptml:parameter name="{{ k }}">'
        "{{ v if v is string else (v | tojson) }}</steptml:parameter>{% endfor %}"
        "</steptml:invoke><｜tool_call_end｜>\n{% endfor %}<｜tool_calls_end｜>{% endif %}<|EOT|>"
        "{%- endif %}{% endfor %}{% if add_generation_prompt %}<|BOT|>assistant\n{% endif %}"
    ),
    "stand-in:ernie45": (
        "<|begin_of_sentence|>{% for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
        "{% if tools %}<tool_list>{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tool_list>\n{% endif %}"
        "{%- for m in messages %}{% if m.role == 'user' %}User: {{ m.content }}\n"
        "{% elif m.role == 'tool' %}User: <tool_output>\n{{ m.content }}\n</tool_output>\n"
        "{% elif m.role == 'assistant' %}Assistant: {{ m.content or '' }}{% for c in m.tool_calls or [] %}"
        '<tool_call>\n{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}\n'
        "</tool_call>\n{% endfor %}<|end_of_sentence|>{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}Assistant: {% endif %}"
    ),
}
MODELS += [
    (
        "stand-in:longcat",
        "longcat",
        ["</longcat_s>"],
        ["<longcat_tool_call>", "</longcat_tool_call>"],
        None,
        "</longcat_s>",
    ),
    (
        "stand-in:step3",
        "step3",
        ["<|BOT|>", "<|EOT|>"],
        [
            "<｜tool_calls_begin｜>",
            "<｜tool_calls_end｜>",
            "<｜tool_call_begin｜>",
            "<｜tool_call_end｜>",
            "<｜tool_sep｜>",
        ],
        None,
        "<|EOT|>",
    ),
    (
        "stand-in:ernie45",
        "ernie45",
        ["<|begin_of_sentence|>", "<|end_of_sentence|>"],
        ["<tool_call>", "</tool_call>", "<think>", "</think>", "<response>", "</response>"],
        None,
        "<|end_of_sentence|>",
    ),
]


def _from_cases() -> None:
    """A family's cases module (``tests/engine/formats/cases``) may carry these data itself, so a
    family added later keeps them beside its cases: ``SETTING_WORDS`` (the words its settings
    label holds), ``TINY_MODELS`` (rows as MODELS's, without the family), ``STAND_IN`` (a
    stand-in template's text, named ``stand-in:FAMILY`` in ``TINY_MODELS``) and ``COST_VALUE``
    (see ``_VALUES`` below)."""
    for family, mod in case_modules().items():
        if hasattr(mod, "SETTING_WORDS"):
            NAMES[family] = tuple(mod.SETTING_WORDS)
        if hasattr(mod, "STAND_IN"):
            STAND_INS[f"stand-in:{family}"] = mod.STAND_IN
        for template, control, user, bos, eos in getattr(mod, "TINY_MODELS", ()):
            MODELS.append((template, family, list(control), list(user), bos, eos))


_from_cases()
IDS = [m[0] for m in MODELS]


def template_source(template: str) -> str:
    """The text of a MODELS template: a fixture's, or a stand-in's."""
    return STAND_INS.get(template) or (TEMPLATES / template).read_text()


def test_each_family_is_a_setting_choice_that_names_its_models():
    labels = dict(tool_format_choices())
    for family, words in NAMES.items():
        assert family in FORMATS
        for word in words:
            assert word in labels[family], (family, labels[family])


def test_each_family_is_a_tool_format_option():
    proc = run_app("chat", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for family in NAMES:
        assert family in text, family


@pytest.mark.parametrize(("template", "family", "control", "user", "bos", "eos"), MODELS, ids=IDS)
def test_inspect_shows_the_family(tiny_gguf, template, family, control, user, bos, eos):
    path = tiny_gguf(
        chat_template=template_source(template),
        control_tokens=control,
        user_tokens=user,
        bos=bos,
        eos=eos,
    )
    proc = run_app("inspect", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(None, 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines["tool_format"] == family


# A scenario per tool choice and one with a tool result: enough to drive the harness through
# rendering, constrained decoding, parsing and scoring with the family forced.
SCENARIOS = ("choice-required-time", "choice-named-price", "choice-auto-calls", "multi-result-then-answer")


@pytest.mark.parametrize(("template", "family", "control", "user", "bos", "eos"), MODELS, ids=IDS)
def test_check_runs_a_tiny_model_of_the_family_without_a_harness_error(
    tiny_gguf, tmp_path, template, family, control, user, bos, eos
):
    path = tiny_gguf(
        chat_template=template_source(template),
        control_tokens=control,
        user_tokens=user,
        bos=bos,
        eos=eos,
    )
    out = tmp_path / "result.json"
    args = ["check", "--model", str(path), "--tool-format", family, "--max-tokens", "48", "--out", str(out)]
    for sid in SCENARIOS:
        args += ["--scenario", sid]
    rc = main([*args, "--n-ctx", "4096", "--threads", "1"])
    assert rc in (0, 1)  # 1: a scenario failed (random weights); never a harness error
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["model"]["tool_format"] == family
    assert len(data["results"]) == len(SCENARIOS)
    rows = [(r["id"], r["outcome"], r["message"]) for r in data["results"]]
    assert all(outcome in ("pass", "fail") for _sid, outcome, _m in rows), rows
    assert data["summary"]["errors"] == 0


def test_longcat_is_detected_from_a_template_that_names_its_tag():
    """No published LongCat template was found; its model card has the system prompt name the
    tag. A template that renders the call in the card's wire is detected by the call, one that
    only names the tag (and renders no call) by the tag."""
    head = (
        "{%- if tools %}## Tools\n{{ tools | tojson }}\nReturn a json object within "
        "<longcat_tool_call></longcat_tool_call> XML tags.\n{% endif %}"
        "{%- for m in messages %}{% if m.role == 'user' %}[Round 0] USER:{{ m.content }} ASSISTANT:"
    )
    names_only = head + "{% else %}{{ m.content }}</longcat_s>{% endif %}{% endfor %}"
    assert detect_template(STAND_INS["stand-in:longcat"]) == "longcat"  # renders the card's calls
    assert detect_template(names_only) == "longcat"
    assert detect_template(names_only.replace("</longcat_tool_call>", "")) is None


def test_step3_is_detected_from_a_template_that_names_its_markers():
    """No published Step-3 template was found. A template that renders Step-3's section is
    detected by the call, one that only names its markers (and renders no call) by them."""
    head = (
        "{%- if tools %}Tools: {{ tools | tojson }}\nCall them in <｜tool_calls_begin｜> sections of "
        "<steptml:invoke> elements.\n{% endif %}"
        "{%- for m in messages %}{% if m.role == 'user' %}<|user|>{{ m.content }}<|assistant|>"
    )
    names_only = head + "{% else %}{{ m.content }}<|end|>{% endif %}{% endfor %}"
    assert detect_template(STAND_INS["stand-in:step3"]) == "step3"  # renders Step-3's section
    assert detect_template(names_only) == "step3"
    assert detect_template(names_only.replace("<steptml:invoke>", "")) is None


def test_ernie45_is_detected_only_from_a_template_with_its_sentence_markers():
    """No published ERNIE 4.5 tool template was found. ERNIE writes Hermes' calls: a template that
    renders them is ERNIE's when it opens with ERNIE's <|begin_of_sentence|>, whether its turns end
    with <|end_of_sentence|> (the -PT templates) or </s> (Baidu's VL line), Hermes' otherwise."""
    ernie = STAND_INS["stand-in:ernie45"]
    assert detect_template(ernie) == "ernie45"
    assert detect_template(ernie.replace("<|end_of_sentence|>", "</s>")) == "ernie45"
    assert detect_template(ernie.replace("<|begin_of_sentence|>", "<s>")) == "hermes"


# -- cost: each parser stays linear (issue 27, Must show 3, as far as tests go) -------------------

# One call whose value holds the family's markers (as its wire can carry them).
_VALUES = {
    "granite": "a ] <|tool_call|>[ </response> b",
    "xlam": "a ] ``` [{ b",
    "internlm": "a <|action_end|> <|action_start|><|plugin|> b",
    "longcat": "a </longcat_tool_call> </think> b",
    "granite-20b-fc": "a } <function_call> { b",
    "phi4-mini": "a ] functools[ b",
    "jamba": "a </tool_calls> ] b",
    "hunyuan-a13b": "a </tool_calls> </answer> </think> b",
    "minimax-m1": "a </tool_calls> } { b",
    "olmo3": "a </function_calls> ) ( b",
    "functiongemma": "a <end_function_call> } b",
    "step3": "a <｜tool_calls_end｜> <｜tool_call_end｜> b",
    "ernie45": "a </tool_call> </response> b",
}
# ... and of a family added later, its cases module's COST_VALUE
_VALUES.update({f: m.COST_VALUE for f, m in case_modules().items() if hasattr(m, "COST_VALUE")})


def test_every_added_family_has_a_cost_case():
    assert set(_VALUES) == set(NAMES)


def _stream_all(fmt, text: str, seed: int = 11):
    import random

    from app.engine.formats import fold_events
    from tests.engine.formats.harness import TOOLS

    rnd = random.Random(seed)
    s = fmt.stream(TOOLS)
    events, i = [], 0
    while i < len(text):
        k = rnd.randint(1, 16)
        events += s.feed(text[i : i + k])
        i += k
    events += s.finish()
    return s, fold_events(events)


@pytest.mark.parametrize("family", sorted(_VALUES))
def test_one_huge_call_is_linear(family):
    fmt = FORMATS[family]
    text = fmt.example_call("set_port", {"blob": (_VALUES[family] + " ") * 5_000})
    s, got = _stream_all(fmt, text)
    assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
    assert [c.name for c in got.tool_calls] == ["set_port"]


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(_VALUES))
def test_cost_is_linear_at_one_megabyte(family):
    from tests.engine.formats.harness import TOOLS

    fmt = FORMATS[family]
    call = fmt.example_call("set_port", {"blob": _VALUES[family] + " x" * 40, "port": "8080"})
    # xLAM's list opens the reply only: its megabyte is one list of calls; a family whose reply
    # is a run of messages (Inkling, Muse Glimmer) opens at its start too: calls back to back
    chunk = call + " and some text < [ { in between\n" if not fmt.start_only else None
    if chunk is None and not call.startswith("["):
        chunk = call
    if chunk is None:
        item = call[1:-1]
        text = "[" + ", ".join([item] * (1_000_000 // len(item) + 1)) + "]"
        expected = 1_000_000 // len(item) + 1
    else:
        text = chunk * (1_000_000 // len(chunk) + 1)
        expected = len(text) // len(chunk)
    s, got = _stream_all(fmt, text)
    assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
    assert got == fmt.parse(text, TOOLS)
    assert len(got.tool_calls) == expected
    assert got.tool_calls[0].arguments["blob"].startswith(_VALUES[family])
