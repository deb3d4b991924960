"""Shared grammar writers, parametrised by a family's markers (each family's file calls one).

* :func:`json_tagged`: ``OPEN lead {"name": .., "arguments": {..}} trail CLOSE`` (hermes, ...);
* :func:`json_section`: a section of calls whose arguments are JSON (DeepSeek, Kimi K2);
* :func:`raw_params`: calls whose parameters are written one by one as raw text (Qwen XML, GLM,
  DSML, Kimi K3), each value typed by its schema;
* :func:`notation_call`: calls written in a value notation (Gemma 4, Python literals).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.engine.errors import ConstraintError
from app.engine.grammar.lark import (
    GrammarContext,
    Notation,
    ParamSyntax,
    _closed,
    calls_block,
    compose,
    json_args_schema,
    json_call,
    notation_value,
    ordered_params,
    pick_tools,
    raw_value,
    tool_name,
)

__all__ = [
    "GEMMA",
    "NO_MARKUP",
    "PYTHON",
    "dsml_param",
    "gemma_notation",
    "harmony",
    "json_array",
    "json_objects",
    "json_section",
    "json_tagged",
    "k3_param",
    "python_name",
    "notation_call",
    "raw_params",
    "typed",
]

Tools = Sequence[Mapping[str, Any]]
NO_MARKUP = r"[^<&\n]"  # raw text without markup or newlines (a string value of XML-ish wires)


def _check_names(tools: Tools, ok: Callable[[str], bool], wire: str) -> None:
    for t in tools:
        if not ok(tool_name(t)):
            raise ConstraintError(f"the {wire} wire cannot express the tool name {tool_name(t)!r}")


def json_tagged(
    ctx: GrammarContext,
    fmt: Any,
    tools: Tools,
    forced: str | None,
    parallel: bool,
    *,
    open: str,
    close: str,
    lead: str = "",
    trail: str = "",
    sep: str = "",
    args_key: str = "arguments",
    optional_open: bool = False,
    single: bool = False,
    opener: str | None = None,
) -> str:
    """Each call ``open lead JSON trail close`` (``optional_open``: the open marker may be left out)."""

    def call(tool: Mapping[str, Any]) -> str:
        head = ctx.lit(open + lead) if open or lead else ""
        if optional_open and open:
            head = f"({ctx.lit(open)})? " + (ctx.lit(lead) if lead else "")
        tail = ctx.lit(trail + close, final=True) if trail or close else ""
        return " ".join(x for x in (head, ctx.json(json_call(tool, args_key=args_key)), tail) if x)

    block = calls_block(ctx, tools, forced, parallel, call, sep=sep, single=single)
    return compose(ctx, fmt, block, opener=opener or open or "{", parallel=parallel and not single)


def json_objects(
    ctx: GrammarContext,
    fmt: Any,
    tools: Tools,
    forced: str | None,
    parallel: bool,
    *,
    section: tuple[str, str],
    args_key: str = "arguments",
) -> str:
    """JSON call objects back to back inside one section, the whole reply (Llama 4:
    ``<|python_start|>{...}{...}<|python_end|>``); free text may stand only instead of it."""
    block = calls_block(
        ctx, tools, forced, parallel, lambda t: ctx.json(json_call(t, args_key=args_key)), section=section
    )
    return compose(ctx, fmt, block, opener=section[0], parallel=parallel, start_only=True)


def json_section(
    ctx: GrammarContext,
    fmt: Any,
    tools: Tools,
    forced: str | None,
    parallel: bool,
    *,
    section: tuple[str, str] | None,
    head: Callable[[str], str],
    tail: str,
    sep: str = "",
    index: tuple[str, str] | None = None,
    opener: str | None = None,
    head_expr: Callable[[GrammarContext, str], str] | None = None,
) -> str:
    """A section of calls ``head(NAME) [index] {json args} tail``; ``index`` = (before, after) a
    call counter written after the name (Kimi K2's ``:0``)."""

    def call(tool: Mapping[str, Any]) -> str:
        parts = [head_expr(ctx, tool_name(tool)) if head_expr else ctx.lit(head(tool_name(tool)))]
        if index is not None:
            parts.append(f"{ctx.lit(index[0])} /[0-9]{{1,2}}/ {ctx.lit(index[1])}")
        return " ".join(parts + [ctx.json(json_args_schema(tool)), ctx.lit(tail)])

    block = calls_block(ctx, tools, forced, parallel, call, section=section, sep=sep)
    return compose(ctx, fmt, block, opener=opener or (section[0] if section else ""), parallel=parallel)


def raw_params(
    ctx: GrammarContext,
    fmt: Any,
    tools: Tools,
    forced: str | None,
    parallel: bool,
    *,
    head: Callable[[str], str],
    param: Callable[[GrammarContext, str, Any, str], str],
    tail: str,
    section: tuple[str, str] | None = None,
    sep: str = "",
    opener: str,
    name_ok: Callable[[str], bool] | None = None,
    key_ok: Callable[[str], bool] | None = None,
    wire: str = "",
    head_expr: Callable[[GrammarContext, str], str] | None = None,
) -> str:
    """Calls ``head(NAME) param* tail`` where ``param(ctx, key, schema, where)`` writes one
    parameter (declared order; optional ones may be left out); ``head_expr`` writes the head as a
    grammar expression instead (a head with a counter in it)."""
    wire = wire or ctx.family
    if name_ok is not None:
        _check_names(tools if forced is None else [t for t in tools if tool_name(t) == forced], name_ok, wire)

    def call(tool: Mapping[str, Any]) -> str:
        body = ordered_params(
            ctx,
            tool,
            lambda k, s, w: param(ctx, k, s, w),
            ParamSyntax(sep=None),
            check_name=key_ok,
            wire=wire,
        )
        first = head_expr(ctx, tool_name(tool)) if head_expr else ctx.lit(head(tool_name(tool)))
        return f"{first} {body} {ctx.lit(tail, final=section is None)}"

    block = calls_block(ctx, tools, forced, parallel, call, section=section, sep=sep)
    return compose(ctx, fmt, block, opener=opener, parallel=parallel)


def typed(
    ctx: GrammarContext,
    schema: Any,
    close: str,
    where: str,
    *,
    lead: str = "",
    trail: str = "",
    text_rx: str | None = None,
) -> str:
    return raw_value(ctx, schema, close, where, lead=lead, trail=trail, text_rx=text_rx)


# -- notations -------------------------------------------------------------------------------

_GQ = '<|"|>'


def _py_string(ctx: GrammarContext, schema: Mapping[str, Any]) -> str:
    lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
    rep = "*" if (lo == 0 and hi is None) else f"{{{lo},{'' if hi is None else hi}}}"
    # one character per unit: plain characters, or the escapes that stand for one character
    return ctx.rule(f"/'([^'\\\\\\x00-\\x1f]|\\\\[\\\\'\"nrt]){rep}'/", prefix="PYSTR")


def gemma_notation(quote: str = _GQ) -> Notation:
    """Gemma's value notation, its strings between ``quote`` (Gemma 4's ``<|"|>``, FunctionGemma's
    ``<escape>``): no escapes inside, keys bare where they can be."""

    def string(ctx: GrammarContext, schema: Mapping[str, Any]) -> str:
        lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
        return f"{ctx.lit(quote)} " + ctx.text_until(quote, min_len=lo, max_len=hi)

    def key(k: str) -> str:
        return k if k and all(c.isalnum() or c in "_ " for c in k) and k == k.strip() else quote + k + quote

    return Notation(
        string=string,
        true="true",
        false="false",
        null="null",
        str_lit=lambda s: quote + s + quote,
        key=key,
        kv=":",
        sep=",",
    )


GEMMA = gemma_notation()
PYTHON = Notation(
    string=_py_string,
    true="True",
    false="False",
    null="None",
    str_lit=lambda s: repr(s),
    key=lambda k: repr(k),
    kv=": ",
    sep=", ",
)


def notation_call(
    ctx: GrammarContext,
    fmt: Any,
    tools: Tools,
    forced: str | None,
    parallel: bool,
    *,
    nt: Notation,
    head: Callable[[str], str],
    tail: str,
    kwargs: str | None = None,
    section: tuple[str, str] | None = None,
    sep: str = "",
    opener: str,
    name_ok: Callable[[str], bool] | None = None,
    key_ok: Callable[[str], bool] | None = None,
    args_open: str = "{",
    args_close: str = "}",
) -> str:
    """Calls ``head(NAME) ARGS tail`` where ARGS is the arguments object in ``nt`` (``kwargs``:
    written as ``k<kwargs>v`` pairs instead, between ``args_open``/``args_close``)."""
    if name_ok is not None:
        _check_names(
            tools if forced is None else [t for t in tools if tool_name(t) == forced], name_ok, ctx.family
        )

    def call(tool: Mapping[str, Any]) -> str:
        name = tool_name(tool)
        kv = nt.kv if kwargs is None else kwargs

        def one(k: str, s: Any, w: str) -> str:
            key = nt.key(k) if kwargs is None else k
            return f"{ctx.lit(key)} {ctx.lit(kv)} " + notation_value(ctx, s, nt, w)

        body = ordered_params(
            ctx,
            tool,
            one,
            ParamSyntax(sep=nt.sep, open=args_open, close=args_close),
            check_name=key_ok,
            wire=ctx.family,
        )
        return f"{ctx.lit(head(name))} {body} {ctx.lit(tail, final=section is None)}".strip()

    block = calls_block(ctx, tools, forced, parallel, call, section=section, sep=sep)
    return compose(ctx, fmt, block, opener=opener, parallel=parallel)


def json_type_name(schema: Any) -> list[str]:
    """The JSON types a schema allows, in a fixed order (enum: the values' types)."""
    if not isinstance(schema, Mapping):
        return ["string"]
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        out: list[str] = []
        for v in values:
            t = (
                "boolean"
                if isinstance(v, bool)
                else "integer"
                if isinstance(v, int)
                else "number"
                if isinstance(v, float)
                else "string"
                if isinstance(v, str)
                else "null"
                if v is None
                else "object"
                if isinstance(v, dict)
                else "array"
            )
            if t not in out:
                out.append(t)
        return out
    kind: Any = schema.get("type")
    if kind is None:
        if "anyOf" in schema or "oneOf" in schema:
            out = []
            for s in schema.get("anyOf") or schema.get("oneOf") or ():
                out += [x for x in json_type_name(s) if x not in out]
            return out
        return ["string"]
    return list(kind) if isinstance(kind, list) else [kind]


def subschema(schema: Any, t: str) -> dict[str, Any]:
    """The part of ``schema`` of JSON type ``t``."""
    if not isinstance(schema, Mapping):
        return {"type": t}
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        keep = [v for v in values if json_type_name({"enum": [v]}) == [t]]
        return {"enum": keep}
    for key in ("anyOf", "oneOf"):
        if key in schema:
            for s in schema[key]:
                if t in json_type_name(s):
                    return subschema(s, t)
    return {**{k: v for k, v in schema.items() if k not in ("type", "anyOf", "oneOf")}, "type": t}


def dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def json_array(
    ctx: GrammarContext,
    fmt: Any,
    tools: Tools,
    forced: str | None,
    parallel: bool,
    *,
    open: str,
    close: str = "",
    item: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None,
    args_key: str = "arguments",
    opener: str | None = None,
    lead: str | None = None,
) -> str:
    """``open [{"name": .., "arguments": {..}}, ...] close`` (one JSON array of calls; ``item``
    writes the schema of one call; ``lead``: what may come before the calls, by default the
    family's reasoning block)."""
    chosen = pick_tools(tools, forced)
    items = [(item or (lambda t: json_call(t, args_key=args_key)))(t) for t in chosen]
    schema: dict[str, Any] = {
        "type": "array",
        "items": items[0] if len(items) == 1 else {"anyOf": items},
        "minItems": 1,
    }
    most = ctx.calls_allowed(parallel)
    if most is not None:
        schema["maxItems"] = most
    arr = ctx.json(schema)
    end = f" {ctx.lit(close, final=True)}" if close else ""
    block = ctx.rule(f"{ctx.lit(open)} {arr}{end}", prefix="calls")
    ctx.rests[block] = lambda opener: f"{ctx.lit(open[len(opener) :])} {arr}{end}"
    return compose(ctx, fmt, block, opener=opener or open, parallel=False, lead=lead)


def harmony(
    ctx: GrammarContext,
    fmt: Any,
    tools: Tools,
    forced: str | None,
    parallel: bool,
    *,
    channel: str,
    message: str,
    constrain: str,
    call_end: str,
    end: str,
    start: str,
) -> str:
    """gpt-oss: one call message ``CHANNEL commentary to=functions.NAME CONSTRAIN json MESSAGE {..}
    CALL_END`` (the call ends generation), after an optional analysis message."""

    def call(tool: Mapping[str, Any]) -> str:
        head = f"{channel}commentary to=functions.{tool_name(tool)} {constrain}json{message}"
        return f"{ctx.lit(head)} {ctx.json(json_args_schema(tool))} {ctx.lit(call_end, final=True)}"

    block = calls_block(ctx, tools, forced, parallel, call, single=True)
    lead = ""
    if ctx.reasoning or ctx.in_reasoning:
        analysis = (
            f"{ctx.lit(channel + 'analysis' + message)} {ctx.text_until(end)} {ctx.lit(start + 'assistant')}"
        )
        lead = f"({analysis})?"
    if ctx.auto:
        plain = ctx.json(ctx.response_schema) if ctx.response_schema is not None else "/(?s:.*)/"
        final = f"{ctx.lit(channel + 'final' + message)} {plain}"
        return ctx.grammar(f"{lead} ({block} | {final})".strip())
    return ctx.grammar(f"{lead} {block}".strip())


def dsml_param(ctx: GrammarContext, key: str, schema: Any, where: str, *, open: str, close: str) -> str:
    """``OPEN name="K" string="true">text CLOSE`` for strings, ``string="false">JSON CLOSE``
    otherwise; then a newline."""
    alts = []
    types = json_type_name(schema)
    if "string" in types:
        sub = subschema(schema, "string")
        alts.append(
            f"{ctx.lit(f'{open} name=' + dumps(key) + ' string=' + dumps('true') + '>')} "
            + raw_value(ctx, sub, close, where)
        )
    rest = [t for t in types if t != "string"]
    if rest:
        sub = schema if "string" not in types else {"anyOf": [subschema(schema, t) for t in rest]}
        alts.append(
            f"{ctx.lit(f'{open} name=' + dumps(key) + ' string=' + dumps('false') + '>')} "
            f"{ctx.json(_closed(sub))} {ctx.lit(close)}"
        )
    return "(" + " | ".join(alts) + f") {ctx.lit(chr(10))}"


def k3_param(
    ctx: GrammarContext,
    key: str,
    schema: Any,
    where: str,
    *,
    open: str,
    sep: str,
    close: str,
    trail: str = "\n",
) -> str:
    """One typed argument frame per JSON type the schema allows."""
    alts = [
        f"{ctx.lit(f'{open} key=' + dumps(key) + ' type=' + dumps(t) + sep)} "
        + raw_value(ctx, subschema(schema, t), close, f"{where} ({t})")
        for t in json_type_name(schema)
    ]
    return "(" + " | ".join(alts) + ")" + (f" {ctx.lit(trail)}" if trail else "")


def python_name(name: str) -> bool:
    """A (dotted) Python identifier that is not a keyword: what a pythonic call can write."""
    import keyword

    return all(p.isidentifier() and not keyword.iskeyword(p) for p in name.split("."))
