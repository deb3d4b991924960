"""Mistral calls, every tokenizer generation.

* v3 (Mistral 7B v0.3, Nemo): ``[TOOL_CALLS][{"name": NAME, "arguments": {...}, "id": ID}, ...]``;
  also as a Python literal, single quotes and ``True``/``None`` (quantised 7B v0.3, Small 3.2:
  ollama #5284, vLLM #20028), read without evaluating anything
* v11+ (Small 3.2, Devstral, Ministral 3, Magistral): ``[TOOL_CALLS]NAME[ARGS]{...}``, with an
  optional ``[CALL_ID]ID`` before ``[ARGS]``; one ``[TOOL_CALLS]`` per call.
* v11+ as servers that decode without control tokens hand it on (vLLM's Mistral tokenizer drops
  ``[ARGS]``; its own parser reads what is left): ``[TOOL_CALLS]NAME{...}``, the JSON object
  right after the name (no call id then: ``[CALL_ID]`` is dropped alike).
* Reasoning: ``[THINK]...[/THINK]``, or ``<think>...</think>`` as some Mistral-derived models
  write it. Ministral 3's only call written inside ``[THINK]``, the block closed right after it
  (llama.cpp #29248), counts where no call follows the block (``calls_in_reasoning_if_alone``).
* A reply that stops right after ``[TOOL_CALLS]`` (nothing but whitespace after it) has no call,
  and the marker does not reach content.

The model's own call id is kept. When a reply is cut inside an array, its complete calls are
kept and the rest is text.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.engine.formats.base import THINK, Format, JsonStateScanner, ParsedCall, RegionScanner, register
from app.engine.formats.jsonscan import JsonScanner, loads_repaired, name_arguments
from app.engine.formats.pycalls import read_py_literal
from app.engine.formats.sections import json_text

__all__ = ["MistralFormat"]

OPEN = "[TOOL_CALLS]"
ARGS = "[ARGS]"
CALL_ID = "[CALL_ID]"
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\-]")
_ID_CHARS = re.compile(r"[A-Za-z0-9_\-]")
_CUT_NAME = re.compile(r"\[TOOL_CALLS\]\s*([A-Za-z0-9_.\-]+)[\[{]")
_NAMED = re.compile(
    r"\A([A-Za-z0-9_.\-]+)(?:(?:\[CALL_ID\]([A-Za-z0-9_\-]+))?\[ARGS\]\s*|(?=\{))(\{.*\})\Z", re.S
)


class _Scanner(JsonStateScanner):
    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            c = buf[i]
            self.ops += 1
            if st == "json":
                j = self.feed_json(self.json, buf, i)
                if j == -1:
                    return n, False
                return j, True
            if st == "pre":
                if c.isspace():
                    i += 1
                elif c == "[":
                    self.state = "json"
                elif _NAME_CHARS.match(c):
                    self.state = "name"
                else:
                    return i, True
                continue
            if st == "args":
                if c.isspace():
                    i += 1
                    continue
                if c == "{":
                    self.state = "json"
                    continue
                return i, True
            # name / id
            if c == "{" and st == "name":
                self.state = "json"  # [ARGS] left out (decoded away): the arguments follow the name
                continue
            if c == "[":
                for marker, nxt in ((ARGS, "args"), (CALL_ID, "id")):
                    if nxt == "id" and st == "id":
                        continue
                    if buf.startswith(marker, i):
                        self.state = nxt
                        i += len(marker)
                        break
                else:
                    rest = buf[i:]
                    if not final and any(m.startswith(rest) for m in (ARGS, CALL_ID)):
                        return i, False
                    return i, True
                continue
            if (_NAME_CHARS if st == "name" else _ID_CHARS).match(c):
                i += 1
                continue
            return i, True
        return n, False


def _load(text: str) -> tuple[bool, Any]:
    """A v3 list or call: JSON, or else the Python literal quantised Mistral 7B v0.3 and Small 3.2
    write (``[{'name': 'f', 'arguments': {'city': 'Dallas'}}]``: vLLM's parser swaps the quotes for
    it; ollama #5284, vLLM #20028)."""
    ok, value = loads_repaired(text)
    return (ok, value) if ok else read_py_literal(text)


def _elements(text: str) -> tuple[list[tuple[int, int]], bool]:
    """Top-level elements (start, end) of the JSON array at the start of ``text``; closed?"""
    i = text.find("[")
    out: list[tuple[int, int]] = []
    if i == -1:
        return out, False
    i += 1
    n = len(text)
    while True:
        while i < n and (text[i].isspace() or text[i] == ","):
            i += 1
        if i >= n:
            return out, False
        if text[i] == "]":
            return out, True
        if text[i] != "{":
            return out, False
        sc = JsonScanner()
        j = sc.feed(text, i)
        if j == -1:
            return out, False
        out.append((i, j))
        i = j


class MistralFormat(Format):
    name = "mistral"
    label = "Mistral (7B v0.3, Nemo, Small 3, Devstral, Ministral, Magistral)"
    openers = (OPEN,)
    reasoning = ("[THINK]", "[/THINK]")
    reasoning_alt = (THINK,)
    calls_in_reasoning_if_alone = True  # Ministral 3 closes [THINK] after its call (llama.cpp #29248)

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if at_end and not body.strip():
            return [], body  # stopped right after [TOOL_CALLS]: no call, the marker is dropped
        stripped = body.lstrip()
        if stripped.startswith("["):
            return self._array(opener, body, at_end=at_end, truncated=truncated)
        if at_end:
            return None
        m = _NAMED.match(body)
        if not m:
            return None
        ok, args = loads_repaired(m.group(3))
        if not ok or not isinstance(args, dict):
            return None
        return [ParsedCall(m.group(1), args, opener + body, id=m.group(2))], ""

    def _array(self, opener, body, *, at_end, truncated):
        elements, closed = _elements(body)
        if not at_end:
            ok, arr = _load(body.strip())
            if not ok or not isinstance(arr, list) or not arr or len(arr) != len(elements):
                return None
            parts = [body[s:e] for s, e in elements]
            leftover = ""
        else:
            if not truncated or not elements:
                return None
            parts = [body[s:e] for s, e in elements]
            leftover = body[elements[-1][1] :]
            arr = []
            for p in parts:
                ok, obj = _load(p)
                if not ok:
                    return None
                arr.append(obj)
        calls = []
        for obj, part in zip(arr, parts, strict=True):
            got = name_arguments(obj, extra_keys=("id",))
            if got is None:
                return None
            cid = obj.get("id")
            if cid is not None and not (isinstance(cid, str) and cid):
                return None
            calls.append(ParsedCall(got[0], got[1], part, id=cid))
        return calls, leftover

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_array, json_section

        if ctx.special(ARGS) is None:
            return partial(json_array, open=OPEN)
        return partial(json_section, section=None, opener=OPEN, head=lambda n: OPEN + n + ARGS, tail="")

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else super().call_name(raw)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return OPEN + json_text([{"name": name, "arguments": dict(arguments)}])


register(MistralFormat())
