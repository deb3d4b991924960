"""Lark grammar builders for held tool calls (pure text, no llguidance import).

A family's ``Format.constraint_grammar(tools, forced=..., parallel=..., ctx=...)`` describes one
call in its own syntax with these builders; :func:`compose` wraps the calls into the reply the
tool choice asks for:

* ``required`` / a named tool: an optional reasoning block (``ctx.reasoning``, or the rest of a
  block the prompt opened, ``ctx.in_reasoning``), then one call, or several when ``parallel``;
  nothing follows the last call (the reply ends there, in the family's own syntax);
* ``auto``: free text (and reasoning) until the family's call opener, then the call is held until
  it closes; text may follow, and further calls when ``parallel``.

A call list is bounded: with ``parallel`` a reply holds at most ``ctx.max_calls`` calls
(:data:`DEFAULT_MAX_CALLS` unless the request says), without it one. Every family's repetition of
calls goes through :func:`up_to` (in :func:`calls_block`, :func:`compose` and the JSON-array
wire's ``maxItems``), so no family writes an unbounded list. In ``auto`` the free text between
held calls is not counted by the grammar: the chat loop (``app.engine.loop``) stops the reply at
its ``max_calls``-th call.

Markers go through :meth:`GrammarContext.lit`: a marker that is one special token of the model's
vocabulary becomes that token (``<[id]>``), any other text is matched as text. Values of JSON wires
are ``%json`` schemas; raw-value wires type each value by its schema (:func:`raw_value`); Gemma 4
and pythonic calls write values in their own notation (:func:`notation_value`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.engine.errors import ConstraintError

__all__ = [
    "DEFAULT_MAX_CALLS",
    "EXPONENT_DIGITS",
    "FRACTION_DIGITS",
    "SAFE_INTEGER",
    "GrammarContext",
    "ParamSyntax",
    "bound_numbers",
    "calls_block",
    "compose",
    "int_rx",
    "json_args_schema",
    "json_call",
    "notation_value",
    "num_rx",
    "ordered_params",
    "raw_value",
    "tool_name",
    "tool_params",
    "up_to",
]

#: The most calls one reply holds when the request does not say (``parallel_tool_calls=false``
#: means one). Small models that are made to call write call after call; a handful is what a
#: reply of real parallel calls needs.
DEFAULT_MAX_CALLS = 4

JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}

#: A small model held to a schema can write a number whose digits never end (``"count": 1111...``
#: up to the token limit). Every ``integer`` and ``number`` a held value may be is bounded
#: (:func:`bound_numbers` for ``%json`` schemas, :func:`int_rx`/:func:`num_rx` for values typed as
#: text): on a side the schema leaves open, its magnitude is at most ``SAFE_INTEGER`` (2**53 - 1,
#: JavaScript's ``Number.MAX_SAFE_INTEGER`` and RFC 7493's interoperable range: every integer
#: within it is exact in a JSON parser's double, so at most 16 digits); a number's fraction has at
#: most ``FRACTION_DIGITS`` digits unless its own ``multipleOf`` sets its step (10: the finest
#: decimal step llguidance's ``multipleOf`` reads exactly), and an exponent at most
#: ``EXPONENT_DIGITS`` (a double ends at 1e308; ``%json`` ranges write no exponent at all). A
#: bound the schema declares is kept as it is, and widens the default on the other side where it
#: lies beyond it: no value within the declared range is refused for its digits.
SAFE_INTEGER = 2**53 - 1
FRACTION_DIGITS = 10
EXPONENT_DIGITS = 3
_SUPPORTED_RAW = {
    "type",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "description",
    "title",
    "default",
    "examples",
    "maxLength",
    "minLength",
    "format",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "uniqueItems",
    "$schema",
    "nullable",
}


def _q(s: str) -> str:
    """A Lark string literal."""
    return json.dumps(s, ensure_ascii=False)


@dataclass
class GrammarContext:
    """What a family's grammar needs to know besides its tools.

    ``split`` cuts a marker into ``(text, token_id | None)`` pieces (a piece with an id is one
    special token); ``eog`` tells the end-of-generation tokens (a closing marker that ends
    generation is left out: the generation ends there). ``auto``: free text with held calls;
    ``reasoning``: a reasoning block may come first; ``in_reasoning``: the prompt opened one;
    ``response_schema``: in ``auto``, a plain reply must be this JSON instead of free text;
    ``max_calls``: the most calls one reply holds when calls may be parallel (None: no bound).
    """

    split: Callable[[str], list[tuple[str, int | None]]] = lambda s: [(s, None)]
    eog: Callable[[int], bool] = lambda _t: False
    auto: bool = False
    reasoning: bool = False
    in_reasoning: bool = False
    response_schema: dict[str, Any] | None = None
    max_calls: int | None = DEFAULT_MAX_CALLS
    family: str = ""
    eos_ids: tuple[int, ...] = ()
    marker_ids: set[int] = field(default_factory=set)  # the special tokens the grammar uses as markers
    rules: list[str] = field(default_factory=list)
    rests: dict[str, Callable[[str], str]] = field(default_factory=dict)  # block -> its text after the opener
    _n: int = 0

    # -- pieces ---------------------------------------------------------------------------
    def lit(self, text: str, *, final: bool = False) -> str:
        """``text`` as a grammar expression: special tokens as tokens, the rest as text."""
        if not text:
            return '""'
        parts = []
        for piece, tid in self.split(text):
            if tid is None:
                parts.append(_q(piece))
            elif final and self.eog(tid) and not self.auto:
                continue  # generation ends at this token: the reply ends here (nothing follows)
            else:
                self.marker_ids.add(tid)
                parts.append(f"<[{tid}]>")
        return " ".join(parts) if parts else '""'

    def special(self, text: str) -> int | None:
        """The token id when ``text`` is exactly one special token."""
        pieces = self.split(text)
        return pieces[0][1] if len(pieces) == 1 else None

    def rule(self, body: str, *, prefix: str = "r", attrs: str = "") -> str:
        self._n += 1
        name = f"{prefix}_{self._n}"
        self.rules.append(f"{name}{attrs}: {body}")
        return name

    def json(self, schema: Mapping[str, Any]) -> str:
        """A ``%json`` rule for ``schema``; its objects that list properties and say nothing of
        others are closed (:func:`_closed`): a model never adds a property the schema did not ask
        for (a response format's schema as much as a call's arguments)."""
        doc = dict(bound_numbers(_closed(schema)))
        doc["x-guidance"] = {**JSON_STYLE, **(doc.get("x-guidance") or {})}
        return self.rule("%json " + json.dumps(doc, ensure_ascii=False), prefix="j")

    def text_until(
        self, close: str, *, min_len: int = 0, max_len: int | None = None, final: bool = False
    ) -> str:
        """Any text not containing ``close``, then ``close``."""
        rep = (
            "*"
            if (min_len == 0 and max_len is None)
            else f"{{{min_len},{'' if max_len is None else max_len}}}"
        )
        if self.split(close)[0][1] is not None:  # it starts with a special token text cannot write
            return f"/(?s:.{rep})/ " + self.lit(close, final=final)
        return self.rule(f"/(?s:.{rep})/ {_q(close)}", prefix="t", attrs="[lazy]")

    def free_text(self, *, avoid: str | None = None) -> str:
        """Any text (when ``avoid`` is text, not containing it: it would open a call)."""
        if avoid is None or self.special(avoid) is not None:
            return "/(?s:.*)/"
        return self.rule(f"/(?s:.*)/ & ~/(?s:.*){_rx(avoid)}(?s:.*)/", prefix="FREE")

    def grammar(self, start: str) -> str:
        return "\n".join([f"start: {start}", *self.rules]) + "\n"

    def calls_allowed(self, parallel: bool) -> int | None:
        """How many calls one reply may hold: one without ``parallel``, else ``max_calls``."""
        if not parallel:
            return 1
        return None if self.max_calls is None else max(1, int(self.max_calls))


def up_to(ctx: GrammarContext, item: str, n: int | None) -> str:
    """``item`` written 0 to ``n`` times (None: any number): the one way a grammar repeats calls.

    The bound is written out as nested optional rules (``(item (item)?)?``), which every grammar
    engine reads (llguidance, and GBNF after :mod:`app.engine.grammar.gbnf`)."""
    if n is None:
        return f"({item})*"
    if n <= 0:
        return '""'
    acc = ctx.rule(f"({item})?", prefix="upto")
    for _ in range(n - 1):
        acc = ctx.rule(f"({item} {acc})?", prefix="upto")
    return acc


def _rx(s: str) -> str:
    """``s`` escaped for a ``/.../`` regex."""
    out = []
    for c in s:
        if c in "\\.+*?()|[]{}^$#&-~/":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        else:
            out.append(c)
    return "".join(out)


# -- tools ---------------------------------------------------------------------------------


def tool_name(tool: Mapping[str, Any]) -> str:
    fn = tool.get("function", tool)
    return str(fn.get("name") or "")


def tool_params(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's parameters schema with local ``$ref``s written out (each call's grammar stands
    alone, away from the ``$defs`` the references point into)."""
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(params, Mapping):
        raise ConstraintError(f"tool {tool_name(tool)!r}: its parameters are not a JSON Schema object")
    return _inline_refs(dict(params), params, f"tool {tool_name(tool)!r}")


def _inline_refs(node: Any, root: Mapping[str, Any], where: str, seen: tuple[str, ...] = ()) -> Any:
    if isinstance(node, list):
        return [_inline_refs(n, root, where, seen) for n in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            raise ConstraintError(f"{where}: the recursive schema reference {ref} cannot be held")
        if not ref.startswith("#/"):
            raise ConstraintError(f"{where}: the schema reference {ref} is not local")
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                raise ConstraintError(f"{where}: the schema reference {ref} points nowhere")
            target = target[part]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline_refs(merged, root, where, seen + (ref,))
    return {
        k: _inline_refs(v, root, where, seen) for k, v in node.items() if k not in ("$defs", "definitions")
    }


def _closed(schema: Any) -> Any:
    """Objects that list properties and say nothing of others get no others (the constraint may be
    stricter than the schema: what it lets through still validates)."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {
        k: (_closed(v) if k not in ("properties", "enum", "const", "default", "examples", "required") else v)
        for k, v in schema.items()
    }
    if "properties" in out:
        out["properties"] = {k: _closed(v) for k, v in out["properties"].items()}
        out.setdefault("additionalProperties", False)
    return out


# -- numbers (bounded digits) -----------------------------------------------------------------

_SUB_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUB_ONES = ("items", "prefixItems", "additionalItems", "additionalProperties", "contains", "anyOf", "oneOf")


def _bound_value(v: Any) -> float | None:
    """A numeric bound the schema declares (not draft 4's boolean ``exclusiveMaximum``), or None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return v


def _declared(schema: Mapping[str, Any], *keys: str) -> float | None:
    for k in keys:
        b = _bound_value(schema.get(k))
        if b is not None:
            return b
    return None


def _reach(bound: float | None) -> int:
    """How far a number may reach on a side the schema leaves open: ``SAFE_INTEGER``, or every
    number with as many integer digits as ``bound`` (a declared bound on the other side) when
    that is more."""
    if bound is None or abs(bound) <= SAFE_INTEGER:
        return SAFE_INTEGER
    return int(10 ** len(str(int(abs(bound)))) - 1)


def bound_numbers(schema: Any) -> Any:
    """``schema`` with every ``integer`` and ``number`` bounded (see :data:`SAFE_INTEGER`): a side
    without ``minimum``/``exclusiveMinimum`` (``maximum``/``exclusiveMaximum``) gets one, and a
    ``number`` without ``multipleOf`` a step of ``10**-FRACTION_DIGITS``. What the schema declares
    is kept: a declared bound, ``multipleOf``, ``const`` and ``enum`` are never narrowed. Not
    bounded: numbers under ``allOf`` or beside ``$ref`` (a bound there would narrow what a sibling
    declares) and values the schema does not type (``{}``)."""
    if not isinstance(schema, Mapping):
        return schema
    out = dict(schema)
    for key in _SUB_MAPS:
        if isinstance(out.get(key), Mapping):
            out[key] = {k: bound_numbers(v) for k, v in out[key].items()}
    for key in _SUB_ONES:
        sub = out.get(key)
        if isinstance(sub, list):
            out[key] = [bound_numbers(v) for v in sub]
        elif isinstance(sub, Mapping):
            out[key] = bound_numbers(sub)
    kinds = {"integer", "number"} & set(_types(out))
    if not kinds or {"const", "enum", "allOf", "$ref"} & set(out):
        return out
    lo = _declared(out, "minimum", "exclusiveMinimum")
    hi = _declared(out, "maximum", "exclusiveMaximum")
    if lo is None:  # (below a declared maximum, however low)
        lo = -_reach(hi if hi is not None and hi < 0 else None)
        out["minimum"] = lo = lo if hi is None else min(lo, math.floor(hi) - 1)
    if hi is None:
        hi = _reach(lo if lo > 0 else None)
        out["maximum"] = hi = max(hi, math.ceil(lo) + 1)
    scale = 10**FRACTION_DIGITS
    if "number" in kinds and "multipleOf" not in out and math.ceil(lo * scale) <= math.floor(hi * scale):
        out["multipleOf"] = 1 / scale  # (a range too narrow to hold a step keeps its own digits)
    return out


def _upto(m: int) -> str:
    """A regex of the integers 0 to ``m`` as JSON writes them (no leading zero)."""
    s = str(m)
    k = len(s)
    if k == 1:
        return f"[0-{s}]"
    alts = ["0", "[1-9]" + (f"[0-9]{{0,{k - 2}}}" if k > 2 else "")]
    for i, c in enumerate(s):
        d, low, rest = int(c), 1 if i == 0 else 0, k - i - 1
        if d > low:
            alts.append(s[:i] + f"[{low}-{d - 1}]" + (f"[0-9]{{{rest}}}" if rest else ""))
    alts.append(s)
    return "(" + "|".join(alts) + ")"


def int_rx(schema: Mapping[str, Any] | None = None) -> str:
    """The regex of an integer written as text: at most ``SAFE_INTEGER`` either side, or as many
    digits as a bound ``schema`` declares on that side (a value typed as text keeps the schema's
    range to its digits: the regex bounds digits, not values)."""
    neg = pos = SAFE_INTEGER
    for key in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        b = _bound_value((schema or {}).get(key))
        if b is not None and b < 0:
            neg = max(neg, _reach(b))
        elif b is not None:
            pos = max(pos, _reach(b))
    p = _upto(pos)
    return f"-?{p}" if neg == pos else f"(-{_upto(neg)}|{p})"


def num_rx(schema: Mapping[str, Any] | None = None) -> str:
    """The regex of a number written as text: :func:`int_rx`'s integer part, at most
    ``FRACTION_DIGITS`` fraction digits and ``EXPONENT_DIGITS`` exponent digits."""
    return f"{int_rx(schema)}(\\.[0-9]{{1,{FRACTION_DIGITS}}})?([eE][+-]?[0-9]{{1,{EXPONENT_DIGITS}}})?"


# A small model that means to end a call writes ``}}`` (or ``} }``) inside a string it never
# closed, and then goes on forever: a free string value may not hold two closing braces with only
# spaces between (the token ``"}}`` closes it instead).
NO_DOUBLE_BRACE = "^([^}]|} *[^ }])*(} *)?$"
# ... or repeats an array's item until the token limit: a list the schema leaves unbounded holds
# at most this many items in a held call.
MAX_ITEMS = 8


def _guard_strings(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_guard_strings(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {
        k: (v if k in ("enum", "const", "default", "examples", "required") else _guard_strings(v))
        for k, v in schema.items()
    }
    if k_props := out.get("properties"):
        out["properties"] = (
            {k: _guard_strings(v) for k, v in k_props.items()} if isinstance(k_props, Mapping) else k_props
        )
    types = _types(out)
    if "string" in types and not ({"pattern", "enum", "const", "format"} & set(out)):
        out["pattern"] = NO_DOUBLE_BRACE
    if "array" in types and "maxItems" not in out:
        out["maxItems"] = max(MAX_ITEMS, int(out.get("minItems", 0) or 0))
    return out


def json_args_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    params = _guard_strings(_closed(tool_params(tool)))
    params.setdefault("type", "object")
    return params


def json_call(
    tool: Mapping[str, Any],
    *,
    args_key: str = "arguments",
    name_key: str = "name",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON Schema of ``{"name": NAME, "arguments": {...}}`` for ``tool``."""
    props: dict[str, Any] = {name_key: {"const": tool_name(tool)}, args_key: json_args_schema(tool)}
    props.update(extra or {})
    return {
        "type": "object",
        "properties": props,
        "required": [name_key, args_key],
        "additionalProperties": False,
    }


# -- raw values (text typed by the schema) --------------------------------------------------


def _check_raw(schema: Mapping[str, Any], where: str) -> None:
    bad = sorted(set(schema) - _SUPPORTED_RAW)
    if bad:
        raise ConstraintError(f"{where}: the schema feature {', '.join(bad)} is not supported in a held call")


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if t is None:
        return []
    return list(t) if isinstance(t, list) else [t]


def raw_value(
    ctx: GrammarContext,
    schema: Mapping[str, Any],
    close: str,
    where: str,
    *,
    json_sub: bool = True,
    lead: str = "",
    trail: str = "",
    text_rx: str | None = None,
) -> str:
    """A value written as text, typed by ``schema``, then ``close``; ``lead``/``trail`` are the
    wire's own text around a non-string value (e.g. one newline each side); ``text_rx``: the
    characters a string may hold (default: anything but ``close``)."""
    if not isinstance(schema, Mapping):
        raise ConstraintError(f"{where}: the schema is not an object")
    _check_raw(schema, where)
    end = ctx.lit(close)

    def wrap(expr: str) -> str:
        return " ".join(
            x for x in (ctx.lit(lead) if lead else "", expr, ctx.lit(trail) if trail else "", end) if x
        )

    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        if not values:
            raise ConstraintError(f"{where}: an empty enum allows no value")
        alts = [_q(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) for v in values]
        return wrap("(" + " | ".join(alts) + ")")
    for key in ("anyOf", "oneOf"):
        if key in schema:
            alts = [
                raw_value(
                    ctx,
                    s,
                    close,
                    f"{where}.{key}[{i}]",
                    json_sub=json_sub,
                    lead=lead,
                    trail=trail,
                    text_rx=text_rx,
                )
                for i, s in enumerate(schema[key])
            ]
            return "(" + " | ".join(alts) + ")"
    types = _types(schema) or ["string"]
    alts = []
    for t in types:
        if t == "string" and text_rx is not None:
            lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
            alts.append(wrap(f"/{text_rx}{{{lo},{'' if hi is None else hi}}}/"))
        elif t == "string":
            alts.append(
                (ctx.lit(lead) + " " if lead else "")
                + ctx.text_until(
                    close, min_len=int(schema.get("minLength", 0)), max_len=schema.get("maxLength")
                )
            )
        elif t == "integer":
            alts.append(wrap(f"/{int_rx(schema)}/"))
        elif t == "number":
            alts.append(wrap(f"/{num_rx(schema)}/"))
        elif t == "boolean":
            alts.append(wrap('("true" | "false")'))
        elif t == "null":
            alts.append(wrap('"null"'))
        elif t in ("object", "array"):
            if not json_sub:
                raise ConstraintError(f"{where}: the {ctx.family} wire cannot hold an {t} value")
            alts.append(wrap(ctx.json(_closed({**schema, "type": t}))))
        else:
            raise ConstraintError(f"{where}: unknown JSON type {t!r}")
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


# -- parameters in order ---------------------------------------------------------------------


@dataclass
class ParamSyntax:
    """How one family writes a list of parameters: ``sep`` between them (None: none), ``open``/
    ``close`` around them."""

    sep: str | None = None
    open: str = ""
    close: str = ""


def ordered_params(
    ctx: GrammarContext,
    tool: Mapping[str, Any],
    param: Callable[[str, Any, str], str],
    syntax: ParamSyntax,
    *,
    check_name: Callable[[str], bool] | None = None,
    wire: str = "",
) -> str:
    """The declared parameters in order: required ones always, optional ones maybe; ``param(name,
    schema, where)`` writes one."""
    name = tool_name(tool)
    params = tool_params(tool)
    props = params.get("properties") or {}
    if not isinstance(props, Mapping):
        raise ConstraintError(f"tool {name!r}: properties is not an object")
    required = set(params.get("required") or [])
    items = []
    for key, spec in props.items():
        where = f"tool {name!r} parameter {key!r}"
        if check_name is not None and not check_name(key):
            raise ConstraintError(
                f"{where}: the {wire or ctx.family} wire cannot express this parameter name"
            )
        items.append((ctx.rule(param(key, spec, where), prefix="p"), key in required))
    open_ = ctx.lit(syntax.open) if syntax.open else ""
    close = ctx.lit(syntax.close) if syntax.close else ""
    if syntax.sep is None:
        body = " ".join(r if req else f"{r}?" for r, req in items)
    else:
        sep = ctx.lit(syntax.sep)
        # a_i: nothing written yet from i on; b_i: something already written
        a, b = '""', '""'
        for r, req in reversed(items):
            a_new = f"{r} {b}" if req else f"({r} {b} | {a})"
            b_new = f"{sep} {r} {b}" if req else f"({sep} {r} {b} | {b})"
            a, b = ctx.rule(a_new, prefix="a"), ctx.rule(b_new, prefix="b")
        body = a
    return " ".join(x for x in (open_, body, close) if x) or '""'


# -- values in a notation (Gemma 4, Python literals) -------------------------------------------


@dataclass
class Notation:
    """A value notation: how strings, booleans, null, objects and keys are written."""

    string: Callable[[GrammarContext, Mapping[str, Any]], str]
    true: str
    false: str
    null: str
    str_lit: Callable[[str], str]
    key: Callable[[str], str]
    kv: str  # between key and value
    sep: str = ","


def notation_value(ctx: GrammarContext, schema: Any, nt: Notation, where: str, depth: int = 0) -> str:
    """A value of ``schema`` written in ``nt``."""
    if depth > 12:
        raise ConstraintError(f"{where}: the schema nests too deeply")
    if schema is True or schema == {}:
        return _any_value(ctx, nt)
    if not isinstance(schema, Mapping):
        raise ConstraintError(f"{where}: the schema is not an object")
    _check_raw(schema, where)
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        if not values:
            raise ConstraintError(f"{where}: an empty enum allows no value")
        return "(" + " | ".join(_literal(ctx, v, nt) for v in values) + ")"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return (
                "("
                + " | ".join(
                    notation_value(ctx, s, nt, f"{where}.{key}[{i}]", depth + 1)
                    for i, s in enumerate(schema[key])
                )
                + ")"
            )
    types = _types(schema) or ["string"]
    alts = []
    for t in types:
        if t == "string":
            alts.append(nt.string(ctx, schema))
        elif t == "integer":
            alts.append(f"/{int_rx(schema)}/")
        elif t == "number":
            alts.append(f"/{num_rx(schema)}/")
        elif t == "boolean":
            alts.append(f"({ctx.lit(nt.true)} | {ctx.lit(nt.false)})")
        elif t == "null":
            alts.append(ctx.lit(nt.null))
        elif t == "array":
            items = schema.get("items", {})
            v = ctx.rule(notation_value(ctx, items, nt, f"{where}.items", depth + 1), prefix="v")
            sep = ctx.lit(nt.sep)
            lo, hi = int(schema.get("minItems", 0)), schema.get("maxItems")
            more = "*" if hi is None else f"{{0,{max(int(hi) - 1, 0)}}}"
            body = f"{v} ({sep} {v}){more}"
            if hi is not None and int(hi) == 0:
                body = ""
            alts.append(f'"[" ({body}) "]"' if lo > 0 else f'"[" ({body})? "]"' if body else '"[" "]"')
        elif t == "object":
            props = schema.get("properties")
            if not props:
                alts.append(_any_object(ctx, nt))
                continue
            obj = {"type": "object", "properties": props, "required": schema.get("required") or []}

            def one(k: str, s: Any, w: str) -> str:
                return f"{ctx.lit(nt.key(k))} {ctx.lit(nt.kv)} " + notation_value(ctx, s, nt, w, depth + 1)

            alts.append(
                ordered_params(
                    ctx, {"name": where, "parameters": obj}, one, ParamSyntax(sep=nt.sep, open="{", close="}")
                )
            )
        else:
            raise ConstraintError(f"{where}: unknown JSON type {t!r}")
    return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


def _literal(ctx: GrammarContext, v: Any, nt: Notation) -> str:
    if isinstance(v, str):
        return ctx.lit(nt.str_lit(v))
    if v is True:
        return ctx.lit(nt.true)
    if v is False:
        return ctx.lit(nt.false)
    if v is None:
        return ctx.lit(nt.null)
    if isinstance(v, (int, float)):
        return _q(json.dumps(v))
    raise ConstraintError(f"cannot write the constant {v!r} in the {ctx.family} notation")


def _any_value(ctx: GrammarContext, nt: Notation) -> str:
    key = f"any_{id(nt)}"
    if not any(r.startswith(key + ":") for r in ctx.rules):
        s = nt.string(ctx, {})
        sep, kv = ctx.lit(nt.sep), ctx.lit(nt.kv)
        ctx.rules.append(
            f"{key}: {s} | /{num_rx()}/ | {ctx.lit(nt.true)} | {ctx.lit(nt.false)} | {ctx.lit(nt.null)}"
            f' | "[" ({key} ({sep} {key})*)? "]" | "{{" ({s} {kv} {key} ({sep} {s} {kv} {key})*)? "}}"'
        )
    return key


def _any_object(ctx: GrammarContext, nt: Notation) -> str:
    v = _any_value(ctx, nt)
    s = nt.string(ctx, {})
    sep, kv = ctx.lit(nt.sep), ctx.lit(nt.kv)
    return f'"{{" ({s} {kv} {v} ({sep} {s} {kv} {v})*)? "}}"'


# -- the reply ---------------------------------------------------------------------------


def pick_tools(tools: Sequence[Mapping[str, Any]], forced: str | None) -> list[Mapping[str, Any]]:
    if forced is None:
        return list(tools)
    chosen = [t for t in tools if tool_name(t) == forced]
    if not chosen:
        raise ConstraintError(f"tool_choice names {forced!r}, which is not a declared tool")
    return chosen[:1]


def calls_block(
    ctx: GrammarContext,
    tools: Sequence[Mapping[str, Any]],
    forced: str | None,
    parallel: bool,
    call: Callable[[Mapping[str, Any]], str],
    *,
    section: tuple[str, str] | None = None,
    sep: str = "",
    single: bool = False,
) -> str:
    """The calls of one reply: ``call(tool)`` writes one call (inside the section when ``section``
    gives its open/close markers); ``sep`` goes between calls; ``single``: one call per reply."""
    tools = pick_tools(tools, forced)
    if not tools:
        raise ConstraintError("there are no tools to call")
    exprs = [call(t) for t in tools]
    calls = [ctx.rule(e, prefix="call") for e in exprs]
    one = calls[0] if len(calls) == 1 else ctx.rule(" | ".join(calls), prefix="any")
    sep_x = ctx.lit(sep) if sep else ""
    n = ctx.calls_allowed(parallel and not single)
    repeat = n != 1
    more = up_to(ctx, f"{sep_x} {one}".strip(), None if n is None else n - 1) if repeat else ""
    many = ctx.rule(f"{one} {more}", prefix="many") if repeat else one
    if section is None:

        def rest(opener: str) -> str:
            first = " | ".join(ctx.rule(_strip(e, opener), prefix="rest") for e in exprs)
            return f"({first}) {more}" if repeat else f"({first})"

        ctx.rests[many] = rest
        return many
    close = ctx.lit(section[1], final=True)
    block = ctx.rule(f"{ctx.lit(section[0])} {many} {close}", prefix="section")
    ctx.rests[block] = lambda opener: f"{ctx.lit(section[0][len(opener) :])} {many} {close}"
    return block


def _strip(expr: str, opener: str) -> str:
    """``expr`` without its leading text ``opener`` (the lazy free text before it consumed it)."""
    q = _q(opener)[:-1]
    if not expr.startswith(q):
        raise ConstraintError(f"a call does not start with its opener {opener!r}")
    rest = '"' + expr[len(q) :]
    return rest[3:] if rest.startswith('"" ') else rest


def compose(
    ctx: GrammarContext,
    fmt: Any,
    block: str,
    *,
    opener: str,
    parallel: bool = True,
    start_only: bool | None = None,
    lead: str | None = None,
    answer: str | None = None,
) -> str:
    """The whole grammar around ``block`` (the calls, starting with ``opener``). ``answer``: the
    rule a start-only family's plain reply follows in ``auto`` (default: any text that does not
    open with the opener's first character)."""
    if start_only is None:
        # a start-only family's opener that may stand anywhere (Hermes' tag beside its strays)
        # opens calls after free text, as any other family's opener does
        start_only = bool(getattr(fmt, "start_only", False)) and opener not in getattr(fmt, "anywhere", ())
    lead = _reasoning(ctx, fmt) if lead is None else lead
    if not ctx.auto:
        return ctx.grammar(f"{lead} {block}".strip())
    plain = ctx.json(ctx.response_schema) if ctx.response_schema is not None else None
    if start_only:
        first = opener[:1] if ctx.special(opener) is None else None
        text = (
            plain
            or answer
            or (
                ctx.rule(f"/(?s:[ \\t\\n]*([^ \\t\\n{_rx(first)}].*)?)/", prefix="LEAD")
                if first
                else "/(?s:.*)/"
            )
        )
        return ctx.grammar(f"{lead} ({block} | {text})".strip())
    if plain is not None:
        return ctx.grammar(f"{lead} ({block} | {plain})".strip())
    first_tok = ctx.split(opener)[0][1]
    if first_tok is not None:
        # the opener's special token starts a held call; free text is any token but the family's
        # markers (other special tokens too), up to the end of the reply
        free = f"<[^{','.join(str(t) for t in sorted({first_tok, *ctx.marker_ids, *ctx.eos_ids}))}]>*"
        more = up_to(ctx, f"{block} {free}", ctx.calls_allowed(parallel))
        return ctx.grammar(f"{lead} {free} {more}".strip())
    # a text opener: free text ends lazily at the opener's first appearance, then the call is held
    head = ctx.rule(f"/(?s:.*)/ {_q(opener)}", prefix="hd", attrs="[lazy]")
    rest = ctx.rests[block](opener)
    if parallel:
        calls = up_to(ctx, f"{head} {rest}", ctx.calls_allowed(parallel))
        return ctx.grammar(f"{lead} {calls} /(?s:.*)/".strip())
    return ctx.grammar(f"{lead} (({head} {rest} {ctx.free_text(avoid=opener)}) | /(?s:.*)/)".strip())


def _reasoning(ctx: GrammarContext, fmt: Any) -> str:
    tags = getattr(fmt, "reasoning", None)
    if not tags:
        return ""
    open_, close = tags
    ws = "/[ \\t\\n]*/"
    tid = ctx.special(close)
    if tid is not None:
        # a block closed by a special token holds any tokens (special ones too) but that one
        body = f"<[^{','.join(str(t) for t in sorted({tid, *ctx.eos_ids}))}]>* {ctx.lit(close)}"
    else:
        body = ctx.text_until(close)  # a text closing marker: any text up to it
    if ctx.in_reasoning:
        return f"{body} {ws}"
    if ctx.reasoning:
        return f"({ctx.lit(open_)} {body} {ws})?"
    return ""
