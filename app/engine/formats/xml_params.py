"""Tag-delimited parameters of the XML-like families whose values are raw text (MiniMax, Seed-OSS,
MiniCPM5): ``<parameter name="K">V</parameter>`` and its spellings; key/value tag pairs (GLM,
Hunyuan): ``<arg_key>K</arg_key><arg_value>V</arg_value>``.

* :func:`tag_name` reads the name written in a tag (``NAME">`` or ``NAME>``).
* :func:`read_params` strictly reads a run of parameters up to the element's closing tag, each
  value exactly as written (optionally as a CDATA section).
* :func:`read_arg_pairs` strictly reads a run of key/value tag pairs; :func:`pair_key_ok` is what
  such a key may be, :func:`arg_pairs_text` writes them and :class:`ArgPairsFormat` is the base of
  the families that write them.
* :func:`params_text` writes them (the families' example calls).
* :class:`InvokeFormat` is the family of ``<invoke name="N">`` calls (MiniMax, Step-3).
* :class:`XmlParamsFormat` is the base of these families (and of the other families whose
  parameters are tags: DeepSeek DSML, Kimi K3): the shared class attributes and the one
  constrained-decoding grammar, ``head(NAME) param* tail`` (see ``raw_params``), for which a
  family declares its tags.

A family passes its own tags and name patterns; what a value means is the schema's business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import THINK, Format, ParsedCall, RegionScanner, one_call
from app.engine.formats.sections import NAME, SkipValuesScanner, closed_body, raw_text, skip_ws

__all__ = [
    "FUNCTION",
    "PARAMETER",
    "ArgPairsFormat",
    "InvokeFormat",
    "XmlParamsFormat",
    "arg_pairs_text",
    "own_name_close",
    "pair_key_ok",
    "params_text",
    "read_arg_pairs",
    "read_params",
    "tag_name",
]


#: The tags of Qwen XML's function blocks, which Seed-OSS writes too: ``<function=NAME>`` ...
#: ``</function>`` around ``<parameter=K>`` ... ``</parameter>``.
FUNCTION = ("<function=", "</function>")
PARAMETER = ("<parameter=", "</parameter>")

_WIRE_NAME = re.compile(WIRE_NAME)  # a tool name as tools spell them
_SECTION_NAME = re.compile(NAME)  # a tool name as the sectioned wires read it


def tag_name(s: str, i: int, pattern: re.Pattern[str], end: str) -> tuple[str, int] | None:
    """The name ``pattern`` matches at ``i`` when ``end`` follows it: the name and the index after
    ``end``; None otherwise."""
    m = pattern.match(s, i)
    if m is None or not s.startswith(end, m.end()):
        return None
    return m.group(), m.end() + len(end)


def read_params(
    text: str,
    i: int,
    *,
    param: str,
    param_end: str,
    close: str,
    key: re.Pattern[str],
    key_end: str,
    cdata: tuple[str, str] | None = None,
) -> tuple[dict[str, str], int] | None:
    """Strictly read ``(PARAM KEY KEY_END value PARAM_END)* CLOSE`` from ``i``, with whitespace
    between the tags: the values by key, each exactly as written, and the index after ``close``.

    None when anything else stands there, a key repeats or a value is not closed. A ``param_end``
    closes a value only where the next ``param`` or ``close`` follows it (after whitespace); an
    earlier one is the value's text, as when an agent writes a file that holds the tag (vLLM
    #38803: MiniMax-M2 in production). A value holding a whole ``param`` tag with no
    ``param_end`` after it is the next parameter, swallowed where this value's ``param_end`` was
    left out (it would be lost): None. With ``cdata`` (its opening and closing marks), a value that
    opens with the section is the section's contents exactly (``param_end`` must follow the
    section), and any other value may not hold ``<`` (markup in a value is written as CDATA).
    """
    args: dict[str, str] = {}
    while True:
        i = skip_ws(text, i)
        if text.startswith(close, i):
            return args, i + len(close)
        if not text.startswith(param, i):
            return None
        got = tag_name(text, i + len(param), key, key_end)
        if got is None or got[0] in args:
            return None
        name, i = got
        if cdata is not None and text.startswith(cdata[0], i):
            end = text.find(cdata[1], i + len(cdata[0]))
            if end == -1 or not text.startswith(param_end, end + len(cdata[1])):
                return None
            args[name] = text[i + len(cdata[0]) : end]
            i = end + len(cdata[1]) + len(param_end)
            continue
        if cdata is None:
            end = _followed_close(text, i, param_end, (param, close))
        else:
            end = text.find(param_end, i)
        if end == -1:
            return None
        value = text[i:end]
        if cdata is not None and "<" in value:
            return None
        if cdata is None and _open_tag_inside(value, param, param_end, key, key_end):
            return None
        args[name] = value
        i = end + len(param_end)


def _open_tag_inside(value: str, tag: str, tag_close: str, key: re.Pattern[str], key_end: str) -> bool:
    """Whether ``value``'s last ``tag`` is a whole opening tag (a name ``key`` matches, then
    ``key_end``) with no ``tag_close`` after it: another element's opening, left open inside the
    value (the element that follows it, read as this value's text)."""
    j = value.rfind(tag)
    return j != -1 and tag_close not in value[j:] and tag_name(value, j + len(tag), key, key_end) is not None


def _followed_close(
    text: str, i: int, value_close: str, followers: tuple[str, ...], *, or_end: bool = False
) -> int:
    """The ``value_close`` that closes the value at ``i``: the first one followed (after
    whitespace) by one of ``followers`` (``or_end``: or by the end of ``text``); -1 if none. Each
    search starts after the one before, so the walk is linear in the value."""
    j = i
    while True:
        end = text.find(value_close, j)
        if end == -1:
            return -1
        k = skip_ws(text, end + len(value_close))
        if (or_end and k == len(text)) or text.startswith(followers, k):
            return end
        j = end + len(value_close)


def params_text(
    arguments: Mapping[str, Any],
    *,
    param: str,
    key_end: str,
    param_end: str,
    sep: str = "\n",
    value: Callable[[Any], str] = raw_text,
) -> str:
    """``arguments`` written as ``PARAM KEY KEY_END value PARAM_END SEP`` each (``value`` writes a
    value: raw text by default)."""
    return "".join(f"{param}{k}{key_end}{value(v)}{param_end}{sep}" for k, v in arguments.items())


def pair_key_ok(key: str) -> bool:
    """Whether ``key`` may be the key of a key/value tag pair: not empty, no surrounding
    whitespace, no markup."""
    return key == key.strip() and bool(key) and not set(key) & set("<>")


def own_name_close(value: str, key: str) -> str:
    """``value``, left open (its closing tag missing, so it ran to where the next tag begins),
    ending before a closing tag named after its own ``key`` at its end: ``Paris</city>`` is the
    model closing the value as plain XML closes it (Claude's habit, written into other wires); a
    newline before that tag is layout. A value that also holds that name's opening tag is
    returned whole (``<div>hi</div>`` is its own markup). One look back over the value."""
    tail = value.rstrip()
    close = f"</{key}>"
    if not tail.endswith(close) or f"<{key}>" in value or f"<{key} " in value:
        return value
    value = tail[: -len(close)]
    return value[:-1] if value.endswith("\n") else value


def _pair_value_end(text: str, i: int, key_open: str, value_close: str) -> int:
    """The ``value_close`` that closes the value at ``i``: the first one followed (after
    whitespace) by the next ``key_open`` or by the end of ``text``; -1 if none."""
    return _followed_close(text, i, value_close, (key_open,), or_end=True)


def _next_pair_inside(v: str, key: tuple[str, str], value: tuple[str, str]) -> bool:
    """Whether the value ``v`` ends in a pair's opening (its last ``VALUE_OPEN`` has no
    ``VALUE_CLOSE`` after it and follows a whole key, whitespace between)."""
    (k_open, k_close), (v_open, v_close) = key, value
    j = v.rfind(v_open)
    if j == -1 or v_close in v[j:]:
        return False
    head = v[:j].rstrip()
    k = head.rfind(k_open)
    return head.endswith(k_close) and k != -1 and pair_key_ok(head[k + len(k_open) : -len(k_close)].strip())


def read_arg_pairs(
    text: str,
    i: int,
    *,
    key: tuple[str, str],
    value: tuple[str, str],
    close: str = "",
    lenient: bool = False,
    joined: bool = False,
    strays: bool = False,
) -> tuple[dict[str, str], int] | None:
    """Strictly read ``(KEY_OPEN k KEY_CLOSE VALUE_OPEN v VALUE_CLOSE)*`` from ``i``, whitespace
    between the tags, up to ``close`` (or to the end of ``text`` when ``close`` is empty): the
    values by key, each exactly as written, and the index after ``close``.

    None when anything else stands there, a key (the text between its tags, stripped) is not
    :func:`pair_key_ok` or repeats, or a value is not closed. ``lenient`` (with ``close`` empty:
    ``text`` is the call's inside): a ``VALUE_CLOSE`` closes a value only when the next
    ``KEY_OPEN`` or the end follows it, and a last value whose ``VALUE_CLOSE`` is missing runs to
    the end (a newline before it is layout). ``joined``: the key's closing tag also opens the
    value (``value[0]`` is empty: Solar Open2's ``K<|tool_arg:value|>V``), so the key is exactly
    the text between its tags (not stripped) and the value starts right after the tag.
    ``strays`` (with ``lenient``; GLM-4.7's, vLLM #49249, #54971): a key's closing tag written
    twice is one, and a value whose opening tag was left out starts right after the key's closing
    tag (one newline there is layout); it must be closed, and holds no other pair tag. So does a
    value whose opening tag was written without its ``<`` (``arg_value>``, quantized GLM models:
    aosama/astronomical #293), the value starting after it. A value that ends in the next pair's
    tags (``KEY_OPEN k KEY_CLOSE VALUE_OPEN``, no ``VALUE_CLOSE`` after them) is that pair,
    swallowed where this value's ``VALUE_CLOSE`` was left out or written amiss (it would be lost,
    and the value wrong): None, in the strict reading too.
    """
    (k_open, k_close), (v_open, v_close) = key, value
    args: dict[str, str] = {}
    while True:
        i = skip_ws(text, i)
        if close and text.startswith(close, i):
            return args, i + len(close)
        if not close and i == len(text):
            return args, i
        if not text.startswith(k_open, i):
            return None
        i += len(k_open)
        end = text.find(k_close, i)
        if end == -1:
            return None
        name = text[i:end] if joined else text[i:end].strip()
        if not pair_key_ok(name) or name in args:
            return None
        # a joined tag opens the value itself: whitespace after it is the value's
        after = end + len(k_close)
        i = after if joined else skip_ws(text, after)
        while strays and text.startswith(k_close, i):  # the key's closing tag twice
            after = i + len(k_close)
            i = skip_ws(text, after)
        if not text.startswith(v_open, i):
            if not strays:
                return None
            i = after + 1 if text.startswith("\n", after) else after  # the value's opening tag left out
            if text.startswith(v_open[1:], i) and v_open.startswith("<"):
                i += len(v_open) - 1  # ... or written without its "<"
            end = _pair_value_end(text, i, k_open, v_close)
            if end == -1 or any(t in text[i:end] for t in (k_open, k_close, v_open)):
                return None
            args[name] = text[i:end]
            i = end + len(v_close)
            continue
        i += len(v_open)
        end = _pair_value_end(text, i, k_open, v_close) if lenient else text.find(v_close, i)
        if end == -1:
            if not lenient:
                return None
            rest = text[i:]
            rest = rest[:-1] if rest.endswith("\n") else rest
            if _next_pair_inside(rest, key, value):
                return None
            args[name] = own_name_close(rest, name)
            return args, len(text)
        if _next_pair_inside(text[i:end], key, value):
            return None
        args[name] = text[i:end]
        i = end + len(v_close)


def arg_pairs_text(arguments: Mapping[str, Any], *, key: tuple[str, str], value: tuple[str, str]) -> str:
    """``arguments`` written as ``KEY_OPEN k KEY_CLOSE \\n VALUE_OPEN v VALUE_CLOSE \\n`` each (values
    as raw text)."""
    (k_open, k_close), (v_open, v_close) = key, value
    return "".join(f"{k_open}{k}{k_close}\n{v_open}{raw_text(v)}{v_close}\n" for k, v in arguments.items())


class XmlParamsFormat(Format):
    """A family whose parameters are tags holding the value as text, typed by the schema.

    The constrained-decoding grammar is ``head(NAME) param* tail`` for each call (in ``section``
    when the calls stand in one; ``sep`` between calls) with the first opener as the grammar's
    opener. A family sets the tags: ``head``, ``tail``, and per parameter ``param_head(KEY)``
    (what stands before the value), ``param_close`` (what closes it) and ``param_after`` (what
    the template writes after it); ``value_newlines`` when one newline on each side of a value is
    the wire's, ``markup_free`` when a text value may hold no markup. A family with another
    parameter syntax overrides :meth:`param`. ``name_ok`` / ``key_ok`` say which tool and
    parameter names the wire can write (by default a parameter name holds none of
    ``key_forbidden``). By default the region is the calls' ``section``, up to its closing tag
    outside every value (values open with ``param_open``).
    """

    reasoning: tuple[str, str] | None = THINK
    raw_values = True
    section: tuple[str, str] | None = None
    sep = ""
    tail = ""
    param_open = ""
    param_close = ""
    param_after = "\n"
    key_forbidden = '"<>'
    value_newlines = False
    markup_free = False

    def head(self, name: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def head_expr(self, ctx: Any, name: str) -> str:
        """The head as a grammar expression: ``head``'s text (a family whose head holds a
        counter writes it otherwise)."""
        return str(ctx.lit(self.head(name)))

    def param_head(self, key: str) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def name_ok(self, name: str) -> bool:
        """Whether the wire can write the tool name ``name`` (by default: a name as the sectioned
        wires read it)."""
        return bool(_SECTION_NAME.fullmatch(name))

    def key_ok(self, key: str) -> bool:
        return not set(key) & set(self.key_forbidden)

    def region_scanner(self, opener: str) -> RegionScanner:
        if self.section is None:  # pragma: no cover - a family without a section scans its own
            raise NotImplementedError
        return SkipValuesScanner(self.section[1], self.param_open, self.param_close)

    def param(self, ctx: Any, key: str, schema: Any, where: str) -> str:
        """The grammar of one parameter: ``param_head(KEY)``, the typed value up to
        ``param_close``, then ``param_after``."""
        from app.engine.grammar.wires import NO_MARKUP, typed

        lead = "\n" if self.value_newlines else ""
        text_rx = NO_MARKUP if self.markup_free else None
        value = typed(ctx, schema, self.param_close, where, lead=lead, trail=lead, text_rx=text_rx)
        after = f" {ctx.lit(self.param_after)}" if self.param_after else ""
        return f"{ctx.lit(self.param_head(key))} {value}{after}"

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import raw_params

        return partial(
            raw_params,
            opener=self.openers[0],
            section=self.section,
            sep=self.sep,
            head=self.head,
            head_expr=self.head_expr,
            tail=self.tail,
            param=self.param,
            name_ok=self.name_ok,
            key_ok=self.key_ok,
        )


class ArgPairsFormat(XmlParamsFormat):
    """A family whose parameters are key/value tag pairs (GLM, Hunyuan): ``key_tags`` and
    ``value_tags`` are the (open, close) tags; tool names are spelt as tools spell them."""

    key_tags: tuple[str, str] = ("", "")
    value_tags: tuple[str, str] = ("", "")

    def param_head(self, key: str) -> str:
        (k_open, k_close), v_open = self.key_tags, self.value_tags[0]
        return f"{k_open}{key}{k_close}\n{v_open}"

    def name_ok(self, name: str) -> bool:
        return bool(_WIRE_NAME.fullmatch(name))

    def key_ok(self, key: str) -> bool:
        return pair_key_ok(key)

    def pairs_text(self, arguments: Mapping[str, Any]) -> str:
        """``arguments`` as the template writes them (see :func:`arg_pairs_text`)."""
        return arg_pairs_text(arguments, key=self.key_tags, value=self.value_tags)


_INVOKE_NAME = re.compile(r'[^"<>\s]+')  # a tool or parameter name in an invoke's tags
_KEY_END = '">'  # what ends a name in a tag


class InvokeFormat(XmlParamsFormat):
    """Calls as ``<PREFIXinvoke name="NAME">`` elements of ``<PREFIXparameter name="K">V</PREFIXparameter>``
    parameters, one after another (whitespace between) in a section ``OPEN\\n ... CLOSE``: MiniMax,
    and StepFun's ``steptml:`` spelling, where each invoke stands between ``call_begin`` and
    ``call_end``. A value is exactly as written (the template adds no newline); a ``CLOSE`` inside
    a value does not end the section, and a parameter's closing tag inside it is its text where
    the next parameter or the invoke's end does not follow (:func:`read_params`). A missing ``CLOSE`` is accepted only when the reply ended
    normally right after a call. A family is an instance (see :class:`Format`) that sets ``close``,
    ``prefix`` and, where it has them, ``call_begin`` / ``call_end``; ``call_begin_also``: other
    spellings of ``call_begin`` read exactly (``call_begin`` is the one written); ``param_after``:
    what is written after the invoke's name tag and after each parameter; ``single_region``: the
    one call of a section is the whole section as written (else each call is its own text).
    """

    close = ""
    prefix = ""
    call_begin = ""
    call_begin_also: tuple[str, ...] = ()
    call_end = ""
    single_region = False

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__(*args, **settings)
        self.invoke = (f'<{self.prefix}invoke name="', f"</{self.prefix}invoke>")
        self.param_open, self.param_close = f'<{self.prefix}parameter name="', f"</{self.prefix}parameter>"
        self.section = (self.openers[0] + "\n", self.close)
        self.tail = f"{self.invoke[1]}{self.call_end}\n"

    def read_calls(self, text: str) -> list[ParsedCall] | None:
        """Strictly read ``(call_begin invoke call_end)+`` with whitespace between the calls."""
        calls: list[ParsedCall] = []
        i = skip_ws(text, 0)
        heads = [begin + self.invoke[0] for begin in (self.call_begin, *self.call_begin_also)]
        while i < len(text):
            head = next((h for h in heads if text.startswith(h, i)), None)
            if head is None:
                return None
            start = i
            got = tag_name(text, i + len(head), _INVOKE_NAME, _KEY_END)
            if got is None:
                return None
            name, i = got
            params = read_params(
                text,
                i,
                param=self.param_open,
                param_end=self.param_close,
                close=self.invoke[1],
                key=_INVOKE_NAME,
                key_end=_KEY_END,
            )
            if params is None or not text.startswith(self.call_end, params[1]):
                return None
            args, i = params[0], params[1] + len(self.call_end)
            calls.append(ParsedCall(name, dict(args), text[start:i]))
            i = skip_ws(text, i)
        return calls or None

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        last = self.call_end or self.invoke[1]
        inner = closed_body(body, self.close, last=last, at_end=at_end, truncated=truncated)
        calls = None if inner is None else self.read_calls(inner)
        if calls is None:
            return None
        if self.single_region and len(calls) == 1:
            return one_call(opener, body, (calls[0].name, calls[0].arguments))
        return calls, ""

    def head(self, name: str) -> str:
        return f"{self.call_begin}{self.invoke[0]}{name}{_KEY_END}{self.param_after}"

    def param_head(self, key: str) -> str:
        return self.param_open + key + _KEY_END

    def name_ok(self, name: str) -> bool:
        return bool(_INVOKE_NAME.fullmatch(name))

    def key_ok(self, key: str) -> bool:
        return self.name_ok(key)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = params_text(
            arguments,
            param=self.param_open,
            key_end=_KEY_END,
            param_end=self.param_close,
            sep=self.param_after,
        )
        return f"{self.openers[0]}\n{self.head(name)}{params}{self.tail}{self.close}"
