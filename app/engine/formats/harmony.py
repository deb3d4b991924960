"""gpt-oss Harmony messages: channels, recipients, ``<|call|>``.

A reply is a sequence of messages. The prompt ends with ``<|start|>assistant``, so the first
message's header starts the reply; later ones start with ``<|start|>assistant``. A header is
``[ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json | json]`` and ends at
``<|message|>``; the body ends at ``<|end|>``, ``<|call|>`` or ``<|return|>`` (or where the next
message starts). Channel ``analysis`` is reasoning, ``final`` is content, and a message with the
recipient ``functions.NAME`` (on ``commentary``, or any channel) is a call whose body is the JSON
arguments. A ``commentary`` message without recipient is a preamble meant for the user: content.

Streaming is channel-aware: text of the analysis channel is only ever reasoning; a call body is
held until the message ends. A call body is read JSON-aware: a marker inside a JSON string does
not end it (a body whose JSON never closes falls back, at the end of the reply, to ending at its
first end marker). An end marker (``<|end|>``, ``<|call|>``, ``<|return|>``) that no message
header follows did not end the message: the text after it stays in the same channel (analysis
text stays reasoning and never reaches content), and so does the marker, but for ``<|end|>``
before free text (no header begins there: gpt-oss writes ``<|end|> 364 <|start|>`` now and then,
vLLM #35906 drops such text), a special token that is markup, never words; after an analysis
message, text that is not a well-formed header also stays reasoning, byte for byte. ``<|call|>`` and ``<|return|>`` end generation, so a reply that stops
normally right after a complete JSON body is a complete call; a cut (``truncated``) one is not.
A malformed header or call is returned as content byte for byte. A message to a recipient that
is neither ``functions.NAME`` nor a declared tool (the built-in ``python``, ``browser.search``)
is a rejected call: its raw text is kept (``reply.incomplete_calls``, reason ``undeclared``),
it is never run and never content. A reply cut inside a call is an incomplete call; one cut
inside a header ends the message before at its end marker (the header is an incomplete item).

A deviation gpt-oss writes often (vLLM #45736): a final message whose header lost its
``<|message|>``, ``<|channel|>final The answer...``. Where no ``<|message|>`` comes before the
message's end, the channel word ``final`` followed by a space or a newline is the header and the
rest is the answer (before, it ran on in the reasoning of the message before, markers and all).
And a call's JSON that lacks only its last closing brackets where the model ended the message
itself with ``<|call|>`` or ``<|end|>`` (gpt-oss leaves them out of deeply nested arguments,
ollama #14180): read with them; an open string or a mismatched bracket stays text.
gpt-oss-20b at its recommended sampling also writes, at a turn's start, a header that reaches
``<|end|>`` with no ``<|message|>`` (``<|channel|>??<|end|>``, ``<|channel|>commentary?<|end|>``,
free text: llama.cpp #27720, ~4% of turns), then its messages: a message that never got a body,
its words reasoning (verbatim, between its markers), its markers structure. And it writes a
call's channel again after the recipient (``<|channel|>commentary to=functions.NAME<|channel|>
commentary <|constrain|>json``: vLLM #31677): the header of that call. A channel written twice
in a message without a recipient stays a malformed header. gpt-oss-120b writes ``<|start|>`` twice
before ``assistant`` and a channel marker with no name (``<|channel|><|message|>``: vLLM #43408,
openai/harmony #48): the header they stand for, a message without a channel being content.

LLM-jp-4.1 writes this wire through a tokenizer that puts a space after each special token
followed by text (``<|start|> assistant``, ``<|channel|> final<|message|> Hello``, ``<|constrain|>
json``) and closes every call but the last of a parallel run with ``<|end|>``. The header reader
takes spaces around its parts; the body's space is told apart by the header: a header whose
channel name follows ``<|channel|>`` after a space is written in that style, and its body drops
exactly one leading space, as llama.cpp's ``llm-jp-harmony`` reader does (``<|message|> Hello``
is ``Hello``, ``<|message|>  x`` is `` x``). gpt-oss never writes that space, so a body after
``<|channel|>final<|message|>`` keeps every character, a leading space included.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from app.calls import IncompleteCall
from app.engine.formats.base import Format, OwnStreamFormat, ParsedCall, Stream, register
from app.engine.formats.events import ToolCallIncomplete
from app.engine.formats.jsonscan import JsonScanner, loads_repaired, missing_closers, strip_fence
from app.engine.formats.sections import first_marker, json_text

__all__ = ["HarmonyFormat", "HarmonyStream", "parse_header", "spaced"]

START = "<|start|>"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CONSTRAIN = "<|constrain|>"
END = "<|end|>"
CALL = "<|call|>"
RETURN = "<|return|>"
MARKERS = (START, CHANNEL, MESSAGE, CONSTRAIN, END, CALL, RETURN)
_BODY_END = (END, CALL, RETURN, START, CHANNEL)  # the last two begin the next message
_MAX_HEADER = 512

_RECIPIENT = r"to=([^\s<>]+)"
# A message's role (gpt-oss-120b writes ``<|start|>`` twice before it: vLLM #43408)
_ROLE = r"(?:<\|start\|>[ \t]*)+assistant"
_HEADER = re.compile(
    r"\A(?:" + _ROLE + r")?[ \t]*(?:" + _RECIPIENT + r"[ \t]*)?"
    r"(?:<\|channel\|>[ \t]*([A-Za-z_]\w*)?)?[ \t]*(?:" + _RECIPIENT + r"[ \t]*)?"
    r"(?:<\|channel\|>[ \t]*([A-Za-z_]\w*)[ \t]*)?"  # a call's channel written again (a deviation)
    r"(?:<\|constrain\|>[ \t]*)?([A-Za-z_][\w\-]*)?[ \t]*\Z"
)
# What a header may begin with (after leading whitespace).
_HEADER_STARTS = (START, CHANNEL, CONSTRAIN, MESSAGE, "to=")
# A final message whose header lost its <|message|> (gpt-oss writes ``<|channel|>final The
# answer...``: vLLM #45736; a fifth of one deployment's replies, ai-dynamo #236): the channel
# word, then a space or a newline, then the answer, up to the message's end.
_STRANDED = re.compile(r"(?:" + _ROLE + r")?[ \t]*<\|channel\|>[ \t]*final[ \n]")
# What gpt-oss-20b writes at a turn's start now and then, at its recommended sampling, before the
# well-formed messages: ``<|channel|>``, then free text, ``??``, ``commentary?`` or ``commentary
# to=assistant<|channel|>commentary?``, then ``<|end|>`` (llama.cpp #27720: ~4% of turns), with no
# ``<|message|>``: a header that starts as one (a channel marker, no message start inside).
_BROKEN_HEADER = re.compile(r"(?:" + _ROLE + r")?[ \t]*<\|channel\|>(?:(?!<\|start\|>).)*", re.S)
_MARKUP = re.compile(r"[ \t]*(?:" + _ROLE + r"|<\|channel\|>|<\|constrain\|>)[ \t]*")


def parse_header(header: str) -> tuple[str | None, str | None] | None:
    """(channel, recipient) of a header (the text before ``<|message|>``), or None if malformed."""
    m = _HEADER.match(header.strip())
    if m is None:
        return None
    to1, channel, to2, again, _ctype = m.groups()
    if (to1 and to2) or (again and not (to1 or to2)):
        return None  # two recipients; a channel written twice in a message that is not a call
    if not header.strip().startswith((START, CHANNEL, "to=")):
        return None  # e.g. "json<|message|>": not a header
    return channel, to1 or to2


def spaced(header: str) -> bool:
    """Whether a (well-formed) header is written in LLM-jp's style: its channel name follows
    ``<|channel|>`` after a space (the space its tokenizer writes after a special token)."""
    return CHANNEL + " " in header


def _call_name(recipient: str) -> str | None:
    name = recipient[len("functions.") :] if recipient.startswith("functions.") else recipient
    if not re.fullmatch(r"[A-Za-z_][\w.\-:/]*", name):
        return None
    return name


# Modes of the stream.
_HEAD = "head"  # collecting a message header
_REASON = "reason"  # body of an analysis message
_CONTENT = "content"  # body of a final / preamble message, or text outside messages
_CALL = "call"  # body of a message to a recipient: held until it ends
_DONE = "done"
# Where a call body is (see HarmonyStream._h_call).
_C_LEAD, _C_JSON, _C_POST, _C_PLAIN = "lead", "json", "post", "plain"
_MAX_LEAD = 64
_LEAD_JSON = re.compile(r"[ \t\r\n]*(?:```(?:json|JSON)?[ \t]*\n[ \t\r\n]*)?\{")
_LEAD_PARTIAL = re.compile(
    r"[ \t\r\n]*(?:`{0,3}|```(?:j|js|jso|json|J|JS|JSO|JSON)[ \t]*|```[ \t]+"
    r"|```(?:json|JSON)?[ \t]*\n[ \t\r\n]*)"
)
_WS = re.compile(r"\s*")


class HarmonyStream(Stream):
    """Harmony's own machine (channels do not fit the tag-based one); same events and guarantees."""

    def __init__(self, fmt: Format, tools: list[dict[str, Any]] | None, **options: Any) -> None:
        # Harmony has no reasoning tags, so ``orphan_close`` changes nothing; it is accepted as
        # every family's stream accepts it (``in_reasoning``: see _first_mode).
        super().__init__(fmt, tools, **options)
        self._head = ""  # header text of the current message (raw, including <|start|>)
        self._recipient: str | None = None
        # Where text that turns out not to be a header goes: the sink of the message before it
        # (reasoning after an analysis message, never content), else content.
        self._resume = _CONTENT
        # The end marker of the last analysis / content body: structure when a header (or the end
        # of the reply) follows, else the message went on and the marker is text of its sink
        # (``<|end|>`` before free text: dropped, see _kept_end).
        self._pending = ""
        self._cstate = _C_LEAD  # where a call body is: see _h_call
        self._json: JsonScanner | None = None
        self._json_aware = True  # False after one unclosed JSON body fell back (keeps it linear)
        # The body that starts next drops one leading space (its header is LLM-jp's: ``spaced``).
        self._drop_space = False

    def _first_mode(self, in_reasoning: bool, lead: bool) -> str:
        return _REASON if in_reasoning else _HEAD

    def _step_table(self) -> dict[str, Callable[[bool, bool], bool]]:
        return {
            _HEAD: self._h_head,
            _REASON: partial(self._h_body, _REASON),
            _CONTENT: partial(self._h_body, _CONTENT),
            _CALL: self._h_call,
            _DONE: self._h_done,
        }

    def _h_done(self, final: bool, truncated: bool) -> bool:
        return False

    def _sink(self, text: str) -> None:
        if self._resume == _REASON:
            self._reason(text)
        else:
            self._text(text)

    def _h_head(self, final: bool, truncated: bool) -> bool:
        buf = self._buf
        ws = _WS.match(buf)
        lead = ws.end() if ws else 0
        window = buf[lead : lead + _MAX_HEADER + len(MESSAGE)]
        self.ops += lead + len(window) + 1
        if not window:
            if final:
                # The last message's end marker was structure; trailing whitespace stays in its sink.
                self._pending = ""
                self._fallback(self._consume(len(buf)))
                self._mode = _DONE
            return False
        if not window.startswith(_HEADER_STARTS):
            if not final and any(h.startswith(window) for h in _HEADER_STARTS):
                return False  # may still become a header
            # Not a message header: the message before went on (its <|end|> is markup all the
            # same: free text between messages, vLLM #35906; another end marker is its text).
            self._sink(self._kept_end())
            self._mode = self._resume
            return True
        pos = window.find(MESSAGE)
        bad = min((p for p in (window.find(m) for m in (END, CALL, RETURN)) if p != -1), default=-1)
        if pos != -1 and (bad == -1 or pos < bad) and pos <= _MAX_HEADER:
            header = self._consume(lead + pos)
            self._consume(len(MESSAGE))
            got = parse_header(header)
            if got is None:
                self._fallback(header + MESSAGE)
                return True
            self._pending = ""
            channel, recipient = got
            self._resume = _CONTENT
            if recipient is not None:
                self._head = header + MESSAGE
                self._recipient = recipient
                self._parts = []
                self._cstate = _C_LEAD if self._json_aware else _C_PLAIN
                self._mode = _CALL
            elif channel == "analysis":
                self._mode = _REASON
            else:
                self._mode = _CONTENT
            # A call body's blank lead is its raw text (the JSON reader skips it).
            self._drop_space = recipient is None and spaced(header)
            return True
        decided = bad != -1 or len(window) > _MAX_HEADER or final
        stranded = _STRANDED.match(window) if decided else None
        if stranded is not None and (bad == -1 or stranded.end() <= bad):
            # No <|message|> came before the message's end: the header is the channel word, and
            # the final answer follows it (read as a final message's body).
            self._pending = ""
            self._consume(lead + stranded.end())
            self._resume = _CONTENT
            self._mode = _CONTENT
            return True
        if bad != -1 and window.startswith(END, bad) and _BROKEN_HEADER.fullmatch(window, 0, bad):
            # A header that reached <|end|> with no <|message|>: a message that never got a body
            # (gpt-oss-20b's broken header, llama.cpp #27720). Its words are reasoning, its
            # markers structure; the messages after it are read as ever.
            self._pending = ""
            junk = self._consume(lead + bad)
            self._consume(len(END))
            for words in _MARKUP.split(junk):
                if words.strip():
                    self._reason(words)
            return True
        if (
            final
            and truncated
            and bad == -1
            and len(window) <= _MAX_HEADER
            and lead + len(window) == len(buf)
        ):
            # The token limit cut the reply inside a header: the message before it ended at its
            # end marker (structure), and the header being written is an incomplete item.
            self._pending = ""
            self._sink(self._consume(lead))
            head = self._consume(len(self._buf))
            to = re.search(r"to=([^\s<>]+)", head)
            self._events.append(
                ToolCallIncomplete(IncompleteCall(head, _call_name(to.group(1)) if to else None, "truncated"))
            )
            self._mode = _DONE
            return False
        if bad != -1 or len(window) > _MAX_HEADER or final:
            # Not a header after all: it is text up to where a next message could begin.
            marker = START if window.startswith(START) else CHANNEL if window.startswith(CHANNEL) else ""
            self._fallback(self._consume(lead + len(marker)))
            return True
        return False

    def _fallback(self, text: str) -> None:
        """Text that is not a header: it stays in the sink it interrupted (with the end marker
        of the message before, which was not an end after all)."""
        self._sink(self._pending + text)
        self._pending = ""
        self._mode = self._resume

    def _kept_end(self) -> str:
        """The end marker before free text (no header begins there), as that text's lead: none
        for ``<|end|>`` (a special token, never words; gpt-oss writes free text after it now and
        then, ``<|end|> 364 <|start|>``, vLLM #35906), the others as written."""
        pending, self._pending = self._pending, ""
        return "" if pending == END else pending

    def _body(self, final: bool) -> tuple[str, str | None]:
        """Text of the body up to its end marker (consumed) and the marker (None: not yet)."""
        # Looks no further than the nearest end marker (the markers hold none of one another).
        pos, m, safe = first_marker(self._buf, _BODY_END, 0, final)
        self.ops += (safe if pos == -1 else pos) + 1
        if pos == -1:
            return self._consume(safe if not final else len(self._buf)), None
        text = self._consume(pos)
        if m in (END, CALL, RETURN):
            self._consume(len(m))
        return text, m

    def _h_body(self, sink: str, final: bool, truncated: bool) -> bool:
        """The body of an analysis message (``sink`` is reasoning) or of a final / preamble message
        or text outside messages (content)."""
        if self._drop_space:
            # LLM-jp's space after <|message|>: structure, once it is seen (or the reply ended).
            if not self._buf and not final:
                return False
            self.ops += 1
            if self._buf.startswith(" "):
                self._consume(1)
            self._drop_space = False
        text, m = self._body(final)
        self._resume = sink
        self._sink(text)
        self._pending = m if m in (END, CALL, RETURN) else ""
        return self._after_body(m, final)

    def _after_body(self, m: str | None, final: bool) -> bool:
        if m is not None:
            self._mode = _HEAD
            return True
        if final:
            self._mode = _DONE
        return False

    def _h_call(self, final: bool, truncated: bool) -> bool:
        # A call body is held until its message ends. Its JSON is scanned JSON-aware (a marker
        # inside a JSON string does not end it): _C_LEAD waits for the first non-blank text (an
        # optional ```json fence, then "{"), _C_JSON follows the JSON, _C_POST / _C_PLAIN look
        # for the end marker (after the JSON, or in a body that is not JSON).
        m: str | None = None
        while True:
            st = self._cstate
            buf = self._buf
            if st == _C_LEAD:
                self.ops += min(len(buf), _MAX_LEAD) + 1
                hit = _LEAD_JSON.match(buf)
                if hit is not None:
                    self._parts.append(self._consume(hit.end() - 1))
                    self._json = JsonScanner()
                    self._cstate = _C_JSON
                    continue
                if not final and len(buf) <= _MAX_LEAD and _LEAD_PARTIAL.fullmatch(buf):
                    return False
                self._cstate = _C_PLAIN
                continue
            if st == _C_JSON:
                assert self._json is not None  # a JSON body is being read
                before = self._json.ops
                j = self._json.feed(buf, 0)
                self.ops += self._json.ops - before + 1
                if j == -1:
                    self._parts.append(self._consume(len(buf)))
                    if not final:
                        return False
                    return self._json_fallback(truncated)
                self._parts.append(self._consume(j))
                self._cstate = _C_POST
                continue
            text, m = self._body(final)
            self._parts.append(text)
            if m is None and not final:
                return False
            break
        return self._end_call(m, truncated)

    def _json_fallback(self, truncated: bool) -> bool:
        """The reply ended inside a JSON body that never closed: it was not JSON-aware text after
        all. The body ends at its first end marker; what follows is read again as messages."""
        full = "".join(self._parts)
        self._parts = []
        self._json_aware = False
        pos, m, _safe = first_marker(full, _BODY_END, 0, True)
        self.ops += (len(full) if pos == -1 else pos) + 1
        if pos == -1:
            self._parts = [full]
            return self._end_call(None, truncated)
        self._parts = [full[:pos]]
        self._buf = full[pos + (len(m) if m in (END, CALL, RETURN) else 0) :] + self._buf
        return self._end_call(m, truncated)

    def _end_call(self, m: str | None, truncated: bool) -> bool:
        body = "".join(self._parts)
        self._parts = []
        head = self._head
        end = m if m in (END, CALL, RETURN) else ""
        raw = head + body + end
        recipient = self._recipient or ""
        name = _call_name(recipient)
        if m is None and truncated:
            self._cut("", raw)  # cut off while writing the call: an incomplete call
        elif not recipient.startswith("functions.") and name not in self._schemas:
            # A built-in recipient (python, browser.search) that was not declared: not a call to
            # run and not content, a rejected call.
            self._undeclared(raw, recipient)
        else:
            call = self._read_call(body, closed=m in (CALL, END))
            if call is None:
                self._text(raw)
            else:
                self._emit_call(ParsedCall(call[0], call[1], raw))
        self._mode = _HEAD if m is not None else _DONE
        return m is not None

    def _read_call(self, body: str, *, closed: bool = False) -> tuple[str, dict[str, Any]] | None:
        """The call in a message's body; with ``closed`` (the model ended the message itself, with
        ``<|call|>`` or ``<|end|>``), also JSON that lacks only its last closing brackets, which
        gpt-oss leaves out of deeply nested arguments (ollama #14180)."""
        name = _call_name(self._recipient or "")
        if name is None:
            return None
        text = strip_fence(body.strip()).strip()
        if not text.startswith("{"):
            return None
        ok, args = loads_repaired(text)
        if not ok and closed:
            closers = missing_closers(text)
            if closers is not None:
                ok, args = loads_repaired(text + closers)
        if not ok or not isinstance(args, dict):
            return None
        return name, args


class HarmonyFormat(OwnStreamFormat):
    stream_class = HarmonyStream
    name = "harmony"
    label = "Harmony (OpenAI gpt-oss, LLM-jp-4.1)"
    openers = (START, CHANNEL)
    thinking_markers = (CHANNEL + "analysis" + MESSAGE, END)
    thinking_close = END + START + "assistant" + CHANNEL + "final" + MESSAGE

    def opens_in_reasoning(self, prompt: str) -> bool:
        if not isinstance(prompt, str):
            return False
        return prompt.rstrip().endswith(CHANNEL + "analysis" + MESSAGE)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import harmony

        return partial(
            harmony,
            channel=CHANNEL,
            message=MESSAGE,
            constrain=CONSTRAIN,
            call_end=CALL,
            end=END,
            start=START,
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{CHANNEL}commentary to=functions.{name} {CONSTRAIN}json{MESSAGE}{json_text(dict(arguments))}{CALL}"


register(HarmonyFormat())
