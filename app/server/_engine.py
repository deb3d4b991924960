"""The server's side of the engine: a request's job on the shared :class:`app.engine.host.EngineHost`.

Every job a request makes runs on the host's one thread, one at a time, in the order they came,
behind the window's turns when the window shares the host. The queue is bounded: past the bound
:func:`submit_job` raises a 429 :class:`ApiError` with ``Retry-After``. A job's ``cancel`` event
(set when its client disconnects) is checked before every token, and a job cancelled while it
waited never runs.

A turn (:func:`run_turn`) renders the whole conversation the request carries through the model's
template (``app.engine.render``), generates on the one primitive (``app.engine.generate``; the
KV cache keeps the longest common prefix, so a client's next turn evaluates only what is new) and
reads calls with the model's family parser (``app.engine.formats``). Calls are returned, never
run: the client runs its tools.
"""

from __future__ import annotations

import logging
import secrets
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.engine.host import EngineHost, Job
from app.server._errors import ApiError

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel

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
    parallel_tool_calls: bool = True
    response_format: dict[str, Any] | None = None
    max_tokens: int = 1024
    sampling: dict[str, Any] = field(default_factory=dict)
    stop: list[str] = field(default_factory=list)
    raw_prompt: str | None = None  # completions: the prompt text as is, no template
    think: bool | None = None


@dataclass
class TurnEnd:
    finish_reason: str  # stop | length | tool_calls | cancelled | deadline
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    ttft_s: float | None = None
    elapsed_s: float = 0.0
    tool_format: str | None = None


def as_api_error(exc: BaseException) -> ApiError:
    """What the engine raised for a request's job, in the server's terms."""
    from app.engine.host import JobCancelled
    from app.engine.llm import ModelLoadError

    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, ModelLoadError):
        return ApiError(500, str(exc), code="model_load_failed")
    if isinstance(exc, JobCancelled):
        return ApiError(503, str(exc))
    from app.engine.engine_process import EngineCrashedError

    if isinstance(exc, EngineCrashedError):  # the next request gets a fresh engine
        return ApiError(500, str(exc), code="engine_crashed")
    from app.engine.generate import GenerationError

    if isinstance(exc, GenerationError):
        return ApiError(500, str(exc))
    return ApiError(500, f"the engine failed: {exc}")


def submit_job(host: EngineHost, job: Job) -> None:
    """Queue a request's job on the shared engine; a full queue is a 429 with ``Retry-After``."""
    from app.engine.host import EngineBusy

    try:
        host.submit(job)
    except EngineBusy as exc:
        raise ApiError(
            429,
            f"the server is busy: {exc.waiting} requests are already waiting; "
            f"retry in about {exc.retry_after_s} s",
            code="rate_limit_exceeded",
            headers={"Retry-After": str(exc.retry_after_s)},
        ) from None


# -- one turn ------------------------------------------------------------------------------------


def _family(model: LoadedModel, setting: str) -> str | None:
    from app.engine.chat import detect_model_format, resolve_tool_format

    family, _ = resolve_tool_format(setting, detect_model_format(model))
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
    from app.engine.constraints import ConstraintError, compile_constraint

    choice: Any = req.tool_choice
    if choice.startswith("function:"):
        choice = {"type": "function", "function": {"name": choice.split(":", 1)[1]}}
    forced = req.tool_choice == "required" or req.tool_choice.startswith("function:")
    if not forced and not req.response_format:
        return None  # auto and none decode freely: the family parser reads whatever the model writes
    try:
        return compile_constraint(
            model,
            family=family,
            tools=tools,
            tool_choice=choice,
            parallel_tool_calls=req.parallel_tool_calls,
            response_format=None if forced else req.response_format,
            in_reasoning=in_reasoning,
        )
    except ConstraintError as exc:
        raise ApiError(
            400,
            f"the requested constraint cannot be applied: {exc}",
            param="tool_choice",
            code="invalid_constraint",
        ) from exc


@dataclass
class RenderedTurn:
    text: str  # the prompt
    family: str | None  # the tool-call format the reply is read in
    fmt: Any  # its Format, or None
    tools: list[dict[str, Any]] | None  # the tools the prompt shows (None: none)


def render_turn(model: LoadedModel, req: TurnRequest, tool_format: str) -> RenderedTurn:
    """The prompt for ``req`` and how its reply is read; a template failure is a 400."""
    from app.engine.messages import Message
    from app.engine.render import PromptRenderError, render_prompt

    if req.raw_prompt is not None:
        return RenderedTurn(req.raw_prompt, None, None, None)
    family = _family(model, tool_format)
    tools = req.tools if (req.tools and req.tool_choice != "none" and family is not None) else None
    try:
        msgs = [Message.from_dict(m) for m in req.messages]
    except (TypeError, ValueError) as exc:
        raise ApiError(400, f"bad message: {exc}", param="messages") from exc
    try:
        rendered = render_prompt(model, msgs, tools=tools, tool_format=family)
    except PromptRenderError as exc:
        raise ApiError(
            400, f"the model's chat template cannot render this conversation: {exc}", param="messages"
        ) from exc
    fmt = None
    if family is not None:
        from app.engine.formats import FORMATS

        fmt = FORMATS[family]
    return RenderedTurn(rendered.text, family, fmt, tools)


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
    wrong (template, context, grammar)."""
    from app.engine.chat import _PlainStream
    from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone, ToolCallIncomplete
    from app.engine.generate import ContextOverflowError, GenerationError, GrammarError, generate
    from app.engine.loop import CallIds
    from app.engine.render import choose_template

    started = time.monotonic()
    turn = render_turn(model, req, tool_format)
    text, family, fmt, tools = turn.text, turn.family, turn.fmt, turn.tools
    ids = CallIds(used_ids or (), fresh=lambda _n: new_call_id())

    in_reasoning = False
    if req.raw_prompt is not None:
        stream: Any = None
    elif fmt is not None:
        in_reasoning = fmt.opens_in_reasoning(text)
        source = choose_template(model, bool(tools))[0]
        stream = fmt.stream(
            tools or [], in_reasoning=in_reasoning, orphan_close=fmt.expects_orphan_close(source, text)
        )
        stream.call_ids = ids.issue  # the parser issues each call's id (the model's own when valid)
    else:
        stream = _PlainStream(text.rstrip().endswith("<think>"))
    try:
        constraint = _constraint(model, family, tools, req, in_reasoning) if req.raw_prompt is None else None
        stops = tuple(model.stop_strings) + tuple(s for s in req.stop if s)
        halt = stop_event(cancel)
        gen = generate(
            model,
            text,
            max_tokens=req.max_tokens,
            sampling=req.sampling or None,
            cancel=halt,
            stop=stops,
            constraint=constraint,
        )
    except ContextOverflowError as exc:
        raise ApiError(400, str(exc), param="messages", code="context_length_exceeded") from exc
    except GrammarError as exc:
        raise ApiError(
            400, f"the requested constraint cannot be applied: {exc}", code="invalid_grammar"
        ) from exc
    except GenerationError as exc:
        raise as_api_error(exc) from exc
    except ValueError as exc:  # a bad sampling value
        raise ApiError(400, str(exc)) from exc

    ncalls = 0
    seen_ids: set[str] = set()
    declared = {t["function"]["name"] for t in tools or []}
    # Text that is only whitespace between a reasoning block and a call (or the end) is held and
    # dropped, so no API gets an empty text block; any visible text releases it first.
    held: list[str] = []
    in_text = False

    def text(piece: str) -> None:
        nonlocal in_text
        if not in_text and not piece.strip():
            held.append(piece)
            return
        if held:
            piece = "".join(held) + piece
            held.clear()
        in_text = True
        emit("text", piece)

    def boundary() -> None:
        nonlocal in_text
        held.clear()
        in_text = False

    def handle(ev: Any) -> None:
        nonlocal ncalls
        if isinstance(ev, TextDelta):
            if ev.text:
                text(ev.text)
        elif isinstance(ev, ReasoningDelta):
            if ev.text:
                boundary()
                emit("reasoning", ev.text)
        elif isinstance(ev, ToolCallIncomplete):
            # cut off, or to a tool the request did not declare: never a call; its text is kept
            if ev.call.raw:
                text(ev.call.raw)
        elif isinstance(ev, ToolCallDone):
            call = ev.call
            if not tools or call.name not in declared:
                # no tools were offered (tool_choice none), or not this one: what it wrote is text
                if call.raw:
                    text(call.raw)
                return
            boundary()
            if call.id in seen_ids or call.id not in ids.used:  # a parser that issued its own id
                from dataclasses import replace

                call = replace(call, id=ids.issue(None))
            seen_ids.add(call.id)
            if ncalls and not req.parallel_tool_calls:
                return
            ncalls += 1
            emit("call", call)
            if not req.parallel_tool_calls:
                halt.set()  # one call at most: stop generating here

    try:
        for piece in gen:
            if stream is None:  # a raw completion: every character as generated
                emit("text", piece)
                continue
            for ev in stream.feed(piece):
                handle(ev)
        res = gen.result
        assert res is not None
        finish = res.finish_reason
        if finish == "cancelled" and not cancel.is_set():
            finish = "stop"  # we stopped it ourselves (a single call was asked for)
        if stream is not None:
            for ev in stream.finish(truncated=finish not in ("stop",)):
                handle(ev)
    except GenerationError as exc:
        raise as_api_error(exc) from exc
    if ncalls and finish == "stop":
        finish = "tool_calls"
    return TurnEnd(
        finish_reason=finish,
        prompt_tokens=res.prompt_tokens,
        completion_tokens=res.generated_tokens,
        cached_tokens=max(0, res.prompt_tokens - res.prompt_tokens_evaluated),
        ttft_s=res.ttft_s,
        elapsed_s=time.monotonic() - started,
        tool_format=family,
    )


class stop_event(threading.Event):  # noqa: N801 - used like a function
    """A cancel event for one generation: set by the client's ``cancel`` or by the turn itself."""

    def __init__(self, client: threading.Event):
        super().__init__()
        self._client = client

    def is_set(self) -> bool:
        return super().is_set() or self._client.is_set()


def count_tokens(model: LoadedModel, req: TurnRequest, tool_format: str) -> int:
    return len(model.tokenize(render_turn(model, req, tool_format).text))
