"""Moonshot Kimi's two tool-call grammars, after an optional ``<think>...</think>`` block.

``kimi-k2`` (Kimi K2 Instruct, K2 Thinking)::

    <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{json}
    <|tool_call_end|><|tool_call_begin|>functions.NAME:1<|tool_call_argument_begin|>{json}<|tool_call_end|>
    <|tool_calls_section_end|>

The call id ``functions.NAME:IDX`` names the tool (the ``functions.`` prefix and the index are
accepted missing). The section is read by DeepSeek's JSON-aware :class:`JsonCallSection`; a
section missing only its end marker is accepted when the reply ended normally right after a
complete call. A reply cut (``truncated``) inside the section keeps its complete calls; the cut
remainder is text, byte for byte.

``kimi-k3``: Kimi K3 writes each message as a frame ``<|open|>HEADER<|sep|>BODY<|close|>``.
A tool call is a frame whose header is ``call tool="NAME"`` and whose body is a sequence of
typed argument frames (whitespace between frames is allowed)::

    <|open|>call tool="get_weather"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Paris<|close|>
    <|open|>argument key="days" type="integer"<|sep|>3<|close|>
    <|close|>

Our reading of the format (no official template ships with the fixtures): ``type`` is one of
``string``, ``integer``, ``number``, ``boolean``, ``null``, ``object``, ``array``. A ``string``
value is the raw text between ``<|sep|>`` and ``<|close|>`` exactly as written (whitespace is
significant, nothing is unescaped); any other type is JSON (an object/array value is scanned
JSON-aware, so ``<|close|>`` inside its strings does not end it; a value that is not valid JSON
is kept as text for the schema to type). A call without arguments is
``<|open|>call tool="NAME"<|sep|><|close|>``; several calls are consecutive frames. Frames of
any other kind are text.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.deepseek import NAME, THINK, JsonCallSection, read_json_section
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.schema import json_type
from app.engine.formats.sections import SectionScanner, first_marker, json_text, raw_text

__all__ = ["K3Scanner", "KimiK2Format", "KimiK3Format"]

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
CALL_END = "<|tool_call_end|>"
ARG_BEGIN = "<|tool_call_argument_begin|>"

_K2_HEADER = re.compile(r"\s*(?:functions\.)?(" + NAME + r"?)(?::\d+)?\s*" + re.escape(ARG_BEGIN) + r"\s*")


class KimiK2Format(Format):
    name = "kimi-k2"
    label = "Kimi K2 (sectioned JSON calls)"
    detail = "<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}<|tool_call_end|>"
    openers = (SECTION_BEGIN,)
    start_only = False
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonCallSection(CALL_BEGIN, CALL_END, SECTION_END)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        return read_json_section(body, call_begin=CALL_BEGIN, call_end=CALL_END, section_end=SECTION_END,
                                 at_end=at_end, truncated=truncated, header=_K2_HEADER, fence_in_header=False,
                                 implied_end=True)

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_section

        return json_section(ctx, self, tools, forced, parallel, section=(SECTION_BEGIN, SECTION_END),
                            head=lambda n: f"{CALL_BEGIN}functions.{n}", index=(":", ARG_BEGIN), tail=CALL_END)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return (f"{SECTION_BEGIN}{CALL_BEGIN}functions.{name}:0{ARG_BEGIN}{json_text(dict(arguments))}"
                f"{CALL_END}{SECTION_END}")


# -- Kimi K3 -------------------------------------------------------------------------------------

OPEN = "<|open|>"
CLOSE = "<|close|>"
SEP = "<|sep|>"
K3_OPENER = OPEN + "call"
ARG_OPEN = OPEN + "argument"
K3_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")

_CALL_HEAD = re.compile(r'\s+tool="(' + NAME + r')"\s*')
_ARG_HEAD = re.compile(r'\s+key="([^"<>|]+)"\s+type="(' + "|".join(K3_TYPES) + r')"\s*')


class K3Scanner(SectionScanner):
    """Follows ``HEAD SEP (ws ARG_OPEN HEAD SEP value CLOSE)* ws CLOSE`` after ``<|open|>call``.

    Records the tool name and ``(key, type, value)`` arguments; on anything unexpected sets
    ``bad`` and ends the region at the next ``<|close|>``.
    """

    def __init__(self) -> None:
        super().__init__("head")
        self.name = ""
        self.args: list[tuple[str, str, str]] = []
        self.key = self.type = ""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            if st in ("head", "arg_head"):
                pos, m, safe = first_marker(buf, (SEP, OPEN, CLOSE), i, final)
                self.ops += (safe if pos == -1 else pos) - i + 1
                if pos == -1:
                    end = n if final else safe
                    self.parts.append(buf[i:end])
                    return self._ret(end, False)
                head = "".join(self.parts) + buf[i:pos]
                self.parts = []
                if m != SEP:
                    self._fail()
                    i = pos
                    continue
                i = pos + len(SEP)
                hm = (_CALL_HEAD if st == "head" else _ARG_HEAD).fullmatch(head)
                if hm is None:
                    self._fail()
                    continue
                if st == "head":
                    self.name = hm.group(1)
                    self.state = "between"
                else:
                    self.key, self.type = hm.group(1), hm.group(2)
                    self.state = "value_json" if self.type in ("object", "array") else "value"
                continue
            if st == "between":
                i, hit = self._expect(buf, i, (CLOSE, ARG_OPEN), final)
                if hit is None:
                    return self._ret(i, False)
                if hit == CLOSE:
                    self.state = "done"
                    return self._ret(i + len(CLOSE), True)
                if hit == ARG_OPEN:
                    i += len(ARG_OPEN)
                    self.state = "arg_head"
                else:
                    self._fail()
                continue
            if st in self.VALUE_STATES:
                i, value, wait = self._value_step(buf, i, CLOSE, final)
                if wait:
                    return self._ret(i, False)
                if value is not None:
                    self.args.append((self.key, self.type, value))
                    self.state = "between"
                continue
            return self._seek(buf, i, CLOSE, final)  # the region ends at the next <|close|>
        return self._ret(n, False)


def _k3_value(value: str, typ: str) -> Any:
    if typ == "string":
        return value
    ok, v = loads_repaired(value.strip())
    return v if ok else value


class KimiK3Format(Format):
    name = "kimi-k3"
    label = "Kimi K3 (typed call frames)"
    detail = '<|open|>call tool="NAME"<|sep|><|open|>argument key="K" type="T"<|sep|>V<|close|><|close|>'
    openers = (K3_OPENER,)
    start_only = False
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return K3Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        sc = K3Scanner()
        consumed, ended = sc.scan(body, True)
        if sc.bad or not ended or consumed != len(body):
            return None
        args: dict[str, Any] = {}
        for key, typ, value in sc.args:
            if key in args:
                return None  # the same argument twice: not a call we can trust
            args[key] = _k3_value(value, typ)
        return [ParsedCall(sc.name, args, opener + body)], ""

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import k3_param, raw_params

        return raw_params(ctx, self, tools, forced, parallel, opener=K3_OPENER, sep="\n",
                          head=lambda n: f'{K3_OPENER} tool="{n}"{SEP}\n', tail=CLOSE,
                          param=lambda c, k, s, w: k3_param(c, k, s, w, open=ARG_OPEN, sep=SEP, close=CLOSE),
                          name_ok=lambda n: bool(re.fullmatch(NAME, n)), key_ok=lambda k: not set(k) & set('"<>|'))

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        frames = "".join(f'{ARG_OPEN} key="{k}" type="{json_type(v) or "object"}"{SEP}{raw_text(v)}{CLOSE}\n'
                         for k, v in arguments.items())
        return f'{K3_OPENER} tool="{name}"{SEP}\n{frames}{CLOSE}'


register(KimiK2Format())
register(KimiK3Format())
