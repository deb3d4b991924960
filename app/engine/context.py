"""How much of the model's context a conversation takes, and what to do before it overflows.

``measure(session)`` renders the conversation as the next turn would (system prompt, messages,
tool schemas) and counts its tokens, the tool schemas' share apart; a message's images count the
positions the model's projector gives each (``LoadedModel.tokenize`` of an ``ImagePrompt``: from
the size in the image's header, nothing decoded). ``fit_turn(session, text,
policy)`` is called before a message is sent: with room to spare it changes nothing; otherwise
the policy decides:

* ``stop``            nothing is dropped; the caller refuses the turn with a clear error
* ``drop_oldest``     the oldest whole turns leave the session (a rolling window)
* ``truncate_middle`` the first turn stays, the turns after it leave, oldest first

A turn is a user message with every assistant / tool message after it, so a tool call is never
separated from its result. The newest turn is never dropped: when it alone does not fit, the
result says so and the caller stops. Room is kept for the reply (``reserve_tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "POLICIES",
    "ContextUsage",
    "FitResult",
    "fit_turn",
    "full_context_done",
    "measure",
    "measure_draft",
    "reserve_tokens",
    "trimmed_notice",
]

POLICIES = ("stop", "drop_oldest", "truncate_middle")


@dataclass(frozen=True)
class ContextUsage:
    """Tokens of the prompt the next generation would evaluate."""

    prompt_tokens: int
    tool_tokens: int  # the tool schemas' (and tool guidance's) share of prompt_tokens
    n_ctx: int
    reserve: int  # room kept for the reply
    #: the share of prompt_tokens the message being written takes (:func:`measure_draft`; 0: none)
    draft_tokens: int = 0

    @property
    def fits(self) -> bool:
        return self.prompt_tokens + self.reserve <= self.n_ctx

    @property
    def fraction(self) -> float:
        return self.prompt_tokens / self.n_ctx if self.n_ctx else 0.0


@dataclass(frozen=True)
class FitResult:
    usage: ContextUsage
    dropped_turns: int  # whole turns the policy removed from the session
    policy: str

    @property
    def fits(self) -> bool:
        return self.usage.fits


def reserve_tokens(session: Any) -> int:
    """Room kept for the reply: its max tokens, at most a quarter of the context."""
    n_ctx = int(session.model.n_ctx)
    return max(1, min(int(session.max_tokens or 0) or n_ctx // 4, n_ctx // 4))


def _count(session: Any, messages: list[Any], tools: list[dict[str, Any]] | None) -> int:
    from app.engine.chat import lead_messages
    from app.engine.render import render_prompt

    msgs = lead_messages(session) + list(messages)
    rendered = render_prompt(session.model, msgs, tools=tools, tool_format=session.effective_format)
    return len(session.model.tokenize(rendered.text))


def measure(session: Any, messages: list[Any] | None = None) -> ContextUsage:
    """The context the next generation of ``session`` (or of ``messages`` in it) would take."""
    from app.engine.messages import Message

    msgs = list(session.messages if messages is None else messages)
    if not msgs:  # a new chat: what the system prompt and tool schemas take before the first message
        msgs = [Message(role="user", content="")]
    tools = session.tools
    total = _count(session, msgs, tools)
    tool_tokens = max(0, total - _count(session, msgs, None)) if tools else 0
    return ContextUsage(
        prompt_tokens=total,
        tool_tokens=tool_tokens,
        n_ctx=int(session.model.n_ctx),
        reserve=reserve_tokens(session),
    )


def measure_draft(session: Any, text: str) -> ContextUsage:
    """The context the next generation of ``session`` takes with ``text`` (the message being
    written) as its next user message; ``draft_tokens``: what the message adds."""
    base = measure(session)
    if not text.strip():
        return base
    from app.engine.messages import Message

    with_draft = measure(session, [*session.messages, Message(role="user", content=text)])
    return replace(with_draft, draft_tokens=max(0, with_draft.prompt_tokens - base.prompt_tokens))


def _turn_starts(messages: list[Any]) -> list[int]:
    return [i for i, m in enumerate(messages) if m.role == "user"]


def fit_turn(session: Any, text: str, policy: str = "stop", images: Any = ()) -> FitResult:
    """Make room in ``session`` for the user message ``text`` with ``images`` (their bytes; not
    appended) following ``policy``. An image counts the positions its projector gives it
    (``LoadedModel.tokenize`` of the rendered ``ImagePrompt``)."""
    from app.engine.messages import Message

    if policy not in POLICIES:
        raise ValueError(f"unknown context policy {policy!r}; choose one of {', '.join(POLICIES)}")
    msgs = list(session.messages)
    new = Message(role="user", content=text, images=list(images))
    usage = measure(session, msgs + [new])
    dropped = 0
    while not usage.fits and policy != "stop":
        starts = _turn_starts(msgs)
        keep_first = policy == "truncate_middle"
        droppable = starts[1:] if keep_first else starts
        if not droppable:
            break
        i = droppable[0]
        later = [s for s in starts if s > i]
        end = later[0] if later else len(msgs)
        msgs = msgs[:i] + msgs[end:]
        dropped += 1
        usage = measure(session, msgs + [new])
    if dropped:
        session.messages[:] = msgs
    return FitResult(usage=usage, dropped_turns=dropped, policy=policy)


def trimmed_notice(fit: FitResult) -> Any:
    """The notice shown above a reply when the policy dropped turns (None when it dropped none)."""
    from app.engine.events import NoticeEvent

    if not fit.dropped_turns:
        return None
    return NoticeEvent(
        code="context_trimmed",
        message=(
            "The conversation no longer fits the context: the model no longer sees the "
            f"{fit.dropped_turns} oldest exchange(s)."
        ),
    )


def full_context_done(usage: ContextUsage) -> Any:
    """The done event of a turn refused because the conversation no longer fits."""
    from app.engine.events import ContextFull, DoneEvent

    tools = f" ({usage.tool_tokens:,} of them tool descriptions)" if usage.tool_tokens else ""
    return DoneEvent(
        finish_reason="error",
        prompt_tokens=usage.prompt_tokens,
        error=(
            f"This conversation is full: the next prompt takes {usage.prompt_tokens:,} tokens{tools} "
            f"and the model's context holds {usage.n_ctx:,}, with {usage.reserve:,} kept for the reply."
        ),
        context_full=ContextFull(n_ctx=usage.n_ctx, tool_tokens=usage.tool_tokens),
    )
