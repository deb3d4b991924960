"""Replies read without a tool format (tools are off): :class:`PlainStream`."""

from __future__ import annotations

from app.engine.formats.events import FormatEvent, ReasoningDelta, TextDelta
from app.engine.holdback import partial_start

__all__ = ["PlainStream"]


class PlainStream:
    """A reply without a tool format: a leading ``<think>...</think>`` reasoning block is split
    from the text (a partial tag is held back); calls are never parsed. ``in_reasoning``: the
    prompt already opened the block. Same ``feed`` / ``finish`` as a family's ``Stream``."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self, in_reasoning: bool = False):
        self.state = "reasoning" if in_reasoning else "start"
        self.buf = ""

    @classmethod
    def for_prompt(cls, prompt: str) -> PlainStream:
        """The stream for the reply to ``prompt`` (in reasoning when the prompt ends with ``<think>``)."""
        return cls(prompt.rstrip().endswith(cls.OPEN))

    def feed(self, delta: str) -> list[FormatEvent]:
        self.buf += delta
        out: list[FormatEvent] = []
        while self.buf:
            if self.state == "start":
                stripped = self.buf.lstrip()
                if stripped.startswith(self.OPEN):
                    self.buf = stripped[len(self.OPEN) :]
                    self.state = "reasoning"
                    continue
                if self.OPEN.startswith(stripped):
                    break  # maybe the start of <think>: wait
                self.state = "text"
            if self.state == "text":
                out.append(TextDelta(self.buf))
                self.buf = ""
                break
            i = self.buf.find(self.CLOSE)
            if i >= 0:
                if i:
                    out.append(ReasoningDelta(self.buf[:i]))
                self.buf = self.buf[i + len(self.CLOSE) :].lstrip("\n")
                self.state = "text"
                continue
            cut = partial_start(self.buf, (self.CLOSE,))
            if cut:
                out.append(ReasoningDelta(self.buf[:cut]))
                self.buf = self.buf[cut:]
            break
        return out

    def finish(self, truncated: bool = False) -> list[FormatEvent]:
        out: list[FormatEvent] = []
        if self.buf:
            out.append((ReasoningDelta if self.state == "reasoning" else TextDelta)(self.buf))
            self.buf = ""
        return out
