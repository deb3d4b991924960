"""The one shape of a tool call and of its result, shared by every layer.

A call is parsed by a family's parser (``app.engine.formats``), dispatched by ``app.tools``,
stored by ``app.storage`` and shown by ``app.ui`` as the same :class:`ToolCall`; what came of it
is one :class:`ToolResult`. A call the parser saw but must not run (cut off by the token limit,
or addressed to a tool that was not declared) is an :class:`IncompleteCall`: its raw text is kept
so nothing the model wrote is lost. The words of approvals (what the person answers, how a call
came to run, what settings remember) are defined here too, once. This module imports nothing from
the application, so every package may depend on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "APPROVAL_DECISIONS",
    "APPROVAL_OUTCOMES",
    "APPROVAL_WORDS",
    "DENIED_OUTCOMES",
    "POLICY_DEFAULTS",
    "ApprovalDecision",
    "ApprovalOutcome",
    "PolicyDefault",
    "outcome_of",
    "read_decision",
    "IncompleteCall",
    "IncompleteReason",
    "TOOL_NAME",
    "WIRE_NAME",
    "is_tool_name",
    "ToolCall",
    "ToolResult",
]

# The tool-name rules, in one place. TOOL_NAME is what a tool may be called: the registry refuses
# other names and the server refuses them in a request. WIRE_NAME is what a parser reads as the name
# in a call before it checks it against the declared tools (a superset: a name the model got wrong,
# such as ``server:tool`` or ``a/b``, is then an undeclared call, shown and never run).
TOOL_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}"
WIRE_NAME = r"[A-Za-z_][\w.\-:/]*"
_TOOL_NAME_RE = re.compile(rf"^{TOOL_NAME}$")


def is_tool_name(name: object) -> bool:
    """Whether ``name`` follows :data:`TOOL_NAME`."""
    return isinstance(name, str) and bool(_TOOL_NAME_RE.match(name))


# -- Approvals: the one vocabulary --------------------------------------------------------------
# A side-effecting tool runs only when the policy allows it or the person allows it when asked.
# Three families of words, each defined here only: what the person answers (a decision), how a call
# came to run or not (an outcome, stored on every ToolResult), and what settings remember per
# tool (a policy default).

# What the person answers when asked (the approval dialog, the CLI prompt, any ApprovalHook).
ApprovalDecision = Literal["allow_once", "always", "deny"]
APPROVAL_DECISIONS: tuple[ApprovalDecision, ...] = ("allow_once", "always", "deny")

# How a call came to run (or not): stored on every ToolResult and shown in the side panel.
ApprovalOutcome = Literal["auto", "allowed_once", "always", "denied", "timeout"]
APPROVAL_OUTCOMES: tuple[ApprovalOutcome, ...] = ("auto", "allowed_once", "always", "denied", "timeout")
# The outcomes of a call that did not run because no one allowed it.
DENIED_OUTCOMES: tuple[ApprovalOutcome, ...] = ("denied", "timeout")

# What settings remember per tool (``tools.approvals``): ask each time, or allow without asking.
PolicyDefault = Literal["ask", "allow"]
POLICY_DEFAULTS: tuple[PolicyDefault, ...] = ("ask", "allow")

#: The outcomes in plain words (what the side panel says; the values above are internal).
APPROVAL_WORDS: dict[ApprovalOutcome, str] = {
    "auto": "not needed",
    "always": "always allowed",
    "allowed_once": "allowed once",
    "denied": "denied by you",
    "timeout": "no answer in time",
}


def read_decision(answer: object) -> ApprovalDecision | None:
    """``answer`` as a decision, or None when it is not one (the caller treats that as a denial)."""
    for decision in APPROVAL_DECISIONS:
        if answer == decision:
            return decision
    return None


def outcome_of(decision: ApprovalDecision) -> ApprovalOutcome:
    """The outcome a call gets from the person's decision."""
    return _OUTCOME_OF[decision]


_OUTCOME_OF: dict[ApprovalDecision, ApprovalOutcome] = {
    "allow_once": "allowed_once",
    "always": "always",
    "deny": "denied",
}

# Why a call the parser saw is not a call to run.
IncompleteReason = Literal["truncated", "undeclared"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model made.

    ``id`` is the call's id (the model's own when it wrote one, else one issued once by the
    parser and kept everywhere after); ``arguments`` are typed by the tool's schema (a string
    only when a client handed over raw JSON text the dispatcher must parse); ``raw`` is the
    exact text the model wrote for this call.
    """

    id: str
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        args = self.arguments if isinstance(self.arguments, str) else dict(self.arguments)
        return {"id": self.id, "name": self.name, "arguments": args, "raw": self.raw}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """Read :meth:`to_dict`'s shape back (the one shape history stores)."""
        args = data.get("arguments")
        if args is None:
            args = {}
        if not isinstance(args, dict | str):
            raise ValueError(f"tool call arguments must be an object or a string, got {type(args).__name__}")
        return cls(
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
            arguments=args,
            raw=str(data.get("raw") or ""),
        )


@dataclass(frozen=True, slots=True)
class IncompleteCall:
    """A call the parser saw but that is not a call to run: ``raw`` is what the model wrote.

    ``reason`` is ``"truncated"`` (generation stopped inside it) or ``"undeclared"`` (a tool or
    recipient that was not declared); ``name`` is the tool's name where it was read.
    """

    raw: str
    name: str | None = None
    reason: IncompleteReason = "truncated"

    def to_dict(self) -> dict[str, Any]:
        return {"raw": self.raw, "name": self.name, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IncompleteCall:
        reason = data.get("reason")
        return cls(
            raw=str(data.get("raw") or ""),
            name=data.get("name"),
            reason=reason if reason in ("truncated", "undeclared") else "truncated",
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What came of a call: exactly one of ``content`` / ``error`` is set."""

    call_id: str
    name: str
    content: str | None = None
    error: str | None = None
    duration_s: float = 0.0
    approval: ApprovalOutcome = "auto"
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_model_text(self) -> str:
        """What the model reads back: the content, or ``Error: <one clear sentence>``."""
        if self.error is not None:
            return f"Error: {self.error}"
        return self.content or ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "name": self.name,
            "content": self.content,
            "error": self.error,
            "duration_s": self.duration_s,
            "approval": self.approval,
            "truncated": self.truncated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResult:
        approval = data.get("approval")
        return cls(
            call_id=str(data.get("call_id", "")),
            name=str(data.get("name", "")),
            content=data.get("content"),
            error=data.get("error"),
            duration_s=float(data.get("duration_s") or 0.0),
            approval=approval if approval in APPROVAL_OUTCOMES else "auto",
            truncated=bool(data.get("truncated")),
        )
