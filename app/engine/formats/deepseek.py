"""DeepSeek's three tool-call grammars, all after an optional ``<think>...</think>`` block.

The markers use DeepSeek's fullwidth bar ``｜`` (U+FF5C) and ``▁`` (U+2581), as its tokenizer
spells them; llama.cpp decodes them as text.

``deepseek-v3`` (R1, V3, the R1 distills)::

    <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜>
    <｜tool▁call▁begin｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜>

The call type must be ``function``; the fence is optional but opened and closed together.

``deepseek-v3.1``: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}``
``<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>``.

A deviation both read, strictly: the R1 distills (Qwen 7B and 32B notably) misspell the section's
opening tag, writing ``<｜tool_calls_begin｜>``, ``<｜tool calls begin｜>``,
``<｜tool\\_calls\\_begin｜>`` or ``<｜tool▁calls｜>`` (llama.cpp accepts the same four); the rest of
the section must be spelled as published (calls, separator, end tag).

Both are read by :class:`JsonCallSection`, a JSON-aware scanner (a marker inside a JSON string
does not end the call) shared with Kimi K2. Every DeepSeek section must be closed: an unclosed
one is text. (The R1-distill templates that never close a single call's section render no
usable call, and detection must find no format for them.)

``deepseek-dsml`` (V3.2, V4, V4.1): the ``｜DSML｜`` XML::

    <｜DSML｜function_calls>            (or tool_calls, or " calls")
    <｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="K" string="true">raw text</｜DSML｜parameter>
    <｜DSML｜parameter name="N" string="false">{"json": 1}</｜DSML｜parameter>
    </｜DSML｜invoke>
    <｜DSML｜invoke name="NOARGS"/>
    </｜DSML｜function_calls>

``string="true"`` values are the text exactly as written (whitespace is significant);
``string="false"`` values are JSON (kept as text when they are not, for the schema to type);
a parameter the tool's schema declares as a plain string keeps its text whatever the flag says.
The scanner follows the structure, so a section's closing tag inside a parameter value does not
end the section; a JSON value (``string="false"`` starting with ``{`` or ``[``) may even hold
``</｜DSML｜parameter>`` inside its strings.

DeepSeek V4 also drops the section at long context and writes the ``invoke`` blocks bare
(``<｜DSML｜invoke name="NAME">...</｜DSML｜invoke>``, one or a run separated by whitespace): each
well-formed block is a call, read exactly as inside a section; a run with a malformed block
anywhere is text (its region ends at the fault). Only the V3.2/V4 spelling is read bare (V4.1's
spaced ``<｜DSML｜ invoke`` stands only in its `` calls`` block).

Around those blocks DeepSeek V3.2 / V4 also write (sglang #40236, opencode #24566), read as the
section's frame: a section whose closing tag never came, when the reply ended normally right
after a complete block; the closing tag after a bare run (its opening tag dropped); an opening
tag missing its ``>`` (``<｜DSML｜tool_calls``, a newline, then the blocks).

Deployed V3.2 / V4 also spell the tag prefix three other ways: ``｜｜DSML｜｜`` (the bars doubled:
transcripts of DeepSeek's API, GenericAgent #804), ``|DSML|`` (ASCII bars: a local V4 writes it,
with and without the section, local-inference-lab/vllm #417, cline #13348) and ``‖DSML‖``
(GenericAgent #804). Each is read as the published one, with everything above, in one spelling
throughout: a section (or a bare block) opened in one spelling and going on in another is text.
V4 also writes the section's opening tag as ``<｜DSML｜toolcalls>`` (vLLM #51914), closed as
published or as opened; V4.1 writes a parameter's opening tag without the prefix (``<parameter
name="K">V</｜DSML｜parameter>``, sglang #39435), read inside an invoke where its closing tag has
the invoke's prefix (a value without ``string`` is typed by the schema). The prefix is a special
token, so a server that decodes without special tokens hands the calls on without it
(``<tool_calls>``, ``<invoke name="N">``: DeepSeek's own API so, opencode #34676; sglang #15155):
read in a section or bare where every call names an offered tool and has parameters, each with
its ``string`` flag, or closes in its own tag (``<invoke name="N"/>``). Claude-style XML (no flag)
and MiniMax's or dots' ``<invoke>`` wires (no flag, or no parameters) stay theirs.

A parameter's closing tag left out (vLLM #54838, DeepSeek-V4-Flash): the tag prefix is a special
token, so a value never holds a parameter's opening tag in the block's prefix; a value ends there
(the next parameter begins), or at the invoke's closing tag where the section's closing tag or the
reply's end follows it (the invoke's last parameter); one newline before that tag is layout; a
tag named after the parameter at the value's end (``Paris</city>``, plain XML's close) ends it
there, unless the value holds that name's opening tag too. A value that ends so and holds a tag
of any DSML spelling is text (where it ends is a guess), and so is a last parameter left open
before another invoke. A tag without the prefix (decoded away, or V4.1's loose parameter tag) is
plain text and ends no value; a value that swallowed a whole loose parameter tag (no
``</parameter>`` after it) is text.

V4's degenerate fragments (vLLM #56184; GenericAgent #804), in the DSML spellings: an empty
section (``<｜DSML｜tool_calls></｜DSML｜tool_calls>``, no invoke inside) and a closing tag with no
block open (``</｜DSML｜parameter>``, ``</｜DSML｜invoke>``, a section's closing tag), in the answer
and in reasoning, are markup: dropped in place, the text around them kept. A loose parameter tag
in the text opens what the first parameter closing tag after it on its line closes: the closing
tags there are its text. A broken bare block's own closing tags belong to its text.

A reply cut (``truncated``) inside a section keeps the complete calls before the cut (a JSON
section here or a DSML one); the cut remainder comes back as text, byte for byte. A section that
is malformed anywhere, or a JSON section unclosed in a reply that ended normally, is text.

The DSML reader serves another family that writes the same XML under its own tag prefix
(GigaChat 3.5's ``｜GCML｜``): :class:`DeepSeekDsmlFormat` built with ``prefix`` and the section
names it writes. DeepSeek's deviations (the bare ``invoke`` blocks, V4.1's spaced dialect, the
self-closing ``invoke``, the degenerate fragments) are DeepSeek's: such an instance reads none of
them. The implicit end of a value left open is the wire's: it reads that.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import (
    _REASON,  # the shared machine's state inside a reasoning block
    THINK,
    IncompleteCall,
    MarkerRegion,
    ParsedCall,
    RegionScanner,
    Stream,
    find_marker,
    register,
)
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.sections import (
    NAME,
    JsonSectionFormat,
    SectionScanner,
    first_marker,
    raw_text,
    scan_section,
)
from app.engine.formats.xml_params import XmlParamsFormat, own_name_close
from app.json_schema import schema_types, tool_schemas

__all__ = [
    "DEEPSEEK_V3",
    "DEEPSEEK_V31",
    "DeepSeekDsmlFormat",
    "DeepSeekJsonFormat",
    "DsmlScanner",
]

SECTION_BEGIN = "<｜tool▁calls▁begin｜>"
SECTION_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
# The section's opening tag as the R1 distills misspell it (a deviation, read as the tag)
MISSPELT_BEGIN = (
    "<｜tool_calls_begin｜>",
    "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>",
    "<｜tool▁calls｜>",
)


_V3_HEADER = re.compile(
    r"\s*function\s*" + re.escape(SEP) + r"\s*(" + NAME + r")[ \t]*\n?\s*"
    r"(?P<fence>```(?:json|JSON)?[ \t]*\n?)?\s*"
)
_V31_HEADER = re.compile(
    r"\s*(" + NAME + r")\s*" + re.escape(SEP) + r"\s*(?P<fence>```(?:json|JSON)?[ \t]*\n?)?\s*"
)


class DeepSeekJsonFormat(JsonSectionFormat):
    """DeepSeek's sections of JSON calls (V3 / R1, V3.1): an instance sets its ``header``, its
    ``head_frame`` and its ``call_tail``."""

    openers = (SECTION_BEGIN, *MISSPELT_BEGIN)
    non_marker_openers = MISSPELT_BEGIN  # deviations: the published tag is one token
    reasoning = THINK
    section_begin, section_end = SECTION_BEGIN, SECTION_END
    call_begin, call_end = CALL_BEGIN, CALL_END

    def call_name(self, raw: str) -> str | None:
        for pattern in _CUT_NAMES:
            m = pattern.search(raw)
            if m:
                return m.group(1)
        return None


_CUT_NAMES = (
    re.compile(r"function\s*" + re.escape(SEP) + r"\s*(" + NAME + r")\s*\n"),
    re.compile(re.escape(CALL_BEGIN) + r"\s*(" + NAME + r")\s*" + re.escape(SEP)),
)


DEEPSEEK_V3 = DeepSeekJsonFormat(
    "deepseek-v3",
    "DeepSeek V3 / R1 (fenced JSON calls)",
    header=_V3_HEADER,
    head_frame=(f"{CALL_BEGIN}function{SEP}", "\n```json\n"),
    call_tail=f"\n```{CALL_END}",
)
DEEPSEEK_V31 = DeepSeekJsonFormat(
    "deepseek-v3.1",
    "DeepSeek V3.1 (JSON calls)",
    header=_V31_HEADER,
    head_frame=(CALL_BEGIN, SEP),
    call_tail=CALL_END,
)


# -- DSML ----------------------------------------------------------------------------------------

DSML = "｜DSML｜"
DSML_V41 = "｜DSML｜ "  # V4.1 writes a space after the bar in every tag
# The prefix as deployed V3.2 / V4 also spell it (deviations): the bars doubled (DeepSeek's API,
# GenericAgent #804, opencode transcripts), ASCII bars (a local V4 writes them with and without
# the section, local-inference-lab/vllm #417; cline #13348) and U+2016 (GenericAgent #804). A
# section, or a bare block, is read in one spelling throughout.
DSML_STRAYS = ("｜｜DSML｜｜", "|DSML|", "‖DSML‖")
DSML_SPELLINGS = (DSML, *DSML_STRAYS)
# ``｜DSML｜`` is a special token: a server that decodes without special tokens hands the calls on
# with no prefix at all (``<tool_calls>``, ``<invoke name="N">``: DeepSeek's API so, opencode
# #34676; sglang #15155). Read in a section or bare, every parameter carrying its ``string`` flag
# and every call naming an offered tool, with parameters or self-closing (see _decoded_call).
DECODED_AWAY = ""
# The section tags and the tag prefixes read inside each: V4.1's `` calls`` block is its own
# sub-format (spaced tags; the unspaced spelling is read there too). The V3.2/V4 section tags may
# miss their ">" (a deviation: the tag's name, then a newline; the newline is the opener's so that
# no opener is a prefix of the whole tag).
DSML_DIALECTS: dict[str, tuple[str, ...]] = {}
# What a bare run of invoke blocks may end with, by spelling: a section's closing tag (its
# opening one dropped)
BARE_CLOSES: dict[str, tuple[str, ...]] = {}
for _p in (*DSML_SPELLINGS, DECODED_AWAY):
    _tags = (f"<{_p}function_calls>", f"<{_p}tool_calls>")
    DSML_DIALECTS.update({t: (_p,) for t in _tags})
    BARE_CLOSES[_p] = tuple("</" + t[1:] for t in _tags)
    if _p:  # (no prefix: the published tags only)
        DSML_DIALECTS[f"<{_p} calls>"] = (f"{_p} ", _p)
        DSML_DIALECTS.update({t[:-1] + "\n": (_p,) for t in _tags})
del _p, _tags
DSML_OPENERS = tuple(DSML_DIALECTS)
DSML_PUBLISHED = (f"<{DSML}function_calls>", f"<{DSML}tool_calls>", f"<{DSML_V41}calls>")
INVOKE = f"<{DSML}invoke"
INVOKE_END = f"</{DSML}invoke>"
# V4's bare invoke blocks, by their opening tag's start
BARE_INVOKES = {f"<{p}invoke": p for p in (*DSML_SPELLINGS, DECODED_AWAY)}
# V4's ``tool_calls`` written ``toolcalls`` in the section's opening tag, its closing tag either
# way (vLLM #51914); and a parameter's opening tag without the prefix (V4.1, sglang #39435)
TOOLCALLS = {f"<{p}toolcalls>": p for p in DSML_SPELLINGS}
LOOSE_PARAM = "<parameter"
# What opens a region of its own (a section, a bare block): a broken bare block's text ends there
REGION_OPENERS = (*DSML_OPENERS, *TOOLCALLS, *BARE_INVOKES)
# DeepSeek V4's closing tags with no block open (vLLM #56184), in the DSML spellings it reads
# outside a block: each a region of its own that is markup, dropped in the answer and in reasoning
STRAY_CLOSERS = tuple(
    f"</{p}{tag}>"
    for p in DSML_SPELLINGS
    for tag in ("parameter", "invoke", "tool_calls", "function_calls", "toolcalls")
)
_PARAM_STRAYS = tuple(c for c in STRAY_CLOSERS if c.endswith("parameter>"))

DECODED_OPENERS = (f"<{DECODED_AWAY}function_calls>", f"<{DECODED_AWAY}tool_calls>", f"<{DECODED_AWAY}invoke")
# A parameter written without the prefix's special token carries its ``string`` flag
_FLAG_NEEDED = f"</{DECODED_AWAY}parameter>"
_INVOKE_ATTRS = re.compile(r'\s+name="(' + NAME + r')"\s*(/?)')
_PARAM_ATTRS = re.compile(r'\s+name="([^"<>]+)"(?:\s+string="(true|false)")?\s*')
# V4.1's parameter tag without the prefix, whole, as a value would hold it where the closing tag of
# the parameter before it was left out
_LOOSE_TAG = re.compile(re.escape(LOOSE_PARAM) + _PARAM_ATTRS.pattern + ">")


class DsmlScanner(SectionScanner):
    """Follows ``(invoke (parameter value /parameter)* /invoke | invoke/)* /section``.

    ``close`` is the section's closing tag; ``prefixes`` the spellings of the tag prefix
    (``｜DSML｜``, V4.1's ``｜DSML｜ ``): an invoke or parameter opened with one closes with the
    same. ``self_closing``: an ``invoke`` closed in its own tag (``.../>``) is a call with no
    parameters (DeepSeek's); otherwise it is a fault. Records the calls as
    ``(name, [(key, flag, value), ...], start, end)``; on anything unexpected it sets ``bad`` and
    searches for the section's closing tag.

    A raw value whose parameter's closing tag was left out (vLLM #54838, DeepSeek-V4-Flash) ends
    where the next parameter's opening tag in one of the block's prefixes begins, or where the invoke's
    closing tag begins when the section's closing tag (or the end of the text) follows it (the
    invoke's last parameter); one newline before that tag is layout. The prefix is a special
    token, so a value never holds such a tag; a value that ends so may hold no tag of any DSML
    spelling (else the value's extent is a guess: a fault). Without a prefix (``<parameter``,
    decoded away or V4.1's loose tag) a tag is plain text and ends nothing; a value in a block that
    reads loose tags may not hold a whole loose parameter tag (the next parameter swallowed).
    """

    def __init__(
        self,
        close: str,
        prefixes: tuple[str, ...] = (DSML,),
        *,
        self_closing: bool = True,
        also: tuple[str, ...] = (),
        loose: bool = False,
    ):
        super().__init__("between")
        self.close = close
        # the tags that close the section: ``close``, then ``also`` (other spellings of it)
        self.closes: tuple[str, ...] = ((close,) if close else ()) + also
        self.self_closing = self_closing  # whether ``<PREFIXinvoke name="N"/>`` is a call
        self.invokes = tuple(f"<{p}invoke" for p in prefixes)
        # ``loose``: a parameter's opening tag may lack the prefix (DeepSeek V4.1's ``<parameter
        # name="K">V</｜DSML｜parameter>``); it closes as the invoke's prefix spells it
        self.params = tuple(f"<{p}parameter" for p in prefixes) + ((LOOSE_PARAM,) if loose else ())
        self.ends = {f"<{p}{tag}": f"</{p}{tag}>" for p in prefixes for tag in ("invoke", "parameter")}
        self.loose = loose
        # where a value whose closing tag was left out ends (the prefixed spellings only) and the
        # tags such a value may not hold
        tagged = tuple(p for p in prefixes if p)
        self.next_params = tuple(f"<{p}parameter" for p in tagged)
        marks = (f"{lt}{p}" for p in (*tagged, *DSML_SPELLINGS) for lt in ("<", "</"))
        # (where loose tags are read, the closing tag without the prefix: a loose parameter closed
        # so is not read, and a value must not run past it)
        self.tag_marks = tuple(dict.fromkeys(marks)) + (("</parameter>",) if loose else ())
        self.invoke_end = self.param_end = ""
        self.calls: list[tuple[str, list[tuple[str, str | None, str]], int, int]] = []
        self.name = ""
        self.params_read: list[tuple[str, str | None, str]] = []
        self.key = ""
        self.flag: str | None = None
        self.start = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            if st in ("between", "invoke"):
                wanted = (*self.invokes, *self.closes) if st == "between" else (*self.params, self.invoke_end)
                i, hit = self._expect(buf, i, wanted, final)
                if hit is None:
                    return self._ret(i, False)
                if not hit:
                    self._fail()
                    continue
                if hit in self.closes:
                    self.state = "done"
                    return self._ret(i + len(hit), True)
                if hit in self.invokes:
                    self.start = self.base + i
                    self.invoke_end = self.ends[hit]
                    self.state = "invoke_head"
                elif hit in self.params:
                    self.param_end = self.ends.get(hit) or self.invoke_end.replace("invoke>", "parameter>")
                    self.state = "param_head"
                else:  # the invoke's closing tag
                    self.calls.append((self.name, self.params_read, self.start, self.base + i + len(hit)))
                    self.state = "between"
                i += len(hit)
                continue
            if st in ("invoke_head", "param_head"):
                i, head, wait = self._head(buf, i, ">", ("<",), final)  # markup inside: not a DSML tag
                if wait:
                    return self._ret(i, False)
                if head is None:
                    continue
                if st == "invoke_head":
                    m = _INVOKE_ATTRS.fullmatch(head)
                    if m is None or (m.group(2) and not self.self_closing):
                        self._fail()
                        continue
                    self.name, self.params_read = m.group(1), []
                    if m.group(2):
                        self.calls.append((self.name, [], self.start, self.base + i))
                        self.state = "between"
                    else:
                        self.state = "invoke"
                    continue
                m = _PARAM_ATTRS.fullmatch(head)
                if m is None or (self.param_end == _FLAG_NEEDED and m.group(2) is None):
                    self._fail()
                    continue
                self.key, self.flag = m.group(1), m.group(2)
                self.state = "value_json" if self.flag == "false" else "value"
                continue
            if st in self.VALUE_STATES:
                if st == "value" and self.next_params:
                    i, value, wait = self._open_value(buf, i, final)
                else:
                    i, value, wait = self._value_step(buf, i, self.param_end, final)
                if wait:
                    return self._ret(i, False)
                if value is not None and self.loose and _swallows_loose_tag(value):
                    self._fail()  # the next (loose) parameter read as this value's text
                    continue
                if value is not None:
                    self.params_read.append((self.key, self.flag, value))
                    self.state = "invoke"
                continue
            return self._seek(buf, i, self.close, final)
        return self._ret(n, False)

    def _open_value(self, buf: str, i: int, final: bool) -> tuple[int, str | None, bool]:
        """State ``"value"`` in a prefixed block: text up to the parameter's closing tag, or up to
        where the value ends without it (the class docstring). Returns ``(cursor, value, wait)``
        as :meth:`_value_step` does; a value that ends without its closing tag leaves the cursor
        at the tag that ends it."""
        markers = (self.param_end, *self.next_params, self.invoke_end)
        while True:
            pos, m, safe = first_marker(buf, markers, i, final)
            self.ops += (safe if pos == -1 else pos) - i + 1
            if pos == -1:
                stop = len(buf) if final else safe
                self.parts.append(buf[i:stop])
                return stop, None, True
            if m == self.invoke_end:
                follows = self._section_ends(buf, pos + len(m), final)
                if follows is None:  # wait here for the text that decides
                    self.parts.append(buf[i:pos])
                    return pos, None, True
                if not follows:  # the value's text
                    self.parts.append(buf[i : pos + len(m)])
                    i = pos + len(m)
                    continue
            self.parts.append(buf[i:pos])
            value = "".join(self.parts)
            self.parts = []
            if m == self.param_end:
                return pos + len(m), value, False
            if any(t in value for t in self.tag_marks):
                self._fail()
                return pos, None, False
            return pos, own_name_close(value.removesuffix("\n"), self.key), False

    def _section_ends(self, buf: str, j: int, final: bool) -> bool | None:
        """Whether the section's closing tag (or the end of the text, unless the token limit cut
        it) follows ``buf[j:]`` after whitespace; None while the text seen cannot tell."""
        k = self.skip_space(buf, j)
        if k >= len(buf):
            return (not self.cut) if final else None
        if buf.startswith(self.closes, k):
            return True
        rest = buf[k : k + max(map(len, self.closes), default=0)]
        if not final and any(len(rest) < len(c) and c.startswith(rest) for c in self.closes):
            return None
        return False


class BareDsmlScanner(DsmlScanner):
    """A run of ``invoke`` blocks written without their section (DeepSeek V4): blocks separated
    by whitespace; the run ends where anything else follows a block (the whitespace before it
    is the run's). On a fault inside a block it sets ``bad`` and the region (text) runs on over
    the rest of the broken block: up to its closing tag and a section's closing tag right after
    it, so that its closing tags are never read as stray ones; it ends before anything that opens
    a region of its own (a section, another block), and at the reply's end without those.
    ``head``: the scan starts after the ``<｜DSML｜invoke`` that opened the region."""

    def __init__(self, *, head: bool, prefix: str = DSML) -> None:
        # no closing tag: "seek" ends the region where it stands
        super().__init__("", (prefix,), loose=True)
        self.closes = BARE_CLOSES[prefix]  # a section's closing tag after the run is its frame
        self.block_end = f"</{prefix}invoke>"
        if head:
            self.state = "invoke_head"
            self.invoke_end = self.block_end

    def _expect(self, buf: str, i: int, wanted: tuple[str, ...], final: bool) -> tuple[int, str | None]:
        return super()._expect(buf, i, tuple(w for w in wanted if w), final)

    def _fail(self) -> None:
        if self.state == "between":  # something else follows the run: it ends here, no fault
            self.parts = []
            self.state = "seek"
            return
        super()._fail()
        self.state = "wreck"

    def _seek(self, buf: str, i: int, end: str, final: bool) -> tuple[int, bool]:
        if self.state == "seek":  # (the run ended without a fault)
            return super()._seek(buf, i, end, final)
        if self.state == "wreck":  # the rest of a broken block, up to its closing tag
            pos, m, safe = find_marker(buf, (self.block_end, *REGION_OPENERS), final, start=i)
            self.ops += (safe if pos == -1 else pos) - i + 1
            if pos == -1:
                return self._ret(len(buf) if final else safe, False)
            if m != self.block_end:  # a region of its own opens here
                self.state = "done"
                return self._ret(pos, True)
            i = pos + len(m)
            self.state = "wreck_tail"
        j, hit = self._expect(buf, i, self.closes, final)  # a section's closing tag after it
        if hit is None:
            return self._ret(j, False)
        self.state = "done"
        return self._ret(j + len(hit), True)


def _swallows_loose_tag(value: str) -> bool:
    """Whether ``value`` ends in a whole loose parameter tag (V4.1's ``<parameter name="K">``)
    with no ``</parameter>`` after it: the next parameter, read as this value's text where this
    one's closing tag was left out (a value holding such XML closes its own tags)."""
    last = None
    for last in _LOOSE_TAG.finditer(value):  # noqa: B007 - the last one is wanted
        pass
    return last is not None and "</parameter>" not in value[last.end() :]


class _LooseLine(RegionScanner):
    """A loose parameter tag (V4.1's ``<parameter``, without the prefix) in the text, outside every
    block: the region (text) runs to the end of its line, through the first parameter closing tag
    of a DSML spelling (the tag it closes is open there: not a stray one), and ends before anything
    that opens a region of its own."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        pos, m, safe = find_marker(buf, (*_PARAM_STRAYS, "\n", *REGION_OPENERS), final)
        self.ops += (safe if pos == -1 else pos) + 1
        if pos == -1:
            return (len(buf) if final else safe), False
        return (pos + len(m) if m in _PARAM_STRAYS else pos), True


class _DsmlStream(Stream):
    """The shared machine, where the format's ``strays`` (DeepSeek V4's closing tags with no block
    open) are dropped inside reasoning too; in the answer each is a region of its own that parses
    to no call and no text, and a loose parameter tag's line is text (:class:`_LooseLine`).

    Inside a reasoning block neither opens a call region (the block goes on as reasoning): a stray
    closing tag is dropped, a loose parameter tag is reasoning, and so is every closing tag after
    it on its line up to the first parameter closing tag, as in the answer. A stray closing tag in
    text held until the reply shows whether it is reasoning is dropped where it proves to be."""

    _dropped = False
    _loose_line = False  # a loose parameter tag is open on the reasoning's current line

    def _reason(self, s: str) -> None:
        if "\n" in s:
            self._loose_line = False
        super()._reason(s)

    def _open_held_region(self, opener: str) -> None:
        strays = getattr(self.fmt, "strays", ())
        if self._mode == _REASON and (opener in strays or opener == LOOSE_PARAM):
            tag = self._consume(len(opener))
            if opener == LOOSE_PARAM or self._loose_line:
                self._reason(tag)  # the loose tag, or a closing tag on its line
                self._loose_line = opener == LOOSE_PARAM or opener not in _PARAM_STRAYS
            self._dropped = True
            return
        self._loose_line = False
        super()._open_held_region(opener)

    def _step_reason(self, final: bool, truncated: bool) -> bool:
        self._dropped = False
        went_on = super()._step_reason(final, truncated)
        if self._dropped:  # no call region opened: still inside the block
            self._mode = _REASON
        return went_on

    def _end_held_reasoning(self) -> None:
        # a stray closing tag's region, held as text, proves to be inside reasoning: dropped
        strays = getattr(self.fmt, "strays", ())
        self._held = [h for h in self._held if not (isinstance(h, str) and h in strays)]
        super()._end_held_reasoning()


def _dsml_value(value: str, flag: str | None, schema: Any) -> Any:
    if flag != "false" or schema_types(schema) == ["string"]:
        return value  # raw text, exactly as written
    ok, v = loads_repaired(value.strip())
    return v if ok else value


class DeepSeekDsmlFormat(XmlParamsFormat):
    """The DSML XML. DeepSeek's instance reads its three section tags, V4.1's spaced dialect, the
    bare ``invoke`` blocks and the self-closing ``invoke``. Built with ``prefix`` (the text
    between ``<`` and a tag's name, ``｜DSML｜`` for DeepSeek) and ``sections`` (the section tags'
    names, the first one written), it is another family's wire: the same grammar under that
    prefix, only in those sections, with none of DeepSeek's deviations."""

    name = "deepseek-dsml"
    label = "DeepSeek V3.2 / V4 (DSML)"
    prefix = DSML
    # section opening tag -> the tag prefixes read inside it
    dialects: dict[str, tuple[str, ...]] = DSML_DIALECTS
    bare = True  # V4's invoke blocks written without their section
    self_closing = True  # ``<｜DSML｜invoke name="N"/>``: a call without parameters
    # V4's bare blocks too, its stray closing tags (markup: dropped) and a loose parameter tag
    # (text to the end of its line: its closing tag there is no stray one)
    openers = (*REGION_OPENERS, *STRAY_CLOSERS, LOOSE_PARAM)
    # deviations: the published call opens with a whole section tag, spelt as published
    non_marker_openers = tuple(o for o in openers if o not in DSML_PUBLISHED)
    # V4's closing tags with no block open and its empty sections: markup, dropped
    strays: tuple[str, ...] = STRAY_CLOSERS
    stream_class: type[Stream] | None = _DsmlStream
    reasoning = THINK
    raw_values = False  # a value's ``string`` flag says how to read it
    section = (f"<{DSML}function_calls>\n", f"</{DSML}function_calls>")
    tail = f"{INVOKE_END}\n"

    def __init__(
        self,
        name: str = "",
        label: str = "",
        openers: tuple[str, ...] = (),
        *,
        prefix: str | None = None,
        sections: tuple[str, ...] = ("tool_calls",),
        **settings: Any,
    ) -> None:
        if prefix is not None:  # another family's prefix: its tags, none of DeepSeek's deviations
            tags = tuple(f"<{prefix}{s}>" for s in sections)
            derived: dict[str, Any] = {
                "prefix": prefix,
                "dialects": {t: (prefix,) for t in tags},
                "bare": False,
                "self_closing": False,
                "non_marker_openers": (),
                "strays": (),
                "section": (tags[0] + "\n", _dsml_close(tags[0])),
                "tail": f"</{prefix}invoke>\n",
            }
            openers = openers or tags
            settings = {**derived, **settings}
        super().__init__(name, label, openers, **settings)

    @property
    def _invoke(self) -> str:
        return f"<{self.prefix}invoke"

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener in self.strays:
            return MarkerRegion()
        if self.strays and opener == LOOSE_PARAM:
            return _LooseLine()
        if self.bare and opener in BARE_INVOKES:
            return BareDsmlScanner(head=True, prefix=BARE_INVOKES[opener])
        return self._section_scanner(opener)

    def _section_scanner(self, opener: str) -> DsmlScanner:
        if opener in TOOLCALLS:  # (DeepSeek's only) closed as published, or as it was opened
            p = TOOLCALLS[opener]
            return DsmlScanner(f"</{p}tool_calls>", (p,), also=(f"</{p}toolcalls>",), loose=True)
        return DsmlScanner(
            _dsml_close(opener), self.dialects[opener], self_closing=self.self_closing, loose=self.bare
        )

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener in self.strays:
            return [], ""  # a closing tag with no block open: markup, dropped
        if opener == LOOSE_PARAM:
            return None  # a loose parameter tag outside every block: text
        if self.bare and opener in BARE_INVOKES:
            sc: DsmlScanner = BareDsmlScanner(head=False, prefix=BARE_INVOKES[opener])
            body = opener + body
            sc.scan(body, not (at_end and truncated))
            if sc.bad or not sc.calls:
                return None
            # a closing section tag after the run is structure with the whitespace before it
            leftover = "" if sc.state == "done" else body[sc.calls[-1][-1] :]
        else:
            sc = self._section_scanner(opener)
            # DeepSeek's section may miss its closing tag when the reply ended after a block
            got = scan_section(sc, body, at_end=at_end, truncated=truncated, implied_end=self.bare)
            if got is None:
                return None
            if not sc.calls:
                # V4's empty section (no invoke inside, closed), in a DSML spelling: markup
                empty = bool(self.strays) and sc.state == "done" and opener not in DECODED_OPENERS
                return ([], got) if empty else None
            leftover = got
        schemas = tool_schemas(tools)
        if (
            self.bare
            and opener in DECODED_OPENERS
            and not all(_decoded_call(c, body, schemas) for c in sc.calls)
        ):
            return None
        out: list[ParsedCall] = []
        for name, params, start, end in sc.calls:
            props = (schemas.get(name) or {}).get("properties")
            props = props if isinstance(props, dict) else {}
            args: dict[str, Any] = {}
            for key, flag, value in params:
                if key in args:
                    return None  # the same parameter twice: not a call we can trust
                args[key] = _dsml_value(value, flag, props.get(key))
            out.append(ParsedCall(name, args, body[start:end]))
        return out, leftover

    def cut_call(self, opener: str, body: str, tools: list[dict[str, Any]] | None) -> IncompleteCall | None:
        """A cut region; a bare block broken before the cut is text (its region ran on to the
        cut only to hold its own closing tags), and so is a loose parameter tag's line."""
        if opener == LOOSE_PARAM:
            return None
        if self.bare and opener in BARE_INVOKES:
            sc = BareDsmlScanner(head=False, prefix=BARE_INVOKES[opener])
            sc.scan(opener + body, False)
            if sc.bad:
                return None
        return super().cut_call(opener, body, tools)

    def head(self, name: str) -> str:
        return f'{self._invoke} name="{name}">\n'

    def param(self, ctx, key, schema, where):
        from app.engine.grammar.wires import dsml_param

        return dsml_param(
            ctx, key, schema, where, open=f"<{self.prefix}parameter", close=f"</{self.prefix}parameter>"
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        p = self.prefix
        params = "".join(
            f'<{p}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
            f"{raw_text(v)}</{p}parameter>\n"
            for k, v in arguments.items()
        )
        return f'{self.section[0]}{self._invoke} name="{name}">\n{params}</{p}invoke>\n{self.section[1]}'


def _decoded_call(call: tuple[str, list[Any], int, int], body: str, schemas: dict[str, Any]) -> bool:
    """Whether a call written without the prefix's special token is one: to an offered tool, with
    parameters (each flagged, as the scanner checks) or closed in its own tag (``.../>``, DSML's
    alone). An ``<invoke>`` with neither is MiniMax's or dots' wire as much as DeepSeek's."""
    name, params, _start, end = call
    return name in schemas and (bool(params) or body.endswith("/>", 0, end))


def _dsml_close(opener: str) -> str:
    tag = opener.rstrip("\n")  # (a tag missing its ">" opens with its name and a newline)
    return "</" + tag[1:] + ("" if tag.endswith(">") else ">")


register(DEEPSEEK_V3)
register(DEEPSEEK_V31)
register(DeepSeekDsmlFormat())
