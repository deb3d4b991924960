"""Seed-OSS XML calls (ByteDance Seed-OSS-36B).

``<seed:tool_call>\\n<function=NAME>\\n<parameter=K>V</parameter>\\n</function>\\n</seed:tool_call>``,
one function per block, any number of blocks per reply, after an optional
``<seed:think>...</seed:think>`` block (its ``<seed:cot_budget_reflect>`` notes are reasoning
text). The function block is shaped like Qwen XML's, but a value is exactly the text between its
tags (the template writes no newline around it): raw text typed by the schema; a
``</seed:tool_call>`` inside a value does not end the call, and a ``</parameter>`` inside it
closes it only where the next ``<parameter=`` or the ``</function>`` follows. A missing ``</seed:tool_call>`` is accepted only when the reply ended normally right
after ``</function>``.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import one_call, register
from app.engine.formats.sections import closed_body, skip_ws
from app.engine.formats.xml_params import (
    FUNCTION,
    PARAMETER,
    XmlParamsFormat,
    params_text,
    read_params,
    tag_name,
)

__all__ = ["SeedOssFormat", "parse_seed_function"]

OPEN = "<seed:tool_call>"
CLOSE = "</seed:tool_call>"
(P_OPEN, P_CLOSE), (F_OPEN, F_CLOSE) = PARAMETER, FUNCTION
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


class SeedOssFormat(XmlParamsFormat):
    name = "seed-oss"
    label = "Seed-OSS XML (ByteDance Seed-OSS)"
    openers = (OPEN,)
    reasoning = ("<seed:think>", "</seed:think>")
    section = (OPEN + "\n", CLOSE)
    tail = f"{F_CLOSE}\n"
    param_open, param_close = P_OPEN, P_CLOSE

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = closed_body(body, CLOSE, last=F_CLOSE, at_end=at_end, truncated=truncated)
        return one_call(opener, body, None if inner is None else parse_seed_function(inner))

    def head(self, name: str) -> str:
        return f"{F_OPEN}{name}>\n"

    def param_head(self, key: str) -> str:
        return f"{P_OPEN}{key}>"

    def name_ok(self, name: str) -> bool:
        return bool(_NAME.fullmatch(name))

    def key_ok(self, key: str) -> bool:
        return self.name_ok(key)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = params_text(arguments, param=P_OPEN, key_end=">", param_end=P_CLOSE)
        return f"{OPEN}\n{self.head(name)}{params}{F_CLOSE}\n{CLOSE}"

    def grammar_wire(self, ctx):
        # one function per block, as the parser reads it: each call is a block of its own
        from functools import partial

        from app.engine.grammar.wires import raw_params

        return partial(
            raw_params,
            opener=OPEN,
            sep="\n",
            head=lambda name: f"{OPEN}\n{self.head(name)}",
            tail=f"{self.tail}{CLOSE}",
            param=self.param,
            name_ok=self.name_ok,
            key_ok=self.key_ok,
        )


register(SeedOssFormat())
