"""Moonshot Kimi's two tool-call grammars, after an optional ``<think>...</think>`` block.

``kimi-k2`` (Kimi K2 Instruct, K2 Thinking)::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{json}
    <|tool_call_end|><|tool_call_begin|>functions.NAME:1<|tool_call_argument_begin|>{json}<|tool_call_end|>
    <|tool_calls_section_end|>

The section's markers are also read in the singular (``<|tool_call_section_begin|>`` ...
``<|tool_call_section_end|>``), as llama.cpp and vLLM read Kimi K2's replies. Calls whose
wrappers were left out are read too, every marker being a special token: a section of
``functions.NAME:IDX<|tool_call_argument_begin|>{json}`` calls without the per-call markers
(which the section's noise rule showed as text, markers and all), and calls without the section
around them (its end optional at the end of the reply); JSON followed by text stays text.

The call id ``functions.NAME:IDX`` names the tool (the ``functions.`` prefix and the index are
accepted missing). Kimi copies the ids it sees in the conversation, and the K2.5 / K2.7 templates
write each past call's id as the client sent it: after a client that rewrote them the model
writes ``functions_NAME_1`` (exo #2281, ids kept to ``[A-Za-z0-9_-]``) or ``functionsNAME5``
(sglang #21377), and after a client's own ids no name at all (``call00003``, sglang #25362;
``call_3``, ``toolu_...``, sglang #37775). An id that is not an offered tool's name is read for
one (``functions`` and the index around it joined by ``_``, or by nothing); an id with no name
(a client's id: ``call``, ``toolu``, ``fc`` or ``hist`` then letters and digits, a counter, a
UUID) names the one offered tool whose schema the arguments fit, every key a declared
parameter. Anything else keeps the id as written: a call to a tool that was not offered. So
that the model sees the ids it was trained on, a conversation's calls go to the template with
ids of that shape (``functions.NAME:IDX``, counting the conversation's calls), whatever id a
client gave them; a tool result keeps pointing at its call.

The section is read by DeepSeek's JSON-aware :class:`JsonCallSection`; a section missing only
its end marker is accepted when the reply ended normally right after a complete call. A reply
cut (``truncated``) inside the section keeps its complete calls; the cut remainder is text, byte
for byte.

A section may hold noise between its markers (text that is none of them): it is skipped and
kept in the neighbouring call's raw text. An empty section is no call and no markup.

K2 Thinking calls tools from inside its thinking ("end-to-end trained to interleave chain-of-
thought reasoning with function calls", its model card; llama.cpp reads them so, and agents
lose them otherwise: llxprt-code #749): a complete section inside a ``<think>`` block the model
then closes is a call, the text around it reasoning (``calls_in_reasoning``). Its markers are
special tokens, which a model does not write to talk about a call.

``kimi-k3``: Kimi K3 writes its whole message in XTML control tokens ``<|open|>NAME ATTRS<|sep|>``
... ``<|close|>NAME<|sep|>``. With thinking on, the prompt ends with
``<|open|>message role="assistant"<|sep|><|open|>think<|sep|>`` and the reply is::

    REASONING<|close|>think<|sep|><|open|>response<|sep|>TEXT<|close|>response<|sep|>
    <|open|>tools<|sep|>
    <|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>
    <|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|><|close|>message<|sep|>

With thinking off the prompt already opened the response frame, so the reply starts with TEXT; a
reply that opens with ``<|open|>response<|sep|>`` itself has no reasoning (that frame ends the
think block). The framing tokens are structure: none reaches content. ``type`` says how to read
the value: ``string`` is the raw text exactly as written, the others are JSON (kept as text for
the schema when they are not). Attribute values escape ``&``, ``<`` and ``"`` as XML does and are
unescaped as XML does (the named entities and character references); a raw ``<`` or ``>`` the
model writes in one (a tool or argument name) is read as written. A
string value may hold ``<|close|>argument<|sep|>`` literally: the real close is the one followed
(after whitespace) by the next ``<|open|>argument``, by ``<|close|>call<|sep|>`` or by the end of
the reply. A call frame outside a tools frame is read too; an empty tools frame is no call.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import THINK, ParsedCall, RegionScanner, register
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.sections import (
    NAME,
    JsonSectionFormat,
    SectionScanner,
    first_marker,
    raw_text,
    scan_section,
)
from app.engine.formats.xml_params import XmlParamsFormat
from app.json_schema import JSON_TYPES, json_type, schema_problem, tool_schemas

__all__ = ["KIMI_K2", "K3Scanner", "KimiK3Format"]

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
SINGULAR = ("<|tool_call_section_begin|>", "<|tool_call_section_end|>")
CALL_BEGIN = "<|tool_call_begin|>"
CALL_END = "<|tool_call_end|>"
ARG_BEGIN = "<|tool_call_argument_begin|>"

_K2_HEADER = re.compile(r"\s*(?:functions\.)?(" + NAME + r"?)(?::\d+)?\s*" + re.escape(ARG_BEGIN) + r"\s*")


# A client's own call id, which holds no tool name (OpenAI's ``call_...`` / ``fc_...``, Anthropic's
# ``toolu_...``, Callisto's ``call00003`` / ``hist00001``, a bare counter, a UUID); every one has a
# digit (``callback`` is a name).
_CLIENT_ID = re.compile(
    r"(?:call|toolu|fc|hist)[_-]?[A-Za-z0-9_-]*|\d+|[0-9a-fA-F]{8}-?(?:[0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}"
)
_INDEX = re.compile(r"[:_]?\d+$")


def _k2_name(written: str, args: dict[str, Any] | None, tools: list[dict[str, Any]] | None) -> str:
    """The tool a K2 call names with the id ``written`` (see the module docstring); ``args`` None
    (a call the token limit cut): only a name the id holds."""
    schemas = tool_schemas(tools)
    if not schemas or written in schemas:
        return written
    rest = written[len("functions") :].lstrip("._") if written.startswith("functions") else written
    for name in (rest, _INDEX.sub("", rest)):
        if name in schemas:
            return name
    if args is not None and _CLIENT_ID.fullmatch(written) and any(c.isdigit() for c in written):
        fits = [n for n, schema in schemas.items() if _fits(args, schema)]
        if len(fits) == 1:
            return fits[0]
    return written


def _fits(args: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Whether ``args`` are a call of a tool with parameters ``schema``: every key declared, the
    required ones present, each value of its type."""
    props = schema.get("properties")
    declared = props if isinstance(props, dict) else {}
    return all(k in declared for k in args) and schema_problem(args, schema) is None


def _type_attr(value: Any) -> str:
    """The ``type`` attribute of a written value: its JSON type (a value JSON has none for is
    written as an object)."""
    t = json_type(value)
    return t if t in JSON_TYPES else "object"


KIMI_K2 = register(
    JsonSectionFormat(
        "kimi-k2",
        "Kimi K2 (sectioned JSON calls)",
        (SECTION_BEGIN, SINGULAR[0], CALL_BEGIN),
        reasoning=THINK,
        section_begin=SECTION_BEGIN,
        section_end=SECTION_END,
        call_begin=CALL_BEGIN,
        call_end=CALL_END,
        header=_K2_HEADER,
        fence_in_header=False,
        implied_end=True,
        noise=True,
        call_index=(":", ARG_BEGIN),
        call_tail=CALL_END,
        head_frame=(CALL_BEGIN + "functions.", ""),
        alt_sections=(SINGULAR,),
        calls_in_reasoning=True,
        name_of=_k2_name,
        unwrapped=True,
        history_id="functions.{name}:{index}",
    )
)


# -- Kimi K3 -------------------------------------------------------------------------------------

OPEN = "<|open|>"
CLOSE = "<|close|>"
SEP = "<|sep|>"
THINK_OPEN = OPEN + "think" + SEP
THINK_CLOSE = CLOSE + "think" + SEP
RESPONSE_OPEN = OPEN + "response" + SEP
RESPONSE_CLOSE = CLOSE + "response" + SEP
TOOLS_OPEN = OPEN + "tools" + SEP
TOOLS_CLOSE = CLOSE + "tools" + SEP
MESSAGE_OPEN = OPEN + 'message role="assistant"' + SEP
MESSAGE_CLOSE = CLOSE + "message" + SEP
END_OF_MSG = "<|end_of_msg|>"
K3_OPENER = OPEN + "call"
CALL_CLOSE = CLOSE + "call" + SEP
ARG_OPEN = OPEN + "argument"
ARG_CLOSE = CLOSE + "argument" + SEP
K3_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
# Control tokens that frame the message but hold no call: structure, never content.
K3_STRUCTURE = (
    RESPONSE_OPEN,
    RESPONSE_CLOSE,
    TOOLS_CLOSE,
    MESSAGE_OPEN,
    MESSAGE_CLOSE,
    END_OF_MSG,
    THINK_CLOSE,
)

# An attribute: its value is everything up to the closing quote (K3 escapes ``<`` as ``&lt;``,
# but the model writes a raw ``<`` or ``>`` too; control tokens cannot stand in a header).
_ATTR = re.compile(r'\s+([A-Za-z_][\w\-]*)="([^"]*)"')
_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_ENTITY = re.compile(r"&(amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6});")


def _unescape(m: re.Match[str]) -> str:
    """One entity as XML reads it: the five named ones and character references (a reference to
    no character XML allows stays as written)."""
    ref = m.group(1)
    if not ref.startswith("#"):
        return _ENTITIES[ref]
    code = int(ref[2:], 16) if ref[1] == "x" else int(ref[1:])
    ok = (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )
    return chr(code) if ok else m.group(0)


def _attrs(head: str) -> dict[str, str] | None:
    """The attributes of a frame header (``tool="x" index="1"``), XML-unescaped; None if malformed."""
    out: dict[str, str] = {}
    i = 0
    while True:
        m = _ATTR.match(head, i)
        if m is None:
            return out if not head[i:].strip() else None
        if m.group(1) in out:
            return None
        out[m.group(1)] = _ENTITY.sub(_unescape, m.group(2))
        i = m.end()


def _tool_name_ok(name: str) -> bool:
    """Whether an (unescaped) ``tool`` attribute can be a tool's name: not empty, no whitespace or
    control characters (whether it is declared is the dispatcher's business)."""
    return bool(name) and name.isprintable() and not any(c.isspace() for c in name)


def _escape(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


class K3Scanner(SectionScanner):
    """Follows Kimi K3's tool frames: ``<|open|>tools<|sep|> CALL* <|close|>tools<|sep|>`` (or one
    bare ``CALL``), a ``CALL`` being ``<|open|>call ATTRS<|sep|> ARG* <|close|>call<|sep|>`` and an
    ``ARG`` ``<|open|>argument ATTRS<|sep|>VALUE<|close|>argument<|sep|>``.

    A value ends at the ``<|close|>argument<|sep|>`` that is followed (after whitespace) by the next
    ``<|open|>argument``, by ``<|close|>call<|sep|>`` or by the end of the text: an earlier one is
    text of the value. Records the calls as ``(attributes, [(attributes, value), ...], start,
    end)``; on anything unexpected sets ``bad`` and searches for the region's end.
    """

    def __init__(self, section: bool) -> None:
        super().__init__("between" if section else "head")
        self.section = section
        self.end = TOOLS_CLOSE if section else CALL_CLOSE
        self.calls: list[tuple[dict[str, str], list[tuple[dict[str, str], str]], int, int]] = []
        self.head: dict[str, str] = {}
        self.args: list[tuple[dict[str, str], str]] = []
        self.arg: dict[str, str] = {}
        self.start = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            if st == "between":
                i, hit = self._expect(buf, i, (K3_OPENER, TOOLS_CLOSE), final)
                if hit is None:
                    return self._ret(i, False)
                if hit == TOOLS_CLOSE:
                    self.state = "done"
                    return self._ret(i + len(hit), True)
                if not hit:
                    self._fail()
                    continue
                self.start = self.base + i
                i += len(hit)
                self.state = "head"
                continue
            if st in ("head", "arg_head"):
                i, head, wait = self._head(buf, i, SEP, (OPEN, CLOSE), final)
                if wait:
                    return self._ret(i, False)
                attrs = None if head is None else _attrs(head)
                if attrs is None:
                    if head is not None:
                        self._fail()
                    continue
                if st == "head":
                    self.head, self.args = attrs, []
                else:
                    self.arg = attrs
                self.state = "args" if st == "head" else "value"
                continue
            if st == "args":
                i, hit = self._expect(buf, i, (ARG_OPEN, CALL_CLOSE), final)
                if hit is None:
                    return self._ret(i, False)
                if not hit:
                    self._fail()
                    continue
                i += len(hit)
                if hit == ARG_OPEN:
                    self.state = "arg_head"
                    continue
                self.calls.append((self.head, self.args, self.start, self.base + i))
                if not self.section:
                    self.state = "done"
                    return self._ret(i, True)
                self.state = "between"
                continue
            if st == "value":
                pos, _m, safe = first_marker(buf, (ARG_CLOSE,), i, final)
                self.ops += (safe if pos == -1 else pos) - i + 1
                if pos == -1:
                    stop = n if final else safe
                    self.parts.append(buf[i:stop])
                    return self._ret(stop, False)
                j = pos + len(ARG_CLOSE)
                k = self.skip_space(buf, j)
                rest = buf[k : k + len(CALL_CLOSE)]
                if rest.startswith((ARG_OPEN, CALL_CLOSE)) or (final and k == n):
                    self.parts.append(buf[i:pos])
                    self.args.append((self.arg, "".join(self.parts)))
                    self.parts = []
                    self.state = "args"
                    i = j
                    continue
                if (
                    not final
                    and k + len(CALL_CLOSE) > n
                    and (ARG_OPEN.startswith(rest) or CALL_CLOSE.startswith(rest))
                ):
                    self.parts.append(buf[i:pos])
                    return self._ret(pos, False)  # what follows decides: wait at the close
                self.parts.append(buf[i:j])  # a close written inside the value: its text
                i = j
                continue
            return self._seek(buf, i, self.end, final)
        return self._ret(n, False)


def _k3_value(value: str, typ: str | None) -> Any:
    if typ in (None, "string"):
        return value
    ok, v = loads_repaired(value.strip())
    return v if ok else value


class _Frame(RegionScanner):
    """A control token that frames the message: the region is the token alone."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        return 0, True


class KimiK3Format(XmlParamsFormat):
    """Kimi K3 writes its whole message in XTML control tokens (see the module docstring)."""

    name = "kimi-k3"
    label = "Kimi K3 (XTML)"
    openers = (TOOLS_OPEN, K3_OPENER, *K3_STRUCTURE)
    reasoning = (THINK_OPEN, THINK_CLOSE)
    raw_values = False  # a value's ``type`` attribute says how to read it
    section = (TOOLS_OPEN, TOOLS_CLOSE)
    tail = CALL_CLOSE
    key_forbidden = '"<>|&'
    # A reply that opens with its response frame has no reasoning: the frame ends the block.
    reasoning_alt = ((THINK_OPEN, RESPONSE_OPEN),)

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener in K3_STRUCTURE:
            return _Frame()
        return K3Scanner(section=opener == TOOLS_OPEN)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener in K3_STRUCTURE:
            return [], ""
        sc = K3Scanner(section=opener == TOOLS_OPEN)
        # a tools frame missing only its closing frame is read when the reply ended between calls
        leftover = scan_section(
            sc, body, at_end=at_end, truncated=truncated, implied_end=opener == TOOLS_OPEN
        )
        if leftover is None:
            return None
        out: list[ParsedCall] = []
        for head, args, start, end in sc.calls:
            name = head.get("tool")
            if name is None or not _tool_name_ok(name) or set(head) - {"tool", "index", "id"}:
                return None
            values: dict[str, Any] = {}
            for attrs, value in args:
                key, typ = attrs.get("key"), attrs.get("type")
                if (
                    key is None
                    or key in values
                    or set(attrs) - {"key", "type"}
                    or (typ and typ not in K3_TYPES)
                ):
                    return None
                values[key] = _k3_value(value, typ)
            raw = opener + body[:end] if opener == K3_OPENER else body[start:end]
            out.append(ParsedCall(name, values, raw))
        return out, leftover

    def head_expr(self, ctx, name):
        return (
            f"{ctx.lit(f'{K3_OPENER} tool={chr(34)}{name}{chr(34)} index={chr(34)}')} "
            f"/[0-9]{{1,2}}/ {ctx.lit(chr(34) + SEP)}"
        )

    def param(self, ctx, key, schema, where):
        from app.engine.grammar.wires import k3_param

        return k3_param(ctx, key, schema, where, open=ARG_OPEN, sep=SEP, close=ARG_CLOSE, trail="")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        args = "".join(
            f'{ARG_OPEN} key="{_escape(k)}" type="{_type_attr(v)}"{SEP}{raw_text(v)}{ARG_CLOSE}'
            for k, v in arguments.items()
        )
        return f'{TOOLS_OPEN}{K3_OPENER} tool="{_escape(name)}" index="1"{SEP}{args}{CALL_CLOSE}{TOOLS_CLOSE}'


register(KimiK3Format())
