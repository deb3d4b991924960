"""generate() on the real llama.cpp path with tiny GGUFs: special tokens as text, UTF-8
kept whole, end-of-generation stop, max_tokens, deadline, cancel, grammar validation,
KV prefix reuse, sampling defaults, complete()."""

from __future__ import annotations

import threading

import pytest

from app.engine.errors import ContextOverflowError, GrammarError
from app.engine.generation import complete, generate
from app.engine.llm import load_model
from app.engine.models.tiny import TinySpec
from app.engine.sampling import CHAT_DEFAULTS, SamplingParams, resolve_sampling

CONTROL = ["<s>", "</s>", "[TOOL_CALLS]", "<|python_tag|>"]


@pytest.fixture
def model(tiny_gguf):
    path = tiny_gguf(control_tokens=CONTROL, user_tokens=["<tool_call>"], bos="<s>", eos="</s>")
    m = load_model(path, n_ctx=512, n_threads=1)
    yield m
    m.close()


def tid(token: str) -> int:
    return TinySpec(CONTROL, ["<tool_call>"]).id_of(token)


def test_special_tokens_are_decoded_as_text(model):
    g = generate(
        model,
        "hi",
        grammar=f'root ::= <[{tid("[TOOL_CALLS]")}]> "[1]" <[{tid("<|python_tag|>")}]>',
        max_tokens=20,
    )
    pieces = list(g)
    assert "".join(pieces) == "[TOOL_CALLS][1]<|python_tag|>"
    assert pieces[0] == "[TOOL_CALLS]"
    assert g.result.generated_tokens == 5
    assert g.result.finish_reason == "stop"


def test_multibyte_character_split_over_tokens_is_never_emitted_half(model):
    text = "é€😀 ok"  # 2 + 3 + 4 bytes: every character spans several byte tokens
    g = generate(model, "hi", grammar=f'root ::= "{text}"', max_tokens=50)
    pieces = list(g)
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)
    assert pieces[:3] == ["é", "€", "😀"]
    assert g.result.generated_tokens == len(text.encode("utf-8"))
    assert g.result.text == text


def test_stops_at_end_of_generation_token(model):
    # A complete grammar leaves llama.cpp only end-of-generation tokens to sample.
    g = generate(model, "hi", grammar='root ::= "abc"', max_tokens=100)
    assert list(g) == ["a", "b", "c"]
    assert g.result.finish_reason == "stop"
    assert g.result.generated_tokens == 3
    assert "</s>" not in g.result.text
    assert model.metadata.eos_token_id in model.eog_ids


def test_max_tokens_gives_length(model):
    g = generate(model, "hi", grammar='root ::= "abcdefghij"', max_tokens=4)
    assert "".join(g) == "abcd"
    assert g.result.finish_reason == "length"
    assert g.result.generated_tokens == 4


def test_unconstrained_generation_is_bounded_by_max_tokens(model):
    res = generate(model, "hello", max_tokens=7, sampling={"seed": 1}).run()
    assert res.generated_tokens <= 7
    assert res.finish_reason in ("length", "stop")
    assert res.prompt_tokens == len(model.tokenize("hello"))


def test_deadline(model):
    res = generate(model, "hi", grammar='root ::= "abcdefghij"', deadline_s=0).run()
    assert res.finish_reason == "deadline"
    assert res.generated_tokens == 0
    assert res.text == ""
    # a generous deadline does not interfere
    res = generate(model, "hi", grammar='root ::= "abc"', deadline_s=600).run()
    assert (res.text, res.finish_reason) == ("abc", "stop")


def test_cancel_takes_effect_within_one_token(model):
    cancel = threading.Event()
    g = generate(model, "hi", grammar='root ::= "abcdefghijklmnop"', max_tokens=100, cancel=cancel)
    seen = []
    for piece in g:
        seen.append(piece)
        if len(seen) == 3:
            cancel.set()
    assert seen == ["a", "b", "c"]
    assert g.result.finish_reason == "cancelled"
    assert g.result.generated_tokens == 3
    # the model is usable afterwards
    assert generate(model, "hi", grammar='root ::= "ok"').run().text == "ok"


@pytest.mark.parametrize(
    ("grammar", "problem"),
    [
        ('root ::= "a', "not valid GBNF"),
        ("root ::= undefined_rule", "not valid GBNF"),
        ('answer ::= "a"', "no 'root' rule"),
        ("", "empty"),
        ('root ::= "x" <[257]>', "end-of-generation"),  # </s>: would abort llama.cpp
        ('root ::= "x" </s>', "end-of-generation"),
        ("root ::= <[99999]>", "vocabulary has"),
        ("root ::= <no-such-token>", "not a single token"),
    ],
)
def test_invalid_grammar_is_rejected_before_llama_cpp_sees_it(model, grammar, problem):
    assert tid("</s>") == 257
    with pytest.raises(GrammarError, match=problem):
        generate(model, "hi", grammar=grammar)
    # the process survived and the model still works
    assert generate(model, "hi", grammar='root ::= "fine"').run().text == "fine"


def test_token_syntax_inside_strings_and_comments_is_not_a_token_reference(model):
    res = generate(model, "hi", grammar='# mention </s> here\nroot ::= "<[257]> </s>" [<>]').run()
    assert res.text.startswith("<[257]> </s>")


def test_kv_prefix_reuse_evaluates_only_the_new_suffix(model):
    first = "<s>system: be brief\nuser: hello\nassistant:"
    r1 = generate(model, first, grammar='root ::= " abc"').run()
    assert r1.prompt_tokens_evaluated == r1.prompt_tokens == len(model.tokenize(first))
    follow = first + r1.text + "\nuser: more please\nassistant:"
    r2 = generate(model, follow, grammar='root ::= " ok"').run()
    suffix = "\nuser: more please\nassistant:"
    assert r2.prompt_tokens == len(model.tokenize(follow))
    assert r2.prompt_tokens_evaluated == len(suffix.encode())  # byte-level vocab: one token a byte
    assert model.last_prompt_eval == r2.prompt_tokens_evaluated
    # a prompt that diverges early re-evaluates from the divergence on
    other = "<s>system: be verbose\nuser: hello"
    r3 = generate(model, other, grammar='root ::= "x"').run()
    common = len(b"<s>system: be ") - len("<s>") + 1  # "<s>" is one token
    assert r3.prompt_tokens_evaluated == r3.prompt_tokens - common


def test_prompt_larger_than_context_is_a_clear_error(model):
    with pytest.raises(ContextOverflowError, match="context holds 512"):
        generate(model, "x" * 600)


def test_stop_strings_are_not_emitted(model):
    g = generate(model, "hi", grammar='root ::= "hello<|im_end|>more"', stop=["<|im_end|>"])
    pieces = list(g)
    assert "".join(pieces) == "hello"
    assert g.result.finish_reason == "stop" and g.result.stop == "<|im_end|>"  # which one ended it
    assert all("<" not in p for p in pieces)
    free = generate(model, "hi", grammar='root ::= "hello"', stop=["<|im_end|>"]).run()
    assert free.finish_reason == "stop" and free.stop is None  # the grammar's end: no stop string


def test_the_earliest_stop_string_is_the_one_that_ends_the_text():
    from app.engine.holdback import first_stop

    assert first_stop("abc", ["x", ""]) is None
    assert first_stop("one two three", ["three", "two"]) == (4, "two")
    assert first_stop("one two", ["two", "tw"]) == (4, "two")  # at one place: the first listed
    assert first_stop("one two", ["tw", "two"]) == (4, "tw")


def test_sampling_defaults_come_from_the_gguf_then_chat_defaults(tiny_gguf):
    path = tiny_gguf(extra_metadata={"general.sampling.temp": 0.7, "general.sampling.top_k": 20})
    m = load_model(path, n_ctx=256, n_threads=1)
    try:
        g = generate(m, "hi", max_tokens=1)
        assert g.sampling.temperature == pytest.approx(0.7)
        assert g.sampling.top_k == 20
        assert g.sampling.top_p == CHAT_DEFAULTS.top_p == 0.95
        assert generate(m, "hi", max_tokens=1, sampling={"temperature": 0.1}).sampling.temperature == 0.1
    finally:
        m.close()
    assert CHAT_DEFAULTS == SamplingParams(temperature=0.2, top_p=0.95, top_k=40, min_p=0.05)
    assert resolve_sampling({}, {"top_k": None}).top_k == 40
    with pytest.raises(ValueError, match="unknown sampling setting"):
        resolve_sampling({}, {"temprature": 1.0})
    with pytest.raises(ValueError, match="must be a number"):
        resolve_sampling({}, {"top_k": "many"})


def test_complete_renders_through_the_template_and_keeps_grammar(tiny_gguf):
    tpl = "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
    m = load_model(tiny_gguf(chat_template=tpl), n_ctx=256, n_threads=1)
    try:
        res = complete(m, "Name a colour", grammar='root ::= "red" | "blue"', max_tokens=10)
        assert res.text in ("red", "blue")
        assert res.finish_reason == "stop"
        assert res.prompt_tokens == len(b"[user]Name a colour[assistant]")
    finally:
        m.close()


def test_generating_on_another_thread_than_the_loading_one_warns_once(tiny_gguf, caplog):
    """llama.cpp keeps one OpenMP team per calling thread: a second thread slows decoding (a
    model in this process; an engine process runs llama.cpp on its one thread whoever asks)."""
    import logging
    import threading

    from app.engine.generation import generate

    path = tiny_gguf(control_tokens=CONTROL, user_tokens=["<tool_call>"], bos="<s>", eos="</s>")
    model = load_model(path, n_ctx=512, n_threads=1, isolate=False)

    assert model.owner_thread == threading.get_ident()
    with caplog.at_level(logging.WARNING, logger="app.engine.inprocess"):
        generate(model, "hi", max_tokens=2).run()  # the loading thread: no warning
        assert not caplog.records

        def other() -> None:
            generate(model, "hi", max_tokens=2).run()
            generate(model, "hi", max_tokens=2).run()

        t = threading.Thread(target=other)
        t.start()
        t.join()
    model.close()
    warnings = [r for r in caplog.records if "loaded on another thread" in r.getMessage()]
    assert len(warnings) == 1
