"""Compile a tool choice into a token-level constraint (llguidance) and hold generation to it.

``compile_constraint(model, family=..., tools=..., tool_choice=..., parallel_tool_calls=...,
max_calls=..., response_format=...)`` returns a :class:`Constraint` (or ``None`` when nothing is to be held):
the Lark grammar comes from the family's own ``Format.constraint_grammar``; llguidance compiles
it against the model's vocabulary (its tokenizer is built once per model, about a second at a
262k vocabulary). Compiled grammars are cached (a fresh matcher is a deep copy of the cached
one). A reply holds at most ``max_calls`` calls (``DEFAULT_MAX_CALLS``; one without
``parallel_tool_calls``) and ends after its last one. ``generate(model, prompt, constraint=c)`` starts a :class:`ConstraintRun` that masks the
logits before every sampled token and consumes the token after it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.engine.constraints.json_object import bounded_json_object
from app.engine.errors import ConstraintError
from app.engine.formats import FORMATS
from app.engine.grammar.lark import (
    DEFAULT_MAX_CALLS,
    JSON_STYLE,
    GrammarContext,
    _reasoning,
    bound_numbers,
    tool_name,
    tool_params,
)

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel

__all__ = [
    "DEFAULT_MAX_CALLS",
    "MAX_CONSTRAINT_SCHEMA_BYTES",
    "MAX_CONSTRAINT_TOOLS",
    "Constraint",
    "ConstraintRun",
    "ToolChoice",
    "compile_constraint",
    "compile_inline",
    "parse_response_format",
    "parse_tool_choice",
    "resolve_tool_choice",
    "tokenizer_for",
]


#: What one constraint may be built from, for the window, the CLI and the check as for the server
#: (which refuses more than 128 tools or 256 KiB of schemas per request before any engine work; the
#: byte bound here leaves room for its conversions): a grammar over thousands of tools takes the
#: engine a minute to build.
MAX_CONSTRAINT_TOOLS = 128
MAX_CONSTRAINT_SCHEMA_BYTES = 1024 * 1024


def _check_size(tools: Sequence[Mapping[str, Any]] | None, response_format: Any) -> None:
    """A quick :class:`ConstraintError` naming the limit when a constraint would be too big to build."""
    n = len(tools or [])
    if n > MAX_CONSTRAINT_TOOLS:
        raise ConstraintError(
            f"{n} tools are more than a constraint is built for (at most {MAX_CONSTRAINT_TOOLS}); "
            "offer fewer tools"
        )
    try:
        size = len(json.dumps([list(tools or []), response_format], default=str).encode("utf-8"))
    except (TypeError, ValueError, RecursionError):
        raise ConstraintError("the tools or the response format are not JSON") from None
    if size > MAX_CONSTRAINT_SCHEMA_BYTES:
        raise ConstraintError(
            f"the tools' schemas and the response format take {size:,} bytes, more than a constraint "
            f"is built from (at most {MAX_CONSTRAINT_SCHEMA_BYTES:,})"
        )


@dataclass(frozen=True)
class ToolChoice:
    """``mode``: ``auto`` | ``none`` | ``required`` | ``function`` (then ``name``)."""

    mode: str = "auto"
    name: str | None = None

    def to_value(self) -> str | dict[str, Any]:
        if self.mode == "function":
            return {"type": "function", "function": {"name": self.name}}
        return self.mode


def parse_tool_choice(value: Any) -> ToolChoice:
    """OpenAI's ``tool_choice`` values; anything unknown or malformed is ``auto``."""
    if isinstance(value, ToolChoice):
        return value
    if isinstance(value, str) and value in ("auto", "none", "required"):
        return ToolChoice(value)
    if isinstance(value, Mapping) and value.get("type") == "function":
        fn = value.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else None
        if isinstance(name, str) and name:
            return ToolChoice("function", name)
    return ToolChoice("auto")


def resolve_tool_choice(value: Any, tools: Sequence[Mapping[str, Any]] | None) -> ToolChoice:
    """:func:`parse_tool_choice`, then the errors that need the tools: a named tool that is not
    declared, ``required`` with no tools."""
    choice = parse_tool_choice(value)
    names = [tool_name(t) for t in tools or []]
    if choice.mode == "function" and choice.name not in names:
        known = ", ".join(names) or "none"
        raise ConstraintError(
            f"tool_choice names {choice.name!r}, which is not a declared tool (declared: {known})"
        )
    if choice.mode == "required" and not names:
        raise ConstraintError("tool_choice is 'required' but no tools are declared")
    return choice


def parse_response_format(value: Any) -> dict[str, Any] | None:
    """The JSON Schema a plain reply must follow, or None (``text``, unknown, malformed)."""
    if not isinstance(value, Mapping):
        return None
    kind = value.get("type")
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if isinstance(schema, Mapping):
            return dict(schema)
    return None


# -- tokenizers (one per loaded model) ---------------------------------------------------------


class _Vocab:
    def __init__(self, model: LoadedModel):
        import llguidance
        import llguidance.llamacpp

        self.n_vocab = int(model.llm.n_vocab())
        self.eog = frozenset(int(t) for t in model.eog_ids)
        try:
            # llguidance reads each token's attributes through a llama-cpp-python function that warns
            # it is deprecated, once per token (262k warnings for Gemma 3): silence that here only.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=DeprecationWarning, message="llama_token_get_attr")
                self.tok = llguidance.llamacpp.lltokenizer_from_vocab(
                    model.vocab, n_vocab=self.n_vocab, eos_token=sorted(self.eog) or None
                )
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - a hostile vocabulary panics llguidance (pyo3 PanicException)
            raise ConstraintError(
                f"llguidance cannot read this model's vocabulary ({str(exc)[:200]})"
            ) from None
        self.cache: OrderedDict[str, Any] = OrderedDict()
        self.lock = threading.Lock()

    def split(self, text: str) -> list[tuple[str, int | None]]:
        toks = self.tok.tokenize_str(text, parse_special=True)
        out: list[tuple[str, int | None]] = []
        run: list[int] = []
        for t in toks:
            if self.tok.is_special_token(t):
                if run:
                    out.append((self.tok.decode_str(run), None))
                    run = []
                out.append((self.tok.decode_str([t]), t))
            else:
                run.append(t)
        if run:
            out.append((self.tok.decode_str(run), None))
        # decoding may differ from the text (a tokenizer that cannot spell it): keep the text
        if "".join(p for p, _ in out) != text:
            return [(text, None)]
        return out


_VOCABS: dict[int, _Vocab] = {}
_VOCABS_LOCK = threading.Lock()


def tokenizer_for(model: LoadedModel) -> _Vocab:
    """The llguidance tokenizer of ``model`` (built on first use, then kept with the model)."""
    key = id(model.llm)
    with _VOCABS_LOCK:
        v = _VOCABS.get(key)
        if v is None:
            v = _VOCABS[key] = _Vocab(model)
            weakref.finalize(model.llm, _VOCABS.pop, key, None)
        return v


# -- constraints -------------------------------------------------------------------------

_CACHE_SIZE = 64


class Constraint:
    """A compiled constraint: ``grammar`` (Lark), ``describe`` (for the side panel).
    ``closes_json``: the reply is one JSON object (``json_object``) that the run closes itself
    when the token budget runs out (:func:`app.engine.constraints.json_object.json_closer`)."""

    def __init__(
        self,
        vocab: _Vocab,
        grammar: str,
        matcher: Any,
        describe: str,
        prefix: tuple[int, ...] = (),
        *,
        closes_json: bool = False,
    ):
        self.vocab = vocab
        self.grammar = grammar
        self.describe = describe
        self.closes_json = closes_json
        self._matcher = matcher
        self._prefix = prefix

    def start(self, budget: int | None = None) -> ConstraintRun:
        """A run of this constraint; ``budget``: the most tokens the reply may have (a JSON object
        reply is closed within it)."""
        written = self.vocab.tok.decode_bytes(list(self._prefix)) if self.closes_json else b""
        return ConstraintRun(
            self._matcher.deep_copy(),
            self.vocab,
            budget=budget if self.closes_json else None,
            written=written,
        )

    def after(self, text: str) -> Constraint:
        """This constraint with ``text`` already written (a reply continued from ``text``)."""
        toks = self.vocab.tok.tokenize_str(text, parse_special=True)
        m = self._matcher.deep_copy()
        n = m.try_consume_tokens(toks)
        if n != len(toks) or m.is_error():
            raise ConstraintError(f"the text {text!r} does not fit the constraint ({self.describe})")
        return Constraint(
            self.vocab,
            self.grammar,
            m,
            self.describe,
            self._prefix + tuple(toks),
            closes_json=self.closes_json,
        )

    def __repr__(self) -> str:
        return f"Constraint({self.describe})"


# A JSON object reply is closed when its budget has room for the closing text, one end token and
# this many more tokens: what one more token can add to the closing text (a key begun, a nesting).
_CLOSE_SLACK = 16
_CLOSE_WATCH = 96  # the closing text is worked out only in the last this many tokens of a budget


class ConstraintRun:
    """One generation held by a constraint: a logits processor plus ``consume(token)``.

    With a ``budget`` (a JSON object reply), the run closes the object itself before the budget
    runs out: in the last tokens it works out the text that completes what was written
    (:func:`json_closer`), checks it against the grammar, and from then on allows only its tokens,
    then the end. The reply so ends as whole JSON (``stop``) rather than cut (``length``)."""

    def __init__(self, matcher: Any, vocab: _Vocab, *, budget: int | None = None, written: bytes = b""):
        import numpy as np

        self.matcher = matcher
        self.vocab = vocab
        self.n_vocab = vocab.n_vocab
        self._np = np
        self._words = (self.n_vocab + 31) // 32
        self.steps = 0
        self.budget = budget
        self._written = bytearray(written)
        self._closing: list[int] | None = None  # the closing tokens still to come, once closing

    def allowed(self) -> Any:
        """The next token mask as a boolean array of the vocabulary's size."""
        np = self._np
        bits = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8)
        return np.unpackbits(bits, bitorder="little")[: self.n_vocab].view(bool)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.matcher.is_error():
            raise ConstraintError(f"the constraint failed: {self.matcher.get_error()}")
        allowed = self.allowed()
        if self.budget is not None:
            forced = self._closing_token()
            if forced is not None and allowed[forced]:
                allowed = self._np.zeros_like(allowed)
                allowed[forced] = True
        scores[~allowed] = -self._np.inf
        return scores

    def consume(self, token: int) -> None:
        if not self.matcher.consume_token(int(token)):
            raise ConstraintError(f"the constraint rejected token {token}: {self.matcher.get_error()}")
        self.steps += 1
        if self.budget is None:
            return
        self._written += self.vocab.tok.decode_bytes([int(token)])
        if self._closing:
            if self._closing[0] == int(token):
                self._closing.pop(0)
            else:
                self._closing = None  # another token was taken: work the closing out again

    def _closing_token(self) -> int | None:
        """The token the closing text owes next, once the budget calls for closing; None before
        (and when the text cannot be closed, or its closing does not fit the grammar)."""
        assert self.budget is not None
        left = self.budget - self.steps
        if self._closing is None and left <= _CLOSE_WATCH:
            from app.engine.constraints.json_object import json_closer

            tail = json_closer(bytes(self._written))
            if tail is None:
                self.budget = None  # not a text the closer reads: the grammar alone holds the reply
                return None
            toks = self.vocab.tok.tokenize_bytes(tail) if tail else []
            if len(toks) + 1 + _CLOSE_SLACK < left:
                return None  # room enough yet
            probe = self.matcher.deep_copy()
            if probe.try_consume_tokens(toks) != len(toks) or not probe.is_accepting():
                self.budget = None
                return None
            self._closing = list(toks)
        return self._closing[0] if self._closing else None

    @property
    def accepting(self) -> bool:
        return bool(self.matcher.is_accepting())


def compile_constraint(
    model: LoadedModel,
    *,
    family: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    response_format: Any = None,
    reasoning: bool = False,
    in_reasoning: bool = False,
    max_calls: int | None = DEFAULT_MAX_CALLS,
) -> Any:
    """The constraint for one reply, or None when decoding is free (``auto`` without tools or
    without a format, ``none`` without ``response_format``). Raises :class:`ConstraintError`.
    ``max_calls``: the most calls a reply holds with ``parallel_tool_calls`` (None: no bound);
    without it one.

    The model's backend compiles it where llama.cpp runs (the token mask is applied next to the
    logits): in this process a :class:`Constraint`, for a model in an engine process a handle
    to the one compiled there (``ProcessConstraint``, same ``grammar``/``describe``/``after``)."""
    _check_size(tools, response_format)
    return model.backend.compile_constraint(
        model,
        {
            "family": family,
            "tools": [dict(t) for t in tools or []],
            "tool_choice": tool_choice,
            "parallel_tool_calls": parallel_tool_calls,
            "response_format": response_format,
            "reasoning": reasoning,
            "in_reasoning": in_reasoning,
            "max_calls": max_calls,
        },
    )


def compile_inline(model: LoadedModel, spec: Mapping[str, Any]) -> Constraint | None:
    """:func:`compile_constraint` for a model whose llama.cpp runs in this process (what the
    in-process backend, and so the engine process, runs); ``spec``: the request
    :func:`compile_constraint` hands the model's backend, every key given."""
    family: str | None = spec["family"]
    tools: Sequence[Mapping[str, Any]] | None = spec["tools"]
    response_format, reasoning, in_reasoning = (
        spec["response_format"],
        spec["reasoning"],
        spec["in_reasoning"],
    )
    tool_choice, parallel_tool_calls, max_calls = (
        spec["tool_choice"],
        spec["parallel_tool_calls"],
        spec["max_calls"],
    )
    _check_size(tools, response_format)
    tools = list(tools or [])
    choice = resolve_tool_choice(tool_choice, tools)
    schema = parse_response_format(response_format)
    json_object = isinstance(response_format, Mapping) and response_format.get("type") == "json_object"
    if json_object:
        schema = bounded_json_object()  # any object, within bounds (and closed near the budget)
    if choice.mode == "none" or not tools:
        tools = []
    if choice.mode in ("required", "function") and family is None:
        raise ConstraintError(
            f"tool_choice {choice.mode!r} needs a tool-call format, and this model has none "
            "(choose one in chat.tool_format)"
        )
    if not tools or family is None:
        if schema is None:
            return None
        try:
            return _compile(
                model,
                "json",
                lambda ctx: _plain_json(ctx, schema, reasoning, in_reasoning, family),
                f"response_format (JSON{'' if json_object else ' schema'})",
                (family, schema, reasoning, in_reasoning),
                # the run closes a plain JSON object near the budget (not after a reasoning block)
                closes_json=json_object and not reasoning and not in_reasoning,
            )
        except _CompileError as exc:
            raise ConstraintError(_locate(tokenizer_for(model), [], schema) or str(exc)) from None
    fmt = FORMATS.get(family)
    if fmt is None:
        raise ConstraintError(f"unknown tool-call format {family!r}")
    forced = choice.name if choice.mode == "function" else None
    auto = choice.mode == "auto"
    if max_calls is not None and (
        isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 1
    ):
        raise ConstraintError(f"max_calls must be a whole number of at least 1, got {max_calls!r}")
    what = {"auto": "auto (calls held)", "required": "required", "function": f"tool {forced}"}[choice.mode]
    if auto and schema is not None:
        what += ", JSON reply"

    def build(ctx: GrammarContext) -> str:
        ctx.auto = auto
        ctx.max_calls = max_calls
        ctx.response_schema = schema if auto else None
        return fmt.constraint_grammar(
            [dict(t) for t in tools], forced=forced, parallel=bool(parallel_tool_calls), ctx=ctx
        )

    try:
        return _compile(
            model,
            family,
            build,
            f"{what}, {family}",
            (
                family,
                tools,
                choice.mode,
                forced,
                bool(parallel_tool_calls),
                max_calls if parallel_tool_calls else 1,
                schema if auto else None,
                reasoning,
                in_reasoning,
            ),
        )
    except _CompileError as exc:
        raise ConstraintError(
            _locate(tokenizer_for(model), tools, schema if auto else None) or str(exc)
        ) from None


def _plain_json(
    ctx: GrammarContext, schema: dict[str, Any], reasoning: bool, in_reasoning: bool, family: str | None
) -> str:
    lead = _reasoning(ctx, FORMATS.get(family or "")) if family else ""
    return ctx.grammar(f"{lead} {ctx.json(schema)}".strip())


def _compile(
    model: LoadedModel, family: str, build: Any, describe: str, key_parts: Any, *, closes_json: bool = False
) -> Constraint:
    import llguidance

    vocab = tokenizer_for(model)
    key = hashlib.sha256(json.dumps(key_parts, sort_keys=True, default=str).encode()).hexdigest()
    with vocab.lock:
        hit = vocab.cache.get(key)
        if hit is not None:
            vocab.cache.move_to_end(key)
            grammar, matcher = hit
            return Constraint(vocab, grammar, matcher, describe, closes_json=closes_json)
    reasoning, in_reasoning = key_parts[-2], key_parts[-1]
    ctx = GrammarContext(
        split=vocab.split,
        eog=lambda t: t in vocab.eog,
        eos_ids=tuple(sorted(vocab.eog)),
        reasoning=bool(reasoning),
        in_reasoning=bool(in_reasoning),
        family=family,
    )
    grammar = build(ctx)
    matcher = llguidance.LLMatcher(vocab.tok, grammar, log_level=0)
    if matcher.is_error():
        raise _CompileError(f"the {family} constraint does not compile: {_short(matcher.get_error())}")
    with vocab.lock:
        vocab.cache[key] = (grammar, matcher)
        while len(vocab.cache) > _CACHE_SIZE:
            vocab.cache.popitem(last=False)
    return Constraint(vocab, grammar, matcher, describe, closes_json=closes_json)


class _CompileError(ConstraintError):
    pass


def _locate(vocab: _Vocab, tools: Sequence[Mapping[str, Any]], schema: Any) -> str | None:
    """Which tool parameter (or the response schema) llguidance cannot compile, and why."""
    import llguidance

    def bad(sub: Any) -> str | None:
        doc = dict(bound_numbers(sub)) if isinstance(sub, Mapping) else sub
        if isinstance(doc, dict):
            doc["x-guidance"] = JSON_STYLE
        m = llguidance.LLMatcher(vocab.tok, "start: %json " + json.dumps(doc), log_level=0)
        return _short(m.get_error()) if m.is_error() else None

    for t in tools:
        name = tool_name(t)
        params = tool_params(t)
        for key, sub in (params.get("properties") or {}).items():
            err = bad(sub)
            if err:
                return f"tool {name!r} parameter {key!r}: its schema cannot be held: {err}"
        err = bad(params)
        if err:
            return f"tool {name!r}: its parameters schema cannot be held: {err}"
    if schema is not None:
        err = bad(schema)
        if err:
            return f"response_format: the schema cannot be held: {err}"
    return None


def _short(msg: str) -> str:
    msg = " ".join(msg.split())
    return msg if len(msg) <= 400 else msg[:400] + "..."
