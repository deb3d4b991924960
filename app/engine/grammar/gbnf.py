"""Lark (the families' constraint grammars) translated to GBNF, for engines that take llama.cpp's
grammars: llama-server's ``/completion`` ``grammar`` field, vLLM's and SGLang's GBNF/EBNF grammars.

Public API::

    from app.engine.grammar.gbnf import lark_to_gbnf, remote_context
    gbnf = lark_to_gbnf(lark_text, tokens={1000000000: "<|call|>"})

``app.engine.constraints.remote.remote_grammar`` builds a family's grammar for a remote engine
with these (it needs the formats, which sit above this package).

The subset translated is what the families emit: rules (``name[lazy]: body``), alternation,
grouping, string literals, regular expressions (literals, ``.``, classes, groups, ``(?s:...)``,
``* + ? {m,n}``), repetition, token references (``<[id]>``; one in ``tokens`` becomes its text)
and ``%json`` schemas (through llama-cpp-python's JSON-Schema-to-GBNF converter, its rules
prefixed; integers and numbers bounded as locally: :func:`app.engine.grammar.lark.int_rx`). A ``[lazy]`` rule ``/(?s:.*)/ "close"`` becomes "text without ``close``, then
``close``" (an exact automaton; with a length bound, text without ``close``'s first character).
Anything else (negated token sets, ``&``, ``~``, ranges, regex look-arounds) raises
:class:`GbnfError`, which names the construct.

A remote engine has no vocabulary here: :func:`remote_context` builds the grammar context from the
template's special tokens as text; end-of-generation markers get stand-in ids so that a call's
closing marker that ends generation is left out, as it is locally.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.engine.errors import GbnfError
from app.engine.grammar.lark import NO_DOUBLE_BRACE, GrammarContext, int_rx, num_rx

__all__ = [
    "EOG_MARKERS",
    "choice_gbnf",
    "json_gbnf",
    "lark_to_gbnf",
    "regex_gbnf",
    "remote_context",
]

#: Marker texts llama.cpp takes for end-of-generation tokens (beside the template's EOS token).
EOG_MARKERS = (
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<end_of_turn>",
    "<|return|>",
    "<|call|>",
    "<|END_OF_TURN_TOKEN|>",
    "<｜end▁of▁sentence｜>",
    "</s>",
)
_FAKE_ID = 1_000_000_000  # stand-in token ids start here (no vocabulary is that large)


# -- the Lark side -------------------------------------------------------------------------------

_RULE_HEAD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\s*:(?!:)\s?")
_TOKEN = re.compile(
    r"""\s+
    |(?P<str>"(?:[^"\\]|\\.)*")(?P<sflags>[a-z]*)
    |(?P<re>/(?:[^/\\\n]|\\.)+/)(?P<rflags>[a-z]*)
    |(?P<tok><\[[^\]]*\]>)
    |(?P<json>%json\b)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<rep>\{\s*\d+\s*(?:,\s*\d*\s*)?\})
    |(?P<op>\.\.|[()|?*+~&])
    """,
    re.X,
)


def _lex(body: str, rule: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    i = 0
    dec = json.JSONDecoder()
    while i < len(body):
        m = _TOKEN.match(body, i)
        if m is None:
            raise GbnfError(f"rule {rule}: cannot read the grammar at {body[i : i + 30]!r}")
        i = m.end()
        kind = next((k for k in ("str", "re", "tok", "json", "name", "rep", "op") if m.group(k)), None)
        if kind is None:
            continue
        if kind == "str":
            if m.group("sflags"):
                raise GbnfError(f"rule {rule}: string flags ({m.group('sflags')}) have no GBNF translation")
            out.append(("lit", json.loads(m.group("str"))))
        elif kind == "re":
            flags = m.group("rflags")
            if set(flags) - {"s"}:
                raise GbnfError(f"rule {rule}: regex flags ({flags}) have no GBNF translation")
            out.append(("re", (m.group("re")[1:-1], "s" in flags)))
        elif kind == "tok":
            out.append(("tok", m.group("tok")[2:-2]))
        elif kind == "json":
            j = i
            while j < len(body) and body[j].isspace():
                j += 1
            try:
                schema, end = dec.raw_decode(body, j)
            except ValueError as exc:
                raise GbnfError(f"rule {rule}: the %json schema is not JSON ({exc})") from None
            out.append(("json", schema))
            i = end
        elif kind == "name":
            out.append(("name", m.group("name")))
        elif kind == "rep":
            nums = m.group("rep")[1:-1].replace(" ", "").split(",")
            lo = int(nums[0])
            hi = lo if len(nums) == 1 else (int(nums[1]) if nums[1] else None)
            out.append(("rep", (lo, hi)))
        else:
            op = m.group("op")
            if op in ("~", "&", ".."):
                raise GbnfError(f"rule {rule}: the Lark operator {op!r} has no GBNF translation")
            out.append(("op", op))
    return out


class _Expr:
    """A recursive-descent reader of one rule's tokens into GBNF text."""

    def __init__(self, tr: _Translator, toks: list[tuple[str, Any]], rule: str):
        self.tr, self.toks, self.rule, self.i = tr, toks, rule, 0

    def peek(self) -> tuple[str, Any] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def alt(self) -> str:
        parts = [self.seq()]
        while self.peek() == ("op", "|"):
            self.i += 1
            parts.append(self.seq())
        return " | ".join(parts)

    def seq(self) -> str:
        items = []
        while (t := self.peek()) is not None and t not in (("op", "|"), ("op", ")")):
            items.append(self.item())
        return " ".join(items) if items else '""'

    def item(self) -> str:
        atom = self.atom()
        while (t := self.peek()) is not None:
            if t[0] == "op" and t[1] in "?*+":
                atom = f"({atom}){t[1]}"
            elif t[0] == "rep":
                lo, hi = t[1]
                atom = f"({atom}){{{lo},{'' if hi is None else hi}}}" if hi != lo else f"({atom}){{{lo}}}"
            else:
                break
            self.i += 1
        return atom

    def atom(self) -> str:
        t = self.peek()
        if t is None:
            raise GbnfError(f"rule {self.rule}: the grammar ends in the middle of an expression")
        self.i += 1
        kind, val = t
        if t == ("op", "("):
            inner = self.alt()
            if self.peek() != ("op", ")"):
                raise GbnfError(f"rule {self.rule}: a parenthesis is not closed")
            self.i += 1
            return f"({inner})"
        if kind == "lit":
            return _literal(val)
        if kind == "re":
            return f"({_regex(val[0], val[1], self.rule)})"
        if kind == "name":
            return self.tr.ref(val)
        if kind == "tok":
            return self.tr.token(val, self.rule)
        if kind == "json":
            return self.tr.json(val)
        raise GbnfError(f"rule {self.rule}: unexpected {val!r}")


_LAZY_TEXT = re.compile(r"^\(\?s:\.(?:\*|\{(\d+),(\d*)\})\)$")


class _Translator:
    def __init__(self, tokens: Mapping[int, str]):
        self.tokens = dict(tokens)
        self.rules: dict[str, str] = {}
        self.names: set[str] = set()
        self._conv: Any = None
        self._nc: dict[str, str] = {}
        self._n = 0

    def ref(self, name: str) -> str:
        self.names.add(name)
        return _rule_name(name)

    def token(self, spec: str, rule: str) -> str:
        if spec.startswith("^"):
            raise GbnfError(
                f"rule {rule}: a negated token set <[{spec}]> has no GBNF translation without the "
                "model's vocabulary"
            )
        try:
            tid = int(spec)
        except ValueError:
            raise GbnfError(f"rule {rule}: the token reference <[{spec}]> is not one token id") from None
        if tid in self.tokens:
            return _literal(self.tokens[tid])
        return f"<[{tid}]>"

    def json(self, schema: Any) -> str:
        if not isinstance(schema, dict):
            raise GbnfError("a %json schema is not an object")
        if self._conv is None:
            self._conv = _converter()
        doc = _unguard({k: v for k, v in schema.items() if k != "x-guidance"})
        self._n += 1
        try:
            resolved = self._conv.resolve_refs(doc, "schema")
            return str(self._conv.visit(resolved, f"json{self._n}"))
        except (AssertionError, KeyError, TypeError, ValueError, NotImplementedError) as exc:
            raise GbnfError(f"a %json schema has no GBNF translation: {exc}") from None

    def lazy(self, name: str, toks: list[tuple[str, Any]]) -> str:
        """``/(?s:.*)/ "close"`` (or ``.{m,n}``): text without ``close``, then ``close``."""
        shape = [k for k, _ in toks]
        if shape != ["re", "lit"] or not toks[1][1]:
            raise GbnfError(
                f"rule {name}: a lazy rule other than 'any text, then a marker' has no GBNF translation"
            )
        m = _LAZY_TEXT.match(toks[0][1][0])
        if m is None:
            raise GbnfError(f"rule {name}: the lazy text /{toks[0][1][0]}/ has no GBNF translation")
        close = str(toks[1][1])
        if m.group(1) is None:
            return f"{self._not_containing(close)} {_literal(close)}"
        lo, hi = m.group(1), m.group(2)
        return f"{_char_class(close[0], negate=True)}{{{lo},{hi}}} {_literal(close)}"

    def _not_containing(self, s: str) -> str:
        """Rules for the strings that ``s`` may follow with ``s`` first appearing at their end."""
        if s in self._nc:
            return self._nc[s]
        key = f"nc-{len(self._nc) + 1}"
        self._nc[s] = key + "-0"
        n = len(s)
        fail = [0] * (n + 1)  # KMP failure function
        k = 0
        for i in range(1, n):
            while k and s[i] != s[k]:
                k = fail[k]
            if s[i] == s[k]:
                k += 1
            fail[i + 1] = k

        def step(state: int, c: str) -> int:
            while state and s[state] != c:
                state = fail[state]
            return state + 1 if s[state] == c else 0

        def ends_clean(state: int) -> bool:  # ``s`` written from ``state`` appears first at its end
            for j, c in enumerate(s):
                state = step(state, c)
                if state == n:
                    return j == n - 1
            return False

        alphabet = sorted(set(s))
        for state in range(n):
            alts = ['""'] if ends_clean(state) else []
            for c in alphabet:
                nxt = step(state, c)
                if nxt < n:
                    alts.append(f"{_literal(c)} {key}-{nxt}")
            alts.append(f"{_char_class(''.join(alphabet), negate=True)} {key}-0")
            self.rules[f"{key}-{state}"] = " | ".join(alts)
        return key + "-0"


# A numeric schema with these is left to the converter (values listed, or joined with others).
_NOT_PLAIN_NUMBER = frozenset({"$ref", "anyOf", "oneOf", "allOf", "enum", "const"})

# One character of a JSON string: any but a quote, a backslash or a control character, or an escape.
_JSON_CHAR = r'[^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'


def _converter() -> Any:
    """llama-cpp-python's JSON-Schema-to-GBNF converter, with string patterns translated here (its
    own pattern reader does not finish on some patterns) and kept to JSON string characters."""
    from llama_cpp.llama_grammar import RESERVED_NAMES, BuiltinRule, SchemaConverter

    class _Converter(SchemaConverter):  # type: ignore[misc]
        def _add_primitive(self, name: str, rule: Any) -> Any:
            if name == "char":  # llama-cpp-python's lets control characters into a string: not JSON
                rule = BuiltinRule(_JSON_CHAR, [])
            return super()._add_primitive(name, rule)

        def visit(self, schema: Any, name: str) -> Any:
            # an integer or a number: digits bounded as the local grammar bounds them (its own
            # primitives allow 16 digits whatever bound the schema declares)
            kind = schema.get("type") if isinstance(schema, dict) else None
            if kind in ("integer", "number") and not (_NOT_PLAIN_NUMBER & set(schema)):
                rx = int_rx(schema) if kind == "integer" else num_rx(schema)
                body = _Regex(rx, False, f"{kind} {name or 'root'}").alt()
                return self._add_rule(
                    name + "-" if name in RESERVED_NAMES else name or "root", f"({body}) space"
                )
            return super().visit(schema, name)

        def _visit_pattern(self, pattern: str, name: str) -> str:
            rx = _Regex(pattern, False, f"pattern {pattern!r}", json_string=True)
            body = rx.alt()
            if rx.i != len(pattern):
                raise rx.err(f"{pattern[rx.i]!r} where it cannot be read")
            return str(self._add_rule(name, '"\\"" (' + body + ') "\\"" space'))

    conv = _Converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    conv._rules["space"] = '""'  # see lark_to_gbnf: the separators carry their one space
    return conv


def _unguard(schema: Any) -> Any:
    """The runaway guard on free strings (:data:`~app.engine.grammar.lark.NO_DOUBLE_BRACE`) is
    left out where a length bound already ends the string."""

    if isinstance(schema, list):
        return [_unguard(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: (v if k in ("enum", "const", "default", "examples") else _unguard(v)) for k, v in schema.items()
    }
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {k: _unguard(v) for k, v in schema["properties"].items()}
    if out.get("pattern") == NO_DOUBLE_BRACE and ("maxLength" in out or "minLength" in out):
        del out["pattern"]
    return out


def _rule_name(name: str) -> str:
    return "l-" + re.sub(r"[^A-Za-z0-9-]", "-", name)


def lark_to_gbnf(lark: str, *, tokens: Mapping[int, str] | None = None) -> str:
    """The GBNF of ``lark`` (a family's constraint grammar; its ``start`` rule is GBNF's ``root``).
    ``tokens``: token ids whose reference is written as the token's text. Raises :class:`GbnfError`."""
    if not isinstance(lark, str) or not lark.strip():
        raise GbnfError("the grammar is empty")
    rules: list[tuple[str, str, str]] = []
    for line in lark.splitlines():
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        m = _RULE_HEAD.match(line)
        if m is None:
            if not rules:
                raise GbnfError(f"the grammar does not start with a rule: {line[:40]!r}")
            name, attrs, body = rules[-1]
            rules[-1] = (name, attrs, body + "\n" + line)
            continue
        rules.append((m.group(1), m.group(2) or "", line[m.end() :]))
    tr = _Translator(tokens or {})
    defined: dict[str, str] = {}
    for name, attrs, body in rules:
        if name in defined:
            raise GbnfError(f"the rule {name} is defined twice")
        extra = set(a.strip() for a in attrs.strip("[]").split(",") if a.strip()) - {"lazy"}
        if extra:
            raise GbnfError(
                f"rule {name}: the attribute(s) {', '.join(sorted(extra))} have no GBNF translation"
            )
        toks = _lex(body, name)
        if "lazy" in attrs:
            defined[name] = tr.lazy(name, toks)
            continue
        expr = _Expr(tr, toks, name)
        text = expr.alt()
        if expr.i != len(toks):
            raise GbnfError(f"rule {name}: unexpected {toks[expr.i][1]!r}")
        defined[name] = text
    if "start" not in defined:
        raise GbnfError("the grammar has no start rule")
    missing = sorted(tr.names - set(defined))
    if missing:
        raise GbnfError(f"the grammar refers to undefined rule(s): {', '.join(missing)}")
    lines = ["root ::= " + _rule_name("start")]
    lines += [f"{_rule_name(n)} ::= {body}" for n, body in defined.items()]
    lines += [f"{n} ::= {body}" for n, body in tr.rules.items()]
    if tr._conv is not None:
        # JSON as the local grammar writes it (``, `` and ``: ``, no other whitespace): a family's
        # parser reads the call's JSON up to its closing marker, where stray space is no call.
        lines.append(re.sub(r'"([,:])" space\b', r'"\1 "', tr._conv.format_grammar()))
    return "\n".join(lines) + "\n"


# -- GBNF text -----------------------------------------------------------------------------------


def choice_gbnf(choices: Sequence[str]) -> str:
    """A grammar whose text is exactly one of ``choices`` (vLLM's ``choice`` structured output)."""
    if not choices:
        raise GbnfError("a choice needs at least one text")
    return "root ::= " + " | ".join(_literal(c) for c in choices) + "\n"


def regex_gbnf(pattern: str) -> str:
    """A grammar whose text matches the regular expression ``pattern`` whole (the subset
    :func:`lark_to_gbnf` translates: :class:`GbnfError` names a construct outside it)."""
    slashes = re.sub(r"(?<!\\)((?:\\\\)*)/", r"\1\\/", pattern)  # a bare / ends a Lark regex
    return lark_to_gbnf(f"start: /{slashes}/")


def json_gbnf(schema: Mapping[str, Any]) -> str:
    """A grammar whose text is a JSON value ``schema`` describes (llama-cpp-python's converter)."""
    return lark_to_gbnf("start: %json " + json.dumps(schema))


def _esc_char(c: str, *, in_class: bool) -> str:
    specials = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if c in specials:
        return specials[c]
    if in_class and c in "]-^[":
        return "\\" + c
    if not in_class and c == '"':
        return '\\"'
    o = ord(c)
    if o < 0x20 or o == 0x7F:
        return f"\\x{o:02X}"
    return c


def _literal(s: str) -> str:
    return '"' + "".join(_esc_char(c, in_class=False) for c in s) + '"'


def _char_class(chars: str, *, negate: bool = False) -> str:
    return "[" + ("^" if negate else "") + "".join(_esc_char(c, in_class=True) for c in chars) + "]"


# -- regular expressions -----------------------------------------------------------------------

_CLASS_ESC = {"d": [("0", "9")], "w": [("a", "z"), ("A", "Z"), ("0", "9"), ("_", "_")]}
_CLASS_ESC["s"] = [(c, c) for c in " \t\n\r\f\v"]
_CHAR_ESC = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}


_JSON_BAD = [('"', '"'), ("\\", "\\"), ("\x00", "\x1f")]


class _Regex:
    """``json_string``: the text is a JSON string's content: ``.`` and negated classes leave out
    quotes, backslashes and control characters (a string with them would not be JSON)."""

    def __init__(self, src: str, dotall: bool, rule: str, *, json_string: bool = False):
        self.s, self.i, self.rule = src, 0, rule
        self.dotall = [dotall]
        self.json_string = json_string

    def err(self, what: str) -> GbnfError:
        return GbnfError(f"rule {self.rule}: the regex /{self.s}/ uses {what}, which has no GBNF translation")

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def alt(self) -> str:
        parts = [self.seq()]
        while self.peek() == "|":
            self.i += 1
            parts.append(self.seq())
        return parts[0] if len(parts) == 1 else " | ".join(parts)

    def seq(self) -> str:
        items: list[str] = []
        while self.i < len(self.s) and self.peek() not in "|)":
            items.append(self.item())
        items = [x for x in items if x]
        return " ".join(items) if items else '""'

    def item(self) -> str:
        atom = self.atom()
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                if not atom:
                    raise self.err("a quantifier on an anchor")
                atom = f"({atom}){c}"
            elif c == "{" and re.match(r"\{\d+(,\d*)?\}", self.s[self.i :]):
                m = re.match(r"\{(\d+)(,(\d*))?\}", self.s[self.i :])
                assert m is not None
                self.i += m.end()
                lo, hi = m.group(1), m.group(3)
                atom = f"({atom}){{{lo}}}" if m.group(2) is None else f"({atom}){{{lo},{hi or ''}}}"
            else:
                break
            if self.peek() in ("?", "+"):
                raise self.err("a lazy or possessive quantifier")
        return atom

    def atom(self) -> str:
        c = self.peek()
        self.i += 1
        if c == "(":
            flags_on = None
            if self.s.startswith("?:", self.i):
                self.i += 2
            elif self.s.startswith("?s:", self.i):
                self.i += 3
                flags_on = True
            elif self.peek() == "?":
                raise self.err("a group extension (?...)")
            if flags_on:
                self.dotall.append(True)
            inner = self.alt()
            if flags_on:
                self.dotall.pop()
            if self.peek() != ")":
                raise self.err("an unclosed group")
            self.i += 1
            return f"({inner})"
        if c == "[":
            return self.klass()
        if c == ".":
            if self.json_string:
                return _ranges(_JSON_BAD, negate=True)
            return "." if self.dotall[-1] else "[^\\n]"
        if c in ("^", "$"):
            return ""
        if c == "\\":
            e = self.peek()
            self.i += 1
            if e in _CLASS_ESC:
                return _ranges(_CLASS_ESC[e])
            if e in ("D", "W", "S"):
                return _ranges(_CLASS_ESC[e.lower()], negate=True)
            return _literal(self.escaped(e))
        if c in ")*+?{" and c != "{":
            raise self.err(f"a stray {c!r}")
        return _literal(c)

    def escaped(self, e: str) -> str:
        if e in _CHAR_ESC:
            return _CHAR_ESC[e]
        if e == "x":
            h = self.s[self.i : self.i + 2]
            self.i += 2
            return chr(int(h, 16))
        if e == "u":
            h = self.s[self.i : self.i + 4]
            self.i += 4
            return chr(int(h, 16))
        if e.isalnum():
            raise self.err(f"the escape \\{e}")
        return e

    def klass(self) -> str:
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        ranges: list[tuple[str, str]] = []
        first = True
        while True:
            if self.i >= len(self.s):
                raise self.err("an unclosed character class")
            c = self.peek()
            self.i += 1
            if c == "]" and not first:
                break
            first = False
            if c == "\\":
                e = self.peek()
                self.i += 1
                if e in _CLASS_ESC:
                    ranges += _CLASS_ESC[e]
                    continue
                if e in ("D", "W", "S"):
                    raise self.err("a negated class escape inside a class")
                c = self.escaped(e)
            elif c == "[":
                raise self.err("a nested character class")
            if self.peek() == "-" and self.s[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                hi = self.peek()
                self.i += 1
                if hi == "\\":
                    e = self.peek()
                    self.i += 1
                    hi = self.escaped(e)
                ranges.append((c, hi))
            else:
                ranges.append((c, c))
        if negate and self.json_string:
            ranges += _JSON_BAD
        return _ranges(ranges, negate=negate)


def _ranges(ranges: Sequence[tuple[str, str]], *, negate: bool = False) -> str:
    body = "".join(
        _esc_char(a, in_class=True)
        if a == b
        else f"{_esc_char(a, in_class=True)}-{_esc_char(b, in_class=True)}"
        for a, b in ranges
    )
    return "[" + ("^" if negate else "") + body + "]"


def _regex(src: str, dotall: bool, rule: str) -> str:
    rx = _Regex(src, dotall, rule)
    out = rx.alt()
    if rx.i != len(src):
        raise rx.err(f"{src[rx.i]!r} where it cannot be read")
    return out


# -- remote engines ----------------------------------------------------------------------------


def remote_context(
    *,
    family: str,
    special_tokens: Sequence[str] = (),
    reasoning: bool = False,
    in_reasoning: bool = False,
) -> tuple[GrammarContext, dict[int, str]]:
    """A grammar context without a vocabulary: markers are text, except the end-of-generation ones
    (``special_tokens`` that are known EOG markers, the template's EOS among them, and
    :data:`EOG_MARKERS`), which get stand-in ids (returned: id -> text) so a closing marker that
    ends generation is left out of the grammar."""
    eog = sorted({t for t in (*special_tokens, *EOG_MARKERS) if t}, key=lambda t: (-len(t), t))
    ids = {t: _FAKE_ID + i for i, t in enumerate(eog)}
    pattern = re.compile("|".join(re.escape(t) for t in eog)) if eog else None

    def split(text: str) -> list[tuple[str, int | None]]:
        if pattern is None:
            return [(text, None)]
        out: list[tuple[str, int | None]] = []
        pos = 0
        for m in pattern.finditer(text):
            if m.start() > pos:
                out.append((text[pos : m.start()], None))
            out.append((m.group(0), ids[m.group(0)]))
            pos = m.end()
        if pos < len(text):
            out.append((text[pos:], None))
        return out or [(text, None)]

    fake = set(ids.values())
    ctx = GrammarContext(
        split=split,
        eog=lambda t: t in fake,
        eos_ids=tuple(sorted(fake)),
        reasoning=reasoning,
        in_reasoning=in_reasoning,
        family=family,
    )
    return ctx, {v: k for k, v in ids.items()}
