"""Preferred Networks' PLaMo 3 tool requests, after an optional reasoning block.

The wire (every tag is plain text of several tokens, ``<|plamo:begin_`` + NAME + ``:plamo|>``;
``<|plamo:constrain|>`` and ``<|plamo:msg|>`` are single tokens)::

    <|plamo:begin_think:plamo|>REASONING<|plamo:end_think:plamo|>
    <|plamo:begin_tool_requests:plamo|>
    <|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|>
    <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{JSON}
    <|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>
    ... more requests ...
    <|plamo:end_tool_requests:plamo|>

(one line in the model's output: the line breaks above are for reading). What is read: the
section of requests (DeepSeek's and Kimi K2's :class:`JsonSectionFormat`, scanned JSON-aware, so
a tag inside an argument string does not end it), each request's name and its arguments, a JSON
object. The section's tags are structure; each call's raw text runs from its
``begin_tool_request`` to its ``end_tool_request``. Text before and after the section is text.

Deviations read (the references differ; the model writes neither):

* ``<|plamo:constrain|>json`` may be missing: a client of PFN's PLaMo API reads arguments written
  ``<|plamo:begin_tool_arguments:plamo|><|plamo:msg|>{JSON}``, and SGLang's reader takes what
  follows ``<|plamo:msg|>``. ``<|plamo:msg|>`` itself is required (every source writes it).
* Whitespace may stand between the tags, around the name and around the JSON (SGLang's reader
  skips it, vLLM's newer reader strips the arguments; vLLM's first reader wanted the tags
  adjacent). Inside the name, none: a name is one word.

Strict otherwise: a section not closed by ``<|plamo:end_tool_requests:plamo|>`` in a reply that
ended normally, a request missing a tag, tags out of order, arguments that are not one JSON object,
text between requests, an empty section: all the text, byte for byte. A reply cut by the token
limit inside the section keeps its complete requests; the cut one is an incomplete call. The
end-of-turn token ``<|plamo:tag|>`` is the stop token: the runtime ends the reply there.

Reasoning: ``<|plamo:begin_think:plamo|>`` ... ``<|plamo:end_think:plamo|>``; vLLM reads the reply
as reasoning from its start with thinking on, so a reply that closes a block it did not open has
reasoning too (the shared machine's orphan close), and a tool section opened inside an unclosed
block ends it (vLLM does the same).
"""

from __future__ import annotations

import re

from app.engine.formats.base import register
from app.engine.formats.sections import NAME, JsonSectionFormat

__all__ = [
    "ARGS_BEGIN",
    "ARGS_END",
    "CALL_BEGIN",
    "CALL_END",
    "CONSTRAIN",
    "MSG",
    "NAME_BEGIN",
    "NAME_END",
    "PLAMO3",
    "Plamo3Format",
    "SECTION_BEGIN",
    "SECTION_END",
    "THINK_BEGIN",
    "THINK_END",
]

SECTION_BEGIN = "<|plamo:begin_tool_requests:plamo|>"
SECTION_END = "<|plamo:end_tool_requests:plamo|>"
CALL_BEGIN = "<|plamo:begin_tool_request:plamo|>"
CALL_END = "<|plamo:end_tool_request:plamo|>"
NAME_BEGIN = "<|plamo:begin_tool_name:plamo|>"
NAME_END = "<|plamo:end_tool_name:plamo|>"
ARGS_BEGIN = "<|plamo:begin_tool_arguments:plamo|>"
ARGS_END = "<|plamo:end_tool_arguments:plamo|>"
CONSTRAIN = "<|plamo:constrain|>json"  # the constrained-decoding hint: JSON follows
MSG = "<|plamo:msg|>"
THINK_BEGIN = "<|plamo:begin_think:plamo|>"
THINK_END = "<|plamo:end_think:plamo|>"

# What stands between a request's opening tag and its JSON arguments.
_HEADER = re.compile(
    r"\s*" + re.escape(NAME_BEGIN) + r"\s*(" + NAME + r")\s*" + re.escape(NAME_END) + r"\s*"
    + re.escape(ARGS_BEGIN) + r"\s*(?:" + re.escape(CONSTRAIN) + r"\s*)?" + re.escape(MSG) + r"\s*"
)  # fmt: skip
# The name of a request cut by the token limit, once its closing name tag was written.
_CUT_NAME = re.compile(re.escape(NAME_BEGIN) + r"\s*(" + NAME + r")\s*" + re.escape(NAME_END))


class Plamo3Format(JsonSectionFormat):
    """PLaMo 3's section of tool requests: a :class:`JsonSectionFormat` whose arguments close
    with their own tag before the request's, and whose cut request names its tool between the
    name tags."""

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None


PLAMO3 = register(
    Plamo3Format(
        "plamo3",
        "PLaMo 3 tool requests (Preferred Networks PLaMo 3)",
        (SECTION_BEGIN,),
        reasoning=(THINK_BEGIN, THINK_END),
        section_begin=SECTION_BEGIN,
        section_end=SECTION_END,
        call_begin=CALL_BEGIN,
        call_end=CALL_END,
        args_end=ARGS_END,
        header=_HEADER,
        fence_in_header=False,
        head_frame=(CALL_BEGIN + NAME_BEGIN, NAME_END + ARGS_BEGIN + CONSTRAIN + MSG),
        call_tail=ARGS_END + CALL_END,
    )
)
