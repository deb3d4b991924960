"""Gemma 4 calls: ``<|tool_call>call:NAME{k:v,...}<tool_call|>``.

Values use Gemma's own notation: strings between ``<|"|>`` delimiters (no escapes: everything
between the delimiters is the string), numbers, ``true``/``false``/``null`` (the official
template writes Python's ``None`` for null, accepted too), nested ``{...}`` objects and
``[...]`` arrays. Keys are bare (they may hold spaces) or ``<|"|>``-delimited. Any number of
calls may appear, with text around them. Reasoning is a ``<|channel>thought ...<channel|>``
block. A ``<tool_call|>`` inside a string does not end the call. Gemma 4 sometimes drops the
``call`` word (``<|tool_call>:NAME{...}<tool_call|>``): read the same, the rest as strictly.

What else Gemma 4 writes, read strictly:

* a string (value or key) in JSON's double quotes, with JSON's escapes, or in Python's single
  quotes, with Python's: it "regularly" writes them inside arrays and objects (vLLM #51284:
  ``data_refs:["ds_1"]``, ``['ds_1']``, ``opts:{"mode": "fast"}``), and whole JSON arguments;
* Python's keyword-call shell under a heavy prompt (omlx #1846):
  ``call:NAME(key=value, ...)``, the values in the same notation; and the same shell with
  Gemma's own separator, ``call:NAME(key: value, ...)``, as Gemma 4 31B writes it through hosted
  APIs (hermes-agent #7457, vLLM #53642). One separator per call;
* a string's opening delimiter left out, its closing one written (``{query:weather in
  Tokyo<|"|>}``: Gemma 4 26B A4B puts about half its weight on the opening delimiter there, and
  writes it so on up to a third of calls, sglang #39240): the string runs from where its value
  starts to that delimiter, which must not stand where a value starts (there it opens the next
  string: this text is no string). The scanner follows the same rule, so such a string never
  hides the closing marker;
* a marked call whose ``call:`` was left out or written ``-`` (``<|tool_call>NAME{...}``,
  ``<|tool_call>-NAME{...}``: checkpoints observed so, vLLM #54778), NAME a declared tool, the
  rest as strictly as ever;
* a declared tool named with a prefix the model invented (``call:NAME:NAME{...}``,
  ``call:google:mcp:text_generation:NAME{...}``, ``call:functions.NAME{...}``): that tool,
  where the whole name is no declared tool (``_declared_name``);
* the closing marker written again after a call (``...}<tool_call|><tool_call|>``, whitespace
  between or none: ollama #15370), part of the call, never content;
* the comma left out between a delimited string and the next key (``{command:<|"|>look<|"|>
  angle:90}``, hybridgroup/yzma #243);
* Python's ``=`` for the ``:`` after a key in Gemma's braces, for any of the arguments
  (``{code:<|"|>...<|"|>,save_as='report.docx'}``: Gemma 4 26B A4B, most often when the prompt
  itself holds ``key='value'`` assignments, ollama #17882); the key must be an identifier;
* a quoted string closed again with Gemma's delimiter (``pattern:':\\s*\\w+'<|"|>``, ollama
  #15315; Ollama's repairs read it so, ollama #15374): the quoted string;
* a call whose arguments' last ``}`` is left out, the closing marker right after the rest
  (``call:read_files{files:[{...}]<tool_call|>``: Ollama mends it, ollama #17565);
* a marked call the model ended with its turn instead of ``<tool_call|>`` (Google's own reader
  in transformers: "Some Gemma4 models emit <turn|> instead of <tool_call|>"; llama.cpp stops
  at ``<turn|>``, so the reply ends right after the call): the whole call, complete, at the end
  of a reply that ended normally (not cut), ``<turn|>`` after it or nothing;
* its only call written inside the thought channel, the channel closed right after it (omlx
  #1854): the call counts where no call follows the channel (``calls_in_reasoning_if_alone``);
* the call without its opening marker where the answer starts: straight after the thought
  channel's ``<channel|>`` (vLLM #54256) or at the reply's start, ``call:NAME{...}``, to an
  offered tool, then the closing marker or nothing more. Anywhere else, or naming another tool,
  such text is text.
"""

from __future__ import annotations

import functools
import re
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import Format, IncompleteCall, ParsedCall, RegionScanner, one_call, register
from app.engine.formats.jsonscan import LENIENT_DECODER
from app.engine.formats.pycalls import read_py_literal
from app.engine.formats.sections import first_marker, notation_text
from app.json_schema import tool_schemas

__all__ = ["GemmaFormat", "parse_gemma_call", "parse_gemma_value", "write_gemma_value"]

OPEN = "<|tool_call>"
CLOSE = "<tool_call|>"
RESPONSE = "<|tool_response>"  # what Gemma 4 writes after its calls (its tool-turn stop token)
QUOTE = '<|"|>'
TURN_END = "<turn|>"  # Gemma 4's end of turn
CALL_WORD = "call:"  # what a call starts with after its opening marker
_NAME = re.compile(WIRE_NAME)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_MAX_DEPTH = 64


# Where a string may start: after these (whitespace between), a delimiter opens a string; anywhere
# else it closes one whose opening delimiter was left out.
_VALUE_START = ":{[,(="
_KEY_STOPS = ":{}[],<>\"'\n"  # where a bare key ends


class _Scanner(RegionScanner):
    """Up to the call's closing marker (and the response marker right after it), skipping over
    the strings between ``quote`` delimiters. With ``strays`` a delimiter opens a string only
    where a key or a value starts (:data:`_VALUE_START`); one after other text closes a string
    whose opening delimiter was left out, which therefore never hid a marker. And the closing
    marker written again after the call (whitespace between or none) belongs to the call."""

    def __init__(self, close: str, quote: str, response: str, *, strays: bool = False) -> None:
        self.close, self.quote, self.response = close, quote, response
        self.strays = strays  # False: every delimiter opens or closes a string, in turn
        self.in_str = False
        self.closed = False
        self.prev = ""  # the last character before the scan's position that is not whitespace
        self.ws = 0  # whitespace known after the closing marker (from the buffer's start)
        self.ops = 0

    def _last(self, buf: str, start: int, end: int) -> str:
        """The last non-whitespace character of ``buf[start:end]`` (else the one before it)."""
        j = end
        while j > start and buf[j - 1].isspace():
            j -= 1
        self.ops += end - j
        return buf[j - 1] if j > start else self.prev

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        response = self.response
        while True:
            if self.closed:
                self.ops += 1
                if buf.startswith(response, i):
                    return i + len(response), True
                if self.strays:  # the closing marker again
                    j = start = min(i + self.ws, len(buf))
                    while j < len(buf) and buf[j].isspace():
                        j += 1
                    self.ops += j - start
                    if buf.startswith(self.close, j):
                        i, self.ws = j + len(self.close), 0
                        continue
                    self.ws = j - i  # known whitespace after ``i``, where the next buffer starts
                    if not final and self.close.startswith(buf[j : j + len(self.close)]):
                        return i, False  # whitespace so far, or the marker's start
                if not final and len(buf) - i < len(response) and response.startswith(buf[i:]):
                    return i, False
                return i, True
            markers = (self.quote,) if self.in_str else (self.quote, self.close)
            pos, m, safe = first_marker(buf, markers, i, final)
            # the search examines the text up to the nearest marker (or the whole buffer)
            self.ops += (pos + len(m) - i) if pos != -1 else len(buf) - i
            if pos == -1:
                if not self.in_str:
                    self.prev = self._last(buf, i, safe)
                return safe, False
            opens = not self.in_str and (not self.strays or self._last(buf, i, pos) in _VALUE_START)
            i = pos + len(m)
            self.prev = m[-1]
            if m == self.close:
                self.closed = True
                continue
            self.in_str = opens


class _Bad(Exception):
    pass


class _Reader:
    def __init__(self, text: str, *, strays: bool = False):
        self.s = text
        self.i = 0
        # Gemma 4's slips inside its notation (the module docstring): a string's opening
        # delimiter left out, and the comma after a string
        self.strays = strays

    def ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i].isspace():
            i += 1
        self.i = i

    def string(self) -> str:
        start = self.i + len(QUOTE)
        end = self.s.find(QUOTE, start)
        if end == -1:
            raise _Bad("unterminated string")
        self.i = end + len(QUOTE)
        return self.s[start:end]

    def quoted(self) -> str:
        """A string in JSON's double quotes or Python's single quotes, at ``i``."""
        s, i = self.s, self.i
        if s[i] == '"':
            try:
                v, end = LENIENT_DECODER.raw_decode(s, i)
            except ValueError:
                raise _Bad("bad JSON string") from None
        else:
            end = i + 1
            while end < len(s) and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            if end >= len(s):
                raise _Bad("unterminated string")
            end += 1
            ok, v = read_py_literal(s[i:end])  # (the compiler's remarks on it are not the user's)
            if not ok:
                raise _Bad("bad Python string")
        if not isinstance(v, str):
            raise _Bad("not a string")
        self.i = end
        return v

    def key(self, kv: str = ":", py_sep: bool = False) -> str:
        """A key and its separator ``kv``; with ``py_sep``, ``=`` may stand for ``:``."""
        self.ws()
        if self.s.startswith(QUOTE, self.i):
            k = self.string()
        elif self.s.startswith(('"', "'"), self.i):
            k = self.quoted()
        else:
            j = self.i
            stops = _KEY_STOPS + ("=" if py_sep else "")
            while j < len(self.s) and self.s[j] not in stops:
                j += 1
            if kv == "=":  # a keyword argument's name: up to the '='
                j = self.s.find("=", self.i)
                j = len(self.s) if j == -1 else j
            k = self.s[self.i : j].strip()
            if not k or (kv == "=" and not k.isidentifier()):
                raise _Bad("empty key")
            self.i = j
        self.ws()
        if py_sep and self.s.startswith("=", self.i) and k.isidentifier():
            kv = "="  # Python's separator in Gemma's braces (``save_as='a.docx'``: ollama #17882)
        if not self.s.startswith(kv, self.i):
            raise _Bad(f"key without {kv!r}")
        self.i += 1
        return k

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _Bad("nested too deep")
        self.ws()
        s, i = self.s, self.i
        if s.startswith(QUOTE, i):
            return self.string()
        if i >= len(s):
            raise _Bad("missing value")
        c = s[i]
        if c in "\"'":
            v = self.quoted()
            if self.strays and s.startswith(QUOTE, self.i):  # closed again Gemma's way (ollama #15315)
                self.i += len(QUOTE)
            return v
        if c == "{":
            return self.obj(depth + 1)
        if c == "[":
            self.i += 1
            out: list[Any] = []
            self.ws()
            if s.startswith("]", self.i):
                self.i += 1
                return out
            while True:
                out.append(self.value(depth + 1))
                self.ws()
                if s.startswith(",", self.i):
                    self.i += 1
                    continue
                if s.startswith("]", self.i):
                    self.i += 1
                    return out
                raise _Bad("bad array")
        j = i
        while j < len(s) and s[j] not in ",}])" and not s[j].isspace():
            j += 1
        tok = s[i:j]
        self.i = j
        if tok in _LITERALS:
            return _LITERALS[tok]
        if _NUMBER.fullmatch(tok):
            return float(tok) if any(ch in tok for ch in ".eE") else int(tok)
        end = s.find(QUOTE, i)
        # a string whose opening delimiter was left out, up to its closing one (a delimiter where
        # a value starts opens the next string: this text is no string)
        if self.strays and end != -1 and s[i:end].rstrip()[-1:] not in _VALUE_START:
            self.i = end + len(QUOTE)
            return s[i:end]
        raise _Bad(f"bad token {tok!r}")

    def obj(self, depth: int, shell: str = "{}", kv: str = ":") -> dict[str, Any]:
        """An object ``{k:v,...}``; with ``shell="()"`` and ``kv="="``, keyword arguments."""
        open_, close = shell[0], shell[1]
        if not self.s.startswith(open_, self.i):
            raise _Bad(f"expected {open_!r}")
        self.i += 1
        out: dict[str, Any] = {}
        self.ws()
        if self.s.startswith(close, self.i):
            self.i += 1
            return out
        while True:
            k = self.key(kv, py_sep=self.strays and shell == "{}")
            if k in out:
                raise _Bad("duplicate key")
            out[k] = self.value(depth + 1)
            after_string = self.s.startswith(QUOTE, self.i - len(QUOTE))
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith(close, self.i):
                self.i += 1
                return out
            if not (self.strays and after_string and kv == ":"):
                raise _Bad("bad object")
            # the comma left out after a delimited string: the next key follows


def _gemma_scalar(value: Any) -> str:
    if isinstance(value, str):
        return QUOTE + value + QUOTE
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    return repr(value)


def write_gemma_value(value: Any) -> str:
    """``value`` in Gemma's notation (strings between ``<|"|>``), as the model writes it."""
    return notation_text(
        value, scalar=_gemma_scalar, key=str, kv=":", sep=",", notation="in Gemma's notation"
    )


def parse_gemma_value(text: str) -> tuple[bool, Any]:
    """Read one whole Gemma-notation value. Returns (ok, value)."""
    r = _Reader(text)
    try:
        v = r.value(0)
        r.ws()
    except _Bad:
        return False, None
    return (True, v) if r.i == len(text) else (False, None)


def parse_gemma_call(
    inner: str, *, bare: bool = False, strays: bool = False
) -> tuple[str, dict[str, Any]] | None:
    """Strictly read ``call:NAME{...}`` (whitespace around allowed); with ``bare``, also
    ``:NAME{...}`` (the ``call`` word dropped, as Gemma 4 sometimes writes it); with ``strays``,
    Gemma 4's slips inside the notation (the module docstring)."""
    s = inner.strip()
    lead = "call:" if s.startswith("call:") else ":" if bare and s.startswith(":") else None
    if lead is None:
        return None
    m = _NAME.match(s, len(lead))
    if m is None:
        return None
    r = _Reader(s, strays=strays)
    r.i = m.end()
    try:
        # Python's keyword-call shell, or its ``key: value`` spelling (see the module
        # docstring), else Gemma's object
        if s.startswith("(", r.i):
            start = r.i
            try:
                args = r.obj(0, "()", "=")
            except _Bad:
                r.i = start
                args = r.obj(0, "()", ":")
        else:
            args = r.obj(0)
    except _Bad:
        return None
    r.ws()
    if r.i != len(s):
        return None
    return m.group(0), args


def _without_call_word(text: str, schemas: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A marked call whose ``call:`` was left out, or written ``-`` (vLLM #54778):
    ``NAME{...}`` or ``-NAME{...}``, NAME a declared tool, the rest as strictly as ever."""
    s = text.strip()
    s = s[1:] if s.startswith("-") else s
    m = _NAME.match(s)
    if m is None or m.group(0) not in schemas or not s.startswith(("{", "("), m.end()):
        return None
    return parse_gemma_call(CALL_WORD + s)


def _declared_name(name: str, schemas: dict[str, Any]) -> str:
    """The declared tool a Gemma 4 call names with a prefix it invented: ``call:NAME:NAME`` (the
    name doubled: flutter_gemma #228), ``call:google:mcp:text_generation:NAME`` (a namespace
    before it: omlx #1830) or ``call:functions.NAME`` (OpenAI's namespace: mlxcel #521), where the
    whole name is no declared tool and the part after its last ``:`` (or after ``functions.``) is
    one; else the name as written. A declared name with colons (an MCP server's ``srv:tool``)
    stays itself."""
    if name in schemas:
        return name
    last = name.rsplit(":", 1)[-1] if ":" in name else name.removeprefix("functions.")
    return last if last != name and last in schemas else name


class GemmaFormat(Format):
    """Calls in Gemma's value notation, ``OPEN call:NAME{...} CLOSE`` then the ``response`` marker
    the model writes after its calls (structure). Gemma 4 is this class's defaults; a family with
    other markers is an instance built with them (FunctionGemma): ``quote`` delimits its strings
    (read as Gemma 4's, so a string holding Gemma 4's own delimiter is not its wire) and ``bare``
    says whether a call may drop the ``call`` word."""

    close = CLOSE
    quote = QUOTE
    response = RESPONSE
    bare = True
    # Gemma 4's ways out of its wire that need more than the notation reader (the module
    # docstring): the call without its opening marker where the answer starts, and the last
    # brace left out
    strays = False

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__(*args, **settings)
        if self.strays:
            # ``call:NAME{...}`` may open a call only where the answer starts; the marker anywhere.
            self.openers = (*self.openers, CALL_WORD)
            self.start_only = True
            self.anywhere = (self.openers[0],)
            self.non_marker_openers = (CALL_WORD,)  # a deviation, not the published marker

    @functools.cached_property
    def _cut_name(self) -> re.Pattern[str]:
        word = "(?:call)?:" if self.bare else "call:"
        return re.compile(re.escape(self.openers[0]) + r"\s*" + word + "(" + WIRE_NAME + ")")

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner(self.close, self.quote, self.response, strays=self.strays)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener == CALL_WORD:
            return self._unmarked(body, at_end=at_end, truncated=truncated, tools=tools)
        close = self.close
        inner = self._without_repeats(self._without_response(body))
        if not inner.endswith(close):
            return self._turn_ended(opener, inner, at_end=at_end, truncated=truncated)
        text = inner[: -len(close)]
        if self.quote != QUOTE:
            if QUOTE in inner:
                return None
            text = text.replace(self.quote, QUOTE)
        got = parse_gemma_call(text, bare=self.bare, strays=self.strays)
        if got is None and self.strays:
            got = parse_gemma_call(text.rstrip() + "}", bare=self.bare)  # its last brace left out
            got = got if got is not None and got[1] else None  # arguments written before it
            if got is None:
                got = _without_call_word(text, tool_schemas(tools))
        if got is not None and self.strays:
            got = (_declared_name(got[0], tool_schemas(tools)), got[1])
        return one_call(opener, inner, got)

    def _turn_ended(self, opener: str, inner: str, *, at_end: bool, truncated: bool):
        """A marked call the model ended with its turn instead of the closing marker (Gemma's own
        reader, transformers' ``utils_gemma4``: "Some Gemma4 models emit <turn|> instead of
        <tool_call|>"; a runtime that stops at ``<turn|>`` hands on the call without it): the
        whole call, complete, at the end of a reply that ended normally, ``<turn|>`` after it
        or nothing. Trailing whitespace stays text."""
        if not (self.strays and at_end and not truncated):
            return None
        kept = inner.rstrip()
        text = kept.removesuffix(TURN_END).rstrip()
        if not text.endswith(("}", ")")):
            return None
        got = parse_gemma_call(text)  # with its call word: one deviation at a time
        if got is None:
            return None
        return [ParsedCall(got[0], dict(got[1]), opener + kept)], inner[len(kept) :]

    def _without_repeats(self, inner: str) -> str:
        """A call's text up to its closing marker, without the markers written again after it (the
        scanner reads them into the region, Gemma 4's: structure, in no call's raw text)."""
        close = self.close
        while self.strays and inner.endswith(close):
            head = inner[: -len(close)].rstrip()
            if not head.endswith(close):
                break
            inner = head
        return inner

    def _without_response(self, body: str) -> str:
        """A region's body without the response marker after its closing marker (not the call's)."""
        return body[: -len(self.response)] if body.endswith(self.close + self.response) else body

    def _unmarked(self, body, *, at_end, truncated, tools):
        """A call written without its opening marker: ``NAME{...}`` after ``call:``, to an offered
        tool, then the closing marker, or nothing more (the reply ended there)."""
        close = self.close
        inner = self._without_response(body)
        if inner.endswith(close):
            text, kept = inner[: -len(close)], inner
        elif at_end and not truncated:
            kept = inner.rstrip()
            text = kept
        else:
            return None
        got = parse_gemma_call(CALL_WORD + text)
        if got is None or got[0] not in tool_schemas(tools):
            return None
        return [ParsedCall(got[0], dict(got[1]), CALL_WORD + kept)], inner[len(kept) :]

    def cut_call(self, opener: str, body: str, tools: list[dict[str, Any]] | None) -> IncompleteCall | None:
        inc = super().cut_call(opener, body, tools)
        if opener == CALL_WORD and (inc is None or inc.name not in tool_schemas(tools)):
            return None  # a cut answer that begins "call:" but names no offered tool is text
        return inc

    def call_name(self, raw: str) -> str | None:
        if raw.startswith(CALL_WORD):
            m = _NAME.match(raw, len(CALL_WORD))
            return m.group(0) if m else None
        m = self._cut_name.match(raw)
        return m.group(1) if m else super().call_name(raw)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import gemma_notation, notation_call

        opener = self.openers[0]
        return partial(
            notation_call,
            nt=gemma_notation(self.quote),
            head=lambda n: opener + "call:" + n,
            tail=self.close,
            opener=opener,
            name_ok=lambda n: bool(_NAME.fullmatch(n)),
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        args = write_gemma_value(dict(arguments)).replace(QUOTE, self.quote)
        return f"{self.openers[0]}call:{name}{args}{self.close}"


register(
    GemmaFormat(
        "gemma4",
        "Gemma 4",
        (OPEN,),
        reasoning=("<|channel>thought", "<channel|>"),
        strays=True,
        calls_in_reasoning_if_alone=True,  # its call inside the thought channel it closes (omlx #1854)
    )
)
