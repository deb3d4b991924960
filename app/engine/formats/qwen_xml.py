"""Qwen XML calls (Qwen3.5, Qwen3.6, Qwen3-Coder, Nemotron 3 Nano, StepFun 3.5).

``<tool_call>\\n<function=NAME>\\n<parameter=P>\\nvalue\\n</parameter>\\n</function>\\n</tool_call>``.
Values are raw text (one newline on each side is the wire's, not the value's) typed by the
schema. A ``</tool_call>`` inside a parameter value does not end the call.

What Qwen3-Coder and Qwen3.5 also write, read with the tool's declared parameter names:

* function blocks without the ``<tool_call>`` opener (one, or a run of them separated by
  whitespace) closed by a stray ``</tool_call>``: one call per block;
* the same run without the stray close (Qwen3-Coder drops the opener and the close alike): the
  blocks are read one by one while each is written as the template writes it (at least one
  parameter, each ``</parameter>`` written, each value between newlines) and names a declared
  tool; the rest is text. So other families' ``<function=`` blocks stay theirs: Llama's JSON
  bodies, Seed-OSS's blocks (no newlines around values; a run followed by a closing tag such as
  ``</seed:tool_call>`` stood inside another element and is text, and a block without
  parameters has no Qwen-specific shape);
* a parameter whose ``</parameter>`` is missing: its value ends before the next
  ``<parameter=DECLARED>`` or before the ``</function>`` that ends the call; a close written
  amiss at the value's end (Qwen3.6: ``</parameter1>``, ``</parameter/>``,
  ``</parameter_function>``, ``</parameter`` cut short; sglang #27336, vLLM #55495) is that
  close, never the value's text; so is a tag named after the parameter (``Paris</city>``, plain
  XML's close) unless the value holds that name's opening tag too;
* a parameter's ``</parameter>`` written twice or more (Qwen3.6, llama-swap #856): the repeats,
  whitespace between, are dropped where the next ``<parameter=DECLARED>`` or ``</function>``
  follows them;
* a value holding ``</parameter>`` or ``</function>`` literally: a ``</parameter>`` closes the
  value only when the next ``<parameter=DECLARED>`` or ``</function>`` follows it, a
  ``</function>`` only when it ends the call (any parameter name counts for a tool that was not
  declared). A value may hold ``</tool_call><tool_call>`` literally: a ``</tool_call>`` inside a
  value ends the call only before the end of the reply or before the next call
  (``<function=``, alone or after ``<tool_call>``);
* Hermes' single calls, ``<tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>``, the
  wire of Qwen3 and Qwen2.5 before them, into which Qwen3.5 and Qwen3.6 stray now and then
  (mlx-swift-lm #529; the MLX and Swift servers' trackers): a ``<tool_call>`` whose body starts
  with ``{`` is read by Hermes' reader (``open_json.JsonTagFormat``), one object per tag, the
  closing tag implied only right after the JSON at the end of a reply, no fence, no list, its
  closing brackets mended as Hermes mends them (left out, or written once too often); the
  ``"name": "NAME"`` written as the XML wire's tag fused into one key, ``{"function=NAME",
  "arguments": {...}}`` (tetherto/qvac #2677), read where NAME is a declared tool. Any other
  body is the XML wire's; the two may alternate call by call;
* its only call written inside its thinking, the block closed right after it (vllm-mlx #433,
  LM Studio #2045): the call counts where it ends the block and no call follows the block
  (``Format.calls_in_reasoning_if_alone``);
* Qwen3.6's closing tags after the function block, ``</function>`` again and a stray
  ``</function_invocation>`` (ollama #16383, QwenLM/Qwen3.8 #178): dropped, inside a
  ``<tool_call>`` only;
* Qwen3.8's ``<parameter=NAME>`` where ``<function=NAME>`` belongs, inside a ``<tool_call>``,
  the rest as written (``</function>`` included; ds4 #1050, 5 of 98 calls in one session): read
  as the function's tag where NAME is a declared tool and only whitespace stands between the tag
  and the next ``<parameter=`` or ``</function>`` (a parameter's value would stand there);
* the same tag without the ``<tool_call>`` around it (Qwen3.6 27B behind an agent, one block or
  several in a row: q27 #24, from two clients): a bare block as above whose tag is
  ``<parameter=NAME>``, NAME a declared tool, the next ``<parameter=`` after whitespace only;
* the function's tag without its ``>`` (``<function=get_weather`` then a newline: Qwen3.6
  35B-A3B and its fine-tunes, mlx-lm #1811), inside a ``<tool_call>``: read where the name is
  a declared tool and only whitespace stands before the next ``<parameter=`` or ``</function>``;
* Step-3.5's tags as vLLM's step3p5 reader mends them: the function's tag without its ``=``
  (``<function execute_bash>``, ``<functionexecute_bash>``), the name a declared tool; a
  declared parameter's tag with its prefix doubled (``<parameter=parameter=-n>``) or its ``>``
  written as ``:`` or left out before the value's newline (``<parameter=-C:\n3``);
* two calls in a row without the first one's ``</tool_call>`` (``...</function>\n<tool_call>``,
  as vLLM's Qwen3 reader takes them): the ``</function>`` outside every value ends the call
  where the next ``<tool_call>`` follows it;
* Qwen3.6's name element and JSON arguments, ``<tool_call>\n<function>NAME</function>\n{...}\n
  </tool_call>`` (mlx-omni-server #126, the 35B-A3B 4-bit DWQ quant): read where NAME is a
  declared tool and the rest of the call is exactly one JSON object (its values typed as JSON).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from app.engine.formats.base import THINK, IncompleteCall, ParsedCall, RegionScanner, one_call, register
from app.engine.formats.jsonscan import loads_lenient
from app.engine.formats.open_json import JsonTagFormat
from app.engine.formats.sections import MarkerFinder, SkipValuesScanner, closed_body, raw_text, skip_ws
from app.engine.formats.xml_params import FUNCTION, PARAMETER, XmlParamsFormat, own_name_close
from app.json_schema import tool_schemas

__all__ = ["QwenXmlFormat", "parse_function_block"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
(P_OPEN, P_CLOSE), (F_OPEN, F_CLOSE) = PARAMETER, FUNCTION
THINK_CLOSE = THINK[1]
AMISS_CLOSE = P_CLOSE[:-1]  # "</parameter": a close written amiss begins so
_AMISS_TAIL = re.compile(r"[^<>\s]{0,24}>?")  # what may follow it: "1>", "/>", "_function>", ""
_LEFT_OPEN_NAME = re.compile(r"<function=([^<>=\s]+)\s")  # a function's tag without its ">"
ENCLOSED = "</"  # what a closing tag after a bare run starts with


def _name(s: str, i: int) -> tuple[str, int] | None:
    j = s.find(">", i)
    if j == -1:
        return None
    name = s[i:j]
    if not name or any(c.isspace() or c in "<>=\"'" for c in name):
        return None
    return name, j + 1


DOUBLED = "parameter="
# A value fused to its parameter's name, closed on the same line (Qwen3-Coder: OpenHands #10039)
_FUSED_VALUE = re.compile(r"[^\n<>]*</parameter>")


def _param_name(text: str, i: int, params: set[str] | None) -> tuple[str, int] | None:
    """The name of the parameter tag whose name starts at ``i`` (after ``<parameter=``) and where
    the tag ends: ``NAME>``; or, for a declared parameter, the tag as Step-3.5 writes it now and
    then (vLLM's step3p5 reader mends these, its examples grep's flags as parameters): the prefix
    doubled (``<parameter=parameter=-n>``) or the ``>`` written as ``:`` or left out before the
    value's newline (``<parameter=-C:\n3\n</parameter>``); or the name and a one-line value
    fused by ``=`` (``<parameter=command=str_replace</parameter>``: Qwen3-Coder, OpenHands
    #10039, Qwen3-Coder #457)."""
    got = _name(text, i)
    if not params or (got is not None and got[0] in params):
        return got
    j = i + len(DOUBLED) if text.startswith(DOUBLED, i) else i
    for name in params:
        if not text.startswith(name, j):
            continue
        k = j + len(name)
        if j != i and text.startswith(">", k):
            return name, k + 1
        if text.startswith(":\n", k):
            return name, k + 1  # the value starts at the newline, as ever
        if text.startswith("\n", k):
            return name, k
        if j == i and text.startswith("=", k) and _FUSED_VALUE.match(text, k + 1):
            return name, k + 1  # the name and the value fused: <parameter=command=ls</parameter>
    return got


def _known(text: str, i: int, params: set[str] | None) -> bool:
    """Whether ``<parameter=NAME>`` at ``i`` names a declared parameter (any name, undeclared)."""
    got = _param_name(text, i + len(P_OPEN), params)
    return got is not None and (params is None or got[0] in params)


def _marks(text: str) -> MarkerFinder:
    """The markers a value's end is looked for by (:func:`_value_end`), in ``text``."""
    return MarkerFinder(text, (P_CLOSE, P_OPEN, F_CLOSE))


def _value_end(text: str, i: int, params: set[str] | None, marks: MarkerFinder) -> tuple[int, int] | None:
    """Where the value starting at ``i`` ends: ``(end of the value, where reading goes on)``.

    A ``</parameter>`` is the value's close when the next ``<parameter=`` of a declared name or
    ``</function>`` follows it, or that after the same tag written again (Qwen3.6: reading goes
    on after the last one); an earlier one is the value's text. A run of them not so followed is
    the value's text at once (each would be followed by the same), so the walk stays linear.
    A value whose close is missing ends before the next declared ``<parameter=`` or before a
    ``</function>`` that ends the text. ``marks`` (:func:`_marks` of ``text``) finds the markers;
    one finder serves every value of a call and every call of a run, so that the walk stays
    linear however many parameters and calls the text holds.
    """
    j = i
    while True:
        got = marks.first(j)
        if got is None:
            return None
        q, m = got
        after = q + len(m)
        if m == P_CLOSE:
            k = skip_ws(text, after)
            while text.startswith(P_CLOSE, k):  # written again (Qwen3.6): the repeats are dropped
                after = k + len(P_CLOSE)
                k = skip_ws(text, after)
            if text.startswith(F_CLOSE, k) or (text.startswith(P_OPEN, k) and _known(text, k, params)):
                return q, after
        elif m == P_OPEN:
            if _known(text, q, params):
                return _amiss_close(text, i, q), q  # the close is missing before the next parameter
        elif skip_ws(text, after) == len(text):
            return _amiss_close(text, i, q), q  # the close is missing before </function>
        j = after


def _amiss_close(text: str, i: int, q: int) -> int:
    """Where a value starting at ``i`` whose close is missing before ``q`` ends: before a closing
    tag written amiss at its end (``</parameter1>``, ``</parameter/>``, ``</parameter_function>``,
    ``</parameter`` cut short: Qwen3.6, sglang #27336, vLLM #55495), whitespace after it aside;
    else at ``q``. One look back over the value: the walk stays linear."""
    end = _rskip_ws(text, q)
    k = text.rfind(AMISS_CLOSE, i, end)
    return k if k >= 0 and _AMISS_TAIL.fullmatch(text, k + len(AMISS_CLOSE), end) else q


def _read_block(
    text: str,
    i: int,
    schemas: dict[str, Any] | None,
    *,
    strict: bool = False,
    marks: MarkerFinder | None = None,
) -> tuple[str, dict[str, str], int] | None:
    """``<function=NAME> (<parameter=P>value</parameter>)* </function>`` at ``i`` (after
    whitespace): the name, the values and the index after ``</function>``. ``strict``: written as
    the template writes it, or None: at least one parameter, each ``</parameter>`` written and
    each value between newlines (``<parameter=K>\\nV\\n</parameter>``). ``marks``: the finder of
    ``text``'s markers (:func:`_marks`) a caller reading several blocks of it shares."""
    i = skip_ws(text, i)
    if not text.startswith(F_OPEN, i):
        return None
    if marks is None:
        marks = _marks(text)
    got = _name(text, i + len(F_OPEN))
    if got is None:
        return None
    name, i = got
    props = ((schemas or {}).get(name) or {}).get("properties") if schemas is not None else None
    params = set(props) if isinstance(props, dict) and props else None
    args: dict[str, str] = {}
    while True:
        i = skip_ws(text, i)
        if text.startswith(P_OPEN, i):
            got = _name(text, i + len(P_OPEN)) if strict else _param_name(text, i + len(P_OPEN), params)
            if got is None:
                return None
            pname, i = got
            end = _value_end(text, i, params, marks)
            if end is None or pname in args or (strict and end[1] - end[0] != len(P_CLOSE)):
                return None
            value = text[i : end[0]]
            if strict and not (len(value) >= 2 and value[0] == value[-1] == "\n"):
                return None
            if end[0] == end[1]:  # the close is missing: the value ran to the next tag
                value = own_name_close(value, pname)
            if value.startswith("\n"):
                value = value[1:]
            if value.endswith("\n"):
                value = value[:-1]
            args[pname] = value
            i = end[1]
        elif text.startswith(F_CLOSE, i) and (args or not strict):
            return name, args, i + len(F_CLOSE)
        else:
            return None


def _parameter_head(inner: str, schemas: dict[str, Any]) -> str | None:
    """A call's text with Qwen3.8's ``<parameter=NAME>`` where ``<function=NAME>`` belongs
    (ds4 #1050: 5 of 98 calls in one session) mended: NAME a declared tool, and nothing but
    whitespace between that tag and the next ``<parameter=`` or the ``</function>`` (a value
    would stand there). None when the call does not start so."""
    i = skip_ws(inner, 0)
    if not inner.startswith(P_OPEN, i):
        return None
    got = _name(inner, i + len(P_OPEN))
    if got is None or got[0] not in schemas:
        return None
    k = skip_ws(inner, got[1])
    if not inner.startswith((P_OPEN, F_CLOSE), k):
        return None
    return inner[:i] + F_OPEN + inner[i + len(P_OPEN) :]


ELEMENT = "<function>"
F_BARE = "<function"  # the function's tag without its "="


def _function_head(inner: str, schemas: dict[str, Any]) -> str | None:
    """A call's text whose function tag lost its ``=`` (``<function execute_bash>``,
    ``<functionexecute_bash>``: Step-3.5, as vLLM's step3p5 reader mends it) with the tag
    mended: the name a declared tool, whitespace only around it. None when it does not start so."""
    i = skip_ws(inner, 0)
    if not inner.startswith(F_BARE, i) or inner.startswith((F_OPEN, ELEMENT), i):
        return None
    j = i + len(F_BARE)
    end = inner.find(">", j)
    if end == -1 or inner[j:end].strip() not in schemas:
        return None
    return f"{inner[:i]}{F_OPEN}{inner[j:end].strip()}{inner[end:]}"


def _head_left_open(inner: str, schemas: dict[str, Any]) -> str | None:
    """A call's text whose function tag lost its ``>`` (``<function=get_weather`` then a newline:
    Qwen3.6 35B-A3B and its fine-tunes, mlx-lm #1811) with the tag mended: the name a declared
    tool, then whitespace only up to the next ``<parameter=`` or ``</function>``. None when it
    does not start so."""
    m = _LEFT_OPEN_NAME.match(inner, skip_ws(inner, 0))
    if m is None or m.group(1) not in schemas:
        return None
    k = m.end(1)
    if not inner.startswith((P_OPEN, F_CLOSE), skip_ws(inner, k)):
        return None
    return f"{inner[:k]}>{inner[k:]}"


def _element_call(inner: str, schemas: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A call's text written as Qwen3.6 writes it now and then (mlx-omni-server #126): the name in
    a ``<function>NAME</function>`` element, then the arguments as one JSON object, whitespace
    around. NAME must be a declared tool; anything else beside the object is not this call."""
    i = skip_ws(inner, 0)
    if not inner.startswith(ELEMENT, i):
        return None
    i += len(ELEMENT)
    end = inner.find(F_CLOSE, i)
    if end == -1 or inner[i:end] not in schemas:
        return None
    body = inner[end + len(F_CLOSE) :].strip()
    if body[:1] != "{":
        return None
    try:
        args = loads_lenient(body)
    except (ValueError, RecursionError):
        return None
    return (inner[i:end], args) if isinstance(args, dict) else None


INVOCATION_CLOSE = "</function_invocation>"


def _without_stray_closers(inner: str) -> str | None:
    """A call's text without the closing tags Qwen3.6 writes after its function block now and
    then (ollama #16383, QwenLM/Qwen3.8 #178): ``</function>`` again and ``</function_invocation>``
    (a wrapper of an earlier generation, never opened), whitespace between; one ``</function>``
    stays. None when nothing such ends it. One walk back from the end, copying nothing."""
    end = _rskip_ws(inner, len(inner))
    cut = False
    while True:
        if inner.endswith(INVOCATION_CLOSE, 0, end):
            end = _rskip_ws(inner, end - len(INVOCATION_CLOSE))
        elif inner.endswith(F_CLOSE, 0, end) and inner.endswith(
            F_CLOSE, 0, _rskip_ws(inner, end - len(F_CLOSE))
        ):
            end = _rskip_ws(inner, end - len(F_CLOSE))
        else:
            return inner[:end] if cut and inner.endswith(F_CLOSE, 0, end) else None
        cut = True


def _rskip_ws(text: str, end: int) -> int:
    """Where the text before ``end`` stops being whitespace, going back."""
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def parse_function_block(
    text: str, schemas: dict[str, Any] | None = None
) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``<function=NAME> (<parameter=P>value</parameter>)* </function>`` + whitespace.

    ``schemas`` (``app.json_schema.tool_schemas(tools)``) gives the declared parameter names, which decide
    where a value ends when its ``</parameter>`` is missing or written inside it (see
    :func:`_value_end`)."""
    got = _read_block(text, 0, schemas)
    if got is None or skip_ws(text, got[2]) != len(text):
        return None
    return got[0], got[1]


def _bare_run(
    text: str, schemas: dict[str, Any], *, cut: bool = False
) -> tuple[list[ParsedCall], str] | None:
    """Function blocks without ``<tool_call>``: one call per block.

    Closed by a stray ``</tool_call>`` (the last call's raw holds it): every block is a call.
    Otherwise (or when that reading fails) the blocks are read one by one while each is well
    formed and names a declared tool; what follows the last one read is left over (none when
    the run stood inside another element: the region ends in a closing tag's ``</``). ``cut``: the
    token limit cut the run, so its last complete block may have gone on (a stray close after
    it would be its raw): only blocks followed by another block count.
    """
    if not cut and text.endswith(CLOSE):
        got = _closed_run(text, schemas)
        if got is not None:
            return got
    elif text.endswith(ENCLOSED):
        return None  # the run stood inside another element (see _BareRun): text
    calls: list[ParsedCall] = []
    i = last = 0
    marks = _marks(text)
    while True:
        block = _read_block(text, i, schemas, strict=True, marks=marks)
        if block is None or block[0] not in schemas:
            break
        name, args, j = block
        if cut and not text.startswith(F_OPEN, skip_ws(text, j)):
            break
        calls.append(ParsedCall(name, dict(args), text[skip_ws(text, i) : j]))
        i = last = j
    return (calls, text[last:]) if calls else None


def _tool_head(body: str, schemas: dict[str, Any]) -> str | None:
    """The tool a bare ``<parameter=NAME>`` block calls (``body``: after ``<parameter=``): NAME a
    declared tool, the next ``<parameter=`` after whitespace only (a value would stand there), or
    None: such a tag is a parameter's, or text."""
    got = _name(body, 0)
    if got is None or got[0] not in schemas:
        return None
    return got[0] if body.startswith(P_OPEN, skip_ws(body, got[1])) else None


def _bare_parameter_head(
    body: str, schemas: dict[str, Any], *, cut: bool = False
) -> tuple[list[ParsedCall], str] | None:
    """A bare run whose first block opens with ``<parameter=NAME>`` for ``<function=NAME>`` (q27
    #24), read as the run of function blocks it stands for; the first call's raw is the text as
    the model wrote it."""
    if _tool_head(body, schemas) is None:
        return None
    got = _bare_run(F_OPEN + body, schemas, cut=cut)
    if got is None:
        return None
    calls, rest = got
    first = calls[0]
    calls[0] = replace(first, raw=P_OPEN + first.raw[len(F_OPEN) :])
    return calls, rest


def _closed_run(text: str, schemas: dict[str, Any]) -> tuple[list[ParsedCall], str] | None:
    """A run of function blocks closed by a stray ``</tool_call>``: one call per block."""
    end = len(text) - len(CLOSE)
    run = text[:end]
    marks = _marks(run)
    calls: list[ParsedCall] = []
    i = 0
    while True:
        got = _read_block(run, i, schemas, marks=marks)
        if got is None:
            return None
        name, args, j = got
        start = skip_ws(text, i)
        if skip_ws(text, j) >= end:
            calls.append(ParsedCall(name, dict(args), text[start:]))
            return calls, ""
        calls.append(ParsedCall(name, dict(args), text[start:j]))
        i = j


class _BareRun(RegionScanner):
    """Function blocks written without ``<tool_call>`` (Qwen3-Coder): from just after the first
    ``<function=``, blocks separated by whitespace, up to a stray ``</tool_call>`` (or where
    something else follows a block)."""

    def __init__(self) -> None:
        self.block = _block_scanner()
        self.after = False
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        while True:
            if not self.after:
                before = self.block.ops
                i, ended = self.block.scan_from(buf, final, i)
                self.ops += self.block.ops - before
                if not ended:
                    return i, False
                self.after = True
            k = self.skip_space(buf, i)
            if buf.startswith(CLOSE, k):
                return k + len(CLOSE), True
            if buf.startswith(F_OPEN, k):
                i = k + len(F_OPEN)
                self.block = _block_scanner()
                self.after = False
                continue
            rest = buf[k:]
            if (
                (not final or self.cut)
                and len(rest) < len(CLOSE)
                and (F_OPEN.startswith(rest) or CLOSE.startswith(rest) or THINK_CLOSE.startswith(rest))
            ):
                return i, False  # more may follow (cut by the token limit: it might have)
            if rest.startswith(ENCLOSED) and not rest.startswith(THINK_CLOSE):
                # Another element's closing tag follows: the blocks stood inside it (Seed-OSS's
                # <seed:tool_call>), they are not bare calls. The region takes the tag's "</"
                # so that the run reads as text.
                return k + len(ENCLOSED), True
            return i, True


class _CallScanner(SkipValuesScanner):
    """The region of a ``<tool_call>``: up to its ``</tool_call>`` outside every value. A
    ``</tool_call>`` inside a value ends the region (the value's close missing) only before the
    end of the reply or before the next call (``<function=``, alone or after ``<tool_call>``): a
    value may hold ``</tool_call><tool_call>`` literally. A ``</function>`` outside every value
    followed by the next ``<tool_call>`` ends the region (its ``</tool_call>`` left out)."""

    def __init__(self) -> None:
        super().__init__(
            CLOSE,
            P_OPEN,
            P_CLOSE,
            followers=(P_OPEN, F_CLOSE),
            reopen=(OPEN, F_OPEN),
            exit=(F_CLOSE, CLOSE),
            split=(F_CLOSE, OPEN),
        )

    def _follows(self, buf: str, j: int, wanted: tuple[str, ...], final: bool) -> bool | None:
        if wanted is not self.reopen:
            return super()._follows(buf, j, wanted, final)
        k = self.skip_space(buf, j)
        if k == len(buf) or not buf.startswith(OPEN, k):
            return super()._follows(buf, j, wanted, final)
        k = self.skip_space(buf, k + len(OPEN))
        rest = buf[k : k + len(F_OPEN)]
        if rest == F_OPEN:
            return True
        if not final and len(rest) < len(F_OPEN) and F_OPEN.startswith(rest):
            return None
        return False


# Hermes' single calls in the same tags (the reader ``hermes`` is built on), without its repairs.
_HERMES = JsonTagFormat("qwen-xml-hermes", "", (OPEN,), close=CLOSE, fences=False, mend_closers=True)


def _json_body(body: str) -> bool:
    """Whether a ``<tool_call>`` region's text (after the tag) is Hermes' JSON: ``{`` first."""
    return body.lstrip()[:1] == "{"


_FUSED = '"function='  # the XML wire's function tag fused into the JSON's first key


def _fused_name(
    opener: str, body: str, schemas: dict[str, Any], **region: Any
) -> tuple[list[ParsedCall], str] | None:
    """A Hermes call whose ``"name": "NAME"`` is written as the XML wire's tag fused into one key,
    ``{"function=NAME", "arguments": {...}}`` (Qwen3.5 and 3.6 now and then: tetherto/qvac #2677):
    read as the call to NAME where NAME is a declared tool and the rest is Hermes' call; None
    otherwise. The call's text is the region as written."""
    i = skip_ws(body, 0) + 1  # after the "{"
    i = skip_ws(body, i)
    if not body.startswith(_FUSED, i):
        return None
    end = body.find('"', i + len(_FUSED))
    comma = skip_ws(body, end + 1) if end != -1 else -1
    name = body[i + len(_FUSED) : end]
    if end == -1 or name not in schemas or body[comma : comma + 1] != ",":
        return None
    mended = body[:i] + f'"name": "{name}"' + body[end + 1 :]
    got = _HERMES.parse_region(opener, mended, **region)
    if got is None or len(got[0]) != 1:
        return None
    (call,), rest = got
    return [replace(call, raw=opener + body[: len(body) - len(rest)])], rest


class _EitherScanner(RegionScanner):
    """The region of a ``<tool_call>``: whitespace, then Hermes' JSON object (``{`` first) or the
    XML wire (anything else), each scanned by its own scanner from there."""

    def __init__(self) -> None:
        self.inner: RegionScanner | None = None

    @property
    def state(self) -> str:  # type: ignore[override]
        return "" if self.inner is None else self.inner.state

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        start = 0
        if self.inner is None:
            start = self.skip_space(buf, 0)
            if start == len(buf) and not final:
                return start, False  # only whitespace yet: taken, the body's first character decides
            self.inner = _HERMES.region_scanner(OPEN) if buf[start : start + 1] == "{" else _CallScanner()
        inner = self.inner
        inner.cut = self.cut
        before = inner.ops
        consumed, ended = inner.scan(buf[start:] if start else buf, final)
        self.ops += inner.ops - before
        return start + consumed, ended


def _block_scanner() -> SkipValuesScanner:
    return SkipValuesScanner(F_CLOSE, P_OPEN, P_CLOSE, followers=(P_OPEN, F_CLOSE), reopen=(F_OPEN, CLOSE))


class QwenXmlFormat(XmlParamsFormat):
    name = "qwen-xml"
    label = "Qwen XML (Qwen3.5, Qwen3.6, Qwen3-Coder, Nemotron 3 Nano)"
    openers = (OPEN, F_OPEN, P_OPEN)
    non_marker_openers = (F_OPEN, P_OPEN)  # bare <function=...> and <parameter=NAME> blocks: deviations
    sep = "\n"
    tail = f"{F_CLOSE}\n{CLOSE}"
    param_close = P_CLOSE
    value_newlines = True
    calls_in_reasoning_if_alone = True  # Qwen3.5 / 3.6 close <think> after their only call

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener in (F_OPEN, P_OPEN):
            return _BareRun()
        return _EitherScanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        schemas = tool_schemas(tools)
        if opener == F_OPEN:
            return _bare_run(F_OPEN + body, schemas, cut=at_end and truncated)
        if opener == P_OPEN:
            return _bare_parameter_head(body, schemas, cut=at_end and truncated)
        if _json_body(body):
            got = _HERMES.parse_region(opener, body, at_end=at_end, truncated=truncated, tools=tools)
            if got is None:
                got = _fused_name(opener, body, schemas, at_end=at_end, truncated=truncated, tools=tools)
            if got is None:
                return None
            calls, rest = got  # JSON values: typed as JSON, not as the XML wire's text
            return [replace(c, raw_values=False) for c in calls], rest
        if at_end and truncated:
            return None  # the scanner did not close the region before the cut: an incomplete call
        inner = closed_body(body, CLOSE, last=F_CLOSE, at_end=at_end, truncated=truncated)
        if inner is None and not at_end and body.endswith(F_CLOSE):
            inner = body  # the scanner ended it before the next <tool_call>: its close left out
        if inner is None:
            return None
        if (element := one_call(opener, body, _element_call(inner, schemas))) is not None:
            return [replace(c, raw_values=False) for c in element[0]], ""  # JSON values
        inner = (
            _parameter_head(inner, schemas)
            or _function_head(inner, schemas)
            or _head_left_open(inner, schemas)
            or inner
        )
        got = parse_function_block(inner, schemas)
        if got is None and (trimmed := _without_stray_closers(inner)) is not None:
            got = parse_function_block(trimmed, schemas)
        return one_call(opener, body, got)

    def cut_call(self, opener: str, body: str, tools: list[dict[str, Any]] | None) -> IncompleteCall | None:
        if opener == P_OPEN:  # a bare <parameter=NAME> is a call only in a block's shape
            name = _tool_head(body, tool_schemas(tools))
            return None if name is None else IncompleteCall(opener + body, name, "truncated")
        return super().cut_call(opener, body, tools)

    def call_name(self, raw: str) -> str | None:
        m = _LEFT_OPEN_NAME.search(raw)  # the function's tag cut after it lost its ">"
        return super().call_name(raw) or (m.group(1) if m else None)

    def head(self, name: str) -> str:
        return f"{OPEN}\n{F_OPEN}{name}>\n"

    def param_head(self, key: str) -> str:
        return f"{P_OPEN}{key}>"

    def name_ok(self, name: str) -> bool:
        return _name(name + ">", 0) is not None

    def key_ok(self, key: str) -> bool:
        return self.name_ok(key)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = "".join(f"<parameter={k}>\n{raw_text(v)}\n</parameter>\n" for k, v in arguments.items())
        return f"{self.head(name)}{params}{F_CLOSE}\n{CLOSE}"


register(QwenXmlFormat())
