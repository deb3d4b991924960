"""Detection from the template itself, over every official template in the fixtures.

Data-driven from sources.json / families.json: every template is detected as the family it is
labelled with (required or long tail), every ``null`` one as no format, none as a wrong family.
A real call with tricky values rendered by each template parses back typed, and a whole tool
conversation renders through each template.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from app.engine.formats import FORMATS, PROBE_TOOLS, detect, detect_template
from app.engine.formats.detect import MARKED_TEMPLATES, _template_renderer, call_texts, probe_texts
from app.engine.templates import render_template

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"
SOURCES = json.loads((TEMPLATES / "sources.json").read_text())["templates"]
FAMILIES = json.loads((TEMPLATES / "families.json").read_text())["templates"]
# The JSON and XML families whose templates render with any end-of-turn token the GGUF names.
EOS_FAMILIES = {"hermes", "qwen-xml", "llama3", "mistral"}


# Labelled families not registered yet: their templates may still detect as None (never as a
# wrong family). Empty: every family the fixtures name is registered.
NOT_YET: frozenset[str] = frozenset()


def _expected(name: str) -> str | None:
    fam = FAMILIES[name]["family"]
    return fam if fam in FORMATS else None


def test_every_labelled_family_is_registered():
    labelled = {meta["family"] for meta in FAMILIES.values() if meta["family"]}
    assert labelled - NOT_YET <= set(FORMATS), labelled - set(FORMATS)


def test_fixtures_match_their_recorded_sha256():
    assert set(SOURCES) == set(FAMILIES)
    for name, meta in SOURCES.items():
        digest = hashlib.sha256((TEMPLATES / name).read_bytes()).hexdigest()
        assert digest == meta["sha256"] == FAMILIES[name]["sha256"], name


def test_the_eos_families_are_registered():
    assert EOS_FAMILIES <= set(FORMATS)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_detects_expected_family(name):
    source = (TEMPLATES / name).read_text()
    got = detect_template(source, bos_token="<s>")
    if FAMILIES[name]["family"] in NOT_YET:  # its family comes later; a wrong family never
        assert got is None
    else:
        assert got == FAMILIES[name]["family"]


@pytest.mark.parametrize("name", sorted(n for n in FAMILIES if FAMILIES[n]["family"] in EOS_FAMILIES))
def test_detects_with_the_gguf_eos_token(name):
    source = (TEMPLATES / name).read_text()
    for eos in ("</s>", "<|im_end|>", "<|eot_id|>", "<|endoftext|>"):
        assert detect_template(source, bos_token="<s>", eos_token=eos) == FAMILIES[name]["family"]


def _render(source: str):
    def render(messages, tools):
        return render_template(
            source,
            messages,
            tools=tools,
            bos_token="<s>",
            add_generation_prompt=messages[-1]["role"] != "assistant",
        )

    return render


# Every property described: Command R+'s template reads each one's description.
LOOKUP = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a place up.",
            "parameters": {
                "type": "object",
                "properties": {
                    "zip": {"type": "string", "description": "Postal code"},
                    "limit": {"type": "integer", "description": "Most results"},
                    "exact": {"type": "boolean", "description": "Exact match only"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "Labels"},
                },
                "required": ["zip"],
            },
        },
    }
]


def _marked_only(name: str) -> bool:
    """The template renders no call turn: its family is known by the strings it holds."""
    source = (TEMPLATES / name).read_text()
    return any(f == FAMILIES[name]["family"] and all(m in source for m in ms) for f, ms in MARKED_TEMPLATES)


MARKED = sorted(n for n in FAMILIES if _expected(n) and _marked_only(n))


@pytest.mark.parametrize("name", MARKED)
def test_a_marked_template_renders_no_call_and_is_known_by_its_markers(name):
    """Granite 3.x and Phi-4-mini write a past call as the turn's plain content, FunctionGemma's
    (LiteRT-LM) takes arguments already written in its notation: no probe call renders that a
    family reads back, and detection names the family from the markers the template holds."""
    source = (TEMPLATES / name).read_text()
    fmt = FORMATS[_expected(name)]
    assert detect(_template_renderer(source, "<s>", ""), "") is None
    assert detect_template(source, bos_token="<s>") == fmt.name
    for marks in (ms for f, ms in MARKED_TEMPLATES if f == fmt.name):
        for m in marks:  # every marker is needed: without one the template is not the family's
            assert detect_template(source.replace(m, "")) != fmt.name, m


@pytest.mark.parametrize("name", sorted(n for n in FAMILIES if _expected(n) and not _marked_only(n)))
def test_a_real_call_rendered_by_the_template_parses_back_typed(name):
    """Render a call with tricky values through the template; the detected parser reads it typed."""
    source = (TEMPLATES / name).read_text()
    fmt = FORMATS[_expected(name)]
    tools = LOOKUP
    args = {"zip": "02139", "limit": 10, "exact": False, "tags": ["a b", "c"]}
    texts = call_texts(_template_renderer(source, "<s>", ""), tools, "lookup", args)
    assert texts, name
    ok = []
    for prompt, text in texts:
        reply = fmt.parse(text, tools, in_reasoning=fmt.opens_in_reasoning(prompt))
        ok.append(
            [(c.name, c.arguments) for c in reply.tool_calls] == [("lookup", args)]
            and not reply.content.strip()
        )
    assert any(ok), (name, texts)


def test_tool_use_template_is_preferred():
    hermes = (TEMPLATES / "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja").read_text()
    plain = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    assert detect_template(plain) is None
    assert detect_template(plain, tool_use=hermes) == "hermes"
    assert detect_template("{% bad", tool_use=hermes) == "hermes"


@pytest.mark.parametrize(
    "source",
    [
        "{{ raise_exception('no tools') }}",
        "{% for %}",
        # a loop that never ends: it runs until the render's time limit (marked slow)
        pytest.param(
            "{% set xs = [1] %}{% for x in xs %}{% set _ = xs.append(x) %}{% endfor %}",
            marks=pytest.mark.slow,
        ),
        "{{ ''.__class__.__mro__ }}",
        "",
    ],
)
def test_bad_templates_detect_as_none(source):
    assert detect_template(source) is None


def test_detect_with_a_render_callable_that_raises():
    def render(messages, tools):
        raise RuntimeError("boom")

    assert detect(render, "") is None


def test_detect_learns_the_end_of_turn_without_eos():
    source = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    texts = probe_texts(_render(source), "")
    assert texts and all(t.rstrip().endswith("</tool_call>") for _p, t in texts)
    assert detect(_render(source), "") == "hermes"


def test_probe_tools_exercise_typing():
    props = PROBE_TOOLS[0]["function"]["parameters"]["properties"]
    assert {p["type"] for p in props.values()} == {"string", "integer", "boolean"}


def _conversation(content, args_as_string=False):
    args = '{"zip": "02139"}' if args_as_string else {"zip": "02139"}
    return [
        {"role": "system", "content": "Sys-4Kp: answer briefly."},
        {"role": "user", "content": "Is there anything at 02139?"},
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": "call00000", "type": "function", "function": {"name": "lookup", "arguments": args}}
            ],
        },
        {"role": "tool", "tool_call_id": "call00000", "name": "lookup", "content": "Result-4Kp: a library"},
        {"role": "assistant", "content": "Reply-4Kp: there is a library."},
    ]


# Mistral Nemo's template (and vLLM's parallel-call Mistral template) shows the system message only
# inside the conversation's last message when that is the user's, so a conversation that goes on
# past it renders without one.
SYSTEM_WITH_LAST_USER_ONLY = {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "vllm-mistral-parallel.jinja"}
# vLLM's Granite 20B FC template reads the system message, then loops over every message again
# and raises on the system role: it renders only conversations without one.
NO_SYSTEM_ROLE = {"ibm-granite-20b-functioncalling.jinja"}


def _as_metadata(conversation: list[dict]) -> list[dict]:
    """The conversation in the shape GLM-4's templates render (``app.engine.render``: a call as
    an assistant message with the tool's name in ``metadata``, a result as an ``observation``)."""
    out: list[dict] = []
    for m in conversation:
        if m.get("tool_calls"):
            out += [{"role": "assistant", "content": m["content"]}] if m.get("content") else []
            for c in m["tool_calls"]:
                args = c["function"]["arguments"]
                text = args if isinstance(args, str) else json.dumps(args)
                out.append({"role": "assistant", "metadata": c["function"]["name"], "content": text})
        elif m["role"] == "tool":
            out.append({"role": "observation", "content": m["content"]})
        else:
            out.append(m)
    return out


@pytest.mark.parametrize("name", sorted(n for n in FAMILIES if _expected(n)))
def test_a_whole_tool_conversation_renders_through_the_template(name):
    """System, a call, its result and the follow-up answer: every part reaches the prompt (in
    the shape the renderer gives a template that reads calls from ``metadata``)."""
    from app.engine.render import reads_metadata_calls

    source = (TEMPLATES / name).read_text()
    render = _template_renderer(source, "<s>", "</s>")
    shape = _as_metadata if reads_metadata_calls(source) else list
    outs = []
    for content in ("", None):
        for as_string in (False, True):
            try:
                conversation = shape(_conversation(content, as_string)[(name in NO_SYSTEM_ROLE) :])
                outs.append(render(conversation, LOOKUP))
            except Exception as exc:  # noqa: BLE001 - some variants are refused (arguments as text)
                outs.append(exc)
    rendered = [o for o in outs if isinstance(o, str)]
    assert rendered, (name, outs)
    parts = ["Result-4Kp: a library", "Reply-4Kp: there is a library.", "lookup", "02139"]
    if name not in SYSTEM_WITH_LAST_USER_ONLY | NO_SYSTEM_ROLE:
        parts.append("Sys-4Kp")
    for out in rendered:
        for part in parts:
            assert part in out, (name, part)
        assert out.index("Result-4Kp") < out.index("Reply-4Kp"), name


def test_mirothinker_s_template_renders_a_past_call_as_its_mcp_block():
    """llama.cpp's MiroThinker template calls ``render_tool_call()`` without the message it reads
    (llama.cpp's engine lends the caller's variable; so does Callisto's sandbox): a past call
    renders as MiroThinker's MCP block, which its parser reads, and detection names the family by
    that probe call (the template's ``set tool.mt_visited = 1`` on a tool is allowed too)."""
    source = (TEMPLATES / "MiroThinker-v1.jinja").read_text()
    out = _template_renderer(source, "<s>", "</s>")(_conversation(""), LOOKUP)
    assert "<use_mcp_tool>\n<server_name>" in out and "<tool_name>lookup</tool_name>" in out
    assert detect(_template_renderer(source, "<s>", "</s>"), "</s>", source=source) == "mirothinker"


def test_a_template_teaching_the_mcp_block_is_mirothinker_even_when_it_renders_hermes_calls():
    """MiroThinker reads Hermes' calls too (llama.cpp's template renders past calls so) and is
    tried before Hermes, but only for a template holding its MCP block's elements: a Qwen
    template stays Hermes', the same template teaching the block is MiroThinker's."""
    qwen = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    teaching = qwen.replace(
        "# Tools\\n",
        "# Tools\\nUse a tool as <use_mcp_tool><server_name>S</server_name><tool_name>T</tool_name>"
        "<arguments>{}</arguments></use_mcp_tool>\\n",
    )
    assert teaching != qwen
    assert detect_template(qwen, bos_token="<s>") == "hermes"
    assert detect_template(teaching, bos_token="<s>") == "mirothinker"
    for mark in ("<use_mcp_tool>", "<server_name>", "<tool_name>"):
        assert detect_template(teaching.replace(mark, ""), bos_token="<s>") == "hermes", mark


# Labelled null: their templates render no calls, through ``tools`` or any other variable.
# Granite 3.3 and Phi-4-mini render none either, but hold their families' markers (MARKED).
NULL_CHECKED = [
    "HuggingFaceTB-SmolLM3-3B.jinja",
    "LFM2-8B-A1B.jinja",
]
_TOOL_VARIABLES = ("tools", "available_tools", "functions", "custom_tools", "xml_tools", "python_tools")


@pytest.mark.parametrize("name", NULL_CHECKED)
def test_null_templates_render_no_call_through_any_variable(name):
    assert FAMILIES[name]["family"] is None
    source = (TEMPLATES / name).read_text()
    _renders_no_call(name, source)
    assert detect_template(source, bos_token="<s>") is None


def _renders_no_call(name: str, source: str) -> None:
    messages = _conversation("")[1:3]
    messages[1]["tool_calls"][0]["function"]["arguments"] = {"zip": "Arg-9Wq"}
    for variable in _TOOL_VARIABLES:
        for args in ({"zip": "Arg-9Wq"}, '{"zip": "Arg-9Wq"}'):
            messages[1]["tool_calls"][0]["function"]["arguments"] = args
            out = render_template(
                source, messages, add_generation_prompt=False, bos_token="<s>", **{variable: LOOKUP}
            )
            assert "Arg-9Wq" not in out, (name, variable)


def test_gigachat_35_is_told_from_gigachat_3_and_reasons_when_asked():
    """GigaChat 3.5's template shares GigaChat 3's turn tokens (``<|role_sep|>``,
    ``<|message_sep|>``) but renders its calls in GCML: it is ``gigachat-gcml``, the 3 / 3.1
    templates stay ``gigachat``. Its thinking switch is the ``reasoning`` variable: on, the
    generation prompt opens the family's ``<think>`` block."""
    from app.engine.thinking import Thinking, thinking_control

    source = (TEMPLATES / "GigaChat3.5.jinja").read_text()
    assert detect_template(source, bos_token="<s>", eos_token="</s>") == "gigachat-gcml"
    for old in ("GigaChat3-10B-A1.8B.jinja", "GigaChat3.1-10B-A1.8B.jinja"):
        assert detect_template((TEMPLATES / old).read_text(), bos_token="<s>") == "gigachat"
    fmt = FORMATS["gigachat-gcml"]
    control = thinking_control(source, fmt.thinking_tags())
    assert control.kind == "switch" and control.switch == "reasoning"
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    on = render_template(
        source, messages, tools=LOOKUP, bos_token="<s>", **control.plan(Thinking("on")).variables
    )
    off = render_template(
        source, messages, tools=LOOKUP, bos_token="<s>", **control.plan(Thinking("off")).variables
    )
    assert on.endswith("assistant<|role_sep|>\n<think>") and fmt.opens_in_reasoning(on)
    assert off.endswith("assistant<|role_sep|>\n") and not fmt.opens_in_reasoning(off)
