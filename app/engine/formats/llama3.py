"""Llama 3.1 to 3.3 JSON calls: the whole reply is ``{"name": NAME, "parameters": {...}}``.

Optionally after ``<|python_tag|>``, and with an optional ``"type": "function"`` (Llama 3.2
writes it, echoing its template's tool list); the arguments are ``"parameters"`` or, as Llama
models also write, ``"arguments"``. A bare JSON call may open only at the start of the reply; a
``<|python_tag|>`` call may follow text (``Let me check.<|python_tag|>{...}``). Either must end
the reply: JSON followed by more text is text. Bare JSON (no python tag) is a call only when it
names one of the offered tools, so JSON meant for the user stays text.

A deviation real models write, read strictly: Llama 3.2 (notably the 3B, served by Ollama) puts
its call in a markdown fence, the whole reply ```` ```json ⏎ {"name": ..., "parameters": ...} ⏎ ``` ````
(language word ``json`` or none). Read as bare JSON is: it must name an offered tool and be the
whole reply (whitespace around it aside); a fence of anything else, or with text after it, is text.

Several calls in one turn are written separated by ``;`` (``{...}; {...}``: vLLM's Llama 3 reader
takes them so): read where every object is a call as above and they are the whole rest of the
reply; a reply the token limit cut after a ``;`` keeps the calls before it.

Llama 3.3 (and 3.1 now and then) answers the template's ``Environment: ipython`` line in Python
after the python tag: ``<|python_tag|>get_weather(location="Paris")`` (meta-llama/llama-models
#266; pydantic-ai's weather example under Ollama), or in the built-in tools' shape the template
renders, ``NAME.call(k="v")``. Read where the rest of the reply is one such call, or a list of
them (``[f(a=1), g()]``), of keyword arguments with literal values (never evaluated), each naming
a declared tool (``NAME.call`` names ``NAME``); any other code after the tag (the code
interpreter's) stays text.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.jsonscan import LENIENT_DECODER, loads_repaired
from app.engine.formats.open_json import (
    FENCE,
    FencedListScanner,
    WholeObjectScanner,
    fenced_object,
    llama_call,
    llama_cut,
)
from app.engine.formats.pycalls import CALL_NAME, parse_call_list
from app.engine.formats.sections import json_text, skip_ws
from app.json_schema import tool_schemas

__all__ = ["Llama3Format"]

PYTHON_TAG = "<|python_tag|>"
BUILTIN_CALL = ".call"  # the template's built-in tool call: ``brave_search.call(query="...")``


class Llama3Format(Format):
    name = "llama3"
    label = "Llama 3 JSON (Llama 3.1 to 3.3)"
    openers = (PYTHON_TAG, "{", FENCE)
    start_only = True
    anywhere = (PYTHON_TAG,)  # the python tag may follow text: "Let me check.<|python_tag|>{...}"

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener == FENCE:
            return FencedListScanner("{", last=True)
        return WholeObjectScanner(opener == "{", sep=";")

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if not at_end:
            return None
        if truncated:  # calls written before a cut one after ";" count
            if opener == FENCE:
                return None
            return _calls_in_turn(opener, body, "{" if opener == "{" else "", tools, cut=True)
        if opener == FENCE:
            text = fenced_object(body)
            if text is None:
                return None
        elif opener == PYTHON_TAG and not body.lstrip().startswith("{"):
            return _python_calls(body, tools)
        else:
            text = "{" + body if opener == "{" else body
        ok, obj = loads_repaired(text.strip())
        if not ok:
            if opener == FENCE:
                return None
            return _calls_in_turn(opener, body, "{" if opener == "{" else "", tools)
        got = llama_call(obj, tools, tagged=opener == PYTHON_TAG)
        if got is None:
            return None
        return [ParsedCall(*got, opener + body.rstrip())], body[len(body.rstrip()) :]

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(
            json_tagged,
            open=PYTHON_TAG,
            close="",
            args_key="parameters",
            optional_open=True,
            single=True,
            opener="{",
        )

    def cut_call(self, opener, body, tools):
        return llama_cut(super().cut_call(opener, body, tools), tools, tagged=opener == PYTHON_TAG)

    def call_name(self, raw: str) -> str | None:
        body = raw[len(PYTHON_TAG) :] if raw.startswith(PYTHON_TAG) else ""
        if body.lstrip().startswith("{") or not body.strip():
            return super().call_name(raw)
        m = CALL_NAME.match(body.lstrip().removeprefix("["))  # a Python call cut off
        return m.group(1).removesuffix(BUILTIN_CALL) if m else None

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return json_text({"name": name, "parameters": dict(arguments)})


def _python_calls(body: str, tools: list[dict[str, Any]] | None) -> tuple[list[ParsedCall], str] | None:
    """The calls written in Python after the python tag (the whole rest of the reply): one call
    or a list, each naming a declared tool (``NAME.call`` the template's built-in shape of
    ``NAME``); None for any other code."""
    listed = parse_call_list(body, lenient=True)
    if not listed:
        return None
    declared = tool_schemas(tools)
    calls = []
    for name, args, raw in listed:
        if name not in declared and name.endswith(BUILTIN_CALL):
            name = name.removesuffix(BUILTIN_CALL)
        if name not in declared:
            return None
        calls.append(ParsedCall(name, args, raw))
    first = calls[0].raw  # the tag and the text before the first call belong to it
    calls[0] = replace(calls[0], raw=PYTHON_TAG + body[: body.find(first) + len(first)])
    return calls, ""


def _calls_in_turn(
    opener: str, body: str, lead: str, tools: list[dict[str, Any]] | None, *, cut: bool = False
) -> tuple[list[ParsedCall], str] | None:
    """Several call objects separated by ``;`` (``{...}; {...}``), the whole rest of the reply:
    the calls, each one's raw text its share of the region; None when it is anything else. With
    ``cut`` (the token limit cut the reply after a separator), the calls before the cut one and
    the rest from the last call's end (the cut call)."""
    text = lead + body
    read: list[tuple[int, tuple[str, dict[str, Any]]]] = []  # (where each object ends, its call)
    i = len(text) - len(text.lstrip())
    while True:
        try:
            obj, end = LENIENT_DECODER.raw_decode(text, i)
        except ValueError:
            if cut and read and i > read[-1][0]:
                break  # the call after the last separator is the cut one
            return None
        got = llama_call(obj, tools, tagged=opener == PYTHON_TAG)
        if got is None:
            return None
        read.append((end, got))
        i = skip_ws(text, end)
        if i == len(text):
            if cut:
                return None  # cut right after a call: the region is a cut call, as before
            break
        if text[i] != ";":
            return None
        i = skip_ws(text, i + 1)
    if not cut and len(read) < 2:
        return None
    head = "" if opener == "{" else opener  # the "{" opener is the first object's own brace
    calls = []
    lo = 0
    for k, (end, got) in enumerate(read):
        calls.append(ParsedCall(*got, (head if k == 0 else "") + text[lo:end]))
        lo = end
    return calls, text[lo:]


register(Llama3Format())
