"""GigaChat 3.5 calls: DeepSeek's DSML XML under the ``｜GCML｜`` prefix (``｜`` is U+FF5C).

As GigaChat 3.5's published template renders a call, after optional reasoning and text::

    <think>...</think>

    text
    <｜GCML｜tool_calls>
    <｜GCML｜invoke name="NAME">
    <｜GCML｜parameter name="K" string="true">raw text</｜GCML｜parameter>
    <｜GCML｜parameter name="N" string="false">{"json": 1}</｜GCML｜parameter>
    </｜GCML｜invoke>
    <｜GCML｜invoke name="NOARGS">
    </｜GCML｜invoke>
    </｜GCML｜tool_calls>

Read by the ``deepseek-dsml`` reader (:class:`~app.engine.formats.deepseek.DeepSeekDsmlFormat`
built with this prefix): ``string="true"`` values are the text exactly as written,
``string="false"`` values are JSON (kept as text when they are not, for the schema to type), a
parameter without the attribute is a string (vLLM's GigaChat 3.5 parser's default; the template
always writes it), a parameter the schema declares as a plain string keeps its text whatever the
flag says. Only the ``tool_calls`` section opens calls: DeepSeek's other section names, its bare
and self-closing ``invoke`` blocks and V4.1's spaced tags are not GigaChat's (text here).
Reasoning is a ``<think>...</think>`` block (the template's ``reasoning=True`` prompt opens it);
the text around the section is content.

GigaChat may write its end-of-sequence token as the literal text ``</s>`` after the section
(vLLM strips it from the end of the reply): right after ``</｜GCML｜tool_calls>``, whitespace
between, it is consumed with the call, never content. A ``</s>`` anywhere else is text.

A parameter whose closing tag was left out ends where the next parameter's opening tag begins, or
at the invoke's closing tag right before the section's closing tag (its last parameter), as the
DSML reader reads it (the prefix is a special token: a value never holds such a tag); one newline
before that tag is layout, and a value that ends so may hold no GCML or DSML tag.

A section malformed anywhere, or unclosed in a reply that ended normally, is text, byte for byte;
a reply cut (``truncated``) inside it keeps the complete calls before the cut and the cut one is
an incomplete call.
"""

from __future__ import annotations

from app.engine.formats.base import RegionScanner, register
from app.engine.formats.deepseek import DeepSeekDsmlFormat, DsmlScanner

__all__ = ["EOS", "GCML", "GIGACHAT_GCML", "GigaChatGcmlFormat"]

GCML = "｜GCML｜"
SECTION = f"<{GCML}tool_calls>"
SECTION_END = f"</{GCML}tool_calls>"
EOS = "</s>"  # the end-of-sequence token, written as text


class _Scanner(DsmlScanner):
    """The DSML section scanner; once the section closes, ``[ws] </s>`` right after it is the
    region's too (state ``eos``: nothing after the closing tag is consumed until that is known)."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        if self.state == "eos":
            return self._eos(buf, 0, final)
        consumed, ended = super().scan(buf, final)
        if not ended or self.bad:
            return consumed, ended
        self.state = "eos"
        return self._eos(buf, consumed, final)

    def _eos(self, buf: str, j: int, final: bool) -> tuple[int, bool]:
        i = self.skip_space(buf, j)
        if buf.startswith(EOS, i):
            return i + len(EOS), True
        rest = buf[i:]
        if not final and EOS.startswith(rest):  # whitespace so far, or a partial </s>
            return j, False
        return j, True


class GigaChatGcmlFormat(DeepSeekDsmlFormat):
    """DSML under the ``｜GCML｜`` prefix, with the ``</s>`` GigaChat writes after the section."""

    stream_class = None  # the shared machine: DeepSeek's stray closing tags are not GigaChat's

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner(SECTION_END, self.dialects[opener], self_closing=self.self_closing)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if body.endswith(EOS):
            # A </s> after the closed section (whitespace between) is consumed with the calls. The
            # section must end right before it: a cut reply may end in a value that holds the
            # section's closing tag and </s>, and then nothing may be dropped.
            head = body[: -len(EOS)].rstrip()
            if head.endswith(SECTION_END):
                got = super().parse_region(opener, head, at_end=at_end, truncated=truncated, tools=tools)
                if got is not None and got[1] == "":
                    return got
        return super().parse_region(opener, body, at_end=at_end, truncated=truncated, tools=tools)


GIGACHAT_GCML = register(
    GigaChatGcmlFormat(
        "gigachat-gcml",
        "GigaChat 3.5 GCML (Sber GigaChat 3.5)",
        prefix=GCML,
        sections=("tool_calls",),
    )
)
