"""The tiny GGUF writer produces real models that llama.cpp loads and runs."""

from __future__ import annotations

import hashlib

import llama_cpp
import pytest

from app.engine.models.tiny import write_tiny_gguf

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return write_tiny_gguf(
        tmp_path_factory.mktemp("tiny") / "m.gguf",
        chat_template=CHATML,
        control_tokens=["<|im_start|>", "<|im_end|>", "[TOOL_CALLS]", "<|python_tag|>"],
        user_tokens=["<tool_call>", "</tool_call>"],
        bos="<|im_start|>",
        eos="<|im_end|>",
        seed=7,
    )


def test_small_and_deterministic(tmp_path, model_path):
    assert model_path.stat().st_size < 1_000_000
    again = write_tiny_gguf(
        tmp_path / "again.gguf",
        chat_template=CHATML,
        control_tokens=["<|im_start|>", "<|im_end|>", "[TOOL_CALLS]", "<|python_tag|>"],
        user_tokens=["<tool_call>", "</tool_call>"],
        bos="<|im_start|>",
        eos="<|im_end|>",
        seed=7,
    )
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert digest(again) == digest(model_path)
    other = write_tiny_gguf(tmp_path / "other.gguf", seed=8)
    assert digest(other) != digest(model_path)


def test_llama_cpp_loads_and_generates(model_path):
    llm = llama_cpp.Llama(str(model_path), n_ctx=256, n_threads=1, verbose=False)
    vocab = llm._model.vocab
    assert llm.n_vocab() == 256 + 6
    # control tokens are parsed as one token each; user-defined tokens too
    toks = llm.tokenize(b"<|im_start|>hi<tool_call>", add_bos=False, special=True)
    assert toks == [256, ord("h"), ord("i"), 260]
    # bytes round-trip, a multi-byte character spans several tokens
    text = "héllo ✓"
    toks = llm.tokenize(text.encode(), add_bos=False, special=False)
    assert len(toks) == len(text.encode())
    assert llm.detokenize(toks).decode() == text
    # special tokens detokenize as text only when asked to
    assert llm.detokenize([258], special=True) == b"[TOOL_CALLS]"
    assert llama_cpp.llama_vocab_get_attr(vocab, 258) & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
    # <tool_call> is a user-defined token (type 4): llama.cpp prints it even without special=True
    assert llama_cpp.llama_vocab_get_attr(vocab, 260) & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    assert llm.detokenize([260], special=False) == b"<tool_call>"
    assert llm.detokenize([258], special=False) == b""  # a control token vanishes without special=True
    assert llama_cpp.llama_vocab_is_eog(vocab, 257)  # <|im_end|> is the eos
    # and it generates tokens, the same ones for the same seed
    prompt = llm.tokenize(
        b"<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n", add_bos=False, special=True
    )
    out = []
    for tok in llm.generate(prompt, temp=0.0):
        out.append(tok)
        if len(out) == 8:
            break
    assert len(out) == 8 and all(0 <= t < llm.n_vocab() for t in out)
    llm.reset()
    again = []
    for tok in llm.generate(prompt, temp=0.0):
        again.append(tok)
        if len(again) == 8:
            break
    assert again == out
    assert llm.metadata["tokenizer.chat_template"] == CHATML
