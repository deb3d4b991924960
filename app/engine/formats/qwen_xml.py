"""Qwen XML calls (Qwen3.5, Qwen3.6, Qwen3-Coder, Nemotron 3 Nano, StepFun 3.5).

``<tool_call>\\n<function=NAME>\\n<parameter=P>\\nvalue\\n</parameter>\\n</function>\\n</tool_call>``.
Values are raw text (one newline on each side is the wire's, not the value's) typed by the
schema. A ``</tool_call>`` inside a parameter value does not end the call.
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.sections import SkipValuesScanner, raw_text, skip_ws

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


def parse_function_block(text: str) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``<function=NAME> (<parameter=P>value</parameter>)* </function>`` + whitespace."""
    i = skip_ws(text, 0)
    if not text.startswith(F_OPEN, i):
        return None
    got = _name(text, i + len(F_OPEN))
    if got is None:
        return None
    name, i = got
    args: dict[str, str] = {}
    while True:
        i = skip_ws(text, i)
        if text.startswith(P_OPEN, i):
            got = _name(text, i + len(P_OPEN))
            if got is None:
                return None
            pname, i = got
            end = text.find(P_CLOSE, i)
            if end == -1 or pname in args:
                return None
            value = text[i:end]
            if value.startswith("\n"):
                value = value[1:]
            if value.endswith("\n"):
                value = value[:-1]
            args[pname] = value
            i = end + len(P_CLOSE)
        elif text.startswith(F_CLOSE, i):
            i = skip_ws(text, i + len(F_CLOSE))
            return (name, args) if i == len(text) else None
        else:
            return None


class QwenXmlFormat(Format):
    name = "qwen-xml"
    label = "Qwen XML (Qwen3.5, Qwen3.6, Qwen3-Coder, Nemotron 3 Nano)"
    detail = "<tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>"
    openers = (OPEN,)
    start_only = False
    reasoning = ("<think>", "</think>")
    raw_values = True

    def region_scanner(self, opener: str) -> RegionScanner:
        return SkipValuesScanner(CLOSE, P_OPEN, P_CLOSE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if body.endswith(CLOSE):
            inner = body[: -len(CLOSE)]
        elif at_end and not truncated and body.rstrip().endswith(F_CLOSE):
            inner = body  # the reply ended right after </function>: the closing tag is implied
        else:
            return None
        got = parse_function_block(inner)
        if got is None:
            return None
        name, args = got
        return [ParsedCall(name, dict(args), opener + body)], ""

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import raw_params, typed

        return raw_params(ctx, self, tools, forced, parallel, opener=OPEN, sep="\n",
                          head=lambda n: f"{OPEN}\n{F_OPEN}{n}>\n", tail=f"{F_CLOSE}\n{CLOSE}",
                          param=lambda c, k, s, w: f"{c.lit(P_OPEN + k + '>')} "
                          f"{typed(c, s, P_CLOSE, w, lead=chr(10), trail=chr(10))} {c.lit(chr(10))}",
                          name_ok=lambda n: _name(n + ">", 0) is not None,
                          key_ok=lambda k: _name(k + ">", 0) is not None)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = "".join(f"<parameter={k}>\n{raw_text(v)}\n</parameter>\n" for k, v in arguments.items())
        return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


register(QwenXmlFormat())
