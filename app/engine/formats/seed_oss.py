"""Seed-OSS XML calls (ByteDance Seed-OSS-36B).

``<seed:tool_call>\\n<function=NAME>\\n<parameter=K>V</parameter>\\n</function>\\n</seed:tool_call>``,
one function per block, any number of blocks per reply, after an optional
``<seed:think>...</seed:think>`` block (its ``<seed:cot_budget_reflect>`` notes are reasoning
text). The function block is shaped like Qwen XML's, but a value is exactly the text between its
tags (the template writes no newline around it): raw text typed by the schema; a
``</seed:tool_call>`` inside a value does not end the call. A missing ``</seed:tool_call>`` is accepted only when the reply ended normally right
after ``</function>``.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.sections import SkipValuesScanner, closed_body, skip_ws
from app.engine.formats.xml_params import params_text, read_params, tag_name

__all__ = ["SeedOssFormat", "parse_seed_function"]

OPEN = "<seed:tool_call>"
CLOSE = "</seed:tool_call>"
P_OPEN = "<parameter="
P_CLOSE = "</parameter>"
F_OPEN = "<function="
F_CLOSE = "</function>"
_NAME = re.compile(r"[^\s<>=\"']+")


def parse_seed_function(text: str) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``<function=NAME> (<parameter=K>V</parameter>)* </function>`` with whitespace
    between the tags; each value exactly as written."""
    i = skip_ws(text, 0)
    if not text.startswith(F_OPEN, i):
        return None
    got = tag_name(text, i + len(F_OPEN), _NAME, ">")
    if got is None:
        return None
    name, i = got
    params = read_params(text, i, param=P_OPEN, param_end=P_CLOSE, close=F_CLOSE, key=_NAME, key_end=">")
    if params is None:
        return None
    args, i = params
    return (name, args) if skip_ws(text, i) == len(text) else None


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
        inner = closed_body(body, CLOSE, last=F_CLOSE, at_end=at_end, truncated=truncated)
        if inner is None:
            return None
        got = parse_seed_function(inner)
        if got is None:
            return None
        name, args = got
        return [ParsedCall(name, dict(args), opener + body)], ""

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import raw_params, typed

        return raw_params(
            ctx,
            self,
            tools,
            forced,
            parallel,
            opener=OPEN,
            section=(OPEN + "\n", CLOSE),
            head=lambda n: f"<function={n}>\n",
            tail=f"{F_CLOSE}\n",
            param=lambda c, k, s, w: f"{c.lit(P_OPEN + k + '>')} {typed(c, s, P_CLOSE, w)} {c.lit(chr(10))}",
            name_ok=lambda n: bool(n) and not set(n) & set(" \t\n<>=\"'"),
            key_ok=lambda k: bool(k) and not set(k) & set(" \t\n<>=\"'"),
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = params_text(arguments, param=P_OPEN, key_end=">", param_end=P_CLOSE)
        return f"{OPEN}\n<function={name}>\n{params}{F_CLOSE}\n{CLOSE}"


register(SeedOssFormat())
