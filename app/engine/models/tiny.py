"""Write a real, tiny, random-weight llama-architecture GGUF (tests and the bundle self-test).

It lives in the app (not only in ``tests/``) because ``callisto --self-test`` writes one at run
time from inside the installed bundle, where ``tests/`` does not exist; the tests import it
from here too.


The model is a working llama.cpp model (< 1 MB, written in well under a second):

* a byte-level GPT-2 style BPE tokenizer: the 256 byte tokens (in GPT-2's
  byte-to-unicode spelling) plus any control tokens (token type 3) and
  user-defined tokens (token type 4) the test asks for, so that *any* text can
  be tokenized and a multi-byte UTF-8 character always spans several tokens;
* a chat template (``tokenizer.chat_template``) and optional named templates
  (``tokenizer.chat_template.<name>``, e.g. ``tool_use``);
* bos / eos ids pointing at the requested control tokens;
* random F32 weights drawn from a seeded generator: the same arguments always
  give the same bytes.

Usage::

    path = write_tiny_gguf(tmp_path / "m.gguf", chat_template=src,
                           control_tokens=["<|im_start|>", "<|im_end|>"],
                           user_tokens=["<tool_call>", "</tool_call>"],
                           bos="<|im_start|>", eos="<|im_end|>")
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "BERT_WORDS",
    "BYTE_TOKENS",
    "TensorWriter",
    "TinySpec",
    "byte_to_unicode",
    "token_id",
    "write_llama_gguf",
    "write_tiny_bert_gguf",
    "write_tiny_gguf",
]

TOKEN_NORMAL = 1
TOKEN_CONTROL = 3
TOKEN_USER_DEFINED = 4


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-unicode mapping (what llama.cpp's BPE expects)."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


_B2U = byte_to_unicode()
BYTE_TOKENS: list[str] = [_B2U[b] for b in range(256)]


class TinySpec:
    """The vocabulary layout of a tiny model: ids of bytes and of special tokens."""

    def __init__(self, control_tokens: Iterable[str], user_tokens: Iterable[str]):
        self.tokens: list[str] = list(BYTE_TOKENS)
        self.types: list[int] = [TOKEN_NORMAL] * 256
        for tok in control_tokens:
            if tok not in self.tokens:
                self.tokens.append(tok)
                self.types.append(TOKEN_CONTROL)
        for tok in user_tokens:
            if tok not in self.tokens:
                self.tokens.append(tok)
                self.types.append(TOKEN_USER_DEFINED)

    def id_of(self, token: str) -> int:
        return self.tokens.index(token)


def token_id(text_or_byte: str | int) -> int:
    """Id of a single byte (int) or of a one-byte character in any tiny model."""
    if isinstance(text_or_byte, int):
        return text_or_byte
    data = text_or_byte.encode("utf-8")
    if len(data) != 1:
        raise ValueError("token_id() takes a single byte")
    return data[0]


def write_llama_gguf(
    path: str | Path,
    tensors: Callable[[TinySpec], Iterable[tuple[str, Any]]],
    *,
    chat_template: str | None,
    named_templates: Mapping[str, str] | None = None,
    control_tokens: Iterable[str],
    user_tokens: Iterable[str],
    bos: str | None,
    eos: str | None,
    eot: str | None = None,
    context_length: int,
    embedding_length: int,
    block_count: int,
    head_count: int,
    feed_forward_length: int,
    name: str,
    extra_metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write a llama-architecture GGUF with the tiny byte-level tokenizer and return the path.

    ``bos``, ``eos`` and ``eot`` are added to the control tokens when missing. ``tensors(spec)``
    gives the weights, ``(name, float32 array)`` in the order they are written, for the
    vocabulary ``spec``.
    """
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    control = list(control_tokens)
    for special in (bos, eos, eot):
        if special is not None and special not in control:
            control.append(special)
    spec = TinySpec(control, user_tokens)

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_context_length(context_length)
    w.add_embedding_length(embedding_length)
    w.add_block_count(block_count)
    w.add_feed_forward_length(feed_forward_length)
    w.add_head_count(head_count)
    w.add_head_count_kv(head_count)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(embedding_length // head_count)
    w.add_vocab_size(len(spec.tokens))
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(spec.tokens)
    w.add_token_types(spec.types)
    # llama.cpp requires a merges array for BPE; one harmless merge of two
    # unprintable bytes keeps every other text byte-level.
    w.add_token_merges([f"{_B2U[1]} {_B2U[2]}"])
    if bos is not None:
        w.add_bos_token_id(spec.id_of(bos))
        w.add_add_bos_token(False)
    if eos is not None:
        w.add_eos_token_id(spec.id_of(eos))
    if eot is not None:
        w.add_eot_token_id(spec.id_of(eot))
    if chat_template is not None:
        w.add_chat_template(chat_template)
    for key, template in (named_templates or {}).items():
        w.add_string(f"tokenizer.chat_template.{key}", template)
    for key, value in (extra_metadata or {}).items():
        if isinstance(value, bool):
            w.add_bool(key, value)
        elif isinstance(value, int):
            w.add_uint32(key, value)
        elif isinstance(value, float):
            w.add_float32(key, value)
        else:
            w.add_string(key, str(value))

    for tensor_name, data in tensors(spec):
        w.add_tensor(tensor_name, data)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_tiny_gguf(
    path: str | Path,
    *,
    chat_template: str | None = None,
    named_templates: Mapping[str, str] | None = None,
    control_tokens: Iterable[str] = ("<s>", "</s>"),
    user_tokens: Iterable[str] = (),
    bos: str | None = "<s>",
    eos: str | None = "</s>",
    eot: str | None = None,
    seed: int = 0,
    context_length: int = 4096,
    embedding_length: int = 64,
    block_count: int = 2,
    head_count: int = 4,
    feed_forward_length: int = 128,
    name: str = "tiny-test-model",
    extra_metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write the model to ``path`` and return the path."""
    import numpy as np

    def tensors(spec: TinySpec) -> Iterable[tuple[str, Any]]:
        rng = np.random.default_rng(seed)
        n_vocab, d, ff = len(spec.tokens), embedding_length, feed_forward_length

        def rand(*shape: int, scale: float = 0.2) -> Any:
            return (rng.standard_normal(shape) * scale).astype(np.float32)

        yield "token_embd.weight", rand(n_vocab, d)
        yield "output_norm.weight", np.ones(d, dtype=np.float32)
        yield "output.weight", rand(n_vocab, d)
        for i in range(block_count):
            yield f"blk.{i}.attn_norm.weight", np.ones(d, dtype=np.float32)
            yield f"blk.{i}.attn_q.weight", rand(d, d)
            yield f"blk.{i}.attn_k.weight", rand(d, d)
            yield f"blk.{i}.attn_v.weight", rand(d, d)
            yield f"blk.{i}.attn_output.weight", rand(d, d)
            yield f"blk.{i}.ffn_norm.weight", np.ones(d, dtype=np.float32)
            yield f"blk.{i}.ffn_gate.weight", rand(ff, d)
            yield f"blk.{i}.ffn_up.weight", rand(ff, d)
            yield f"blk.{i}.ffn_down.weight", rand(d, ff)

    return write_llama_gguf(
        path,
        tensors,
        chat_template=chat_template,
        named_templates=named_templates,
        control_tokens=control_tokens,
        user_tokens=user_tokens,
        bos=bos,
        eos=eos,
        eot=eot,
        context_length=context_length,
        embedding_length=embedding_length,
        block_count=block_count,
        head_count=head_count,
        feed_forward_length=feed_forward_length,
        name=name,
        extra_metadata=extra_metadata,
    )


class TensorWriter:
    """Random F32 weights into a ``gguf.GGUFWriter`` from a seeded generator: a matrix, a linear
    layer with its bias, a layer norm (ones and zeros). What the tiny BERT and the tests' tiny
    vision projector are written with."""

    def __init__(self, writer: Any, seed: int, scale: float = 0.2):
        import numpy as np

        self.w = writer
        self.rng = np.random.default_rng(seed)
        self.scale = scale

    def rand(self, *shape: int) -> Any:
        import numpy as np

        return (self.rng.standard_normal(shape) * self.scale).astype(np.float32)

    def matrix(self, name: str, *shape: int) -> None:
        self.w.add_tensor(name, self.rand(*shape))

    def linear(self, name: str, n_out: int, n_in: int) -> None:
        """``name.weight`` (n_out x n_in) and ``name.bias`` (zeros)."""
        import numpy as np

        self.w.add_tensor(f"{name}.weight", self.rand(n_out, n_in))
        self.w.add_tensor(f"{name}.bias", np.zeros(n_out, dtype=np.float32))

    def norm(self, name: str, n: int) -> None:
        """``name.weight`` (ones) and ``name.bias`` (zeros)."""
        import numpy as np

        self.w.add_tensor(f"{name}.weight", np.ones(n, dtype=np.float32))
        self.w.add_tensor(f"{name}.bias", np.zeros(n, dtype=np.float32))


#: the whole words of :func:`write_tiny_bert_gguf`'s vocabulary (each letter is a word's start and
#: a later piece too, so any lower-case ASCII word tokenizes)
BERT_WORDS = ("hello", "there", "the", "quick", "brown", "fox", "cat", "dog", ".", ",", "!", "?")


def write_tiny_bert_gguf(
    path: str | Path,
    *,
    pooling: int = 2,
    classifier: bool = False,
    rerank_template: str | None = None,
    seed: int = 0,
    context_length: int = 512,
    embedding_length: int = 32,
    block_count: int = 2,
    head_count: int = 2,
    feed_forward_length: int = 64,
    name: str = "tiny-bert",
) -> Path:
    """An embedding model as llama.cpp reads BERT: non-causal attention, learned positions, a
    WordPiece vocabulary ([PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103, then each letter as
    a word's start and as a later piece, and :data:`BERT_WORDS`), ``bert.pooling_type`` ``pooling`` (1 mean, 2 CLS,
    4 rank: a reranker, with a ``classifier`` head, and its prompt ``rerank_template`` with
    ``{query}`` and ``{document}`` in it), random F32 weights from ``seed``. It has no KV memory: llama.cpp embeds with it, never writes."""
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["[PAD]", *(f"[unused{i}]" for i in range(1, 100)), "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    # llama.cpp's WordPiece reads a word's first piece with "\u2581" before it and its next pieces
    # bare (the GGUF converter's spelling of BERT's "word" / "##piece")
    tokens += [*(f"\u2581{c}" for c in letters), *letters, *(f"\u2581{w}" for w in BERT_WORDS)]
    d, ff = embedding_length, feed_forward_length
    w = gguf.GGUFWriter(str(path), "bert")
    w.add_name(name)
    w.add_context_length(context_length)
    w.add_embedding_length(d)
    w.add_block_count(block_count)
    w.add_feed_forward_length(ff)
    w.add_head_count(head_count)
    w.add_layer_norm_eps(1e-12)
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType(pooling))
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("bert")
    w.add_token_list(tokens)
    w.add_token_types([TOKEN_CONTROL if t.startswith("[") else TOKEN_NORMAL for t in tokens])
    w.add_token_type_count(2)
    w.add_pad_token_id(0)
    w.add_unk_token_id(100)
    w.add_bos_token_id(101)  # [CLS]
    w.add_sep_token_id(102)
    w.add_mask_token_id(103)
    if rerank_template is not None:
        w.add_string("tokenizer.chat_template.rerank", rerank_template)
    t = TensorWriter(w, seed)
    t.matrix("token_embd.weight", len(tokens), d)
    t.matrix("token_types.weight", 2, d)
    t.matrix("position_embd.weight", context_length, d)
    t.norm("token_embd_norm", d)
    for i in range(block_count):
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            t.linear(f"blk.{i}.{part}", d, d)
        t.norm(f"blk.{i}.attn_output_norm", d)
        t.linear(f"blk.{i}.ffn_up", ff, d)
        t.linear(f"blk.{i}.ffn_down", d, ff)
        t.norm(f"blk.{i}.layer_output_norm", d)
    if classifier:  # a reranker's head (rank pooling): the [CLS] state to one relevance score
        t.linear("cls", d, d)
        t.linear("cls.output", 1, d)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
