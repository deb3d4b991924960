"""A real llama-architecture GGUF whose next token depends only on the current one.

UI tests need a real model that says something *known*: a long stream that never hits
EOS, or a tool call the Hermes parser recognises. This writer builds the same byte-level
vocabulary as ``app.engine.models.tiny`` (ids 0-255 bytes, then control tokens, then
user tokens) with weights that make llama.cpp compute a bigram table:

* every attention and feed-forward output matrix is zero, so each block adds nothing and
  the last hidden state is the current token's embedding;
* each token in ``script`` has a one-hot embedding in its own dimension; every other token
  shares dimension 0; the output matrix maps dimension ``i`` to the logit of the scripted
  successor with a margin so large that any sampler settings pick it.

So ``script={"\\n": "<tool_call>..."}`` makes the model answer a ChatML prompt (which
ends in ``assistant\\n``) with that token, whatever the conversation says. Qt-free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from app.engine.models.tiny import TinySpec, byte_to_unicode, write_llama_gguf

__all__ = [
    "CHATML",
    "CYCLE",
    "code_heavy_section",
    "markdown_script",
    "streaming_script",
    "unique_chunks",
    "write_alphabet_model",
    "write_scripted_gguf",
]

_B2U = byte_to_unicode()
CYCLE = "abcdefghijklmnopqrstuvwxyz "


def _token_text(spec: TinySpec, token: str) -> str:
    """A token given as its text: a special / user token, or one byte (a one-byte character)."""
    if token in spec.tokens[256:]:
        return token
    data = token.encode("utf-8")
    if len(data) != 1:
        raise ValueError(f"{token!r} is neither a special token nor a single byte")
    return _B2U[data[0]]


def write_scripted_gguf(
    path: str | Path,
    *,
    chat_template: str,
    script: Mapping[str, str],
    default_next: str,
    control_tokens: Iterable[str] = ("<|im_start|>", "<|im_end|>"),
    user_tokens: Iterable[str] = (),
    bos: str | None = None,
    eos: str = "<|im_end|>",
    embedding_length: int = 64,
    margin: float = 6.0,
    name: str = "scripted-test-model",
    context_length: int = 4096,
) -> Path:
    """Write the model: after token ``k`` it says ``script[k]``; after any other token ``default_next``."""
    d = embedding_length
    if len(script) + 1 > d:
        raise ValueError(f"a script of {len(script)} entries needs embedding_length > {len(script)}")

    def tensors(spec: TinySpec) -> list[tuple[str, np.ndarray]]:
        n_vocab = len(spec.tokens)
        ids = {t: i for i, t in enumerate(spec.tokens)}
        embd = np.zeros((n_vocab, d), dtype=np.float32)
        embd[:, 0] = 1.0
        out = np.zeros((n_vocab, d), dtype=np.float32)
        out[ids[_token_text(spec, default_next)], 0] = margin
        for dim, (cur, nxt) in enumerate(script.items(), start=1):
            i = ids[_token_text(spec, cur)]
            embd[i, :] = 0.0
            embd[i, dim] = 1.0
            out[ids[_token_text(spec, nxt)], dim] = margin
        zeros = np.zeros((d, d), dtype=np.float32)
        eye = np.eye(d, dtype=np.float32)
        return [
            ("token_embd.weight", embd),
            ("output_norm.weight", np.ones(d, dtype=np.float32)),
            ("output.weight", out),
            ("blk.0.attn_norm.weight", np.ones(d, dtype=np.float32)),
            ("blk.0.attn_q.weight", eye),
            ("blk.0.attn_k.weight", eye),
            ("blk.0.attn_v.weight", eye),
            ("blk.0.attn_output.weight", zeros),
            ("blk.0.ffn_norm.weight", np.ones(d, dtype=np.float32)),
            ("blk.0.ffn_gate.weight", np.zeros((2 * d, d), dtype=np.float32)),
            ("blk.0.ffn_up.weight", np.zeros((2 * d, d), dtype=np.float32)),
            ("blk.0.ffn_down.weight", np.zeros((d, 2 * d), dtype=np.float32)),
        ]

    return write_llama_gguf(
        path,
        tensors,
        chat_template=chat_template,
        control_tokens=control_tokens,
        user_tokens=user_tokens,
        bos=bos,
        eos=eos,
        context_length=context_length,
        embedding_length=d,
        block_count=1,
        head_count=4,
        feed_forward_length=2 * d,
        name=name,
    )


CHATML = (
    "{%- for m in messages -%}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + (m['content'] or '') + '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)


def streaming_script() -> dict[str, str]:
    """After the prompt's last ``\\n``: the alphabet and a space, round and round (no EOS ever)."""
    return {c: CYCLE[(i + 1) % len(CYCLE)] for i, c in enumerate(CYCLE)}


def write_alphabet_model(name: str = "alpha") -> Path:
    """``<name>.gguf`` in the models folder: ChatML, and after the prompt it writes the alphabet from
    "a" (``streaming_script``), so a reply of n tokens is the first n letters."""
    from app.storage import paths

    return write_scripted_gguf(
        paths.models_dir() / f"{name}.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )


def code_heavy_section() -> str:
    """About 2,300 characters of the Markdown a coding model writes: paragraphs, lists, python fences."""
    parts = ["Here is how the **loader** works, step by step, with `load_model()` at its heart.\n\n"]
    for k in range(3):
        parts.append(f"### Step {k + 1}: stage_{k}\n\n")
        parts.append(
            f"Stage {k} reads the *header* of file_{k}.gguf, checks the `magic_{k}` value and "
            f"keeps the [offsets](https://example.org/doc{k}) for later.\n\n"
        )
        parts.append(
            f"- open the file number {k} in binary mode\n- read {k + 4} fields of the header\n"
            f"- return offset_{k} and size_{k}\n\n"
        )
        lines = [
            f"def stage_{k}(path_{k}: str) -> dict[str, int]:",
            f'    """Read the header of stage {k}."""',
            f"    with open(path_{k}, 'rb') as fh_{k}:",
            f"        magic_{k} = fh_{k}.read(4)",
            f"        if magic_{k} != b'GGUF':",
            f"            raise ValueError(f'bad magic: {{magic_{k}!r}}')",
            f"        fields_{k} = [int.from_bytes(fh_{k}.read(8), 'little') for _ in range({k + 4})]",
            f"    return {{'offset': fields_{k}[0], 'size': sum(fields_{k}[1:])}}  # stage {k}",
        ]
        parts.append("```python\n" + "\n".join(lines) + "\n```\n\n")
    parts.append("1. call `stage_0` first\n2. then `stage_1` and `stage_2`\n3. cache the results\n\n")
    return "".join(parts)


def unique_chunks(text: str, size: int = 4) -> list[str]:
    """Cut ``text`` into pieces of about ``size`` characters, all different and none a single character,
    so that a scripted model can say them in order (its next token depends only on the current one)."""
    out: list[str] = []
    seen: set[str] = set()
    pos = 0
    while pos < len(text):
        n = size
        while pos + n < len(text) and text[pos : pos + n] in seen:
            n += 1
        piece = text[pos : pos + n]
        if piece in seen or len(piece) < 2:  # the end of the text: join it to the previous piece
            seen.discard(out[-1])
            piece = out.pop() + piece
        out.append(piece)
        seen.add(piece)
        pos += n
    return out


def markdown_script(tokens: list[str]) -> dict[str, str]:
    """After the prompt's last ``\\n``: ``tokens`` in order, round and round (no EOS ever)."""
    script = {"\n": tokens[0]}
    for i, t in enumerate(tokens):
        script[t] = tokens[(i + 1) % len(tokens)]
    return script
