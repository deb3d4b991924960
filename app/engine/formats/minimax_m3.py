"""MiniMax-M3 XML calls: every structural tag behind the namespace token ``]<]minimax[>[``, each
parameter an element named after the argument.

The wire (``NS`` stands for ``]<]minimax[>[``, a token of the model's vocabulary)::

    NS<tool_call>
    NS<invoke name="NAME">
    NS<city>ParisNS</city>
    NS<options>NS<unit>metricNS</unit>NS</options>
    NS<days>NS<item>1NS</item>NS<item>2NS</item>NS</days>
    NS</invoke>
    NS</tool_call>

One block may hold several ``<invoke>`` elements (parallel calls), and a reply several blocks,
after an optional ``<mm:think>...</mm:think>`` block (the generation prompt may open it; a reply
that does not reason may start with a bare ``</mm:think>``). What is read, following the servers
that parse this wire (llama.cpp's ``common/parsers/minimax-m3.cpp``, vLLM's ``minimax_m3``
parser):

* A parameter is ``NS<KEY>`` ... ``NS</KEY>``. An element that holds no element holds its value
  as text, exactly as written (no trimming): a string as it is, a number, boolean or null as its
  JSON literal, typed by the tool's schema (``app.json_schema.type_value``, as every raw XML
  family types its values). An element that holds elements (whitespace between them is layout)
  is an object whose members are those elements, or, where the schema says the value is an
  array and every child is named ``item``, an array of the children's values. A name written
  twice in one object is a list of the values (vLLM's reading). An empty element whose schema is
  an array or an object (and not a string) is ``[]`` / ``{}`` (the template writes an empty list or
  dict so). An object the schema gives no properties may be written as its JSON text (llama.cpp's
  grammar writes it so). Without a schema (an undeclared tool) values stay text, and an element
  whose children are all ``item`` is a list.
* Strict: anything else inside the block (text between invokes or beside child elements, a tag
  not closed by its own name, an array schema's child not named ``item``, an element holding
  elements where the schema allows no object or array, but a string: there the value is the
  element's inner text as written) makes the whole block text. A ``NS</tool_call>`` always ends
  the block (the token is never a value's text). A missing ``NS</tool_call>`` is accepted only
  when the reply ended normally right after ``NS</invoke>``; a block the token limit cut is an
  incomplete call.
* The invoke's name is double-quoted (llama.cpp's grammar writes only that spelling; vLLM also
  reads single quotes and no quotes: not read here).
* Two ways deployed checkpoints stray, read exactly so: a leaf whose opening tag is left out
  (``NS`` then its text, no ``NS`` in it, then ``NS</KEY>``, which names it: an invoke's first
  parameter, in the invoke or in a nested element), and the invoke's tag without its ``<``
  (``NS`` then ``invoke name="NAME">``). A closing ``</mm:think>`` repeated right after itself
  is dropped (the family's ``repeated_close``).

The constraint grammar writes what :meth:`MiniMaxM3Format.example_call` writes (one parameter a
line, nested elements on the parameter's line) and holds nested objects and arrays by their
schema; a schema this wire cannot write (a name that cannot be an element's, a tuple-typed
array, nesting deeper than the grammar allows) fails with an error naming the parameter. A
template is known by its rendered call (``app.engine.formats.detect``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from app.engine.formats.base import ParsedCall, RegionScanner, find_marker, one_call, register
from app.engine.formats.sections import closed_body, raw_text, skip_ws
from app.engine.formats.xml_params import XmlParamsFormat, tag_name
from app.json_schema import schema_types, tool_schemas, type_value

__all__ = ["MINIMAX_M3", "NS", "MiniMaxM3Format"]

NS = "]<]minimax[>["
OPEN = NS + "<tool_call>"
CLOSE = NS + "</tool_call>"
INVOKE = NS + '<invoke name="'
INVOKE_NO_LT = NS + 'invoke name="'  # the invoke's tag as the model now and then writes it
INVOKE_END = NS + "</invoke>"
THINK_M3 = ("<mm:think>", "</mm:think>")
ITEM = "item"  # the element of one array item

_NAME = re.compile(r'[^"<>\s]+')  # a tool name in the invoke's tag
_KEY = re.compile(r"[^\s<>/\"'=]+")  # an element's name
# Names an argument cannot have on this wire: the block's and the invoke's own tags would be
# read as those (a ``NS</tool_call>`` always ends the block).
_RESERVED = frozenset({"tool_call", "invoke"})
_MAX_DEPTH = 32  # elements nested deeper than this are not read (a runaway reply)
_GRAMMAR_DEPTH = 8  # how deep the constraint grammar follows nested schemas


class _Element:
    """One element as written: its name, its text (a leaf) or its children, its inner text."""

    __slots__ = ("inner", "kids", "name")

    def __init__(self, name: str, inner: str, kids: list[_Element] | None) -> None:
        self.name, self.inner, self.kids = name, inner, kids


def _element(s: str, i: int, depth: int) -> tuple[_Element, int] | None:
    """The element opening at ``i`` and the index after its closing tag; None if malformed."""
    if depth > _MAX_DEPTH or not s.startswith(NS + "<", i):
        return None
    got = tag_name(s, i + len(NS) + 1, _KEY, ">")
    if got is None:
        return None
    name, j = got
    close = f"{NS}</{name}>"
    k = s.find(NS, j)
    if k == -1:
        return None
    if s.startswith(close, k):  # a leaf: its text exactly as written
        return _Element(name, s[j:k], None), k + len(close)
    if s[j:k].strip():
        return None  # text beside child elements
    got_kids = _children(s, k, close, depth + 1)
    if got_kids is None:
        return None
    kids, end = got_kids
    return _Element(name, s[j : end - len(close)], kids), end


def _headless(s: str, i: int) -> tuple[_Element, int] | None:
    """A leaf whose opening tag the model left out, at ``i``: ``NS`` then its text (no ``NS``
    in it), then ``NS</KEY>``, which names it (as deployed MiniMax-M3 checkpoints write an
    invoke's first parameter); None if anything else stands there."""
    if not s.startswith(NS, i) or s.startswith(NS + "<", i):
        return None
    j = i + len(NS)
    k = s.find(NS, j)
    if k == -1 or not s.startswith(NS + "</", k):
        return None
    got = tag_name(s, k + len(NS) + 2, _KEY, ">")
    if got is None or got[0] in _RESERVED:
        return None
    return _Element(got[0], s[j:k], None), got[1]


def _children(s: str, i: int, close: str, depth: int) -> tuple[list[_Element], int] | None:
    """Elements from ``i`` (whitespace between them) up to ``close``: them and the index after
    ``close``; None if anything else stands there."""
    kids: list[_Element] = []
    while True:
        i = skip_ws(s, i)
        if s.startswith(close, i):
            return kids, i + len(close)
        got = _element(s, i, depth) or _headless(s, i)
        if got is None:
            return None
        kids.append(got[0])
        i = got[1]


class _Unreadable(Exception):
    """An element whose shape its schema does not allow (the block is text)."""


def _branch(schema: Any, t: str) -> dict[str, Any]:
    """The part of ``schema`` (maybe a union) that describes JSON type ``t``."""
    if not isinstance(schema, dict):
        return {}
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or ():
            if t in schema_types(sub):
                return _branch(sub, t)
    return schema


def _value(el: _Element, schema: Any) -> Any:
    """The value of ``el`` by ``schema`` (None or ``{}``: no schema; values stay text)."""
    types = schema_types(schema)
    if el.kids is None:
        text = el.inner
        if not types:
            return text
        if not text.strip() and "string" not in types and ("array" in types or "object" in types):
            return [] if "array" in types else {}
        return type_value(text, schema, raw=True)
    items = all(k.name == ITEM for k in el.kids)
    if not types:
        return [_value(k, None) for k in el.kids] if items else _members(el.kids, None)
    if "array" in types and (items or "object" not in types):
        if not items:
            raise _Unreadable(el.name)
        sub = _branch(schema, "array").get("items")
        return [_value(k, sub if isinstance(sub, dict) else None) for k in el.kids]
    if "object" in types:
        return _members(el.kids, _branch(schema, "object"))
    if "string" in types:
        return el.inner  # markup in a string: the text as written
    raise _Unreadable(el.name)


def _members(kids: list[_Element], schema: Any) -> dict[str, Any]:
    """The object the elements ``kids`` write; a name written more than once is a list."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    props = props if isinstance(props, dict) else {}
    extra = schema.get("additionalProperties") if isinstance(schema, dict) else None
    times = Counter(k.name for k in kids)
    out: dict[str, Any] = {}
    for kid in kids:
        sub = props.get(kid.name, extra if isinstance(extra, dict) else None)
        if times[kid.name] == 1:
            out[kid.name] = _value(kid, sub)
            continue
        # Repeated: each is one item of the list (of the declared array's items where there is one).
        if "array" in schema_types(sub):
            sub = _branch(sub, "array").get("items")
        out.setdefault(kid.name, []).append(_value(kid, sub if isinstance(sub, dict) else None))
    return out


def _read_calls(text: str, schemas: Mapping[str, dict[str, Any]]) -> list[ParsedCall] | None:
    """Strictly read ``(invoke element* /invoke)+`` with whitespace between the invokes."""
    calls: list[ParsedCall] = []
    i = skip_ws(text, 0)
    while i < len(text):
        head = next((h for h in (INVOKE, INVOKE_NO_LT) if text.startswith(h, i)), None)
        if head is None:
            return None
        start = i
        got = tag_name(text, i + len(head), _NAME, '">')
        if got is None:
            return None
        name, i = got
        params = _children(text, i, INVOKE_END, 1)
        if params is None:
            return None
        kids, i = params
        try:
            args = _members(kids, schemas.get(name))
        except (_Unreadable, RecursionError):
            return None
        calls.append(ParsedCall(name, args, text[start:i]))
        i = skip_ws(text, i)
    return calls or None


class _BlockScanner(RegionScanner):
    """The block up to its ``NS</tool_call>`` (the token is never text inside the block)."""

    def __init__(self) -> None:
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        pos, _m, safe = find_marker(buf, (CLOSE,), final)
        self.ops += (pos + len(CLOSE)) if pos != -1 else len(buf)
        return (pos + len(CLOSE), True) if pos != -1 else (safe, False)


def _text(value: Any) -> str:
    """``value`` as element content: a string as it is, a list as ``item``s, anything else (an
    object too) as its JSON literal. An object is written as JSON, as the grammar writes an
    object whose schema names no members: the parser reads that for every object schema, and
    member elements would leave the values of such an object text (nothing types them)."""
    if isinstance(value, (list, tuple)):
        return "".join(_elem(ITEM, v) for v in value)
    return raw_text(value)


def _elem(key: str, value: Any) -> str:
    return f"{NS}<{key}>{_text(value)}{NS}</{key}>"


def _text_until(ctx: Any, close: str, lo: int, hi: int | None) -> str:
    """Text, then ``close``. Where a tokenizer makes only part of the namespace a special token
    (``]`` TOKEN ``[``), a lazy match of the whole close cannot meet the token inside it: the text
    then ends lazily at the close's text before the token (such a string holds no ``]``) and the
    rest of the close follows."""
    pieces = ctx.split(close)
    if pieces[0][1] is not None or all(tid is None for _p, tid in pieces):
        return str(ctx.text_until(close, min_len=lo, max_len=hi))
    head = pieces[0][0]
    return f"{ctx.text_until(head, min_len=lo, max_len=hi)} {ctx.lit(close[len(head) :])}"


class MiniMaxM3Format(XmlParamsFormat):
    """The MiniMax-M3 wire (see the module docstring)."""

    reasoning = THINK_M3
    repeated_close = True
    section = (OPEN + "\n", CLOSE)
    tail = INVOKE_END + "\n"

    def region_scanner(self, opener: str) -> RegionScanner:
        return _BlockScanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = closed_body(body, CLOSE, last=INVOKE_END, at_end=at_end, truncated=truncated)
        calls = None if inner is None else _read_calls(inner, tool_schemas(tools))
        if calls is None:
            return None
        if len(calls) == 1:  # one call: the whole block is its text
            return one_call(opener, body, (calls[0].name, calls[0].arguments))
        return calls, ""

    def head(self, name: str) -> str:
        return f'{INVOKE}{name}">\n'

    def name_ok(self, name: str) -> bool:
        return bool(_NAME.fullmatch(name))

    def key_ok(self, key: str) -> bool:
        return bool(_KEY.fullmatch(key)) and key not in _RESERVED

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = "".join(_elem(k, v) + "\n" for k, v in arguments.items())
        return f"{OPEN}\n{self.head(name)}{params}{self.tail}{CLOSE}"

    # -- the constraint grammar -------------------------------------------------------------

    def grammar_wire(self, ctx: Any) -> Any:
        return self._grammar

    def _grammar(self, ctx: Any, fmt: Any, tools: Any, forced: str | None, parallel: bool) -> str:
        """``raw_params``'s grammar (the block of invokes, see :class:`XmlParamsFormat`), with
        the reply around it written here where a tokenizer makes only part of the namespace a
        special token (``]`` TOKEN ``[``): free text cannot end lazily at an opener that holds a
        special token, so the text before a call is any text ending with the opener's text
        before that token, and the token starts the call."""
        from app.engine.grammar.lark import ParamSyntax, _reasoning, _rx, calls_block, compose, ordered_params
        from app.engine.grammar.lark import tool_name as name_of
        from app.engine.grammar.wires import _check_names

        _check_names(
            tools if forced is None else [t for t in tools if name_of(t) == forced], self.name_ok, self.name
        )

        def call(tool: Mapping[str, Any]) -> str:
            body = ordered_params(
                ctx,
                tool,
                lambda k, sch, w: self.param(ctx, k, sch, w),
                ParamSyntax(sep=None),
                check_name=self.key_ok,
                wire=self.name,
            )
            return f"{ctx.lit(self.head(name_of(tool)))} {body} {ctx.lit(self.tail)}"

        block = calls_block(ctx, tools, forced, parallel, call, section=self.section)
        pieces = ctx.split(OPEN)
        if not ctx.auto or pieces[0][1] is not None or all(tid is None for _p, tid in pieces):
            return str(compose(ctx, self, block, opener=OPEN, parallel=parallel))
        lead = _reasoning(ctx, self)
        if ctx.response_schema is not None:
            return str(ctx.grammar(f"{lead} ({block} | {ctx.json(ctx.response_schema)})".strip()))
        head_text = pieces[0][0]
        head = ctx.rule(f"/(?s:.*{_rx(head_text)})/", prefix="hd")
        rest = ctx.rests[block](head_text)
        if parallel:
            from app.engine.grammar.lark import up_to

            calls = up_to(ctx, f"{head} {rest}", ctx.calls_allowed(parallel))
            return str(ctx.grammar(f"{lead} {calls} /(?s:.*)/".strip()))
        return str(ctx.grammar(f"{lead} (({head} {rest} /(?s:.*)/) | /(?s:.*)/)".strip()))

    def param(self, ctx: Any, key: str, schema: Any, where: str) -> str:
        return f"{self._element(ctx, key, schema, where, 0)} {ctx.lit(chr(10))}"

    def _element(self, ctx: Any, key: str, schema: Any, where: str, depth: int) -> str:
        from app.engine.errors import ConstraintError

        if not self.key_ok(key):
            raise ConstraintError(
                f"{where}: the {self.name} wire cannot write the name {key!r} as an element"
            )
        return f"{ctx.lit(f'{NS}<{key}>')} {self._value(ctx, schema, f'{NS}</{key}>', where, depth)}"

    def _value(self, ctx: Any, schema: Any, close: str, where: str, depth: int) -> str:
        """A value of ``schema`` written as element content, then ``close``."""
        from app.engine.errors import ConstraintError
        from app.engine.grammar.lark import _check_raw, _closed, raw_value, up_to

        if depth > _GRAMMAR_DEPTH:
            raise ConstraintError(f"{where}: nested deeper than the {self.name} wire's grammar follows")
        if not isinstance(schema, Mapping):
            raise ConstraintError(f"{where}: the schema is not an object")
        _check_raw(schema, where)
        if "const" in schema or "enum" in schema:
            return raw_value(ctx, schema, close, where, json_sub=False)
        for union in ("anyOf", "oneOf"):
            if union in schema:
                rest = {k: v for k, v in schema.items() if k != union}
                alts = [
                    self._value(
                        ctx,
                        {**rest, **s} if isinstance(s, Mapping) else s,
                        close,
                        f"{where}.{union}[{i}]",
                        depth,
                    )
                    for i, s in enumerate(schema[union])
                ]
                if not alts:
                    raise ConstraintError(f"{where}: an empty {union} allows no value")
                return "(" + " | ".join(alts) + ")"
        kind = schema.get("type")
        types = [kind] if isinstance(kind, str) else list(kind or [])
        if not types:
            types = ["object"] if "properties" in schema else ["array"] if "items" in schema else ["string"]
        end = ctx.lit(close)
        alts = []
        for t in types:
            if t == "string":
                lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
                alts.append(_text_until(ctx, close, lo, hi))
            elif t in ("integer", "number", "boolean", "null"):
                alts.append(raw_value(ctx, {**schema, "type": t}, close, where, json_sub=False))
            elif t == "object":
                props = schema.get("properties")
                if isinstance(props, Mapping) and props:
                    required = set(schema.get("required") or ())
                    members = []
                    for k, s in props.items():
                        rule = ctx.rule(self._element(ctx, k, s, f"{where}.{k}", depth + 1), prefix="m3")
                        members.append(rule if k in required else f"{rule}?")
                    alts.append(" ".join([*members, end]))
                else:
                    # No members to write as elements: the object as its JSON text.
                    alts.append(f"{ctx.json(_closed({**schema, 'type': 'object'}))} {end}")
            elif t == "array":
                items = schema.get("items", {})
                if not isinstance(items, Mapping):
                    raise ConstraintError(f"{where}: the {self.name} wire cannot write a tuple-typed array")
                item = ctx.rule(
                    f"{ctx.lit(f'{NS}<{ITEM}>')} "
                    + self._value(ctx, items, f"{NS}</{ITEM}>", f"{where}[]", depth + 1),
                    prefix="m3i",
                )
                lo, hi = int(schema.get("minItems", 0)), schema.get("maxItems")
                more = f"({item})*" if hi is None else up_to(ctx, item, int(hi) - lo)
                alts.append(" ".join([*([item] * lo), more, end]))
            else:
                raise ConstraintError(f"{where}: unknown JSON type {t!r}")
        return alts[0] if len(alts) == 1 else "(" + " | ".join(alts) + ")"


MINIMAX_M3 = register(MiniMaxM3Format("minimax-m3", "MiniMax-M3 XML (MiniMax-M3)", (OPEN,)))
