"""Thinking under control (issue 30): each template's own switch, rendered and obeyed; a thinking
budget that closes the reasoning in the family's syntax; earlier reasoning passed back so a tool
round extends the prompt the KV cache holds.

The models are real GGUFs the tests write: ``tests.ui.scripted_gguf`` (a bigram model: after
token ``k`` it says ``script[k]``), so a model "that would think" opens a reasoning block after
the generation prompt and writes ``x`` until stopped, and answers ``A`` after a closed block.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.calls import ToolCall
from app.engine.chat import ChatSession, LocalReplies
from app.engine.events import DoneEvent, ReasoningEvent, TextEvent
from app.engine.formats import FORMATS
from app.engine.llm import load_model
from app.engine.messages import Message
from app.engine.render import render_messages
from app.engine.session import build_session
from app.engine.thinking import Thinking, parse_thinking, thinking_control
from app.tools.registry import ToolRegistry
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
FAMILIES: dict[str, dict] = json.loads((TEMPLATES / "families.json").read_text())["templates"]

# How each fixture template turns thinking off, as read from its source and trial renders
# (hand-checked against the templates). Every other fixture template has no switch ("none").
EXPECTED_KIND = {
    "Apertus-8B-Instruct.jinja": "switch",
    "Apriel-1.6-15b-Thinker-fixed.jinja": "prefill",
    "Bielik-11B-v3.0-Instruct.jinja": "switch",
    "ByteDance-Seed-OSS.jinja": "budget",
    "Cohere2MoE.jinja": "switch",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": "switch",
    "GLM-4.6.jinja": "switch",
    "GLM-4.7-Flash.jinja": "switch",
    "HuggingFaceTB-SmolLM3-3B.jinja": "switch",
    "Kimi-K2-Thinking.jinja": "prefill",
    "Kimi-K3.jinja": "switch",  # ``thinking``, with ``thinking_effort`` levels low to max
    "LFM2.5-8B-A1B.jinja": "prefill",
    "LFM2.5-Instruct.jinja": "prefill",
    "MiniMax-M2.jinja": "prefill",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": "switch",
    "NVIDIA-Nemotron-Nano-v2.jinja": "tag",
    "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja": "tag",
    "GigaChat3.5.jinja": "switch",
    "Qwen-QwQ-32B.jinja": "switch",
    "Qwen-Qwen3-0.6B.jinja": "switch",
    "Qwen3.5-4B.jinja": "switch",
    "Reka-Edge.jinja": "switch",
    "StepFun3.5-Flash.jinja": "prefill",
    "MiroThinker-v1.jinja": "switch",
    "StepFun3.7-Flash.jinja": "prefill",  # its effort levels include no off: off closes the block
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": "prefill",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": "switch",
    "deepseek-ai-DeepSeek-V3.1.jinja": "switch",
    "deepseek-ai-DeepSeek-V3.2.jinja": "switch",
    "deepseek-ai-DeepSeek-V4.jinja": "switch",
    "gemma4.jinja": "switch",
    "google-gemma-4-31B-it-interleaved.jinja": "switch",
    "google-gemma-4-31B-it.jinja": "switch",
    "ibm-granite-granite-3.3-2B-Instruct.jinja": "switch",
    "llama-cpp-deepseek-r1.jinja": "prefill",
    "llama-cpp-rwkv-world.jinja": "switch",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": "prefill",
    "older/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": "prefill",
    "older/Qwen-QwQ-32B.jinja": "prefill",
    "older/deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": "prefill",
    "older/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": "prefill",
    "older/deepseek-ai-DeepSeek-V3.1.jinja": "switch",
    "older/llama-cpp-deepseek-r1.jinja": "prefill",
    "openai-gpt-oss-120b.jinja": "effort",
    "openbmb-MiniCPM5-1B.jinja": "switch",
    "poolside-Laguna-S-2.1.jinja": "switch",
    "poolside-Laguna-XS-2.1.jinja": "switch",
    "poolside-Laguna-XS.2.jinja": "switch",
    "tencent-Hunyuan-A13B.jinja": "switch",
    "tencent-Hy3.jinja": "effort",
    "unsloth-Apriel-1.5.jinja": "prefill",
    "upstage-Solar-Open-100B.jinja": "effort",
    "vllm-nemotron-json.jinja": "tag",
    "vllm-hyperclovax-seed-think-14b.jinja": "switch",
    "vllm-minicpm3.jinja": "prefill",
    "glm-z1-9b-0414.jinja": "prefill",
    "vllm-deepseek-v3.1.jinja": "switch",
}
SWITCHED = sorted(EXPECTED_KIND)
USER_ONLY = [Message(role="user", content="Hi")]


def _markers(name: str) -> tuple[str, str] | None:
    family = FAMILIES[name]["family"]
    return FORMATS[family].thinking_tags() if family else None


def _control(name: str):
    return thinking_control((TEMPLATES / name).read_text(), _markers(name))


def _render(name: str, thinking: Thinking, messages=USER_ONLY):
    return render_messages(
        (TEMPLATES / name).read_text(), messages, thinking=thinking, reasoning_markers=_markers(name)
    )


def test_each_fixture_template_s_switch_is_detected():
    found = {name: _control(name).kind for name in FAMILIES}
    assert {n: k for n, k in found.items() if k != "none"} == EXPECTED_KIND
    gpt = _control("openai-gpt-oss-120b.jinja")
    assert (gpt.effort, gpt.levels) == ("reasoning_effort", ("low", "medium", "high"))
    assert _control("Qwen-Qwen3-0.6B.jinja").switch == "enable_thinking"
    assert _control("older/deepseek-ai-DeepSeek-V3.1.jinja").switch == "thinking"
    assert _control("ByteDance-Seed-OSS.jinja").budget_variable == "thinking_budget"
    hy3 = _control("tencent-Hy3.jinja")
    assert hy3.levels[0] == "no_think" and hy3.on_level == "high"  # off by default: on names a level


@pytest.mark.parametrize("name", SWITCHED)
def test_off_renders_the_template_s_switch(name):
    control = _control(name)
    off, on = _render(name, Thinking("off")), _render(name, Thinking("on"))
    default = render_messages((TEMPLATES / name).read_text(), USER_ONLY)
    assert off.text != on.text  # the switch reached the prompt
    assert off.thinking and off.thinking != "template default"
    if control.kind == "switch":
        name_, value = control.off_variable or (control.switch, control.off_value)
        assert f"{name_}={value!r}" == off.thinking
    if control.kind == "tag":
        assert "/no_think" in off.thinking and "/think" in on.thinking
    if control.kind == "prefill":
        assert off.text.startswith(default.text) and off.text.rstrip().endswith(control.markers[1])
    if control.kind == "effort":
        assert off.thinking == f"{control.effort}={control.levels[0]!r}"
    if control.markers is not None:
        assert not off.text.rstrip().endswith(control.markers[0])  # no reasoning block left open


def test_effort_levels_render_through_harmony():
    name = "openai-gpt-oss-120b.jinja"
    for level in ("low", "medium", "high"):
        assert f"Reasoning: {level}" in _render(name, Thinking(effort=level)).text
    assert "Reasoning: low" in _render(name, Thinking("off")).text  # Harmony cannot stop: the least
    assert _render(name, Thinking()).thinking == ""  # auto: the template's default, untouched


def test_kimi_k3_s_switch_and_effort_levels_reach_its_prompt():
    name = "Kimi-K3.jinja"
    control = _control(name)
    assert (control.switch, control.effort, control.levels) == (
        "thinking",
        "thinking_effort",
        ("low", "medium", "high", "max"),
    )
    for level in control.levels:
        text = _render(name, Thinking(effort=level)).text
        assert f"thinking_effort={level}`" in text and text.endswith("<|open|>think<|sep|>")
    off = _render(name, Thinking("off")).text
    assert "thinking_effort" not in off and off.endswith("<|open|>response<|sep|>")  # answers at once


def test_hyperclova_x_is_forced_to_think_and_skips_thinking_by_two_variables():
    """HyperCLOVA X's template reads ``force_reasoning`` (the reasoning role opens) and
    ``skip_reasoning`` (the answer's role opens); with neither the model decides. *Off* is the
    second: setting the first to False is the model's own choice, not off."""
    name = "vllm-hyperclovax-seed-think-14b.jinja"
    control = _control(name)
    assert (control.switch, control.off_variable) == ("force_reasoning", ("skip_reasoning", True))
    assert _render(name, Thinking("on")).text.endswith("<|im_start|>assistant/think\n")
    assert _render(name, Thinking("off")).text.endswith("<|im_start|>assistant\n")
    assert _render(name, Thinking()).text.endswith("<|im_start|>assistant")
    # a template with one switch keeps it for both
    assert _control("Qwen-Qwen3-0.6B.jinja").off_variable is None


def test_a_message_template_s_tag_goes_into_the_system_message():
    name = "NVIDIA-Nemotron-Nano-v2.jinja"
    for messages in ([Message(role="system", content="Be brief."), *USER_ONLY], USER_ONLY):
        off = _render(name, Thinking("off"), messages).text
        on = _render(name, Thinking("on"), messages).text
        assert off.rstrip().endswith("<think></think>")  # the template read /no_think
        assert on.rstrip().endswith("<think>") and "/no_think" not in on
        assert "Be brief." in off or messages is USER_ONLY


def _last_token(model, prompt: str) -> str:
    """The text of the prompt's last token (a user token, or one byte)."""
    return model.backend.token_bytes(model.tokenize(prompt)[-1]).decode("utf-8", "replace")


@pytest.mark.parametrize("name", SWITCHED)
def test_off_keeps_a_model_that_would_think_from_thinking(name, tmp_path):
    """The model thinks after the *on* prompt and answers after the *off* one (a bigram model
    tells the two apart by the prompts' last tokens; where they end alike, only the rendered
    prompt differs, and the test above covers it)."""
    source = (TEMPLATES / name).read_text()
    control = _control(name)
    open_, close = control.markers or ("<think>", "</think>")
    user = sorted({open_, close, open_ + "\n", close + "\n", close + "\n\n", "A"}, key=len)
    probe = write_scripted_gguf(
        tmp_path / "probe.gguf", chat_template=source, script={}, default_next="A", user_tokens=user
    )
    m = load_model(probe, n_ctx=4096, n_threads=1)
    try:
        on_last = _last_token(m, _render(name, Thinking("on")).text)
        off_last = _last_token(m, _render(name, Thinking("off")).text)
    finally:
        m.close()
    if on_last == off_last or not all(t in user or len(t.encode()) == 1 for t in (on_last, off_last)):
        assert _render(name, Thinking("off")).text != _render(name, Thinking("on")).text
        return
    opened = _render(name, Thinking("on")).text.rstrip().endswith(open_)
    script = {on_last: "x" if opened else open_, open_: "x", "x": "x", off_last: "A"}
    path = write_scripted_gguf(
        tmp_path / "thinker.gguf",
        chat_template=source,
        script=script,
        default_next="<|im_end|>",
        user_tokens=user,
    )
    m = load_model(path, n_ctx=4096, n_threads=1)
    try:
        for mode in ("on", "off"):
            session = ChatSession(m, thinking=mode, max_tokens=8)
            events = list(session.send("Hi"))
            reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
            text = "".join(e.text for e in events if isinstance(e, TextEvent))
            if mode == "on":
                assert reasoning.count("x") >= 4 and "A" not in text, (mode, reasoning, text)
            else:
                assert session.last_prompt is not None and session.last_prompt.thinking
                assert reasoning == "" and text.strip() == "A", (mode, reasoning, text)
    finally:
        m.close()


BUDGET_FAMILIES = sorted(name for name, fmt in FORMATS.items() if fmt.closing_text() is not None)


def _thinker(tmp_path: Path, open_: str, closing: str, template: str = CHATML):
    """A model that thinks until stopped: it opens ``open_`` after the generation prompt's last
    ``\n`` (or goes on from it where ``template``'s prompt ends with it), writes ``x`` until
    stopped, and answers ``A`` after ``closing`` (one token each)."""
    script = {"\n": open_, open_: "x", "x": "x", closing: "A"}
    path = write_scripted_gguf(
        tmp_path / "t.gguf",
        chat_template=template,
        script=script,
        default_next="<|im_end|>",
        user_tokens=[open_, closing],
    )
    return load_model(path, n_ctx=2048, n_threads=1)


@pytest.mark.parametrize("family", BUDGET_FAMILIES)
def test_a_budget_closes_the_reasoning_in_the_family_s_syntax(family, tmp_path):
    fmt = FORMATS[family]
    open_, _close = fmt.thinking_tags()
    m = _thinker(tmp_path, open_, fmt.closing_text())
    try:
        budget = 6
        session = ChatSession(m, tool_format=family, thinking=Thinking(budget=budget), max_tokens=40)
        events = list(session.send("Hi"))
        reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
        text = "".join(e.text for e in events if isinstance(e, TextEvent))
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.finish_reason == "stop", done
        # the opening marker and budget - 1 tokens of thought, then the closing message
        assert reasoning.count("x") == budget - 1 and "Time to answer." in reasoning, reasoning
        assert text.strip() == "A", text  # the answer follows
        assert budget < done.generated_tokens <= budget + 2
        reply = session.messages[-1]
        assert reply.content.strip() == "A" and reply.reasoning.count("x") == budget - 1

        # without a budget the same model thinks until the token limit, never answering
        events = list(ChatSession(m, tool_format=family, max_tokens=12).send("Hi"))
        assert "".join(e.text for e in events if isinstance(e, ReasoningEvent)).count("x") == 11
        assert "".join(e.text for e in events if isinstance(e, TextEvent)).strip() == ""
    finally:
        m.close()


def test_a_budget_without_a_message_closes_with_the_tag_alone(tmp_path):
    m = _thinker(tmp_path, "<think>", "</think>\n\n")
    try:
        session = ChatSession(
            m, tool_format="none", thinking=Thinking(budget=3, budget_message=None), max_tokens=20
        )
        list(session.send("Hi"))  # tools off: the plain reader's <think> block
        reply = session.messages[-1]
        assert reply.reasoning.strip() == "xx" and reply.content.strip() == "A"
    finally:
        m.close()


@pytest.mark.parametrize("opened_by", ["reply", "prompt"])
@pytest.mark.parametrize("code", [":0a1b2c3d", ""])
def test_a_budget_closes_hunyuan_v4_s_block_in_the_reply_s_spelling(code, opened_by, tmp_path):
    """Hunyuan V4's checkpoints each spell their think tags with their own code (Hy4-preview's is
    one of many): a spent budget closes the block with the code the reply (or the generation
    prompt) opened it with, so the model answers and the reader sees reasoning, then the answer."""
    open_, close = f"<think{code}>", f"</think{code}>\n\n"
    template = CHATML
    if opened_by == "prompt":
        template = CHATML.replace("'<|im_start|>assistant\\n'", f"'<|im_start|>assistant\\n{open_}'")
        assert template != CHATML
    m = _thinker(tmp_path, open_, close, template)
    try:
        session = ChatSession(m, tool_format="hunyuan-v4", thinking=Thinking(budget=4), max_tokens=30)
        events = list(session.send("Hi"))
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.finish_reason == "stop", done
        reply = session.messages[-1]
        assert reply.content.strip() == "A", reply
        assert "x" in reply.reasoning and "Time to answer." in reply.reasoning, reply
        assert "think" not in reply.reasoning + reply.content, reply
    finally:
        m.close()


HARMONY_CONTROL = [
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|channel|>",
    "<|constrain|>",
    "<|return|>",
    "<|call|>",
]


def _add_registry() -> ToolRegistry:
    registry = ToolRegistry()

    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number.
        """
        return a + b

    registry.register_function(add)
    return registry


def test_preserved_reasoning_lets_a_tool_round_reuse_the_kv_prefix(tiny_gguf, monkeypatch):
    """gpt-oss reads earlier reasoning from ``thinking``: passed back, the tool round's prompt
    extends the first prompt and the reply the cache holds, so only the result is read."""
    source = (TEMPLATES / "openai-gpt-oss-120b.jinja").read_text()
    path = tiny_gguf(
        chat_template=source, control_tokens=HARMONY_CONTROL, bos=None, eos="<|return|>", eot="<|call|>"
    )
    m = load_model(path, n_ctx=4096, n_threads=1)
    thought = "I should add the two numbers with the add tool. " * 3
    call = (
        f"<|channel|>analysis<|message|>{thought.strip()}<|end|><|start|>assistant to=functions.add"
        '<|channel|>commentary json<|message|>{"a": 2, "b": 3}'
    )

    def lit(text: str) -> str:
        out = []
        for part in text.replace("<|", "\x00<|").replace("|>", "|>\x00").split("\x00"):
            if part in HARMONY_CONTROL:
                out.append(f"<[{m.tokenize(part)[-1]}]>")
            elif part:
                out.append(json.dumps(part))
        return " ".join(out)

    grammars = {
        1: f"root ::= {lit(call)}",  # a complete grammar ends the reply, as <|call|> would
        2: "root ::= " + lit("<|channel|>final<|message|>The sum is 5."),
    }
    prompts: list[str] = []
    render = LocalReplies.render

    def keep(self: LocalReplies) -> str:
        prompts.append(render(self))
        return prompts[-1]

    monkeypatch.setattr(LocalReplies, "render", keep)  # the same render, its prompts kept
    try:
        session = ChatSession(
            m,
            tool_format="harmony",
            registry=_add_registry(),
            grammar=lambda r: grammars.get(r),
            max_tokens=1000,
        )
        events = list(session.send("What is 2 + 3?"))
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.rounds == 2, (
            done.generated_tokens,
            events[:3],
            session.messages,
        )
        first, second = prompts
        assert session.messages[1].reasoning.strip() == thought.strip()
        # the second prompt is the first one, the reply as written (reasoning included), then more
        assert second.startswith(first + call), second[len(first) : len(first) + 200]
        reread = done.prompt_tokens_evaluated - len(m.tokenize(first))
        tail = len(m.tokenize(second)) - len(m.tokenize(first + call))
        assert reread <= tail + 2  # the tool result and the next header: not the prompt again
        assert len(m.tokenize(thought)) > tail  # a dropped reasoning would be read again
    finally:
        m.close()


def test_parse_thinking_reads_what_the_apis_say():
    assert parse_thinking(None) == Thinking()
    assert parse_thinking(False) == Thinking("off") and parse_thinking(True) == Thinking("on")
    assert parse_thinking("high") == Thinking("on", effort="high")
    assert parse_thinking("none").off
    assert Thinking(budget=0).off
    for bad in ("loud", 3, -1):
        with pytest.raises(ValueError):
            parse_thinking(bad)
    with pytest.raises(ValueError):
        Thinking(budget=-5)
    with pytest.raises(ValueError):
        Thinking(budget=True)  # type: ignore[arg-type]


def test_build_session_takes_the_thinking_option(tmp_path):
    path = write_scripted_gguf(
        tmp_path / "t.gguf",
        chat_template=(TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text(),
        script={},
        default_next="<|im_end|>",
    )
    m = load_model(path, n_ctx=2048, n_threads=1)
    try:
        session = build_session(m, thinking="off")
        assert session.thinking == Thinking("off")
        list(session.send("Hi"))
        assert session.last_prompt is not None and session.last_prompt.thinking == "enable_thinking=False"
        list(session.send("Again", thinking=True))  # one turn's choice
        assert session.last_prompt.thinking == "enable_thinking=True"
        with pytest.raises(ValueError):
            build_session(m, thinking="sometimes")
    finally:
        m.close()


def test_reasoning_goes_back_under_the_key_the_template_reads():
    turn = Message(
        role="assistant",
        content="",
        reasoning="PLAN-7",
        tool_calls=[ToolCall(id="call00000", name="f", arguments={})],
    )
    msgs = [
        Message(role="user", content="U"),
        turn,
        Message(role="tool", content="R", tool_call_id="call00000", name="f"),
    ]
    for name in ("openai-gpt-oss-120b.jinja", "Qwen-Qwen3-0.6B.jinja", "LFM2.5-8B-A1B.jinja"):
        assert "PLAN-7" in render_messages((TEMPLATES / name).read_text(), msgs).text, name
    # MiniCPM3's template reads a turn's ``thought``, and writes it in its own markers
    minicpm3 = (TEMPLATES / "vllm-minicpm3.jinja").read_text()
    assert thinking_control(minicpm3).reads_reasoning == "thought"
    assert "<|thought_start|>\nPLAN-7\n<|thought_end|>" in render_messages(minicpm3, msgs).text


def test_a_client_s_template_kwargs_reach_the_template():
    source = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()
    off = render_messages(source, USER_ONLY, template_kwargs={"enable_thinking": False}).text
    assert off.endswith("<think>\n\n</think>\n\n")
    # the client's variables win over the thinking choice; the renderer's own are not replaced
    both = render_messages(
        source, USER_ONLY, thinking=Thinking("on"), template_kwargs={"enable_thinking": False, "messages": []}
    )
    assert both.text == off and "Hi" in both.text


def test_a_budget_holds_under_auto_s_hold_on_calls(tmp_path):
    """With tools on and a special-token call opener, ``auto`` holds calls (a constraint): the
    budget still closes the reasoning, and the rest of the reply is held again from there."""
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
    script = {"\n": "<think>", "<think>": "x", "x": "x", "</think>\n\n": call}
    path = write_scripted_gguf(
        tmp_path / "t.gguf",
        chat_template=CHATML,
        script=script,
        default_next="<|im_end|>",
        user_tokens=["<think>", "</think>\n\n", "<tool_call>", "</tool_call>", call],
    )
    m = load_model(path, n_ctx=2048, n_threads=1)
    try:
        session = ChatSession(
            m,
            tool_format="hermes",
            registry=_add_registry(),
            thinking=Thinking(budget=5),
            max_tokens=60,
            max_rounds=2,
        )
        events = list(session.send("What is 2 + 3?"))
        assert session.last_constraint is not None  # auto held the calls
        reply = session.messages[1]
        assert reply.reasoning.count("x") == 4 and "Time to answer." in reply.reasoning, reply
        assert [c.name for c in reply.tool_calls] == ["add"] and reply.tool_calls[0].arguments == {
            "a": 2,
            "b": 3,
        }
        assert isinstance(events[-1], DoneEvent)
    finally:
        m.close()


def test_anthropic_s_thinking_parameter_reads_as_a_choice():
    from app.engine.thinking import anthropic_thinking

    assert anthropic_thinking({"type": "enabled", "budget_tokens": 2048}) == Thinking("on", budget=2048)
    assert anthropic_thinking({"type": "disabled"}).off and anthropic_thinking(None).is_default
    for bad in (
        {"type": "sometimes"},
        {"type": "enabled", "budget_tokens": 0},
        "on",
        {"type": "enabled", "budget_tokens": True},
    ):
        with pytest.raises(ValueError):
            anthropic_thinking(bad)


def test_a_session_says_which_switch_its_model_has(tmp_path):
    for name, kind in (
        ("Qwen-Qwen3-0.6B.jinja", "switch"),
        ("meta-llama-Llama-3.1-8B-Instruct.jinja", "none"),
    ):
        path = write_scripted_gguf(
            tmp_path / f"{kind}.gguf",
            chat_template=(TEMPLATES / name).read_text(),
            script={},
            default_next="<|im_end|>",
        )
        m = load_model(path, n_ctx=2048, n_threads=1)
        try:
            assert ChatSession(m).thinking_control.kind == kind
        finally:
            m.close()


def test_a_closing_tag_after_the_prompt_closed_the_block_is_markup(tmp_path):
    """Thinking off: the prompt closes the block (Qwen3's ``<think>\\n\\n</think>\\n\\n``) and the
    answer is an answer from its first token. A ``</think>`` the model writes in it anyway
    (Qwen3.6 with thinking off, ik_llama.cpp #2036) is markup, never shown; the same reply after
    *on* closes the model's own block first and drops the second tag too."""
    source = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()
    script = {
        "\n": "<think>",
        "<think>": "x",
        "x": "</think>",
        "</think>\n\n": "A",
        "A": "</think>",
        "</think>": "B",
    }
    path = write_scripted_gguf(
        tmp_path / "stray.gguf",
        chat_template=source,
        control_tokens=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        user_tokens=["<think>", "</think>\n\n", "</think>", "x", "A", "B"],
        eos="<|im_end|>",
        script=script,
        default_next="<|im_end|>",
    )
    m = load_model(path, n_ctx=4096, n_threads=1)
    try:
        session = ChatSession(m, thinking="off", max_tokens=12)
        events = list(session.send("Hi"))
        text = "".join(e.text for e in events if isinstance(e, TextEvent))
        reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
        assert session.last_prompt is not None and session.last_prompt.text.rstrip().endswith("</think>")
        assert (reasoning, text) == ("", "AB")
        # the parser alone, with and without the prompt's closed block
        fmt = FORMATS["hermes"]
        assert fmt.closes_in_prompt(session.last_prompt.text)
        assert fmt.parse("A</think>B", [], orphan_close=False, after_reasoning=True).content == "AB"
        assert fmt.parse("A</think>B", [], orphan_close=False).content == "A</think>B"
    finally:
        m.close()
