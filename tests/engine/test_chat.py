"""The chat loop on the real llama.cpp path: tiny GGUFs carrying each family's official
template and markers; a grammar forces the random model to write a call in the family's
syntax, the loop parses it, dispatches a real tool, renders the result and runs round two."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.engine.chat import ChatSession
from app.engine.events import (
    DoneEvent,
    NoticeEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
    event_to_dict,
)
from app.engine.llm import load_model
from app.engine.messages import Message, is_valid_call_id
from app.engine.models.tiny import TinySpec
from app.tools.registry import ToolRegistry

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def lit(text: str) -> str:
    """A GBNF string literal."""
    return json.dumps(text)


@dataclass
class Family:
    name: str
    template: str
    control: list[str]
    user: list[str]
    bos: str | None
    eos: str
    call: list  # str literal parts, or ("tok", marker) for a special token
    answer: list
    result_in_prompt: str
    reasoning: str = ""
    eot: str | None = None
    extra_control: list[str] = field(default_factory=list)

    def spec(self) -> TinySpec:
        control = list(self.control)
        for special in (self.bos, self.eos, self.eot):
            if special is not None and special not in control:
                control.append(special)
        return TinySpec(control, self.user)

    def grammar(self, parts: list) -> str:
        spec = self.spec()
        out = []
        for p in parts:
            out.append(f"<[{spec.id_of(p[1])}]>" if isinstance(p, tuple) else lit(p))
        return "root ::= " + " ".join(out)


QWEN_USER = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>", "</tool_response>"]
FAMILIES = [
    Family(
        "hermes",
        "Qwen-Qwen3-0.6B.jinja",
        ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        QWEN_USER,
        None,
        "<|im_end|>",
        call=['<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": "3"}}\n</tool_call>'],
        answer=["The sum is 5."],
        result_in_prompt="<tool_response>\n5\n</tool_response>",
    ),
    Family(
        "qwen-xml",
        "Qwen3.5-4B.jinja",
        ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        QWEN_USER,
        None,
        "<|im_end|>",
        call=[
            "I should add them.\n</think>\n\n<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n"
            "<parameter=b>\n3\n</parameter>\n</function>\n</tool_call>"
        ],
        answer=["</think>\n\nThe sum is 5."],
        result_in_prompt="<tool_response>\n5\n</tool_response>",
        reasoning="I should add them.",
    ),
    Family(
        "llama3",
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
        [
            "<|begin_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
            "<|eom_id|>",
            "<|python_tag|>",
        ],
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
        call=[("tok", "<|python_tag|>"), '{"name": "add", "parameters": {"a": 2, "b": "3"}}'],
        answer=["The sum is 5."],
        result_in_prompt='<|start_header_id|>ipython<|end_header_id|>\n\n"5"<|eot_id|>',  # the template writes content with tojson
    ),
    Family(
        "mistral",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        [
            "<s>",
            "</s>",
            "[INST]",
            "[/INST]",
            "[TOOL_CALLS]",
            "[AVAILABLE_TOOLS]",
            "[/AVAILABLE_TOOLS]",
            "[TOOL_RESULTS]",
            "[/TOOL_RESULTS]",
        ],
        [],
        "<s>",
        "</s>",
        call=[("tok", "[TOOL_CALLS]"), '[{"name": "add", "arguments": {"a": 2, "b": 3}, "id": "abcXYZ123"}]'],
        answer=["The sum is 5."],
        result_in_prompt='[TOOL_RESULTS]{"content": 5, "call_id": "abcXYZ123"}[/TOOL_RESULTS]',
    ),
]


def make_registry(calls: list) -> ToolRegistry:
    registry = ToolRegistry()

    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number.
        """
        calls.append((a, b))
        return a + b

    registry.register_function(add)
    return registry


@pytest.fixture
def family_model(tiny_gguf):
    loaded = []

    def make(fam: Family, **kw):
        path = tiny_gguf(
            chat_template=(TEMPLATES / fam.template).read_text(),
            control_tokens=fam.control,
            user_tokens=fam.user,
            bos=fam.bos,
            eos=fam.eos,
            eot=fam.eot,
            **kw,
        )
        m = load_model(path, n_ctx=2048, n_threads=1)
        loaded.append(m)
        return m

    yield make
    for m in loaded:
        m.close()


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_tool_call_round_trip_for_each_family(family_model, fam):
    model = family_model(fam)
    ran: list = []
    grammars = {1: fam.grammar(fam.call), 2: fam.grammar(fam.answer)}
    session = ChatSession(
        model,
        tool_format="auto",
        registry=make_registry(ran),
        grammar=lambda r: grammars.get(r),
        max_tokens=400,
    )
    assert session.detected_format == fam.name
    assert session.effective_format == fam.name
    events = list(session.send("What is 2 + 3?"))

    kinds = [type(e).__name__ for e in events]
    assert not [e for e in events if isinstance(e, NoticeEvent)], kinds
    started = [e for e in events if isinstance(e, ToolCallStartedEvent)]
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    assert len(started) == len(finished) == 1
    call, outcome = started[0].call, finished[0].outcome
    assert call.name == "add" and call.arguments == {"a": 2, "b": 3}  # typed by the schema
    assert outcome.content == "5" and outcome.error is None and outcome.duration_s >= 0
    assert ran == [(2, 3)]
    assert is_valid_call_id(started[0].call.id)
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert text.strip() == "The sum is 5."
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert reasoning.strip() == fam.reasoning

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop" and done.rounds == 2
    assert done.ttft_s is not None and done.prompt_tokens > 0
    # markers may be sampled as one special token or spelled in bytes: bound the count both ways
    written = "".join(p if isinstance(p, str) else p[1] for p in fam.call + fam.answer)
    assert len(model.tokenize(written)) <= done.generated_tokens <= len(written.encode())
    # the second round re-used the first round's KV cache: far fewer tokens evaluated than rendered
    assert done.prompt_tokens_evaluated < 2 * done.prompt_tokens - 100

    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call_turn, result, answer = session.messages[1:]
    assert call_turn.content.strip() == "" and call_turn.tool_calls[0].name == "add"
    assert call_turn.reasoning.strip() == fam.reasoning
    assert (result.tool_call_id, result.name, result.content) == (call_turn.tool_calls[0].id, "add", "5")
    assert answer.content.strip() == "The sum is 5."
    # the result was rendered into the second round's prompt
    assert session.last_prompt is not None
    assert fam.result_in_prompt in session.last_prompt.text
    assert all(json.dumps(event_to_dict(e)) for e in events)


def test_mistral_keeps_the_models_own_call_id(family_model):
    fam = FAMILIES[3]
    model = family_model(fam)
    grammars = {1: fam.grammar(fam.call), 2: fam.grammar(fam.answer)}
    session = ChatSession(model, registry=make_registry([]), grammar=lambda r: grammars.get(r))
    events = list(session.send("2+3?"))
    assert [e.call.id for e in events if isinstance(e, ToolCallStartedEvent)] == ["abcXYZ123"]


def test_max_tokens_cut_gives_length_and_runs_no_call(family_model):
    fam = FAMILIES[0]
    model = family_model(fam)
    ran: list = []
    session = ChatSession(model, registry=make_registry(ran), grammar=fam.grammar(fam.call), max_tokens=20)
    events = list(session.send("2+3?"))
    assert ran == []
    assert not [e for e in events if isinstance(e, (ToolCallStartedEvent, ToolCallFinishedEvent))]
    done = events[-1]
    assert done.finish_reason == "length" and done.generated_tokens == 20 and done.rounds == 1
    # nothing lost: the cut call is an incomplete call (its raw text kept), neither a call nor text
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert text == session.messages[-1].content and "<tool_call>" not in text
    assert session.messages[-1].tool_calls == []
    cut = session.messages[-1].incomplete_calls
    assert len(cut) == 1 and cut[0].raw.startswith("<tool_call>") and cut[0].reason == "truncated"


def test_round_limit(family_model):
    fam = FAMILIES[0]
    model = family_model(fam)
    ran: list = []
    session = ChatSession(model, registry=make_registry(ran), grammar=fam.grammar(fam.call), max_rounds=3)
    events = list(session.send("keep adding"))
    # round 1 ran its call; round 2 repeated it (answered with the earlier result, not run again);
    # round 3 hit the limit
    assert len(ran) == 1
    tool_msgs = [m for m in session.messages if m.role == "tool"]
    assert len(tool_msgs) == 2 and "Not run again" in tool_msgs[1].content
    assert tool_msgs[1].content.startswith(tool_msgs[0].content)
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [n.code for n in notices] == ["round_limit"]
    assert "3 rounds" in notices[0].message and notices[0].setting == "chat.max_tool_rounds"
    done = events[-1]
    assert (done.finish_reason, done.rounds) == ("rounds", 3)
    assert session.messages[-1].role == "assistant" and not session.messages[-1].tool_calls


def test_cancel_mid_reply(family_model):
    fam = FAMILIES[0]
    model = family_model(fam)
    cancel = threading.Event()
    session = ChatSession(model, tool_format="none", grammar='root ::= "' + "a" * 50 + '"')
    events = []
    for e in session.send("hi", cancel=cancel):
        events.append(e)
        if sum(isinstance(x, TextEvent) for x in events) == 5:
            cancel.set()
    done = events[-1]
    assert done.finish_reason == "cancelled"
    assert done.generated_tokens == 5


def tools_in(text: str) -> bool:
    return '"add"' in text or "add" in text.split("<|im_start|>user")[0]


def test_auto_without_a_match_runs_without_tools_and_notices_once(tiny_gguf):
    model = load_model(
        tiny_gguf(
            chat_template=CHATML, control_tokens=["<|im_start|>", "<|im_end|>"], bos=None, eos="<|im_end|>"
        ),
        n_ctx=512,
        n_threads=1,
    )
    try:
        session = ChatSession(
            model, tool_format="auto", registry=make_registry([]), grammar='root ::= "hello"'
        )
        assert session.detected_format is None and session.effective_format is None
        assert session.tools is None
        first = list(session.send("hi"))
        notices = [e for e in first if isinstance(e, NoticeEvent)]
        assert [(n.code, n.setting) for n in notices] == [("no_tool_format", "chat.tool_format")]
        assert "chat.tool_format" in notices[0].message
        assert not session.last_prompt.tools_sent and "add" not in session.last_prompt.text
        second = list(session.send("again"))
        assert not [e for e in second if isinstance(e, NoticeEvent)]
        # none: no tools and no notice
        quiet = ChatSession(model, tool_format="none", registry=make_registry([]), grammar='root ::= "x"')
        assert not [e for e in quiet.send("hi") if isinstance(e, NoticeEvent)]
        assert not quiet.last_prompt.tools_sent
        # an explicit family is used as chosen, with a notice that detection disagrees
        forced = ChatSession(model, tool_format="hermes", registry=make_registry([]), grammar='root ::= "x"')
        assert forced.effective_format == "hermes"
        notes = [e for e in forced.send("hi") if isinstance(e, NoticeEvent)]
        assert [n.code for n in notes] == ["tool_format_override"]
        assert forced.last_prompt.tools_sent
        with pytest.raises(ValueError, match="unknown chat.tool_format value 'klingon'"):
            ChatSession(model, tool_format="klingon")
    finally:
        model.close()


def test_model_without_template_gets_fallback_and_notice(tiny_gguf):
    model = load_model(tiny_gguf(), n_ctx=512, n_threads=1)
    try:
        session = ChatSession(model, grammar='root ::= "Hi there<|im_end|>ignored"')
        events = list(session.send("hello"))
        codes = [e.code for e in events if isinstance(e, NoticeEvent)]
        assert codes == ["no_chat_template", "no_tool_format"]
        assert session.last_prompt.template == "fallback"
        assert session.messages[-1].content == "Hi there"  # the fallback's end-of-turn text stops it
        assert events[-1].finish_reason == "stop"
    finally:
        model.close()


def test_template_that_raises_is_an_error_event_and_loses_nothing(tiny_gguf):
    tpl = (
        "{% if messages | length > 1 %}{{ raise_exception('Only one message is supported') }}{% endif %}"
        + CHATML
    )
    model = load_model(
        tiny_gguf(
            chat_template=tpl, control_tokens=["<|im_start|>", "<|im_end|>"], bos=None, eos="<|im_end|>"
        ),
        n_ctx=512,
        n_threads=1,
    )
    try:
        session = ChatSession(model, tool_format="none", grammar='root ::= "ok"')
        assert [type(e) for e in session.send("one")][-1] is DoneEvent
        events = list(session.send("two"))
        done = events[-1]
        assert done.finish_reason == "error" and "Only one message is supported" in done.error
        assert [m.content for m in session.messages] == ["one", "ok", "two"]
    finally:
        model.close()


def test_regenerate_replaces_the_last_reply(tiny_gguf):
    model = load_model(
        tiny_gguf(
            chat_template=CHATML, control_tokens=["<|im_start|>", "<|im_end|>"], bos=None, eos="<|im_end|>"
        ),
        n_ctx=512,
        n_threads=1,
    )
    try:
        replies = iter(['root ::= "first"', 'root ::= "second"'])
        session = ChatSession(model, tool_format="none", grammar=lambda r: next(replies))
        list(session.send("hi"))
        list(session.regenerate())
        assert [(m.role, m.content) for m in session.messages] == [("user", "hi"), ("assistant", "second")]
        restored = ChatSession(
            model, tool_format="none", messages=[Message.from_dict(m.to_dict()) for m in session.messages]
        )
        assert restored.messages == session.messages
    finally:
        model.close()


def test_wrong_argument_type_is_an_error_the_model_reads(family_model):
    fam = FAMILIES[0]
    model = family_model(fam)
    ran: list = []
    bad_call = ['<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": "three"}}\n</tool_call>']
    grammars = {1: fam.grammar(bad_call), 2: fam.grammar(["Sorry."])}
    session = ChatSession(model, registry=make_registry(ran), grammar=lambda r: grammars.get(r))
    events = list(session.send("2 + three?"))
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    assert ran == []  # never run with bad input
    assert finished[0].outcome.content is None and "'b'" in finished[0].outcome.error
    tool_msg = session.messages[2]
    assert tool_msg.role == "tool" and tool_msg.content.startswith("Error: ")
    assert tool_msg.content in session.last_prompt.text  # the model reads it in round two
    assert events[-1].finish_reason == "stop" and events[-1].rounds == 2


def test_tool_use_named_template_is_detected_and_used(tiny_gguf):
    hermes3 = (TEMPLATES / "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja").read_text()
    path = tiny_gguf(
        chat_template=CHATML,
        named_templates={"tool_use": hermes3},
        control_tokens=["<|im_start|>", "<|im_end|>"],
        user_tokens=QWEN_USER,
        bos=None,
        eos="<|im_end|>",
    )
    model = load_model(path, n_ctx=4096, n_threads=1)
    try:
        session = ChatSession(model, registry=make_registry([]), grammar='root ::= "hi"')
        assert session.detected_format == "hermes"  # from tokenizer.chat_template.tool_use
        list(session.send("hello"))
        assert session.last_prompt.template == "tool_use" and session.last_prompt.tools_sent
        assert '{"name": "add"' in session.last_prompt.text
        plain = ChatSession(model, tool_format="none", grammar='root ::= "hi"')
        list(plain.send("hello"))
        assert plain.last_prompt.template == "chat_template"
    finally:
        model.close()


def test_chat_deadline(family_model):
    model = family_model(FAMILIES[0])
    session = ChatSession(model, tool_format="none", deadline_s=0, grammar='root ::= "abc"')
    events = list(session.send("hi"))
    assert events[-1].finish_reason == "deadline" and events[-1].generated_tokens == 0


QWEN25 = Family(
    "hermes",
    "Qwen-Qwen2.5-7B-Instruct.jinja",
    ["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
    QWEN_USER,
    None,
    "<|im_end|>",
    call=[],
    answer=["Plain text that should stream as it is generated."],
    result_in_prompt="",
)


@pytest.mark.parametrize("fam", [QWEN25, FAMILIES[0]], ids=["qwen2.5-no-think-tags", "qwen3-think-tags"])
def test_plain_reply_streams_token_by_token(family_model, fam):
    """A plain reply reaches the UI while it is generated, not in one piece at the end."""
    model = family_model(fam)
    answer = fam.answer[0]
    session = ChatSession(model, registry=make_registry([]), grammar=fam.grammar([answer]), max_tokens=200)
    assert session.effective_format == "hermes"
    events = list(session.send("Say something."))
    texts = [e.text for e in events if isinstance(e, TextEvent)]
    assert "".join(texts).strip() == answer
    if fam is QWEN25:  # no reasoning tags in the template: text streams from the first token
        assert len(texts) >= len(answer) // 4, texts
    else:  # Qwen3 may close a reasoning block it never opened: the reply is held until decided
        assert len(texts) >= 1


def test_explicit_format_on_a_template_without_tools_guides_and_runs_the_call(tiny_gguf):
    """A plain ChatML template ignores ``tools``: an explicit hermes format puts the schemas and
    a hermes example call into the system prompt, and the loop parses and dispatches the call."""
    model = load_model(
        tiny_gguf(
            chat_template=CHATML,
            control_tokens=["<|im_start|>", "<|im_end|>"],
            user_tokens=QWEN_USER,
            bos=None,
            eos="<|im_end|>",
        ),
        n_ctx=2048,
        n_threads=1,
    )
    try:
        ran: list = []
        registry = make_registry(ran)
        call = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
        grammars = {1: "root ::= " + lit(call), 2: 'root ::= "The sum is 5."'}
        session = ChatSession(
            model,
            tool_format="hermes",
            registry=registry,
            system_prompt="Be brief.",
            grammar=lambda r: grammars.get(r),
            max_tokens=200,
        )
        assert (session.detected_format, session.effective_format) == (None, "hermes")
        events = list(session.send("What is 2 + 3?"))
        notices = [e for e in events if isinstance(e, NoticeEvent)]
        assert [n.code for n in notices] == ["tool_format_override"]
        assert "example call in the hermes format" in notices[0].message

        prompt = session.last_prompt
        assert (prompt.tools_mode, prompt.tools_sent) == ("guidance", True)
        system = prompt.text.split("<|im_end|>")[0]
        assert system.startswith("<|im_start|>system\nBe brief.\n\nYou can call these tools:\n")
        assert json.dumps(registry.openai_tools(), ensure_ascii=False) in system
        assert (
            '<tool_call>\n{"name": "add", "arguments": {"a": "<a: integer>", "b": "<b: integer>"}}\n</tool_call>'
            in system
        )

        started = [e for e in events if isinstance(e, ToolCallStartedEvent)]
        finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
        assert [(e.call.name, e.call.arguments) for e in started] == [("add", {"a": 2, "b": 3})]
        assert [(e.outcome.content, e.outcome.error) for e in finished] == [("5", None)]
        assert ran == [(2, 3)]
        assert "".join(e.text for e in events if isinstance(e, TextEvent)) == "The sum is 5."
        done = events[-1]
        assert isinstance(done, DoneEvent) and (done.finish_reason, done.rounds) == ("stop", 2)
        # round two saw its own call (replayed in hermes syntax) and the result
        assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
        assert f"<|im_start|>assistant\n{call}<|im_end|>\n<|im_start|>tool\n5<|im_end|>" in prompt.text
    finally:
        model.close()


@pytest.mark.live
def test_live_smollm2_with_explicit_hermes_gets_the_guidance(smollm2_path):
    """SmolLM2's ChatML template has no tools: choosing hermes puts the schemas and a hermes
    example into its prompt. (Whether a 135M model obeys is not asserted.)"""
    from app.engine.formats.guidance import call_example, example_arguments
    from app.tools.builtins import register_builtin_tools

    model = load_model(smollm2_path, n_ctx=2048, n_threads=1)
    try:
        registry = ToolRegistry()
        register_builtin_tools(registry)
        session = ChatSession(
            model,
            tool_format="hermes",
            registry=registry,
            sampling={"temperature": 0.0},
            max_tokens=16,
            max_rounds=2,
        )
        assert (session.detected_format, session.effective_format) == (None, "hermes")
        events = list(session.send("What is 17 times 3? Use the calculator."))
        assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason != "error"
        prompt = session.last_prompt
        assert (prompt.tools_mode, prompt.tools_sent) == ("guidance", True)
        assert json.dumps(registry.openai_tools(), ensure_ascii=False) in prompt.text
        first = registry.openai_tools()[0]
        example = call_example("hermes", first["function"]["name"], example_arguments(first))
        assert example.startswith('<tool_call>\n{"name": ') and example in prompt.text
        assert prompt.text.startswith("<|im_start|>system\nYou can call these tools:")
    finally:
        model.close()


def _python(code: str) -> str:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_app_engine_exports_lazily_without_importing_llama_cpp():
    out = _python(
        "import sys, app.engine as e\n"
        "heavy = [m for m in ('llama_cpp', 'gguf', 'app.engine.llm', 'app.engine.chat', 'app.engine.generation')"
        " if m in sys.modules]\n"
        "print(heavy, sorted(e.__all__) == sorted(e._EXPORTS), 'ChatSession' in dir(e))\n"
        "from app.engine import load_model, generate, complete, ChatSession\n"
        "from app.engine.llm import load_model as L\n"
        "from app.engine.chat import ChatSession as C\n"
        "import app.engine.generation  # importing the submodule leaves the function in place\n"
        "g = sys.modules['app.engine.generation']\n"
        "from app.engine import generate as again\n"
        "print(load_model is L, ChatSession is C, generate is g.generate is again is e.generate,"
        " complete is g.complete, callable(generate))\n"
        "print(all(getattr(e, n) is not None for n in e.__all__))\n"
        "from app.engine import templates  # submodules still import through the package\n"
        "print(templates.__name__)\n"
        "try:\n    e.nope\nexcept AttributeError as x:\n    print(x)\n"
    )
    assert out.splitlines() == [
        "[] True True",
        "True True True True True",
        "True",
        "app.engine.templates",
        "module 'app.engine' has no attribute 'nope'",
    ]


def test_app_engine_generate_is_the_function_even_after_the_chat_loop_imported_the_submodule():
    out = _python(
        "import app.engine.chat\nfrom app.engine import generate\nimport inspect\n"
        "print(inspect.isfunction(generate), generate.__module__)\n"
    )
    assert out.strip() == "True app.engine.generation"
