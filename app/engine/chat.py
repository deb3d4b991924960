"""The tool-calling chat loop: render -> generate -> stream through the family's parser ->
dispatch calls through ``app.tools`` -> append results -> generate again (up to
``max_rounds``), yielding typed events (``app.engine.events``).

``chat.tool_format``: ``auto`` uses the family detected from the model's template
(its ``tool_use`` template when it has one); an explicit family is used as chosen, with a
notice when detection disagrees; ``none`` and ``auto`` without a match chat without tools
(no schemas sent). ``auto`` without a match puts a notice naming the setting on the
conversation's first reply. An explicit family on a template that does not render tools gets the
schemas and that family's call syntax in the system message (``app.engine.render``,
``tools_mode == "guidance"``), so choosing a format always turns tools on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from app.calls import ToolCall
from app.engine.detection import detect_tool_format
from app.engine.events import (
    ChatEvent,
    DoneEvent,
    NoticeEvent,
)
from app.engine.formats.events import ReasoningDelta, TextDelta
from app.engine.generate import GenerationError, generate
from app.engine.holdback import partial_start
from app.engine.loop import CallIds, Reply, cut_after_last_user, dispatch_call, end_round, tokens_per_s
from app.engine.messages import Message
from app.engine.render import PromptRenderError, choose_template, render_prompt
from app.engine.sampling import SamplingParams

if TYPE_CHECKING:
    from app.engine.formats.base import Stream
    from app.engine.llm import LoadedModel
    from app.engine.render import RenderedPrompt

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "TOOL_FORMAT_SETTING",
    "ChatSession",
    "Message",
    "ToolCall",
    "detect_model_format",
    "resolve_tool_format",
    "special_opener_inline",
]

DEFAULT_MAX_ROUNDS = 8
TOOL_FORMAT_SETTING = "chat.tool_format"
_SESSION: Any = object()  # send(): use the session's choice


def detect_model_format(model: LoadedModel) -> str | None:
    """The family the model's own templates render calls in (:func:`detect_tool_format`)."""
    chat = None if model.template_is_fallback else model.chat_template
    return detect_tool_format(
        chat, model.tool_use_template, bos_token=model.bos_token, eos_token=model.eos_token
    )


def resolve_tool_format(setting: str, detected: str | None) -> tuple[str | None, list[NoticeEvent]]:
    """(effective family or None, notices for the first reply) for a ``chat.tool_format`` value."""
    from app.engine.formats import FORMATS

    value = (setting or "auto").strip()
    if value == "none":
        return None, []
    if value == "auto":
        if detected is not None:
            return detected, []
        return None, [
            NoticeEvent(
                code="no_tool_format",
                message=(
                    "Tools are off for this model: its chat template matches no known tool-call "
                    f"format. Choose a format in the {TOOL_FORMAT_SETTING} setting to turn them on."
                ),
                setting=TOOL_FORMAT_SETTING,
            )
        ]
    if value not in FORMATS:
        choices = ", ".join(["auto", *FORMATS, "none"])
        raise ValueError(f"unknown {TOOL_FORMAT_SETTING} value {value!r} (choices: {choices})")
    notices = []
    if detected != value:
        seen = f"the {detected} format" if detected else "no known tool-call format"
        notices.append(
            NoticeEvent(
                code="tool_format_override",
                message=(
                    f"Using the {value} tool-call format as set in {TOOL_FORMAT_SETTING}; "
                    f"the model's template looks like {seen}."
                ),
                setting=TOOL_FORMAT_SETTING,
            )
        )
    return value, notices


class _PlainStream:
    """Without a tool format: split a leading ``<think>...</think>`` reasoning block from the
    text, holding back a partial tag. Calls are never parsed (tools are off)."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self, in_reasoning: bool):
        self._text, self._reasoning = TextDelta, ReasoningDelta
        self.state = "reasoning" if in_reasoning else "start"
        self.buf = ""

    def feed(self, delta: str) -> list[Any]:
        self.buf += delta
        out: list[Any] = []
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
                out.append(self._text(self.buf))
                self.buf = ""
                break
            i = self.buf.find(self.CLOSE)
            if i >= 0:
                if i:
                    out.append(self._reasoning(self.buf[:i]))
                self.buf = self.buf[i + len(self.CLOSE) :].lstrip("\n")
                self.state = "text"
                continue
            cut = partial_start(self.buf, (self.CLOSE,))
            if cut:
                out.append(self._reasoning(self.buf[:cut]))
                self.buf = self.buf[cut:]
            break
        return out

    def finish(self, truncated: bool = False) -> list[Any]:
        out = []
        if self.buf:
            out.append((self._reasoning if self.state == "reasoning" else self._text)(self.buf))
            self.buf = ""
        return out


class ChatSession:
    """One conversation with a loaded model. ``send()`` / ``regenerate()`` yield ChatEvents."""

    def __init__(
        self,
        model: LoadedModel,
        *,
        tool_format: str = "auto",
        registry: Any = None,
        dispatcher: Any = None,
        system_prompt: str | None = None,
        sampling: SamplingParams | Mapping[str, Any] | None = None,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        max_tokens: int = 1024,
        messages: list[Message] | None = None,
        deadline_s: float | None = None,
        grammar: str | Callable[[int], str | None] | None = None,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        response_format: Any = None,
    ):
        """``grammar``: a GBNF grammar constraining every reply, or a callable
        ``round -> grammar | None`` (round 1 is the first generation of a turn).

        ``tool_choice`` (``auto`` | ``none`` | ``required`` | ``{"type": "function", "function":
        {"name": ...}}``), ``parallel_tool_calls`` and ``response_format`` (``{"type":
        "json_object"}`` or ``{"type": "json_schema", "json_schema": {"schema": ...}}``) are the
        defaults of every turn; ``send`` may override them for one turn. A forced choice holds the
        first reply of the turn to a call (``app.engine.constraints``); after the tool results the
        turn goes on under ``auto`` (calls still held to their schemas)."""
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
        self.model = model
        self.tool_format = tool_format
        self.registry = registry
        if dispatcher is None and registry is not None:
            from app.tools.dispatcher import Dispatcher

            dispatcher = Dispatcher(registry)
        self.dispatcher = dispatcher
        self.system_prompt = system_prompt
        self.sampling = sampling
        self.max_rounds = max_rounds
        self.max_tokens = max_tokens
        self.deadline_s = deadline_s
        self.grammar = grammar
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.response_format = response_format
        self.last_constraint: Any = None  # the Constraint of the latest generation (None: free)
        self.last_prompt: RenderedPrompt | None = None  # the prompt of the latest generation
        self.messages: list[Message] = list(messages or [])
        self.detected_format: str | None = detect_model_format(model)
        self.effective_format, self._format_notices = resolve_tool_format(tool_format, self.detected_format)
        if self.effective_format is not None and self.detected_format is None:
            self._format_notices = [self._with_guidance_note(n) for n in self._format_notices]
        self._ids = CallIds.of(self.messages)

    # -- public -------------------------------------------------------------------------

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The OpenAI-format tools sent to the template, or None when tools are off."""
        if self.effective_format is None or self.registry is None:
            return None
        tools = self.registry.openai_tools()
        return tools or None

    def send(
        self,
        text: str,
        *,
        cancel: threading.Event | None = None,
        tool_choice: Any = _SESSION,
        parallel_tool_calls: Any = _SESSION,
        response_format: Any = _SESSION,
    ) -> Iterator[ChatEvent]:
        """Add a user message and reply; the choices default to the session's."""
        if not isinstance(text, str):
            raise TypeError("the message must be a string")
        first = not any(m.role == "assistant" for m in self.messages)
        self.messages.append(Message(role="user", content=text))
        return self._reply(cancel, first, self._choices(tool_choice, parallel_tool_calls, response_format))

    def _choices(self, tool_choice: Any, parallel: Any, response_format: Any) -> tuple[Any, bool, Any]:
        return (
            self.tool_choice if tool_choice is _SESSION else tool_choice,
            bool(self.parallel_tool_calls if parallel is _SESSION else parallel),
            self.response_format if response_format is _SESSION else response_format,
        )

    def regenerate(
        self,
        *,
        cancel: threading.Event | None = None,
        tool_choice: Any = _SESSION,
        parallel_tool_calls: Any = _SESSION,
        response_format: Any = _SESSION,
    ) -> Iterator[ChatEvent]:
        """Drop everything after the last user message and reply again."""
        cut_after_last_user(self.messages)
        first = not any(m.role == "assistant" for m in self.messages)
        return self._reply(cancel, first, self._choices(tool_choice, parallel_tool_calls, response_format))

    # -- the loop -----------------------------------------------------------------------

    def _with_guidance_note(self, notice: NoticeEvent) -> NoticeEvent:
        from app.engine.render import template_tools_mode

        if notice.code != "tool_format_override":
            return notice
        if template_tools_mode(choose_template(self.model, tools_on=True)[0]) != "none":
            return notice
        return NoticeEvent(
            code=notice.code,
            setting=notice.setting,
            message=(
                notice.message + " Its template does not show tools to the model, so Callisto lists them "
                f"with an example call in the {self.effective_format} format in the system prompt."
            ),
        )

    def _notices(self, first: bool) -> list[NoticeEvent]:
        if not first:
            return []
        notices = []
        if self.model.template_is_fallback:
            notices.append(
                NoticeEvent(
                    code="no_chat_template",
                    message=(
                        "This model file has no chat template; Callisto formats the conversation with "
                        "its fallback ChatML template (<|im_start|>role ... <|im_end|>), so replies may "
                        "be poor. A base model is not trained to chat."
                    ),
                )
            )
        return notices + list(self._format_notices)

    def _reply(
        self,
        cancel: threading.Event | None,
        first: bool,
        choices: tuple[Any, bool, Any] = ("auto", True, None),
    ) -> Iterator[ChatEvent]:
        from app.engine.constraints import parse_tool_choice

        yield from self._notices(first)
        choice, parallel, response_format = choices
        no_tools = parse_tool_choice(choice).mode == "none"
        fmt = None
        if self.effective_format is not None and not no_tools:
            from app.engine.formats import FORMATS

            fmt = FORMATS[self.effective_format]
        tools = None if no_tools else self.tools  # none: the model is never told the tools exist
        ttft: float | None = None
        gen_tokens = 0
        gen_time = 0.0
        prompt_tokens = 0
        evaluated = 0
        finish = "stop"
        rounds = 0
        start = time.monotonic()
        deadline = None if self.deadline_s is None else start + self.deadline_s
        while True:
            rounds += 1
            msgs = [Message(role="system", content=self.system_prompt)] if self.system_prompt else []
            msgs += self.messages
            try:
                rendered = render_prompt(
                    self.model, msgs, tools=tools, tool_format=None if no_tools else self.effective_format
                )
                self.last_prompt = rendered
                in_reasoning = (
                    fmt.opens_in_reasoning(rendered.text)
                    if fmt is not None
                    else rendered.text.rstrip().endswith("<think>")
                )
                # Stream plain replies at once unless this template's model may close a reasoning
                # block it never opened (then the text before the close is reasoning).
                source = choose_template(self.model, bool(tools))[0]
                orphan_close = fmt is not None and fmt.expects_orphan_close(source, rendered.text)
                stream: Stream | _PlainStream
                if fmt is not None:
                    stream = fmt.stream(tools or [], in_reasoning=in_reasoning, orphan_close=orphan_close)
                    stream.call_ids = self._ids.issue
                else:
                    stream = _PlainStream(in_reasoning)
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                grammar = self.grammar(rounds) if callable(self.grammar) else self.grammar
                constraint = (
                    None
                    if grammar is not None
                    else self._constraint(
                        fmt,
                        tools,
                        choice if rounds == 1 else "auto",
                        parallel,
                        response_format,
                        source,
                        in_reasoning,
                    )
                )
                self.last_constraint = constraint
                gen = generate(
                    self.model,
                    rendered.text,
                    max_tokens=self.max_tokens,
                    sampling=self.sampling,
                    cancel=cancel,
                    deadline_s=remaining,
                    grammar=grammar,
                    constraint=constraint,
                )
                reply = Reply()
                gen_started = time.monotonic()
                for piece in gen:
                    for ev in stream.feed(piece):
                        yield from reply.take(ev)
                res = gen.result
                assert res is not None
                for ev in stream.finish(truncated=res.finish_reason != "stop"):
                    yield from reply.take(ev)
            except (PromptRenderError, GenerationError, ValueError) as exc:
                yield DoneEvent(
                    finish_reason="error",
                    error=str(exc),
                    rounds=rounds,
                    ttft_s=ttft,
                    generated_tokens=gen_tokens,
                    prompt_tokens=prompt_tokens,
                    engine_crashed=self.model.crash is not None,
                )
                return
            if ttft is None:  # the turn's time to first token: rendering and prompt evaluation included
                ttft = (
                    (time.monotonic() - start) if res.ttft_s is None else (gen_started - start) + res.ttft_s
                )
            gen_tokens += res.generated_tokens
            if res.ttft_s is not None:
                gen_time += max(0.0, res.elapsed_s - res.ttft_s)
            prompt_tokens = res.prompt_tokens
            evaluated += res.prompt_tokens_evaluated
            finish, events, run = end_round(
                self.messages, reply, res.finish_reason, rounds=rounds, max_rounds=self.max_rounds
            )
            yield from events
            if not run:
                break
            for call in reply.calls:
                yield from dispatch_call(
                    self.dispatcher,
                    call,
                    self.messages,
                    constrained=constraint.describe if constraint else None,
                )
            if cancel is not None and cancel.is_set():
                finish = "cancelled"
                break
        yield DoneEvent(
            finish_reason=finish,
            ttft_s=ttft,
            tokens_per_s=tokens_per_s(gen_tokens, gen_time),
            prompt_tokens=prompt_tokens,
            generated_tokens=gen_tokens,
            rounds=rounds,
            extra={
                "prompt_tokens_evaluated": evaluated,
                "tool_format": self.effective_format,
                "constraint": self.last_constraint.describe if self.last_constraint else None,
            },
        )

    def _constraint(
        self,
        fmt: Any,
        tools: list[dict[str, Any]] | None,
        choice: Any,
        parallel: bool,
        response_format: Any,
        source: str,
        in_reasoning: bool,
    ) -> Any:
        """The constraint of one generation, or None (free). Raises ConstraintError (a ValueError)."""
        from app.engine.constraints import compile_constraint, parse_tool_choice, resolve_tool_choice

        resolve_tool_choice(choice, self.registry.openai_tools() if self.registry is not None else [])
        if (
            fmt is not None
            and tools
            and response_format is None
            and parse_tool_choice(choice).mode == "auto"
            and not _special_opener(self.model, fmt)
        ):
            return None  # auto, and the call opener is text: decoding stays free, the parser reads the call
        reasoning = bool(fmt is not None and fmt.reasoning and fmt.reasoning[0] in (source or ""))
        return compile_constraint(
            self.model,
            family=fmt.name if fmt is not None else None,
            tools=tools,
            tool_choice=choice,
            parallel_tool_calls=parallel,
            response_format=response_format,
            reasoning=reasoning,
            in_reasoning=in_reasoning,
        )


def _special_opener(model: LoadedModel, fmt: Any) -> bool:
    """Whether the family's first call opener begins with one special token of ``model`` (then
    ``auto`` holds every call from that token on; a text opener leaves ``auto`` free)."""
    opener = fmt.openers[0] if fmt.openers else ""
    if not opener:
        return False
    if model.engine is not None:
        return bool(model.engine.call("special_opener", opener))
    return special_opener_inline(model, opener)


def special_opener_inline(model: LoadedModel, opener: str) -> bool:
    """:func:`_special_opener` on a model loaded in this process (the engine process runs it)."""
    import llama_cpp

    toks = model.llm.tokenize(opener.encode("utf-8"), add_bos=False, special=True) if opener else []
    if not toks:
        return False
    attr = llama_cpp.llama_vocab_get_attr(model.vocab, toks[0])
    piece = model.token_bytes(toks[0]).decode("utf-8", "replace")
    return bool(
        attr & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
        or (
            attr & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
            and piece.startswith("<")
            and piece.endswith(">")
            and opener.startswith(piece)
        )
    )
