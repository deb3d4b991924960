"""Tencent Hunyuan (Hy3) calls, as its template renders them (every marker ends in ``:opensource``)::

    <tool_calls:opensource>
    <tool_call:opensource>NAME<tool_sep:opensource>
    <arg_key:opensource>K</arg_key:opensource>
    <arg_value:opensource>V</arg_value:opensource>
    </tool_call:opensource>
    </tool_calls:opensource>

Any number of calls in one section. Values are raw text typed by the tool's schema (the
template writes a string as is and anything else as JSON); a marker inside a value does not end
the call. The end-of-sentence token the template writes right after the section is consumed with
it. Reasoning is a ``<think:opensource>...</think:opensource>`` block. A reply cut inside the
section keeps its complete calls; the rest is text.
"""

from __future__ import annotations

import json
import re

from app.calls import WIRE_NAME
from app.engine.formats.base import Format, ParsedCall, RegionScanner, find_marker, register
from app.engine.formats.sections import skip_ws

__all__ = ["HunyuanFormat"]

_T = ":opensource"
OPEN = f"<tool_calls{_T}>"
CLOSE = f"</tool_calls{_T}>"
CALL = f"<tool_call{_T}>"
CALL_END = f"</tool_call{_T}>"
SEP = f"<tool_sep{_T}>"
K_OPEN, K_CLOSE = f"<arg_key{_T}>", f"</arg_key{_T}>"
V_OPEN, V_CLOSE = f"<arg_value{_T}>", f"</arg_value{_T}>"
EOS = f"<｜hy_eos{_T}｜>"
_NAME = re.compile(WIRE_NAME)
_CUT_NAME = re.compile(
    re.escape(CALL) + r"\s*([A-Za-z_][\w.\-:/]*?)" + re.escape(SEP)
)  # the name of a cut call


class _Scanner(RegionScanner):
    """Up to ``</tool_calls:opensource>`` (and the end-of-sentence token right after it),
    skipping over the contents of values."""

    def __init__(self) -> None:
        self.state = "body"
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        if self.state == "post":
            return self._post(buf, 0, final)
        i = 0
        while True:
            markers = (V_CLOSE,) if self.state == "value" else (V_OPEN, CLOSE)
            pos, m, safe = find_marker(buf, markers, final, start=i)
            self.ops += (pos + len(m) - i) if pos != -1 else len(buf) - i
            if pos == -1:
                return safe, False
            i = pos + len(m)
            if m == CLOSE:
                self.state = "post"
                return self._post(buf, i, final)
            self.state = "value" if m == V_OPEN else "body"

    def _post(self, buf: str, i: int, final: bool) -> tuple[int, bool]:
        """After the section: the end token right after it belongs to it; wait while it may."""
        self.ops += 1
        if buf.startswith(EOS, i):
            return i + len(EOS), True
        if not final and EOS.startswith(buf[i:]):
            return i, False
        return i, True


def _call(text: str, i: int) -> tuple[str, dict[str, str], int] | None:
    """One ``<tool_call:opensource>...</tool_call:opensource>`` at ``text[i]``: (name, args, end)."""
    if not text.startswith(CALL, i):
        return None
    i = skip_ws(text, i + len(CALL))
    m = _NAME.match(text, i)
    if m is None:
        return None
    name = m.group(0)
    i = skip_ws(text, m.end())
    if not text.startswith(SEP, i):
        return None
    i += len(SEP)
    args: dict[str, str] = {}
    while True:
        i = skip_ws(text, i)
        if text.startswith(CALL_END, i):
            return name, args, i + len(CALL_END)
        if not text.startswith(K_OPEN, i):
            return None
        i += len(K_OPEN)
        end = text.find(K_CLOSE, i)
        if end == -1:
            return None
        key = text[i:end].strip()
        if not key or "<" in key or ">" in key or key in args:
            return None
        i = skip_ws(text, end + len(K_CLOSE))
        if not text.startswith(V_OPEN, i):
            return None
        i += len(V_OPEN)
        end = text.find(V_CLOSE, i)
        if end == -1:
            return None
        args[key] = text[i:end]
        i = end + len(V_CLOSE)


class HunyuanFormat(Format):
    name = "hunyuan"
    label = "Hunyuan XML (Tencent Hy3)"
    detail = "<tool_calls:opensource><tool_call:opensource>NAME<tool_sep:opensource><arg_key:...>K...</tool_calls:opensource>"
    openers = (OPEN,)
    start_only = False
    reasoning = (f"<think{_T}>", f"</think{_T}>")
    raw_values = True

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        text = body[: -len(EOS)] if body.endswith(EOS) else body
        closed = text.endswith(CLOSE)
        if closed:
            text = text[: -len(CLOSE)]
        elif not (at_end and truncated):
            return None
        calls: list[ParsedCall] = []
        i = skip_ws(text, 0)
        last = 0
        while i < len(text):
            got = _call(text, i)
            if got is None:
                if closed:
                    return None
                break  # cut: the complete calls count, the rest is text
            name, args, end = got
            calls.append(ParsedCall(name, dict(args), text[i:end]))
            last = end
            i = skip_ws(text, end)
        if not calls:
            return None
        rest = "" if closed else text[last:]
        if CLOSE.startswith(rest.strip()):
            rest = ""  # cut in the section's closing tag: every call is complete
        return calls, rest

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
            head=lambda n: f"{CALL}{n}{SEP}\n",
            tail=f"{CALL_END}\n",
            param=lambda c, k, s, w: (
                f"{c.lit(f'{K_OPEN}{k}{K_CLOSE}{chr(10)}{V_OPEN}')} "
                f"{typed(c, s, V_CLOSE, w)} {c.lit(chr(10))}"
            ),
            name_ok=lambda n: bool(_NAME.fullmatch(n)),
            key_ok=lambda k: k == k.strip() and bool(k) and not set(k) & set("<>"),
        )

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict) -> str:
        parts = [f"{OPEN}\n{CALL}{name}{SEP}\n"]
        for k, v in arguments.items():
            value = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            parts.append(f"{K_OPEN}{k}{K_CLOSE}\n{V_OPEN}{value}{V_CLOSE}\n")
        parts.append(f"{CALL_END}\n{CLOSE}")
        return "".join(parts)


register(HunyuanFormat())
