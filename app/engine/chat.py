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

``thinking`` (``app.engine.thinking.Thinking``: off, on, an effort level, a budget) renders
through the template's own switch. A budget of N tokens: the reply is generated for at most N
tokens; if its reasoning block is still open then, the engine writes ``budget_message`` and the
family's closing text (``Format.closing_text``: ``</think>`` and a blank line, Harmony's
``<|end|><|start|>assistant<|channel|>final<|message|>``...) into the reply and the model goes on
from there (the prompt so far is in the KV cache) for the rest of ``max_tokens``. A budget is not
applied to a reply held to a grammar, a forced tool choice or a response format; under ``auto``'s
hold on calls (a special-token opener) the rest of the reply is held again from after the reasoning.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Unpack

from app.calls import ToolCall
from app.engine.detection import detect_tool_format
from app.engine.errors import GenerationError, PromptRenderError
from app.engine.events import ChatEvent, DoneEvent, LiveProgress, NoticeEvent
from app.engine.formats.base import Stream
from app.engine.formats.events import TextDelta
from app.engine.formats.plain import PlainStream
from app.engine.generation import NO_OPTIONS, TokenOptions, generate
from app.engine.grammar.lark import DEFAULT_MAX_CALLS
from app.engine.loop import (
    CallIds,
    Continued,
    RoundEnd,
    TurnOptions,
    cut_after_last_user,
    dispatcher_for,
    run_rounds,
    take_cut_reply,
)
from app.engine.messages import Message
from app.engine.render import choose_template, render_prompt
from app.engine.sampling import SamplingParams
from app.engine.thinking import Thinking, ThinkingControl, parse_thinking, thinking_control

if TYPE_CHECKING:
    from app.engine.backend import GenerationResult
    from app.engine.llm import LoadedModel
    from app.engine.render import RenderedPrompt

__all__ = [
    "DEFAULT_MAX_CALLS",
    "DEFAULT_MAX_ROUNDS",
    "TOOL_FORMAT_SETTING",
    "ChatSession",
    "LocalReplies",
    "Message",
    "ToolCall",
    "answer_after",
    "detect_model_format",
    "lead_messages",
    "resolve_tool_format",
]

DEFAULT_MAX_ROUNDS = 8
#: How often (seconds) the call being written is read for the window (``LocalReplies.live``).
LIVE_PEEK_S = 0.1
TOOL_FORMAT_SETTING = "chat.tool_format"


@dataclass(frozen=True)
class _Turn:
    """One turn's choices: its :class:`~app.engine.loop.TurnOptions` over the session's defaults."""

    tool_choice: Any
    parallel: bool
    response_format: Any
    thinking: Thinking
    sampling: SamplingParams | Mapping[str, Any] | None
    max_tokens: int


def lead_messages(session: Any) -> list[Message]:
    """What a session's model reads before its conversation: the system prompt, then its opening
    messages (a session without them, a remote one, has none)."""
    system = getattr(session, "system_prompt", None)
    lead = [Message(role="system", content=system)] if system else []
    return lead + list(getattr(session, "opening", None) or [])


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
        max_calls: int | None = DEFAULT_MAX_CALLS,
        thinking: Thinking | bool | str | None = None,
        opening: list[Message] | None = None,
        stop: tuple[str, ...] | None = None,
    ):
        """``grammar``: a GBNF grammar constraining every reply, or a callable
        ``round -> grammar | None`` (round 1 is the first generation of a turn).

        ``tool_choice`` (``auto`` | ``none`` | ``required`` | ``{"type": "function", "function":
        {"name": ...}}``), ``parallel_tool_calls`` and ``response_format`` (``{"type":
        "json_object"}`` or ``{"type": "json_schema", "json_schema": {"schema": ...}}``) are the
        defaults of every turn; ``send`` may override them for one turn (as it may ``sampling`` and
        ``max_tokens``: :class:`~app.engine.loop.TurnOptions`). A forced choice holds the
        first reply of the turn to a call (``app.engine.constraints``); after the tool results the
        turn goes on under ``auto`` (calls still held to their schemas).

        ``max_calls``: the most calls one reply holds (one without ``parallel_tool_calls``; None:
        no count); a reply's calls also end at a repeat of one of them (``app.engine.loop``).

        ``thinking``: the thinking choice of every turn (``app.engine.thinking.parse_thinking``:
        None is the template's default; ``send`` may override it for one turn).

        ``opening``: messages the model reads after the system prompt and before the conversation,
        every turn, never part of :attr:`messages` (a made model's, ``app.server._presets``);
        ``stop``: strings that end every reply where they begin (not written)."""
        if max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
        if max_calls is not None and max_calls < 1:
            raise ValueError(f"max_calls must be at least 1, got {max_calls}")
        self.model = model
        self.tool_format = tool_format
        self.registry = registry
        self.dispatcher = dispatcher_for(registry, dispatcher)
        self.system_prompt = system_prompt
        self.sampling = sampling
        self.max_rounds = max_rounds
        self.max_tokens = max_tokens
        self.deadline_s = deadline_s
        self.grammar = grammar
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.response_format = response_format
        self.max_calls = max_calls
        self.thinking = parse_thinking(thinking)
        self.opening: list[Message] = list(opening or [])
        self.stop = tuple(stop) if stop else None
        self._replies: LocalReplies | None = None  # the latest turn's
        self.messages: list[Message] = list(messages or [])
        self.detected_format: str | None = detect_model_format(model)
        self.effective_format, self._format_notices = resolve_tool_format(tool_format, self.detected_format)
        if self.effective_format is not None and self.detected_format is None:
            self._format_notices = [self._with_guidance_note(n) for n in self._format_notices]
        self._ids = CallIds.of(self.messages)

    # -- public -------------------------------------------------------------------------

    @property
    def last_prompt(self) -> RenderedPrompt | None:
        """The prompt of the latest generation."""
        return self._replies.last_prompt if self._replies is not None else None

    @property
    def last_constraint(self) -> Any:
        """The Constraint of the latest generation (None: free)."""
        return self._replies.last_constraint if self._replies is not None else None

    @property
    def last_sampling(self) -> SamplingParams | Mapping[str, Any] | None:
        """The sampling the latest turn asked for (None: the model's recommended values)."""
        return self._replies.sampling if self._replies is not None else None

    @property
    def live(self) -> LiveProgress | None:
        """The latest turn as it is written: its tokens so far and the call being written."""
        return self._replies.live if self._replies is not None else None

    @property
    def thinking_control(self) -> ThinkingControl:
        """The thinking switch the model's template reads (``kind == "none"``: it has none, so a
        thinking choice changes nothing; ``levels``: the effort levels it takes)."""
        from app.engine.formats import FORMATS

        fmt = FORMATS.get(self.detected_format or "")
        source = choose_template(self.model, self.tools is not None)[0]
        return thinking_control(source, fmt.thinking_tags() if fmt is not None else None)

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
        images: Sequence[bytes] = (),
        **options: Unpack[TurnOptions],
    ) -> Iterator[ChatEvent]:
        """Add a user message (``text``, and ``images``: the image files' bytes, checked and
        decoded in the engine process) and reply; ``options`` are this turn's choices (the others
        are the session's)."""
        if not isinstance(text, str):
            raise TypeError("the message must be a string")
        turn = self._turn(options)
        first = not any(m.role == "assistant" for m in self.messages)
        self.messages.append(Message(role="user", content=text, images=list(images)))
        return self._reply(cancel, first, turn)

    def _turn(self, options: TurnOptions) -> _Turn:
        """The turn's choices: ``options`` over the session's (ValueError for an unknown thinking)."""
        unknown = set(options) - TurnOptions.__optional_keys__
        if unknown:
            raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unknown))}")
        return _Turn(
            tool_choice=options.get("tool_choice", self.tool_choice),
            parallel=bool(options.get("parallel_tool_calls", self.parallel_tool_calls)),
            response_format=options.get("response_format", self.response_format),
            thinking=parse_thinking(options["thinking"]) if "thinking" in options else self.thinking,
            sampling=options.get("sampling", self.sampling),
            max_tokens=options.get("max_tokens", self.max_tokens),
        )

    def regenerate(
        self, *, cancel: threading.Event | None = None, **options: Unpack[TurnOptions]
    ) -> Iterator[ChatEvent]:
        """Drop everything after the last user message and reply again; ``options`` as
        :meth:`send`'s (the window passes the settings the turn was first sent with)."""
        turn = self._turn(options)
        cut_after_last_user(self.messages)
        first = not any(m.role == "assistant" for m in self.messages)
        return self._reply(cancel, first, turn)

    def continue_reply(
        self, *, cancel: threading.Event | None = None, **options: Unpack[TurnOptions]
    ) -> Iterator[ChatEvent]:
        """Continue the last reply where it was cut (the max-tokens limit): the model goes on from
        its text (a call it was writing included) and what it writes joins that same message; no
        user message is added. ``options`` as :meth:`send`'s (the tool choice is ``auto`` unless
        given). ValueError when the conversation does not end with such a reply."""
        turn = self._turn({"tool_choice": "auto", **options})
        return self._reply(cancel, False, turn, continues=take_cut_reply(self.messages))

    # -- the loop -----------------------------------------------------------------------

    def _with_guidance_note(self, notice: NoticeEvent) -> NoticeEvent:
        from app.engine.templates import template_tools_mode

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
        if not first or not self.model.generates:
            return []  # an embedding model's reply is the error that says what it is
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

    def _conversation(self) -> list[Message]:
        """What the model reads: the system prompt, the opening messages, then the conversation."""
        return lead_messages(self) + self.messages

    def _reply(
        self, cancel: threading.Event | None, first: bool, turn: _Turn, continues: Continued | None = None
    ) -> Iterator[ChatEvent]:
        from app.engine.constraints import parse_tool_choice

        yield from self._notices(first)
        # with tool_choice none the model is never told the tools exist
        no_tools = parse_tool_choice(turn.tool_choice).mode == "none"
        max_calls = self.max_calls if turn.parallel else 1
        self._replies = LocalReplies(
            self.model,
            self._conversation,
            family=None if no_tools else self.effective_format,
            tools=None if no_tools else self.tools,
            ids=self._ids,
            max_tokens=turn.max_tokens,
            sampling=turn.sampling,
            tool_choice=turn.tool_choice,
            parallel_tool_calls=turn.parallel,
            response_format=turn.response_format,
            declared=self.registry.openai_tools() if self.registry is not None else [],
            grammar=self.grammar,
            deadline_s=self.deadline_s,
            max_calls=max_calls,
            thinking=turn.thinking,
            reasoning_format=self.detected_format,
            stop=self.stop,
        )
        self._replies.prefix = continues.prefix if continues is not None else None
        yield from run_rounds(
            self._replies,
            self.messages,
            dispatcher=self.dispatcher,
            max_rounds=self.max_rounds,
            cancel=cancel,
            max_calls=max_calls,
            continues=continues,
        )


class LocalReplies:
    """How a model loaded here writes one reply (an ``app.engine.loop.ReplySource``): render the
    conversation through its template, generate (under the turn's constraint), read the text with
    the family's stream parser (:class:`~app.engine.formats.PlainStream` without one).

    ``conversation()`` gives the messages to render, system prompt included; ``family`` is the
    tool-call format (None: tools off); ``tools`` the OpenAI-format tools the prompt shows. The
    request's ``tool_choice`` (held in round 1; later rounds are ``auto``), ``parallel_tool_calls``,
    ``max_calls`` and ``response_format`` decide the constraint (:meth:`constraint`); ``grammar`` (a GBNF, or
    ``round -> GBNF | None``) replaces it. ``thinking``: the thinking choice (rendered through the
    template's switch; its budget closes the reasoning: see the module docstring);
    ``reasoning_format``: the family whose reasoning tags the model writes (default ``family``),
    for a template whose only switch is a pre-closed block. ``options``
    (``app.engine.generation.TokenOptions``): its ``logprobs`` gathers the generations' token log
    probabilities in :attr:`token_logprobs`, before the events of their text. The API server
    subclasses it for its own rules (``app.server._engine``)."""

    errors: tuple[type[Exception], ...] = (PromptRenderError, GenerationError, ValueError)  # -> failed()
    parse = True  # False: the text is read as it comes (no parser, no constraint: raw completions)

    def __init__(
        self,
        model: LoadedModel,
        conversation: Callable[[], list[Message]],
        *,
        family: str | None,
        tools: list[dict[str, Any]] | None,
        ids: CallIds,
        max_tokens: int = 1024,
        sampling: SamplingParams | Mapping[str, Any] | None = None,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        response_format: Any = None,
        declared: list[dict[str, Any]] | None = None,
        grammar: str | Callable[[int], str | None] | None = None,
        stop: tuple[str, ...] | None = None,
        deadline_s: float | None = None,
        max_calls: int | None = DEFAULT_MAX_CALLS,
        thinking: Thinking | bool | str | None = None,
        reasoning_format: str | None = None,
        options: TokenOptions = NO_OPTIONS,
    ):
        from app.engine.formats import FORMATS

        self.model = model
        self.conversation = conversation
        self.family = family
        self.fmt = FORMATS[family] if family is not None else None
        self.tools = tools
        self.ids = ids
        self.max_tokens = max_tokens
        self.sampling = sampling
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.max_calls = max_calls
        self.response_format = response_format
        self.declared = declared if declared is not None else (tools or [])
        self.grammar = grammar
        if self.fmt is not None and self.fmt.turn_stops:  # where the family's reply has ended
            base = tuple(stop) if stop is not None else tuple(model.stop_strings)
            stop = base + tuple(s for s in self.fmt.turn_stops if s not in base)
        self.stop = stop
        self.deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self.last_prompt: RenderedPrompt | None = None
        self.last_constraint: Any = None
        self.live = LiveProgress()  # the turn as it is written (polled by the window)
        #: Continue: the cut reply's text, written after the next prompt so the model goes on from it
        self.prefix: str | None = None
        self.thinking = parse_thinking(thinking)
        marked = FORMATS.get(reasoning_format or "") if reasoning_format else None
        marked = self.fmt if self.fmt is not None else marked
        self.reasoning_markers = marked.thinking_tags() if marked is not None else None
        self._in_reasoning = False
        #: log probabilities, a prompt to score, a prediction, a logit bias (``TokenOptions``): the
        #: bias and the log probabilities hold for every generation of the turn; the prompt is
        #: scored and the prediction drafted from in the first (``TokenOptions.later``)
        self.options = options
        #: the kept tokens' entries of every generation of the turn, each added before the events of
        #: its text are given (a reader takes what is new when it sees an event)
        self.token_logprobs: list[Any] = []
        #: the first prompt's log probabilities (``options.prompt_logprobs``)
        self.prompt_entries: list[Any] | None = None
        #: the last generation's result: its text as the model wrote it (markup and reasoning
        #: included, a thinking budget's closing text too) and its tokens; None before one ends
        self.last_result: GenerationResult | None = None
        #: a template that renders in place of the model's (a server request's own), else None
        self.template: str | None = None

    def render(self) -> str:
        """The prompt of the next generation."""
        self.last_prompt = render_prompt(
            self.model,
            self.conversation(),
            tools=self.tools,
            tool_format=self.family,
            thinking=self.thinking,
            reasoning_markers=self.reasoning_markers,
        )
        if self.prefix:  # Continue: the cut reply, and the model goes on from it
            return answer_after(self.last_prompt.text, self.fmt) + self.prefix
        return self.last_prompt.text

    def _budget(self, round: int, grammar: str | None, constraint: Any) -> int | None:
        """The tokens of this reply's thinking budget, or None (no budget, thinking off, no
        reasoning block in this family, or the reply is held to a grammar, a forced tool choice or
        a response format: only ``auto``'s hold on calls goes on)."""
        budget = self.thinking.budget
        if budget is None or self.thinking.off or not self._goes_on(round, grammar, constraint):
            return None
        if self.fmt is not None and self.fmt.reply_thinking("") is None:
            return None
        return budget

    def _goes_on(self, round: int, grammar: str | None, constraint: Any) -> bool:
        """Whether a reply may be generated on past where this generation ends (a thinking
        budget, a message's end): it is parsed and held by no grammar, forced tool choice or
        response format (only ``auto``'s hold on calls, which the rest keeps)."""
        from app.engine.constraints import parse_tool_choice

        choice = self.tool_choice if round == 1 else "auto"
        held = constraint is not None and (
            self.response_format is not None or parse_tool_choice(choice).mode != "auto"
        )
        return self.parse and grammar is None and not held

    def _budget_close(self, prompt: Any, text: str) -> tuple[tuple[str, str], str]:
        """The reasoning markers of a reply whose budget ran out after ``text``, and the text that
        closes its block (the budget's message, then the family's closing text in the spelling
        the prompt or the reply chose)."""
        if self.fmt is not None:
            got = self.fmt.reply_thinking(prompt, text)
            assert got is not None  # (_budget gave a budget only to a family with a block)
            tags, close = got
        else:
            tags, close = (PlainStream.OPEN, PlainStream.CLOSE), PlainStream.CLOSE + "\n\n"
        message = (self.thinking.budget_message or "").strip()
        return tags, ("\n" + message + "\n" if message else "\n") + close

    def _budget_constraint(
        self, round: int, constraint: Any, text: str, closing: str, tags: tuple[str, str]
    ) -> Any:
        """The constraint of the rest of a reply whose budget ran out (``auto``'s hold on calls):
        compiled again from after the reasoning when the engine closed the block with its closing
        tag, or when the answer had begun without a call; None (free, the parser still reads the
        calls) when a call was being written or the closing text leaves the family's structure
        (Harmony's final channel)."""
        if constraint is None or self.fmt is None:
            return None
        if closing:
            fresh = closing.rstrip().endswith(tags[1])
        else:
            answer = text.rsplit(tags[1], 1)[-1]
            fresh = not self.fmt.call_begun(answer)
        if not fresh:
            return None
        source = self.template or choose_template(self.model, bool(self.tools))[0]
        self.last_constraint = self.constraint(round, source, False)
        return self.last_constraint

    def _past_message_ends(
        self, prompt: Any, res: Any, stream: Stream | PlainStream | None, cancel: threading.Event | None
    ) -> Generator[Any, None, Any]:
        """``res``, gone on past its messages' ends (``Format.message_end``): while the reply
        ended at the family's message-end token (an end of generation to llama.cpp), the model
        is asked what follows it. Where it begins the turn's next message, the reply goes on (the
        end and that beginning are the reply's text, which the parser reads as structure); where
        it writes anything else (an end of turn, another role), the reply ended there and the
        text it wrote after the end is dropped."""
        past = self.fmt.message_end if self.fmt is not None else None
        while (
            past is not None
            and res.finish_reason == "stop"
            and res.eog is not None
            and res.generated_tokens < self.max_tokens
            and self.model.token_bytes(res.eog) == past[0].encode()
            and not (cancel is not None and cancel.is_set())
        ):
            end, follow = past
            more = self._rest(prompt, res, end, cancel)
            pieces, held = iter(more), ""
            for piece in pieces:
                held += piece
                if held.startswith(follow) or not follow.startswith(held):
                    break
            if not held.startswith(follow):  # the turn ended at the message's end
                close = getattr(pieces, "close", None)
                if close is not None:
                    close()  # (a generation stopped early stops on the engine's side too)
                return res
            yield from self._pieces(more, stream, itertools.chain([end + held], pieces))
            assert more.result is not None
            res = _joined(res, end, more.result)
        return res

    def _rest(
        self, prompt: Any, res: Any, written: str, cancel: threading.Event | None, constraint: Any = None
    ) -> Any:
        """The generation of the rest of a reply that wrote ``res`` and then the engine's
        ``written`` text (a budget's closing text, a message's end), for the tokens left."""
        remaining = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        return generate(
            self.model,
            prompt + res.text + written,
            max_tokens=self.max_tokens - res.generated_tokens,
            sampling=self.sampling,
            cancel=cancel,
            deadline_s=remaining,
            stop=self.stop,
            constraint=constraint,
            options=self.options.later(),
        )

    def _pieces(
        self, gen: Any, stream: Stream | PlainStream | None, pieces: Iterator[str] | None = None
    ) -> Iterator[Any]:
        """The events of one generation's pieces (``gen``'s, or ``pieces`` read from it), read by
        ``stream``."""
        live, peeked = self.live, 0.0
        seen = 0
        for piece in gen if pieces is None else pieces:
            if self.options.logprobs is not None:
                self.token_logprobs.extend(gen.token_logprobs[seen:])
                seen = len(gen.token_logprobs)
            live.tokens += 1
            for ev in [TextDelta(piece)] if stream is None else stream.feed(piece):
                live.see(ev)
                yield ev
            if isinstance(stream, Stream) and (now := time.monotonic()) - peeked >= LIVE_PEEK_S:
                peeked = now  # the call being written, a few times a second (its text is joined)
                raw = stream.writing_call()
                live.writing(raw, stream.fmt.call_name(raw) if raw is not None else None)
        if self.options.logprobs is not None:  # a last piece's tokens, and those no piece showed
            self.token_logprobs.extend(gen.token_logprobs[seen:])

    def generate_reply(self, round: int, cancel: threading.Event | None) -> Generator[Any, None, RoundEnd]:
        try:
            prompt = self.render()
            if self.parse:
                stream, grammar, constraint = self._reader(prompt, round)
            else:  # a raw completion: no parser, but a grammar the request gave still holds it
                stream, constraint = None, None
                grammar = self.grammar(round) if callable(self.grammar) else self.grammar
            if self.prefix is not None:
                if stream is not None:  # the parser reads on from where the reply was cut
                    stream.feed(self.prefix)  # (what it says of that text was shown before)
                self.prefix = None
            budget = self._budget(round, grammar, constraint)
            remaining = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
            gen = generate(
                self.model,
                prompt,
                max_tokens=self.max_tokens if budget is None else min(budget, self.max_tokens),
                sampling=self.sampling,
                cancel=cancel,
                deadline_s=remaining,
                grammar=grammar,
                constraint=constraint,
                stop=self.stop,
                options=self.options if round == 1 else self.options.later(),
            )
            started = time.monotonic()
            live = self.live
            yield from self._pieces(gen, stream)
            res = gen.result
            assert res is not None
            if res.prompt_logprobs is not None:  # the first round's
                self.prompt_entries = res.prompt_logprobs
            if (
                budget is not None
                and res.finish_reason == "length"
                and res.generated_tokens < self.max_tokens
            ):
                # The budget is spent: close the reasoning block if it is still open, and go on.
                tags, close = self._budget_close(prompt, res.text)
                closing = close if _reasoning_open(self._in_reasoning, res.text, tags) else ""
                if closing:
                    for ev in stream.feed(closing) if stream is not None else [TextDelta(closing)]:
                        live.see(ev)
                        yield ev
                again = self._budget_constraint(round, constraint, res.text, closing, tags)
                more = self._rest(prompt, res, closing, cancel, again)
                yield from self._pieces(more, stream)
                assert more.result is not None
                res = _joined(res, closing, more.result)
            if self._goes_on(round, grammar, constraint):
                res = yield from self._past_message_ends(prompt, res, stream, cancel)
            self.last_result = res
            if stream is not None:
                for ev in stream.finish(truncated=self.truncated(res.finish_reason)):
                    live.see(ev)
                    yield ev
            live.call = None
        except self.errors as exc:
            return self.failed(exc)
        return RoundEnd(
            finish=res.finish_reason,
            prompt_tokens=res.prompt_tokens,
            prompt_tokens_evaluated=res.prompt_tokens_evaluated,
            generated_tokens=res.generated_tokens,
            # the turn's time to its first token includes rendering and prompt evaluation
            first_token_at=time.monotonic() if res.ttft_s is None else started + res.ttft_s,
            decode_s=0.0 if res.ttft_s is None else max(0.0, res.elapsed_s - res.ttft_s),
            constraint=constraint.describe if constraint else None,
            draft_tokens=res.draft_tokens,
            draft_accepted=res.draft_accepted,
        )

    def _reader(self, prompt: str, round: int) -> tuple[Stream | PlainStream, str | None, Any]:
        """The parser of the reply to ``prompt``, and the grammar or constraint that holds it."""
        fmt = self.fmt
        # a reply that goes on from a prefix (Continue, a prefill) began as that text: an answer
        # (what the prefix opens, the parser reads when it is fed it), never a block's inside
        answering = bool(self.prefix)
        in_reasoning = not answering and (
            fmt.opens_in_reasoning(prompt) if fmt is not None else prompt.rstrip().endswith(PlainStream.OPEN)
        )
        self._in_reasoning = in_reasoning
        source = self.template or choose_template(self.model, bool(self.tools))[0]
        stream: Stream | PlainStream
        if fmt is not None:
            # Plain replies stream at once unless this template's model may close a reasoning block
            # it never opened (then the text before the close is reasoning).
            stream = fmt.stream(
                self.tools or [],
                in_reasoning=in_reasoning,
                orphan_close=not answering and fmt.expects_orphan_close(source, prompt),
                after_reasoning=not answering and fmt.closes_in_prompt(prompt),
            )
            stream.call_ids = self.ids.issue  # the model's own id when valid and new here
        else:
            stream = PlainStream(in_reasoning)
        grammar = self.grammar(round) if callable(self.grammar) else self.grammar
        self.last_constraint = None if grammar is not None else self.constraint(round, source, in_reasoning)
        return stream, grammar, self.last_constraint

    def truncated(self, finish: str) -> bool:
        """Whether a generation that ended with ``finish`` was cut (its last text may be partial)."""
        return finish != "stop"

    def failed(self, exc: Exception) -> RoundEnd:
        """The end of a round that raised one of :attr:`errors`."""
        return RoundEnd(finish="error", error=str(exc), engine_crashed=self.model.crash is not None)

    def finish_turn(self, done: DoneEvent) -> DoneEvent:
        return replace(done, tool_format=self.family)

    def constraint(self, round: int, source: str, in_reasoning: bool) -> Any:
        """The constraint of one generation, or None (free). Raises ConstraintError (a ValueError)."""
        from app.engine.constraints import compile_constraint, parse_tool_choice, resolve_tool_choice

        choice = self.tool_choice if round == 1 else "auto"
        fmt, tools = self.fmt, self.tools
        resolve_tool_choice(choice, self.declared)
        if (
            fmt is not None
            and tools
            and self.response_format is None
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
            parallel_tool_calls=self.parallel_tool_calls,
            response_format=self.response_format,
            reasoning=reasoning,
            in_reasoning=in_reasoning,
            max_calls=self.max_calls,
        )


def answer_after(prompt: str, fmt: Any) -> str:
    """``prompt`` (a rendered prompt) ready for an answer's text written after it (Continue, a
    prefill): a reasoning block its generation prompt opened is closed first, in the family's
    syntax (``fmt``, a Format, or None: ``<think>`` blocks)."""
    if fmt is not None:
        thinking = fmt.reply_thinking(prompt)
        opened, close = fmt.opens_in_reasoning(prompt), None if thinking is None else thinking[1]
    else:
        opened, close = prompt.rstrip().endswith(PlainStream.OPEN), PlainStream.CLOSE + "\n\n"
    return prompt + close if opened and close else prompt  # (an ImagePrompt keeps its images)


def _reasoning_open(opened: bool, text: str, tags: tuple[str, str]) -> bool:
    """Whether a reply that wrote ``text`` (after a prompt that ``opened`` a reasoning block or
    not) is inside a reasoning block at its end."""
    last_open, last_close = text.rfind(tags[0]), text.rfind(tags[1])
    if last_close > last_open:
        return False
    return last_open >= 0 or opened


def _joined(first: GenerationResult, closing: str, more: GenerationResult) -> GenerationResult:
    """One result for a reply generated in two parts (a thinking budget closed its reasoning)."""
    from app.engine.backend import GenerationResult

    elapsed = first.elapsed_s + more.elapsed_s
    tokens = first.generated_tokens + more.generated_tokens
    return GenerationResult(
        text=first.text + closing + more.text,
        finish_reason=more.finish_reason,
        prompt_tokens=first.prompt_tokens,
        prompt_tokens_evaluated=first.prompt_tokens_evaluated + more.prompt_tokens_evaluated,
        generated_tokens=tokens,
        ttft_s=first.ttft_s if first.ttft_s is not None else more.ttft_s,
        tokens_per_s=tokens / elapsed if elapsed > 0 else None,
        elapsed_s=elapsed,
        tokens=first.tokens + more.tokens,
        stop=more.stop,
        draft_tokens=first.draft_tokens + more.draft_tokens,
        draft_accepted=first.draft_accepted + more.draft_accepted,
    )


def _special_opener(model: LoadedModel, fmt: Any) -> bool:
    """Whether the family's first call opener begins with one special token of ``model`` (then
    ``auto`` holds every call from that token on; a text opener leaves ``auto`` free)."""
    opener = fmt.openers[0] if fmt.openers else ""
    if not opener:
        return False
    return model.special_opener(opener)
