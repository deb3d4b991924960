"""Python-notation calls shared by the families that write them (pythonic, LFM2): ``[f(a=1), g()]``.

* :class:`PyListScanner` finds where a call list ends (after its ``[``, or up to a closing token),
  aware of Python strings and triple quotes; it gives up early when the text cannot be a call list.
* :func:`parse_call_list` reads a list (or one bare call) with :func:`ast.parse` and a whitelist of
  literal nodes, never evaluating anything; :func:`parse_cut_list` reads the complete calls of a
  list cut short; :func:`top_level_items` splits a list at its top-level commas.
* :func:`py_literal` writes a value as a Python literal, :func:`call_text` a call and
  :func:`call_list_text` a one-call list (the families' example calls); :func:`call_list_grammar` is the constrained-decoding grammar
  of a call list.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from app.engine.formats.base import RegionScanner
from app.engine.formats.sections import notation_text, skip_ws
from app.json_schema import PaddedInt

__all__ = [
    "CALL_NAME",
    "PyListScanner",
    "SourceSegments",
    "call_list_grammar",
    "call_list_text",
    "call_text",
    "first_call_name",
    "parse_call_list",
    "parse_cut_list",
    "py_literal",
    "read_py_literal",
    "top_level_items",
]

_MAX_SOURCE = 200_000
_HEAD = re.compile(r"\s*[A-Za-z_][\w.]*\s*")  # what may stand between '[' and the first '('
_JSON_NAMES = {"true": True, "false": False, "null": None}
_KEYWORDS = frozenset(keyword.kwlist)
_WORD = re.compile(r"\w+")
_KEY_MARK = "\u3400"  # stands for a keyword's first letter (a letter, the same after NFKC)
_NUM_MARK = "\u3401"  # stands for the first zero of an integer written with leading zeros
# An integer with leading zeros (``02139``, ``007``), which Python refuses: not a float, no suffix
_LEADING_ZERO = re.compile(r"0\d+(?![\w.])")
CALL_NAME = re.compile(r"\s*([A-Za-z_][\w.]*)\s*\(")  # a list item's call name

# What a model writes is compiled under this file name, and the compiler's warnings about it
# ("invalid escape sequence '\k'" in a Windows path, "invalid decimal literal") are dropped by a
# filter on that name alone: a warning about a model's text is not the user's to read, and the
# reply is judged by what it parses to. A filter, not ``catch_warnings``: that swaps the
# process's filters and is not safe while another thread warns.
_SOURCE_NAME = "<model reply>"
for _category in (SyntaxWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=re.escape(_SOURCE_NAME))


class PyListScanner(RegionScanner):
    """From just after ``[`` to its matching ``]``, aware of Python strings (and triple quotes).

    Gives up early (ends the region) when the text after ``[`` cannot be the start of a call, so
    an ordinary bracket at the start of a reply does not hold the text back.
    """

    def __init__(self, closer: str | None = None, bracket: str = "["):
        self.closer = closer  # a closing token (<|python_end|>) when one ends the region
        self.bracket = bracket  # what opens the list of calls (inside a closing-token region)
        self.depth = 1 if closer is None else 0
        self.head = "" if closer is None else None  # text between '[' and the first '('
        self.quote = ""  # the open string's quote (', ", ''' or \"\"\"), "" when outside strings
        self.esc = False
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            self.ops += 1
            c = buf[i]
            if self.quote:
                if self.esc:
                    self.esc = False
                elif c == "\\":
                    self.esc = True
                elif buf.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = ""
                    continue
                elif len(self.quote) == 3 and self.quote.startswith(buf[i:]) and not final:
                    return i, False  # a partial closing triple quote
                i += 1
                continue
            if self.head is not None:
                if c != "(":
                    self.head += c
                    if not _HEAD.fullmatch(self.head) and not self.head.isspace():
                        return i + 1, True  # not a call list
                    i += 1
                    continue
                self.head = None  # the '(' itself is counted below
            if self.closer is not None:
                if buf.startswith(self.closer, i):
                    return i + len(self.closer), True
                if not final and self.closer.startswith(buf[i:]):
                    return i, False
                if c == self.bracket and self.depth == 0:
                    self.head = ""
            if c in "'\"":
                if buf.startswith(c * 3, i):
                    self.quote = c * 3
                    i += 3
                    continue
                if not final and n - i < 3 and (c * 3).startswith(buf[i:]):
                    return i, False  # '' or "' could be the start of a triple quote
                self.quote = c
            elif c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth -= 1
                if self.depth <= 0 and self.closer is None:
                    return i + 1, True
            i += 1
        return n, False


class _Bad(Exception):
    pass


def _literal(node: ast.AST, depth: int = 0, lenient: bool = False) -> Any:
    if depth > 64:
        raise _Bad("nested too deep")
    if lenient:
        if isinstance(node, ast.Set):  # JSON has no set: its items as written, each once
            items: dict[str, Any] = {}  # (each kept once, by its JSON text: linear)
            for e in node.elts:
                v = _literal(e, depth + 1, lenient)
                items.setdefault(json.dumps(v, sort_keys=True), v)
            return list(items.values())
        if isinstance(node, ast.JoinedStr):  # an f-string without a placeholder is its text
            if all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in node.values):
                return "".join(v.value for v in node.values)  # type: ignore[attr-defined]
            raise _Bad("an f-string with a placeholder")
        if isinstance(node, ast.Name) and node.id.startswith(_NUM_MARK):
            return PaddedInt(node.id)  # an integer with leading zeros: the schema types its text
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            return node.value
        raise _Bad("unsupported constant")
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        number: float = node.operand.value  # type: ignore[assignment]  # int or float, checked above
        return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, depth + 1, lenient) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise _Bad("** in a dict")
            key = _literal(k, depth + 1, lenient)
            if not isinstance(key, str):
                raise _Bad("non-string key")
            out[key] = _literal(v, depth + 1, lenient)
        return out
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    raise _Bad(f"not a literal: {type(node).__name__}")


def read_py_literal(text: str) -> tuple[bool, Any]:
    """``text`` read as one Python literal (``{'a': [1, True, None]}``: strings in either quote,
    Python's and JSON's names for true, false and null), never evaluating anything: (ok, value)."""
    src = text.strip()
    if not src or len(src) > _MAX_SOURCE:
        return False, None
    try:
        return True, _literal(ast.parse(src, filename=_SOURCE_NAME, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _Bad):
        return False, None


def py_literal(value: Any) -> str:
    """``value`` as a Python literal, as the model writes an argument."""
    return notation_text(
        value, scalar=repr, key=py_literal, kv=": ", sep=", ", notation="as a Python literal"
    )


def first_call_name(raw: str) -> str | None:
    """The name of the first call written in ``raw`` (a cut call's text), where one stands."""
    m = CALL_NAME.search(raw)
    return m.group(1) if m else None


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """One call, ``name(k=v, ...)``, as the model writes it."""
    return f"{name}(" + ", ".join(f"{k}={py_literal(v)}" for k, v in arguments.items()) + ")"


def call_list_text(name: str, arguments: dict[str, Any]) -> str:
    """A list of one call, ``[name(k=v, ...)]``, as the model writes it."""
    return f"[{call_text(name, arguments)}]"


def call_list_grammar(*, opener: str, section: tuple[str, str], sep: str = ", ") -> Callable[..., str]:
    """The grammar of calls ``f(k=v)`` standing in ``section`` with ``sep`` between them (the
    brackets and commas of a list ``[f(k=v), g()]``, or OLMo 3's lines): a family's
    ``grammar_wire``; ``opener`` as for every grammar."""
    from app.engine.grammar.wires import PYTHON, notation_call, python_name

    return partial(
        notation_call,
        nt=PYTHON,
        head=lambda n: n,
        tail="",
        kwargs="=",
        section=section,
        sep=sep,
        opener=opener,
        args_open="(",
        args_close=")",
        name_ok=python_name,
        key_ok=python_name,
    )


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def parse_call_list(source: str, *, lenient: bool = False) -> list[tuple[str, dict[str, Any], str]] | None:
    """Read ``[f(a=1), g()]`` (or one bare call ``f(a=1)``) into (name, arguments, the call's text),
    never evaluating anything. ``lenient``: what Python refuses but a family's models write is
    read too (:func:`_mend`), and a set or an f-string without a placeholder is a value."""
    got = _parse_call_list(source, lenient)
    if got is not None or not lenient:
        return got
    mended = _mend(source)
    if mended is None:
        return None
    text, back = mended
    got = _parse_call_list(text, lenient)
    if got is None:
        return None
    return [(_back(n, back), _back(a, back), _back(raw, back)) for n, a, raw in got]


def _mend(source: str) -> tuple[str, dict[str, str]] | None:
    """``source`` with what Python's parser refuses there stood in for, character for character:
    a raw NUL, newline or carriage return inside a string literal (an agent's heredoc written
    into a one-line string) by a private-use character, and an argument named by a Python
    keyword (``from=1``) by a name of the same length, and an integer written with leading zeros
    (``zip=02139``) by a name of the same length, read as its text (which the tool's schema types:
    a string keeps it, an integer is its value); and the map back. None when there is nothing to
    mend or no stand-in is free."""
    used = set(source)
    free = (chr(c) for c in range(0xE000, 0xF900) if chr(c) not in used)
    marks = dict(zip("\x00\n\r", free, strict=False))
    if len(marks) < 3 or _KEY_MARK in used or _NUM_MARK in used:
        return None
    out: list[str] = []
    back: dict[str, str] = {}
    prev, sig = "", ""  # the last character outside strings, and the last that is not space
    word_end = 0  # a word read whole outside strings ends here (its characters are written)
    for i, piece, quote in _python_pieces(source):
        if quote:  # inside a string: a raw character Python refuses there gets its stand-in
            if piece in marks and (piece == "\x00" or len(quote) == 1):
                out.append(marks[piece])
                back[marks[piece]] = piece
            else:
                out.append(piece)
            continue
        if i < word_end:
            continue
        c = piece[0]
        if c == "0" and not (prev.isalnum() or prev in "_."):
            z = _LEADING_ZERO.match(source, i)
            if z is not None:
                stand = _NUM_MARK + z.group()[1:]
                back[stand] = z.group()
                out.append(stand)
                prev = sig = stand[-1]
                word_end = z.end()
                continue
        m = (
            _WORD.match(source, i)
            if (c.isalpha() or c == "_") and not (prev.isalnum() or prev == "_")
            else None
        )
        if m is not None:
            word = m.group()
            j = skip_ws(source, m.end())
            if (
                word in _KEYWORDS
                and sig in ("(", ",")
                and source[j : j + 1] == "="
                and source[j : j + 2] != "=="
            ):
                stand = _KEY_MARK + word[1:]
                back[stand] = word
                word = stand
            out.append(word)
            prev = sig = word[-1]
            word_end = m.end()
            continue
        out.append(piece)
        prev = c
        if not c.isspace():
            sig = c
    return ("".join(out), back) if back else None


def _python_pieces(source: str, start: int = 0) -> Iterator[tuple[int, str, str]]:
    """``source`` from ``start`` in pieces, each with its index and the quote of the Python string
    it stands in ("" outside strings): a character; a string's opening quote (outside) or closing
    quote (inside), whole; or, inside a string, a backslash with the character it escapes."""
    quote = ""
    j, n = start, len(source)
    while j < n:
        c = source[j]
        if quote:
            if c == "\\":
                yield j, source[j : j + 2], quote
                j += 2
                continue
            if source.startswith(quote, j):
                yield j, quote, quote
                j += len(quote)
                quote = ""
                continue
            yield j, c, quote
            j += 1
            continue
        if c in "'\"":
            q = c * 3 if source.startswith(c * 3, j) else c
            yield j, q, ""
            j += len(q)
            quote = q
            continue
        yield j, c, ""
        j += 1


def _back(value: Any, back: dict[str, str]) -> Any:
    """``value`` (a name, arguments or a call's text) with the stand-ins of :func:`_mend` back."""
    if isinstance(value, str):
        text = str(value)
        for stand, was in back.items():
            text = text.replace(stand, was)
        return PaddedInt(text) if isinstance(value, PaddedInt) else text
    if isinstance(value, dict):
        return {_back(k, back): _back(v, back) for k, v in value.items()}
    if isinstance(value, list):
        return [_back(v, back) for v in value]
    return value


_LINE_END = re.compile(r"\r\n|\r|\n")  # where Python's parser ends a line


class SourceSegments:
    """``ast.get_source_segment`` for many nodes of one source, its lines split and encoded once.

    ``ast.get_source_segment`` splits the whole source into lines and encodes the node's line
    for every node it is asked about: for a list of N calls that is N times the source (a reply
    of 2,000 calls took seconds). Here each node costs its own length; ``touched`` counts the
    bytes taken out (tests hold it to the source's length)."""

    def __init__(self, source: str) -> None:
        self.lines: list[bytes] = []
        start = 0
        for m in _LINE_END.finditer(source):
            self.lines.append(source[start : m.end()].encode("utf-8"))
            start = m.end()
        self.lines.append(source[start:].encode("utf-8"))
        self.touched = 0

    def segment(self, node: ast.AST) -> str | None:
        """The source text of ``node`` (as ``ast.get_source_segment(source, node)``)."""
        end_lineno = getattr(node, "end_lineno", None)
        end_col = getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None:
            return None
        lo, hi, col = node.lineno - 1, end_lineno - 1, node.col_offset  # type: ignore[attr-defined]
        if lo == hi:
            got = self.lines[lo][col:end_col]
        else:
            got = b"".join([self.lines[lo][col:], *self.lines[lo + 1 : hi], self.lines[hi][:end_col]])
        self.touched += len(got)
        return got.decode("utf-8")


def _parse_call_list(source: str, lenient: bool) -> list[tuple[str, dict[str, Any], str]] | None:
    src = source.strip()
    if not src or len(src) > _MAX_SOURCE:
        return None
    try:
        tree = ast.parse(src, filename=_SOURCE_NAME, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = tree.body
    items = body.elts if isinstance(body, ast.List) else [body] if isinstance(body, ast.Call) else None
    if not items:
        return None
    calls: list[tuple[str, dict[str, Any], str]] = []
    segments = SourceSegments(src)
    try:
        for item in items:
            if not isinstance(item, ast.Call) or item.args:
                return None
            name = _dotted(item.func)
            if name is None:
                return None
            args: dict[str, Any] = {}
            for kw in item.keywords:
                if kw.arg is None or kw.arg in args:
                    return None
                args[kw.arg] = _literal(kw.value, lenient=lenient)
            calls.append((name, args, segments.segment(item) or src))
    except (_Bad, RecursionError):
        return None
    return calls


def top_level_items(source: str) -> tuple[list[tuple[int, int]], int] | None:
    """Spans of the items of the list that opens ``source`` (after whitespace), split at its
    top-level commas, aware of Python strings; and where the list closed (-1: still open)."""
    i = len(source) - len(source.lstrip())
    if not source.startswith("[", i):
        return None
    spans: list[tuple[int, int]] = []
    depth = 0
    start = i + 1
    for j, c, quote in _python_pieces(source, start):
        if quote:
            continue
        if c in "([{":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c == "]":
            if depth == 0:
                spans.append((start, j))
                return spans, j + 1
            depth -= 1
        elif c == "," and depth == 0:
            spans.append((start, j))
            start = j + 1
    spans.append((start, len(source)))
    return spans, -1


def _one_call(item: str, lenient: bool) -> tuple[str, dict[str, Any], str] | None:
    if item.lstrip().startswith("["):
        return None
    got = parse_call_list(item, lenient=lenient)
    return got[0] if got and len(got) == 1 else None


def parse_cut_list(
    source: str, *, lenient: bool = False
) -> tuple[list[tuple[str, dict[str, Any], str]], int] | None:
    """A call list cut short (the reply stopped at max_tokens): its complete calls and where the
    cut remainder starts in ``source`` (the comma before the cut call, or the end). Every item
    before the cut one must be a call; a list that closed must be followed by whitespace only."""
    if len(source) > _MAX_SOURCE:
        return None
    got = top_level_items(source)
    if got is None:
        return None
    spans, closed = got
    calls: list[tuple[str, dict[str, Any], str]] = []
    rest = len(source)
    for k, (a, b) in enumerate(spans):
        call = _one_call(source[a:b], lenient)
        if call is None:
            if k != len(spans) - 1 or closed != -1:
                return None  # a bad call before the cut (or in a closed list): not a call list
            rest = a - 1  # from the comma before the cut call
            break
        calls.append(call)
    else:
        if closed != -1:
            if source[closed:].strip():
                return None
            rest = closed
    if not calls:
        return None
    return calls, rest
