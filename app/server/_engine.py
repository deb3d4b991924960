"""The server's side of the engine: a request's job on the shared :class:`app.engine.host.EngineHost`.

Every job a request makes runs on the host's one thread, one at a time, in the order they came,
behind the window's turns when the window shares the host. The queue is bounded: past the bound
:func:`submit_job` raises a 429 :class:`ApiError` with ``Retry-After``. A job's ``cancel`` event
(set when its client disconnects) is checked before every token, and a job cancelled while it
waited never runs.

A turn (:func:`run_turn`) is one round of the chat loop (``app.engine.loop.run_rounds``) with
the local session's reply (``app.engine.chat.LocalReplies``): the whole conversation the request
carries rendered through the model's template, generated on the one primitive (the KV cache keeps
the longest common prefix, so a client's next turn evaluates only what is new) and read with the
model's family parser. Calls are returned, never run: the client runs its tools.

A reply's list of calls is bounded (:attr:`TurnRequest.max_calls`): at most the request's
``max_tool_calls`` calls (``DEFAULT_MAX_CALLS`` when it says nothing; one without
``parallel_tool_calls``), and a call identical to an earlier call of the same reply ends the list
there (the grammar of a forced choice and the chat loop both hold it). A call that repeats one the
conversation already answered is returned, and reported (:attr:`TurnEnd.repeated`): the client
runs its own loop. A call the token limit cut is never text: the reply ends before it (``length``).
"""

from __future__ import annotations

import logging
import math
import secrets
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from app.engine.chat import DEFAULT_MAX_CALLS, LocalReplies
from app.engine.generation import NO_OPTIONS, TokenOptions
from app.engine.host import EngineHost, Job
from app.engine.loop import RoundStop
from app.server._errors import ApiError, client_message, engine_api_error

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel
    from app.engine.thinking import Thinking

__all__ = [
    "EngineHost",
    "Job",
    "RenderedTurn",
    "TurnEnd",
    "TurnRequest",
    "as_api_error",
    "count_tokens",
    "new_call_id",
    "render_turn",
    "retry_after_s",
    "run_turn",
    "submit_job",
]

log = logging.getLogger(__name__)
_ALNUM = string.ascii_letters + string.digits


def new_call_id() -> str:
    """A fresh call id every template accepts (9 letters or digits, Mistral's rule)."""
    return "".join(secrets.choice(_ALNUM) for _ in range(9))


@dataclass
class TurnRequest:
    """One generation, in the engine's terms (each API module builds it from its own request)."""

    model: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)  # Message.from_dict shapes
    tools: list[dict[str, Any]] | None = None  # OpenAI format
    tool_choice: str = "auto"  # auto | none | required | function:<name>
    #: the tools a reply may call, by name (OpenAI's ``allowed_tools`` tool choice: the prompt shows
    #: every tool, the calls are held to these, ``tool_choice`` auto or required); None: every tool
    allowed_tools: list[str] | None = None
    parallel_tool_calls: bool = True
    response_format: dict[str, Any] | None = None
    max_tokens: int = 1024
    #: the request set ``max_tokens`` itself (a made model's ``num_predict`` applies where it did not)
    max_tokens_given: bool = False
    sampling: dict[str, Any] = field(default_factory=dict)
    stop: list[str] = field(default_factory=list)
    raw_prompt: str | list[int] | None = (
        None  # completions: the prompt as is (text or token ids), no template
    )
    #: fill in the middle (a completion's ``suffix``): (the text before, the text after); the reply
    #: is what goes between them (``app.engine.generation.infill_prompt``); no template
    fim: tuple[str, str] | None = None
    #: llama-server's ``/infill``: the cursor's line up to it (after the prefix), other files of the
    #: project ((name, text), before it all), and the reply's room when the prompt is cut to fit as
    #: llama-server cuts it (None: never cut)
    fim_cursor: str = ""
    fim_extra: list[tuple[str, str]] = field(default_factory=list)
    fim_fit: int | None = None
    #: how long the reply may take once its job starts (llama-server's ``t_max_predict_ms``), else None:
    #: past it the reply ends as it is (``deadline``, a cut reply)
    deadline_s: float | None = None
    grammar: str | None = None  # a GBNF grammar the whole reply is held to (a structured output)
    think: bool | None = None
    max_tool_calls: int | None = None  # the request's bound on one reply's calls (None: the default)
    thinking: Thinking | None = None  # off / on / a level / a budget (None: the template's default)
    template_kwargs: dict[str, Any] | None = None  # OpenAI's chat_template_kwargs: more template variables
    #: how long the model stays loaded once idle after this request, in seconds (keep_alive / ttl:
    #: 0 unloads it right after, ``app.server._idle.FOREVER`` keeps it; None: the server's default)
    idle_ttl: float | None = None
    #: the context the request needs (Ollama's ``options.num_ctx``): a model loaded with less is
    #: loaded again with it, one not loaded yet is loaded with at least it; None: as it is
    n_ctx: int | None = None
    #: log probabilities, a prompt to score, a prediction, a logit bias
    #: (``app.engine.generation.TokenOptions``). With ``logprobs`` the turn emits
    #: ``("logprobs", (kind, entries))`` before each text, reasoning or call
    #: (``app.engine.logprobs``); with ``prompt_logprobs`` (a completion's ``echo`` with
    #: ``logprobs``), ``("prompt_logprobs", entries)`` before its end
    options: TokenOptions = NO_OPTIONS
    #: the prompt's text is wanted (a completion's ``echo``): the turn emits ``("echo", text)``
    #: first (a prompt of token ids is written as its tokens' text)
    echo: bool = False
    #: Ollama's ``context`` (``/api/generate``): the conversation so far as token ids, the last
    #: reply's included; ``messages`` continue it (:func:`render_turn`). None: no context
    context: list[int] | None = None
    #: the turn's end carries its context (:attr:`TurnEnd.context`): the prompt's tokens and the
    #: reply's, for the next request to continue
    want_context: bool = False
    #: a chat template (Jinja) that renders in place of the model's (vLLM's ``chat_template``,
    #: Ollama's ``template``): the family is detected from it, and it runs in the same sandbox
    chat_template: str | None = None
    #: a final assistant message (text, no calls) is the reply's start, as Anthropic's and Ollama's
    #: APIs and llama-server read one: the model goes on from it, the reply holds what follows,
    #: and it does not think first (:func:`render_turn`). False, or an empty message: an answered turn
    prefill: bool = False

    @property
    def max_calls(self) -> int:
        """The most calls one reply holds: one without ``parallel_tool_calls``, else the request's
        ``max_tool_calls`` or :data:`~app.engine.chat.DEFAULT_MAX_CALLS`."""
        if not self.parallel_tool_calls:
            return 1
        return self.max_tool_calls if self.max_tool_calls is not None else DEFAULT_MAX_CALLS


@dataclass
class TurnEnd:
    finish_reason: str  # stop | length | tool_calls | cancelled | deadline
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    ttft_s: float | None = None
    elapsed_s: float = 0.0
    tool_format: str | None = None
    # the ids of the reply's calls identical to a call the conversation already answered
    # (``app.engine.loop.answered_before``): a client loop that runs in circles
    repeated: list[str] = field(default_factory=list)
    #: speculative decoding: drafted tokens verified, and how many the model accepted (every round
    #: of the turn summed; 0 and 0 without drafting)
    draft_tokens: int = 0
    draft_accepted: int = 0
    #: the prompt's tokens and the reply's (its end-of-generation token left out), when the request
    #: wanted them (``TurnRequest.want_context``) and the prompt has no images; else None
    context: list[int] | None = None
    #: the request's stop string that ended the reply (Anthropic's ``stop_sequence``,
    #: llama-server's ``stopping_word``); None when it ended otherwise (a model's own stop string too)
    stop_sequence: str | None = None
    #: the tokens of the reply's reasoning (its text as the model's vocabulary reads it; the
    #: markup that opens and closes it left out), part of ``completion_tokens``
    reasoning_tokens: int = 0

    def finish_in(self, renamed: dict[str, str] | None = None) -> str:
        """The finish reason in an API's words: OpenAI's (:data:`_OPENAI_FINISH`; ``stop`` for a
        reason it does not name), then as ``renamed`` names them."""
        reason = _OPENAI_FINISH.get(self.finish_reason, "stop")
        return renamed.get(reason, reason) if renamed else reason


#: the engine's finish reasons in OpenAI's words: a cancelled turn ends as stopped, a deadline as
#: the token limit (the other APIs rename these: :meth:`TurnEnd.finish_in`)
_OPENAI_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "cancelled": "stop",
    "deadline": "length",
}


def as_api_error(exc: BaseException) -> ApiError:
    """What the engine raised for a request's job, in the server's terms (one table:
    ``app.server._errors.ENGINE_ERRORS``)."""
    return engine_api_error(exc)


def submit_job(host: EngineHost, job: Job) -> None:
    """Queue a request's job on the shared engine; a full queue is a 429 with ``Retry-After``."""
    from app.engine.errors import EngineBusy

    try:
        host.submit(job)
    except EngineBusy as exc:
        wait = retry_after_s(host)
        raise ApiError(
            429,
            f"the server is busy: {exc.waiting} requests are already waiting; retry in about {wait} s",
            code="rate_limit_exceeded",
            headers={"Retry-After": str(wait)},
        ) from None


def retry_after_s(host: EngineHost) -> int:
    """When a full queue has a place again: when the job that runs now ends and the first waiting
    one starts, one job's time (the host's running average), whole seconds rounded up, at least 1.
    Not the time the whole queue takes to drain: a place frees at the first job that ends."""
    return max(1, math.ceil(host.avg_job_s))


# -- one turn ------------------------------------------------------------------------------------


def _family(model: LoadedModel, setting: str, template: str | None = None) -> str | None:
    """The family the reply is read in: the server's setting, or the one ``template`` (a
    request's own) or else the model's templates write calls in."""
    from app.engine.chat import detect_model_format, resolve_tool_format
    from app.engine.detection import detect_tool_format

    if template is None:
        detected = detect_model_format(model)
    else:
        detected = detect_tool_format(template, None, bos_token=model.bos_token, eos_token=model.eos_token)
    family, _ = resolve_tool_format(setting, detected)
    return family


def _constraint(
    model: LoadedModel,
    family: str | None,
    tools: list[dict[str, Any]] | None,
    req: TurnRequest,
    in_reasoning: bool,
) -> Any:
    """The engine's constraint (``app.engine.constraints``) for the request's tool choice and
    response format: a forced choice is always held by a grammar; one that cannot be built is a
    400, never served unconstrained. ``tool_choice`` wins over ``response_format``; ``auto`` is free."""
    from app.engine.constraints import compile_constraint
    from app.engine.errors import ConstraintError

    choice: Any = req.tool_choice
    if choice.startswith("function:"):
        choice = {"type": "function", "function": {"name": choice.split(":", 1)[1]}}
    forced = req.tool_choice == "required" or req.tool_choice.startswith("function:")
    held = req.allowed_tools is not None and bool(tools)  # auto with calls held to the allowed tools
    if held:
        tools = [t for t in tools or [] if t["function"]["name"] in (req.allowed_tools or ())]
    if not forced and not held and not req.response_format:
        return None  # auto and none decode freely: the family parser reads whatever the model writes
    try:
        return compile_constraint(
            model,
            family=family,
            tools=tools,
            tool_choice=choice,
            parallel_tool_calls=req.parallel_tool_calls,
            max_calls=req.max_calls,
            response_format=None if forced else req.response_format,
            in_reasoning=in_reasoning,
        )
    except ConstraintError as exc:
        raise ApiError(
            400,
            f"the requested constraint cannot be applied: {client_message(exc)}",
            param="tool_choice",
            code="invalid_constraint",
        ) from exc


@dataclass
class RenderedTurn:
    text: str | list[int]  # the prompt (a fill-in-the-middle prompt, a continued context: its tokens)
    family: str | None  # the tool-call format the reply is read in
    fmt: Any  # its Format, or None
    tools: list[dict[str, Any]] | None  # the tools the prompt shows (None: none)
    #: the prompt's end as text, where ``text`` holds ids the reply is read after (a continued
    #: context): its parser sees whether it opens a reasoning block
    end: str | None = None
    #: the reply's start a final assistant message gave (``TurnRequest.prefill``): written after
    #: ``text``, read by the reply's parser first, never part of the reply sent
    prefill: str | None = None


def render_turn(model: LoadedModel, req: TurnRequest, tool_format: str) -> RenderedTurn:
    """The prompt for ``req`` and how its reply is read; a template failure is a 400."""
    from app.engine.errors import PromptRenderError
    from app.engine.messages import Message
    from app.engine.render import render_messages, render_prompt

    if req.fim is not None:
        from app.engine.errors import GenerationError
        from app.engine.generation import infill_prompt

        try:
            fit = None if req.fim_fit is None else (model.n_ctx, req.fim_fit)
            prompt = infill_prompt(model, *req.fim, cursor=req.fim_cursor, extra=req.fim_extra, fit=fit)
            return RenderedTurn(prompt, None, None, None)
        except GenerationError as exc:
            where = "suffix" if req.fim_fit is None else "input_suffix"  # /infill's name for it
            raise ApiError(400, str(exc), param=where, code="insert_not_supported") from exc
    if req.raw_prompt is not None:  # (its token ids are checked by generate(): a 400 naming prompt)
        return RenderedTurn(req.raw_prompt, None, None, None)
    if req.context:
        from app.engine.errors import TokenIdError

        try:
            TokenIdError.check(req.context, model.n_vocab, "context")
        except TokenIdError as exc:
            raise ApiError(400, str(exc), param="context") from exc
    family = _family(model, tool_format, req.chat_template)
    tools = req.tools if (req.tools and req.tool_choice != "none" and family is not None) else None
    try:
        msgs = [Message.from_dict(m) for m in req.messages]
    except (TypeError, ValueError) as exc:
        raise ApiError(400, f"bad message: {exc}", param="messages") from exc
    fmt = None
    if family is not None:
        from app.engine.formats import FORMATS

        fmt = FORMATS[family]
    if req.context:
        msgs = _continuing(msgs)
    from app.engine.chat import answer_after
    from app.engine.thinking import parse_thinking

    prefill, thinking = None, req.thinking
    last = msgs[-1] if msgs else None
    if req.prefill and last is not None and last.role == "assistant" and last.content and not last.tool_calls:
        prefill, thinking = _prefill(msgs.pop(), req), parse_thinking("off")
    try:
        if req.chat_template is None:
            rendered = render_prompt(
                model,
                msgs,
                tools=tools,
                tool_format=family,
                thinking=thinking,
                reasoning_markers=fmt.thinking_tags() if fmt is not None else None,
                template_kwargs=req.template_kwargs,
            )
        else:
            rendered = render_messages(
                req.chat_template,
                msgs,
                tools=tools,
                bos_token=model.bos_token,
                eos_token=model.eos_token,
                template_name="the request's chat_template",
                tool_format=family,
                thinking=thinking,
                reasoning_markers=fmt.thinking_tags() if fmt is not None else None,
                template_kwargs=req.template_kwargs,
            )
    except PromptRenderError as exc:
        whose, param = (
            ("the model's", "messages") if req.chat_template is None else ("the request's", "chat_template")
        )
        raise ApiError(
            400, f"{whose} chat template cannot render this conversation: {exc}", param=param
        ) from exc
    if req.context:
        from app.engine.vision import ImagePrompt

        if isinstance(rendered.text, ImagePrompt):
            raise ApiError(400, "images cannot be sent with a context", param="images")
        tail = _tail(rendered.text)
        return RenderedTurn(req.context + model.tokenize_text(tail, special=True), family, fmt, tools, tail)
    if prefill:  # the reply is the answer from its first word: a block the template opened is closed
        return RenderedTurn(answer_after(rendered.text, fmt), family, fmt, tools, prefill=prefill)
    return RenderedTurn(rendered.text, family, fmt, tools)


def _prefill(last: Any, req: TurnRequest) -> str:
    """The start of the reply a final assistant message gives (a prefill): its text. A prefill
    with reasoning, or one the request would have thought before or held to a format, a forced
    call or a grammar from its first token, is a 400."""
    if last.reasoning:
        raise ApiError(
            400, "the final assistant message (the reply's start) cannot hold reasoning", param="messages"
        )
    t = req.thinking
    if t is not None and not t.off and (t.mode == "on" or t.effort is not None or t.budget is not None):
        raise ApiError(
            400,
            "a reply that continues a final assistant message cannot think first: leave thinking off",
            param="messages",
        )
    held = (
        "a response format"
        if req.response_format is not None
        else "a grammar"
        if req.grammar is not None
        else "a forced tool choice"
        if req.tool_choice not in ("auto", "none") or req.allowed_tools is not None
        else None
    )
    if held is not None:
        raise ApiError(
            400,
            f"a reply that continues a final assistant message cannot be held to {held} (it holds a "
            "reply from its first token): leave one out",
            param="messages",
        )
    return last.content


#: the stand-in exchange a continued context is rendered after (:func:`_continuing`)
_EARLIER = ("callisto-context-question", "callisto-context-reply")


def _continuing(msgs: list[Any]) -> list[Any]:
    """``msgs`` (a request that continues a context) after a stand-in exchange: the system
    messages first (the conversation's, as the context began), then a user message and a reply
    (the context's last), then the rest. What the template writes after that reply is what comes
    after the context (:func:`_tail`)."""
    from app.engine.messages import Message

    head = 0
    while head < len(msgs) and msgs[head].role == "system":
        head += 1
    earlier = [Message(role="user", content=_EARLIER[0]), Message(role="assistant", content=_EARLIER[1])]
    return [*msgs[:head], *earlier, *msgs[head:]]


def _tail(text: str) -> str:
    """What a template wrote after the stand-in reply: the end of the context's last turn, the
    request's messages and the generation prompt. A template that writes the reply other than
    once, as it is, cannot be continued: a 400 naming ``context``."""
    mark = _EARLIER[1]
    if text.count(mark) != 1:
        raise ApiError(
            400,
            "the model's chat template cannot continue a context (it does not write an earlier reply "
            "as it is): send the conversation's messages to /api/chat instead",
            param="context",
        )
    return text[text.index(mark) + len(mark) :]


def run_turn(
    model: LoadedModel,
    req: TurnRequest,
    emit: Callable[[str, Any], None],
    cancel: threading.Event,
    *,
    tool_format: str = "auto",
    used_ids: set[str] | None = None,
) -> TurnEnd:
    """Generate one reply on the calling (engine) thread. ``emit(kind, value)`` gets ``text``,
    ``reasoning`` and ``call`` (an ``app.calls.ToolCall`` whose id is new to the conversation)
    as they come; returns how the turn ended. Raises :class:`ApiError` for what the request got
    wrong (template, context, grammar).

    The reply is the chat loop's (``app.engine.loop.run_rounds``, one round whose calls are the
    client's), generated as a local session generates one (:class:`_RequestReplies`); what is
    the server's own is how the events become its output (:class:`_Output`)."""
    from app.engine.events import DoneEvent
    from app.engine.loop import run_rounds

    started = time.monotonic()
    replies = _RequestReplies(model, req, tool_format, used_ids or set(), cancel)
    out = _Output(emit, replies)
    if req.echo:
        emit("echo", _prompt_text(model, req))
    done: Any = None
    for ev in run_rounds(
        replies, [], dispatcher=None, max_rounds=1, cancel=replies.halt, max_calls=req.max_calls
    ):
        if isinstance(ev, DoneEvent):
            done = ev
        else:
            out.take(ev)
    assert done is not None
    out.flush_logprobs(out.last_kind)  # the tokens no event showed (a stop string, the end)
    if req.options.prompt_logprobs and replies.prompt_entries is not None:
        emit("prompt_logprobs", replies.prompt_entries)
    finish = done.finish_reason
    if finish == "cancelled" and not cancel.is_set():
        finish = "stop"  # we stopped it ourselves (a single call was asked for)
    if out.calls and finish == "stop":
        finish = "tool_calls"
    return TurnEnd(
        finish_reason=finish,
        prompt_tokens=done.prompt_tokens,
        completion_tokens=done.generated_tokens,
        cached_tokens=max(0, done.prompt_tokens - (done.prompt_tokens_evaluated or 0)),
        ttft_s=done.ttft_s,
        elapsed_s=time.monotonic() - started,
        tool_format=replies.family,
        repeated=_repeated(req, out.sent),
        draft_tokens=done.draft_tokens,
        draft_accepted=done.draft_accepted,
        context=_context(model, replies) if req.want_context and finish != "error" else None,
        stop_sequence=_stop_sequence(req, replies, finish),
        reasoning_tokens=_reasoning_tokens(model, "".join(out.reasoning), done.generated_tokens),
    )


def _reasoning_tokens(model: LoadedModel, text: str, generated: int) -> int:
    """How many of the ``generated`` tokens the reasoning ``text`` takes."""
    if not text:
        return 0
    return min(generated, len(model.tokenize_text(text, special=False)))


def _stop_sequence(req: TurnRequest, replies: _RequestReplies, finish: str) -> str | None:
    """The request's stop string that ended the reply, else None."""
    res = replies.last_result
    if finish != "stop" or res is None or res.finish_reason != "stop" or res.stop is None:
        return None
    return res.stop if res.stop in req.stop else None


def _context(model: LoadedModel, replies: _RequestReplies) -> list[int] | None:
    """The prompt's tokens and the reply's, as the engine read and wrote them (its KV cache holds
    them: a request that continues them reuses it), the end-of-generation token left out. A reply
    a stop string cut (its tokens hold more than its text) has its text tokenized. None for a
    prompt with images (their positions are no token ids) or when no reply was generated."""
    from app.engine.vision import ImagePrompt

    prompt, res = replies.prompt, replies.last_result
    if res is None or isinstance(prompt, ImagePrompt):
        return None
    ids = list(prompt) if isinstance(prompt, list) else model.tokenize(prompt)
    reply = list(res.tokens)
    while reply and model.is_eog(reply[-1]):
        reply.pop()
    if model.detokenize(reply) != res.text.encode("utf-8"):
        reply = model.tokenize_text(res.text, special=True)
    return ids + reply


def _prompt_text(model: LoadedModel, req: TurnRequest) -> str:
    """The text a completion's ``echo`` repeats: its prompt as sent, or its token ids' text."""
    prompt = req.raw_prompt
    if isinstance(prompt, list):
        return model.detokenize(prompt, where="prompt").decode("utf-8", errors="replace")
    return prompt or ""


def _repeated(req: TurnRequest, calls: list[Any]) -> list[str]:
    """The ids of ``calls`` that repeat a call the request's conversation already answered."""
    if not calls or req.raw_prompt is not None:
        return []
    from app.engine.loop import answered_before
    from app.engine.messages import Message

    return [c.id for c in answered_before([Message.from_dict(m) for m in req.messages], calls)]


class _RequestReplies(LocalReplies):
    """A request's reply as the local session writes one, with the server's rules: the prompt is
    the request's conversation (or its raw prompt, read as it comes), stops are the model's and the
    request's, only a forced tool choice or a response format is held (:func:`_constraint`), the
    client's cancel or the turn itself (one call asked for) stops it, and a failure is an
    :class:`ApiError`."""

    def __init__(
        self,
        model: LoadedModel,
        req: TurnRequest,
        tool_format: str,
        used_ids: set[str],
        cancel: threading.Event,
    ):
        from app.engine.loop import CallIds

        turn = render_turn(model, req, tool_format)
        super().__init__(
            model,
            list,  # no conversation to render: render() gives the request's prompt
            family=turn.family,
            tools=turn.tools,
            ids=CallIds(used_ids, fresh=lambda _n: new_call_id()),
            max_tokens=req.max_tokens,
            sampling=req.sampling or None,
            parallel_tool_calls=req.parallel_tool_calls,
            max_calls=req.max_calls,
            stop=tuple(model.stop_strings) + tuple(s for s in req.stop if s),
            thinking=req.thinking,  # the prompt is the request's (render_turn); this sets the budget
            grammar=req.grammar,
            deadline_s=req.deadline_s,
            options=req.options,
        )
        self.req = req
        self.prompt = turn.text
        #: a continued context's prompt end as text (its prompt is ids), for the reply's parser
        self.context_end = turn.end
        self.prefix = turn.prefill  # the reply goes on from it (LocalReplies' Continue)
        self.template = req.chat_template
        self.parse = req.raw_prompt is None and req.fim is None
        self.halt = RoundStop(cancel)  # set by the client's cancel or by the turn itself

    def render(self) -> Any:
        if self.prefix is None:
            return self.prompt
        assert isinstance(self.prompt, str)  # (a prefill follows a rendered conversation)
        return self.prompt + self.prefix

    def _reader(self, prompt: str, round: int) -> Any:
        return super()._reader(self.context_end if self.context_end is not None else prompt, round)

    def constraint(self, round: int, source: str, in_reasoning: bool) -> Any:
        return _constraint(self.model, self.family, self.tools, self.req, in_reasoning)

    def truncated(self, finish: str) -> bool:
        return finish != "stop" and not (finish == "cancelled" and self.halt.by_round)

    def failed(self, exc: Exception) -> NoReturn:
        from app.engine.errors import ContextOverflowError, GenerationError, GrammarError, ImageError

        if isinstance(exc, ImageError):  # an image the model cannot read (or no projector to read it)
            raise as_api_error(exc) from exc
        if isinstance(exc, ContextOverflowError):
            raise ApiError(
                400, client_message(exc), param="messages", code="context_length_exceeded"
            ) from exc
        if isinstance(exc, GrammarError):
            raise ApiError(
                400,
                f"the requested constraint cannot be applied: {client_message(exc)}",
                code="invalid_grammar",
            ) from exc
        if isinstance(exc, GenerationError):
            raise as_api_error(exc) from exc
        raise ApiError(400, client_message(exc)) from exc  # a bad sampling value


class _Output:
    """The server's shape of a reply: ``emit("text" | "reasoning" | "call", value)``.

    Text that is only whitespace between a reasoning block and a call (or the end) is held and
    dropped, so no API gets an empty text block; any visible text releases it first. A call the
    request did not declare (or any call when no tools were offered) is text; a call the token limit
    cut is nothing (the reply ends before it, ``length``: never its markup as text); a call whose id
    is not new gets a fresh one; without ``parallel_tool_calls`` the first call ends the reply. A
    raw completion's text passes as it comes.

    Log probabilities, when asked: before each ``text``, ``reasoning`` or ``call``, the entries of
    the tokens kept since the last one are emitted as ``("logprobs", (kind, entries))``, ``kind``
    the event whose tokens they are (so an API can keep those of its content only; markup is
    ``markup``: :meth:`flush_logprobs`); what is left at the end goes with the last kind."""

    def __init__(self, emit: Callable[[str, Any], None], replies: _RequestReplies):
        self.replies = replies
        self._emit = emit
        self.last_kind = "text"
        self.logprobs_sent = 0
        self.declared = {t["function"]["name"] for t in replies.tools or []}
        if replies.req.allowed_tools is not None:  # (the others are shown, never called)
            self.declared &= set(replies.req.allowed_tools)
        self.calls = 0
        self.sent: list[Any] = []  # the calls emitted
        self.seen: set[str] = set()
        self.held: list[str] = []
        self.in_text = False
        self.reasoning: list[str] = []  # the reasoning's pieces, as emitted

    def emit(self, kind: str, value: Any) -> None:
        if kind == "reasoning":
            self.reasoning.append(value)
        self.flush_logprobs(kind, value if isinstance(value, str) else None)
        self.last_kind = kind
        self._emit(kind, value)

    def flush_logprobs(self, kind: str, text: str | None = None) -> None:
        """Emit the entries of the tokens kept since the last event as ``kind``'s; before a text
        or reasoning event (``text``: what it shows), only the last ones, as far back as its
        bytes reach, are its own: those before them wrote markup (a reasoning block's closing
        tag, a call's end) and go as ``markup``."""
        entries = self.replies.token_logprobs
        if len(entries) <= self.logprobs_sent:
            return
        new = entries[self.logprobs_sent :]
        self.logprobs_sent = len(entries)
        if text is not None and self.replies.parse:
            k, size, covered = len(new), len(text.encode()), 0
            while k > 0 and covered < size:
                k -= 1
                covered += len(new[k].data)
            if k:
                self._emit("logprobs", ("markup", new[:k]))
                new = new[k:]
        self._emit("logprobs", (kind, new))

    def take(self, ev: Any) -> None:
        from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone, ToolCallIncomplete

        if isinstance(ev, TextDelta):
            if not self.replies.parse:
                self.emit("text", ev.text)
            elif ev.text:
                self.text(ev.text)
        elif isinstance(ev, ReasoningDelta):
            if ev.text:
                self.boundary()
                self.emit("reasoning", ev.text)
        elif isinstance(ev, ToolCallIncomplete):
            # to a tool the request did not declare: never a call, its text is kept; cut off by the
            # token limit: nothing (half a call is neither a call nor the model's text)
            if ev.call.raw and ev.call.reason != "truncated":
                self.text(ev.call.raw)
        elif isinstance(ev, ToolCallDone):
            self.call(ev.call)

    def text(self, piece: str) -> None:
        if not self.in_text and not piece.strip():
            self.held.append(piece)
            return
        if self.held:
            piece = "".join(self.held) + piece
            self.held.clear()
        self.in_text = True
        self.emit("text", piece)

    def boundary(self) -> None:
        self.held.clear()
        self.in_text = False

    def call(self, call: Any) -> None:
        if call.name not in self.declared:
            # no tools were offered (tool_choice none), or not this one: what it wrote is text
            if call.raw:
                self.text(call.raw)
            return
        self.boundary()
        ids = self.replies.ids
        if call.id in self.seen or call.id not in ids.used:  # a parser that issued its own id
            from dataclasses import replace

            call = replace(call, id=ids.issue(None))
        self.seen.add(call.id)
        parallel = self.replies.req.parallel_tool_calls
        if self.calls and not parallel:
            return
        self.calls += 1
        self.sent.append(call)
        self.emit("call", call)
        if not parallel:
            self.replies.halt.set()  # one call at most: stop generating here


def count_tokens(model: LoadedModel, req: TurnRequest, tool_format: str) -> int:
    turn = render_turn(model, req, tool_format)
    text = turn.text
    if turn.prefill is not None and isinstance(text, str):
        text += turn.prefill  # the prompt is read with it
    return len(text) if isinstance(text, list) else len(model.tokenize(text))
