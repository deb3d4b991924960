"""Seed-OSS XML calls (ByteDance Seed-OSS-36B).

``<seed:tool_call>\\n<function=NAME>\\n<parameter=K>V</parameter>\\n</function>\\n</seed:tool_call>``,
one function per block, any number of blocks per reply, after an optional
``<seed:think>...</seed:think>`` block (its ``<seed:cot_budget_reflect>`` notes are reasoning
text). The function block is Qwen XML's (:func:`app.engine.formats.qwen_xml.parse_function_block`):
values are raw text typed by the schema, and a ``</seed:tool_call>`` inside a value does not end
the call. A missing ``</seed:tool_call>`` is accepted only when the reply ended normally right
after ``</function>``.
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.qwen_xml import parse_function_block
from app.engine.formats.sections import SkipValuesScanner, raw_text

__all__ = ["SeedOssFormat"]

OPEN = "<seed:tool_call>"
CLOSE = "</seed:tool_call>"
P_OPEN = "<parameter="
P_CLOSE = "</parameter>"
F_CLOSE = "</function>"


class SeedOssFormat(Format):
    name = "seed-oss"
    label = "Seed-OSS XML (ByteDance Seed-OSS)"
    detail = "<seed:tool_call><function=NAME><parameter=K>V</parameter></function></seed:tool_call>"
    openers = (OPEN,)
    start_only = False
    reasoning = ("<seed:think>", "</seed:think>")
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

        return raw_params(ctx, self, tools, forced, parallel, opener=OPEN, section=(OPEN + "\n", CLOSE),
                          head=lambda n: f"<function={n}>\n", tail=f"{F_CLOSE}\n",
                          param=lambda c, k, s, w: f"{c.lit(P_OPEN + k + '>')} {typed(c, s, P_CLOSE, w)} "
                          f"{c.lit(chr(10))}",
                          name_ok=lambda n: bool(n) and not set(n) & set(" \t\n<>=\"'"),
                          key_ok=lambda k: bool(k) and not set(k) & set(" \t\n<>=\"'"))

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = "".join(f"{P_OPEN}{k}>{raw_text(v)}{P_CLOSE}\n" for k, v in arguments.items())
        return f"{OPEN}\n<function={name}>\n{params}{F_CLOSE}\n{CLOSE}"


register(SeedOssFormat())
