"""Qwen XML calls (Qwen3.5, Qwen3.6, Qwen3-Coder, Nemotron 3 Nano, StepFun 3.5).

``<tool_call>\\n<function=NAME>\\n<parameter=P>\\nvalue\\n</parameter>\\n</function>\\n</tool_call>``.
Values are raw text (one newline on each side is the wire's, not the value's) typed by the
schema. A ``</tool_call>`` inside a parameter value does not end the call.

What Qwen3-Coder and Qwen3.5 also write, read with the tool's declared parameter names:

* function blocks without the ``<tool_call>`` opener (one, or a run of them separated by
  whitespace) closed by a stray ``</tool_call>``: one call per block (a run without that stray
  close is text, so other families' ``<function=`` blocks stay theirs);
* a parameter whose ``</parameter>`` is missing: its value ends before the next
  ``<parameter=DECLARED>`` or before the ``</function>`` that ends the call;
* a value holding ``</parameter>`` or ``</function>`` literally: a ``</parameter>`` closes the
  value only when the next ``<parameter=DECLARED>`` or ``</function>`` follows it, a
  ``</function>`` only when it ends the call (any parameter name counts for a tool that was not
  declared).
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import ParsedCall, RegionScanner, one_call, register
from app.engine.formats.sections import SkipValuesScanner, closed_body, raw_text, skip_ws
from app.engine.formats.xml_params import XmlParamsFormat
from app.json_schema import tool_schemas

__all__ = ["QwenXmlFormat", "parse_function_block"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
P_OPEN = "<parameter="
P_CLOSE = "</parameter>"
F_OPEN = "<function="
F_CLOSE = "</function>"


def _name(s: str, i: int) -> tuple[str, int] | None:
    j = s.find(">", i)
    if j == -1:
        return None
    name = s[i:j]
    if not name or any(c.isspace() or c in "<>=\"'" for c in name):
        return None
    return name, j + 1


def _known(text: str, i: int, params: set[str] | None) -> bool:
    """Whether ``<parameter=NAME>`` at ``i`` names a declared parameter (any name, undeclared)."""
    got = _name(text, i + len(P_OPEN))
    return got is not None and (params is None or got[0] in params)


def _value_end(text: str, i: int, params: set[str] | None) -> tuple[int, int] | None:
    """Where the value starting at ``i`` ends: ``(end of the value, where reading goes on)``.

    A ``</parameter>`` is the value's close when the next ``<parameter=`` of a declared name or
    ``</function>`` follows it; an earlier one is the value's text. A value whose close is
    missing ends before the next declared ``<parameter=`` or before a ``</function>`` that ends
    the text.
    """
    j = i
    while True:
        cands = [(text.find(m, j), m) for m in (P_CLOSE, P_OPEN, F_CLOSE)]
        cands = [(q, m) for q, m in cands if q != -1]
        if not cands:
            return None
        q, m = min(cands)
        after = q + len(m)
        if m == P_CLOSE:
            k = skip_ws(text, after)
            if text.startswith(F_CLOSE, k) or (text.startswith(P_OPEN, k) and _known(text, k, params)):
                return q, after
        elif m == P_OPEN:
            if _known(text, q, params):
                return q, q  # the close is missing before the next parameter
        elif skip_ws(text, after) == len(text):
            return q, q  # the close is missing before </function>
        j = after


def _read_block(text: str, i: int, schemas: dict[str, Any] | None) -> tuple[str, dict[str, str], int] | None:
    """``<function=NAME> (<parameter=P>value</parameter>)* </function>`` at ``i`` (after
    whitespace): the name, the values and the index after ``</function>``."""
    i = skip_ws(text, i)
    if not text.startswith(F_OPEN, i):
        return None
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
            got = _name(text, i + len(P_OPEN))
            if got is None:
                return None
            pname, i = got
            end = _value_end(text, i, params)
            if end is None or pname in args:
                return None
            value = text[i : end[0]]
            if value.startswith("\n"):
                value = value[1:]
            if value.endswith("\n"):
                value = value[:-1]
            args[pname] = value
            i = end[1]
        elif text.startswith(F_CLOSE, i):
            return name, args, i + len(F_CLOSE)
        else:
            return None


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


def _bare_run(text: str, schemas: dict[str, Any]) -> tuple[list[ParsedCall], str] | None:
    """Function blocks without ``<tool_call>``, closed by a stray ``</tool_call>`` (the last
    call's raw holds it): one call per block."""
    if not text.endswith(CLOSE):
        return None
    end = len(text) - len(CLOSE)
    calls: list[ParsedCall] = []
    i = 0
    while True:
        got = _read_block(text[:end], i, schemas)
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
                consumed, ended = self.block.scan(buf[i:], final)
                self.ops += self.block.ops - before
                i += consumed
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
            if not final and len(rest) < len(CLOSE) and (F_OPEN.startswith(rest) or CLOSE.startswith(rest)):
                return i, False
            return i, True


def _block_scanner() -> SkipValuesScanner:
    return SkipValuesScanner(F_CLOSE, P_OPEN, P_CLOSE, followers=(P_OPEN, F_CLOSE), reopen=(F_OPEN, CLOSE))


class QwenXmlFormat(XmlParamsFormat):
    name = "qwen-xml"
    label = "Qwen XML (Qwen3.5, Qwen3.6, Qwen3-Coder, Nemotron 3 Nano)"
    openers = (OPEN, F_OPEN)
    sep = "\n"
    tail = f"{F_CLOSE}\n{CLOSE}"
    param_close = P_CLOSE
    value_newlines = True

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener == F_OPEN:
            return _BareRun()
        return SkipValuesScanner(
            CLOSE, P_OPEN, P_CLOSE, followers=(P_OPEN, F_CLOSE), reopen=(OPEN, F_OPEN), exit=(F_CLOSE, CLOSE)
        )

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if at_end and truncated:
            return None  # the scanner did not close the region before the cut: an incomplete call
        schemas = tool_schemas(tools)
        if opener == F_OPEN:
            return _bare_run(F_OPEN + body, schemas)
        inner = closed_body(body, CLOSE, last=F_CLOSE, at_end=at_end, truncated=truncated)
        return one_call(opener, body, None if inner is None else parse_function_block(inner, schemas))

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
