"""Every registered family holds calls to their schemas: a tiny random-weight model (so only the
constraint decides what is written) samples 20 seeded replies per tool choice, and the family's
own parser reads each back as calls that validate against the tool's schema. The first 5 seeds run
in ``make test-fast``; the other 15 are marked slow (``make test`` runs all 20)."""

from __future__ import annotations

import re

import jsonschema
import pytest

from app.engine import generate, load_model
from app.engine.constraints import compile_constraint
from app.engine.formats import FORMATS

SAMPLES = 20
QUICK = 5  # seeds the fast tier samples; the slow part samples the rest
SEEDS = {"quick": range(QUICK), "rest": range(QUICK, SAMPLES)}


def tool(name: str, props: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


# Short strings and small arrays: a random model would otherwise write until max_tokens.
TOOLS = [
    tool(
        "get_weather",
        {
            "city": {"type": "string", "maxLength": 6},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
        },
        ["city"],
    ),
    tool(
        "set_alarm",
        {
            "hour": {"type": "integer"},
            "loud": {"type": "boolean"},
            "label": {"type": "string", "maxLength": 4},
        },
        ["hour", "loud"],
    ),
    tool(
        "plan",
        {
            "stops": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
            "where": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "tag": {"enum": ["a", "b"]}},
                "required": ["lat"],
            },
        },
        ["where"],
    ),
    tool("get_time", {}, []),
]
BY_NAME = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

_MARKER = re.compile(r"<[|｜/]?[^<>\s=\"']{1,40}[|｜]?>|\[[A-Z_]+\]")


def markers(family: str) -> list[str]:
    """The family's markers that look like special tokens (they become tokens of the model)."""
    from app.engine.formats.guidance import call_example

    fmt = FORMATS[family]
    text = call_example(family, "get_weather", {"city": "x", "days": 1})
    found = _MARKER.findall(text) + list(fmt.reasoning or ()) + list(fmt.openers)
    found += [m for t in ("[ARGS]",) if family == "mistral" for m in (t,)]
    return sorted({m for m in found if _MARKER.fullmatch(m)})


_models: dict[str, object] = {}


@pytest.fixture
def model_for(tiny_gguf):
    def make(family: str, *, as_text: bool = False):
        user = [] if as_text else markers(family)
        path = tiny_gguf(control_tokens=["<s>", "</s>"], user_tokens=user, bos="<s>", eos="</s>", seed=7)
        model = load_model(path, n_ctx=1024)
        # llama.cpp takes some marker names (``<|calls|>``) for end-of-generation tokens, which end
        # the reply without their text: such markers stay text in this model
        eog = {model.token_bytes(t).decode() for t in model.eog_ids} - {"</s>"}
        if eog & set(user):
            model.close()
            path = tiny_gguf(
                control_tokens=["<s>", "</s>"],
                user_tokens=[m for m in user if m not in eog],
                bos="<s>",
                eos="</s>",
                seed=7,
            )
            model = load_model(path, n_ctx=1024)
        return model

    return make


def check_calls(
    family: str, text: str, *, forced: str | None = None, parallel: bool = True, content: str | None = ""
) -> list:
    reply = FORMATS[family].parse(text, TOOLS)
    assert reply.tool_calls, (family, text, reply)
    if content is not None:
        assert reply.content.strip() == content, (family, text, reply)
    if not parallel:
        assert len(reply.tool_calls) == 1, (family, text)
    for call in reply.tool_calls:
        assert call.name in BY_NAME, (family, text)
        if forced:
            assert call.name == forced
        jsonschema.validate(dict(call.arguments), BY_NAME[call.name])
    return reply.tool_calls


def sample(
    model, constraint, prompt: list[int], seed: int, max_tokens: int = 200, *, may_cut: bool = False
) -> str:
    g = generate(
        model,
        prompt,
        max_tokens=max_tokens,
        constraint=constraint,
        sampling={"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "seed": seed},
        stop=(),
    )
    res = g.run()
    assert res.finish_reason == "stop" or may_cut, (res.finish_reason, res.text)
    return res.text


@pytest.mark.parametrize("part", ["quick", pytest.param("rest", marks=pytest.mark.slow)])
@pytest.mark.parametrize("family", sorted(FORMATS))
def test_required_named_and_auto_hold_every_sample(family, part, model_for):
    seeds = SEEDS[part]
    model = model_for(family)
    prompt = [model.metadata.bos_token_id or 0] + model.tokenize_text("Hi!", special=False)
    req = compile_constraint(
        model, family=family, tools=TOOLS, tool_choice="required", parallel_tool_calls=False
    )
    for seed in seeds:
        check_calls(family, sample(model, req, prompt, seed, max_tokens=400), parallel=False)
    if part == "quick":
        # parallel calls: a second call may follow the first; with parallel_tool_calls=False it may not
        first = sample(model, req, prompt, 99, max_tokens=400)
        many = compile_constraint(model, family=family, tools=TOOLS, tool_choice="required")
        if many.grammar != req.grammar:  # else the wire holds one call per reply
            _second_call_fits(many, req, family, first)
    named = compile_constraint(
        model,
        family=family,
        tools=TOOLS,
        parallel_tool_calls=False,
        tool_choice={"type": "function", "function": {"name": "set_alarm"}},
    )
    for seed in seeds:
        check_calls(
            family,
            sample(model, named, prompt, 100 + seed, max_tokens=400),
            forced="set_alarm",
            parallel=False,
        )
    auto = compile_constraint(
        model, family=family, tools=TOOLS, tool_choice="auto", parallel_tool_calls=False
    )
    fmt = FORMATS[family]
    free = "" if fmt.start_only or family == "harmony" else "Let me check that. "
    opener = _auto_opener(family)
    held = auto.after(free + opener)
    full = model.tokenize_text(free + opener)
    for seed in seeds:
        # after the call the text is free again: a random model may write until max_tokens
        text = free + opener + sample(model, held, prompt + list(full), 200 + seed, 400, may_cut=True)
        check_calls(family, text, content=None)
        if free:
            assert FORMATS[family].parse(text, TOOLS).content.startswith(free.strip())
    # text before a call is free: any words fit, and they stay text
    if part == "quick" and not fmt.start_only and family != "harmony":
        auto.after("Any words at all, even {braces} and [brackets]. ")


def _second_call_fits(many, one, family: str, first: str) -> None:
    """Somewhere in one complete call, ``many`` allows tokens ``one`` does not: the grammars differ
    only in that a further call may follow."""
    assert len(FORMATS[family].parse(first, TOOLS).tool_calls) == 1, first
    from app.engine.errors import ConstraintError

    for cut in range(len(first), 0, -1):
        try:
            a, b = many.after(first[:cut]).start().allowed(), one.after(first[:cut]).start().allowed()
        except ConstraintError:  # the cut splits a special token's text
            continue
        if (a & ~b).any():
            assert not (b & ~a).any()
            return
    raise AssertionError(f"{family}: parallel and single calls hold the same text {first!r}")


def _auto_opener(family: str) -> str:
    return {
        "harmony": "<|channel|>commentary to=functions.",
        "pythonic": "[",
        "llama3": "{",
        "glm4": "set_alarm",
    }.get(family, FORMATS[family].openers[0])


def test_markers_that_are_not_tokens_are_matched_as_text(model_for):
    model = model_for("hermes", as_text=True)
    assert len(model.tokenize_text("<tool_call>")) > 1
    c = compile_constraint(
        model, family="hermes", tools=TOOLS, tool_choice="required", parallel_tool_calls=False
    )
    assert '"<tool_call>' in c.grammar
    prompt = [model.metadata.bos_token_id or 0] + model.tokenize_text("Hi!", special=False)
    for seed in range(5):
        check_calls("hermes", sample(model, c, prompt, seed, max_tokens=1000))


# -- issue 32: a call list ends --------------------------------------------------------------

# a hot sampler: where the grammar allows the end or another call, a random model then takes each
# about as often (at 1.0 some families' weights all but always end after the first call)
HOT = {"temperature": 4.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
TRIES = 40  # seeded samples a search may take (a random model writes a second call about half the time)


def _single_wire(model, family: str) -> bool:
    """Whether the family's wire holds one call per reply whatever the request says."""
    one = compile_constraint(
        model, family=family, tools=TOOLS, tool_choice="required", parallel_tool_calls=False
    )
    many = compile_constraint(model, family=family, tools=TOOLS, tool_choice="required", max_calls=8)
    return one.grammar == many.grammar


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_i32_a_call_list_ends_at_max_calls_for_every_family(family, model_for):
    """Under ``required`` with parallel calls a reply holds at most ``max_calls`` calls, and the
    grammar ends the reply after the last one: after two calls under ``max_calls=2`` only the
    end of generation may follow (before issue 32 a third call could)."""
    model = model_for(family)
    prompt = [model.metadata.bos_token_id or 0] + model.tokenize_text("Hi!", special=False)
    two = compile_constraint(model, family=family, tools=TOOLS, tool_choice="required", max_calls=2)
    if _single_wire(model, family):
        check_calls(family, sample(model, two, prompt, 0, max_tokens=600), parallel=False)
        return
    three = compile_constraint(model, family=family, tools=TOOLS, tool_choice="required", max_calls=3)
    assert three.grammar != two.grammar
    eog = {int(t) for t in model.eog_ids}
    for seed in range(TRIES):
        text = sample(model, two, prompt, 300 + seed, max_tokens=600)
        calls = check_calls(family, text)
        assert len(calls) <= 2, (family, text)
        if len(calls) == 2:
            import numpy as np

            after = {int(t) for t in np.flatnonzero(two.after(text).start().allowed())}
            assert after and after <= eog, (family, text, sorted(after - eog)[:10])
            _third_call_fits(three, two, family, text)
            return
    raise AssertionError(f"{family}: no reply of two calls in {TRIES} samples")


def _third_call_fits(three, two, family: str, text: str) -> None:
    """Somewhere in a reply of two calls, ``max_calls=3`` allows tokens ``max_calls=2`` does not
    (a third call), and never the other way round."""
    from app.engine.errors import ConstraintError

    for cut in range(len(text), 0, -1):
        try:
            a, b = three.after(text[:cut]).start().allowed(), two.after(text[:cut]).start().allowed()
        except ConstraintError:  # the cut splits a special token's text
            continue
        if (a & ~b).any():
            assert not (b & ~a).any(), (family, text[:cut])
            return
    raise AssertionError(f"{family}: two and three calls hold the same text {text!r}")


class _HiReplies:
    """``LocalReplies`` over a two-word prompt (the tiny model's context is small): only the
    prompt is the test's, the reply is generated, parsed and held as a session's is."""

    @staticmethod
    def make(model, family: str, seed: int, **kwargs):
        from app.engine.chat import LocalReplies
        from app.engine.loop import CallIds

        class Replies(LocalReplies):
            def render(self) -> str:
                return "Hi!"

        return Replies(
            model,
            list,
            family=family,
            tools=TOOLS,
            ids=CallIds(),
            max_tokens=600,
            sampling={**HOT, "seed": seed},
            **kwargs,
        )


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_i32_a_repeated_call_ends_the_list_and_is_never_passed_on_for_every_family(family, model_for):
    """A call identical to an earlier call of the same reply ends the list: ``get_time`` has no
    parameters, so a second call to it is a repeat; the loop stops the reply there and passes on
    only the first (before issue 32 both came back)."""
    from app.engine.events import DoneEvent, NoticeEvent
    from app.engine.formats.events import ToolCallDone
    from app.engine.loop import run_rounds
    from app.engine.messages import Message

    model = model_for(family)
    single = _single_wire(model, family)
    named = {"type": "function", "function": {"name": "get_time"}}
    for seed in range(TRIES):
        replies = _HiReplies.make(model, family, 500 + seed, tool_choice=named, max_calls=4)
        messages: list[Message] = []
        events = list(run_rounds(replies, messages, dispatcher=None, max_rounds=1, max_calls=4))
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.finish_reason == "stop", (family, done)
        passed = [e.call for e in events if isinstance(e, ToolCallDone)]
        assert [c.name for c in passed] == ["get_time"] and passed[0].arguments == {}, (family, passed)
        assert messages[0].tool_calls == passed
        if single or [e for e in events if isinstance(e, NoticeEvent) and e.code == "repeated_call"]:
            return
    raise AssertionError(f"{family}: no reply repeated its call in {TRIES} samples")


def test_glm4_in_auto_holds_the_call_after_a_tool_s_name_and_an_answer_opens_a_line(model_for):
    """GLM-4's call has no marker: in ``auto`` a reply is a call (a tool's name first) or an
    answer, which opens with a line break as GLM-4's templates render one."""
    from app.engine.errors import ConstraintError

    model = model_for("glm4")
    auto = compile_constraint(model, family="glm4", tools=TOOLS, tool_choice="auto")
    auto.after("\nParis is sunny today.")  # an answer
    auto.after('get_time\n{}<|assistant|>get_weather\n{"city": "Oslo"}')  # calls
    for stray in ("Paris is sunny.", 'get_weather\n{"town": 1}', "get_weather: Oslo"):
        with pytest.raises(ConstraintError):
            auto.after(stray)
    # after a reasoning block the answer is free (the block's grammar ends with its whitespace)
    thinking = compile_constraint(model, family="glm4", tools=TOOLS, tool_choice="auto", reasoning=True)
    thinking.after("<think>plan</think>\nParis is sunny.")
