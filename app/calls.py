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

import hashlib
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
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
    "ApprovalPolicy",
    "ToolTrust",
    "definition_sha256",
    "pin_record",
    "MAX_PINNED_DEFINITION_CHARS",
    "remember_decision",
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


# -- Tools from outside: pinned definitions ------------------------------------------------------
# A tool an MCP server offers is trusted by its definition, not by its name: what the person allowed
# is pinned (a hash of the name, description, input schema and annotations, kept in settings as
# ``tools.pins``), and an "allow" in ``tools.approvals`` holds only while the server offers that very
# definition. A different one is asked about again, with what changed. The server's annotations
# (``readOnlyHint`` ...) are hints shown to the person, never a permission.


def definition_sha256(definition: Mapping[str, Any]) -> str:
    """The pin of a tool's definition: sha256 of its canonical JSON (keys sorted, exact text)."""
    text = json.dumps(definition, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ToolTrust:
    """What is known about a tool from outside (an MCP server): who offers it and exactly what.

    ``key`` names it in the approvals store (``mcp:<server>/<tool>``: a server's tool never shares
    an approval with another server's tool of the same name); ``sha256`` pins ``definition`` (name,
    description, input schema and annotations as the server sent them); ``warnings`` are what the
    checks found in the plain words the window shows; ``hints`` are the server's own claims
    (annotations), which never decide whether the tool asks first.
    """

    key: str
    sha256: str
    definition: dict[str, Any] = field(compare=False)
    warnings: tuple[str, ...] = ()
    hints: tuple[str, ...] = ()
    removed_characters: int = 0

    @property
    def server(self) -> str:
        return self.key.removeprefix("mcp:").split("/", 1)[0]


#: The largest definition (as JSON text) a pin keeps for the diff; a larger one keeps its hash only.
MAX_PINNED_DEFINITION_CHARS = 64 * 1024


def pin_record(trust: ToolTrust) -> dict[str, Any]:
    """What ``tools.pins`` keeps for an allowed tool: its hash and the definition (for the diff;
    past :data:`MAX_PINNED_DEFINITION_CHARS` only its name and size, the hash still pins it all)."""
    size = len(json.dumps(trust.definition, ensure_ascii=False, default=str))
    if size <= MAX_PINNED_DEFINITION_CHARS:
        return {"sha256": trust.sha256, "definition": trust.definition}
    name = str(trust.definition.get("name", ""))[:200]
    return {"sha256": trust.sha256, "definition": {"name": name, "too_long_to_keep": f"{size:,} characters"}}


def _pinned_sha(pins: Mapping[str, Any], key: str) -> str | None:
    entry = pins.get(key)
    if isinstance(entry, Mapping):
        sha = entry.get("sha256")
        return sha if isinstance(sha, str) else None
    return entry if isinstance(entry, str) else None


def remember_decision(
    approvals: Mapping[str, str],
    pins: Mapping[str, Any],
    *,
    tool_name: str,
    trust: ToolTrust | None,
    decision: ApprovalDecision,
) -> tuple[dict[str, str], dict[str, Any]]:
    """The approvals and pins settings keep after the person's answer (new dicts; inputs untouched).

    A built-in tool: "always" is remembered by name. A tool from outside: any allow pins the
    definition the person saw; "always" allows that definition; "allow once" for a definition that
    differs from the pinned one takes back an earlier "always" (it was given for the old one).
    """
    new_approvals, new_pins = dict(approvals), dict(pins)
    if decision == "deny":
        return new_approvals, new_pins
    if trust is None:
        if decision == "always":
            new_approvals[tool_name] = "allow"
        return new_approvals, new_pins
    changed = _pinned_sha(pins, trust.key) not in (None, trust.sha256)
    new_pins[trust.key] = pin_record(trust)
    if decision == "always":
        new_approvals[trust.key] = "allow"
    elif changed and new_approvals.get(trust.key) == "allow":
        new_approvals[trust.key] = "ask"
    return new_approvals, new_pins


class ApprovalPolicy:
    """Which side-effecting tools run without asking: the one memory of approvals.

    ``defaults`` come from settings (``tools.approvals``: tool name, or a tool's :class:`ToolTrust`
    key, -> "ask" or "allow"); ``pins`` from ``tools.pins`` (key -> pin record, or a bare hash).
    A built-in tool is allowed by name. A tool with a ``trust`` is allowed only when its key is
    allowed *and* the pinned hash is the one it has now, or the person said "Always allow" to this
    very definition in this session. "Always allow" answers are remembered for the session; the
    window saves them to settings as well (:func:`remember_decision`). Thread-safe.
    """

    def __init__(
        self, defaults: Mapping[str, PolicyDefault] | None = None, pins: Mapping[str, Any] | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._defaults: dict[str, PolicyDefault] = {}
        self._pins: dict[str, dict[str, Any]] = {}
        self._session_allowed: set[str] = set()
        for name, value in (defaults or {}).items():
            self.set_default(name, value)
        self.set_pins(pins or {})

    def set_default(self, tool_name: str, value: PolicyDefault) -> None:
        if value not in POLICY_DEFAULTS:
            raise ValueError(f"Approval default for {tool_name!r} must be 'ask' or 'allow', got {value!r}")
        with self._lock:
            self._defaults[tool_name] = value

    def defaults(self) -> dict[str, PolicyDefault]:
        with self._lock:
            return dict(self._defaults)

    def set_pins(self, pins: Mapping[str, Any]) -> None:
        """Add the pins of settings (key -> ``{"sha256", "definition"}``, or a bare hash)."""
        with self._lock:
            for key, entry in pins.items():
                sha = _pinned_sha(pins, key)
                if sha is None:
                    continue
                definition = entry.get("definition") if isinstance(entry, Mapping) else None
                self._pins[str(key)] = {
                    "sha256": sha,
                    "definition": dict(definition) if isinstance(definition, Mapping) else None,
                }

    def pin(self, key: str) -> dict[str, Any] | None:
        """The pinned record of ``key`` (``sha256`` and the ``definition`` allowed), or None."""
        with self._lock:
            entry = self._pins.get(key)
            return dict(entry) if entry is not None else None

    def pins(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: dict(v) for k, v in self._pins.items()}

    def changed_since_pinned(self, trust: ToolTrust) -> dict[str, Any] | None:
        """The definition the person allowed before, when the tool now offers another; else None."""
        entry = self.pin(trust.key)
        if entry is None or entry.get("sha256") == trust.sha256:
            return None
        return entry.get("definition") or {}

    def allow_for_session(self, tool_name: str, trust: ToolTrust | None = None) -> None:
        with self._lock:
            self._session_allowed.add(tool_name if trust is None else f"{trust.key}#{trust.sha256}")

    def reset_session(self) -> None:
        with self._lock:
            self._session_allowed.clear()

    def is_preapproved(self, tool_name: str, trust: ToolTrust | None = None) -> bool:
        with self._lock:
            if trust is None:
                return tool_name in self._session_allowed or self._defaults.get(tool_name) == "allow"
            if f"{trust.key}#{trust.sha256}" in self._session_allowed:
                return True
            pinned = self._pins.get(trust.key)
            return (
                self._defaults.get(trust.key) == "allow"
                and pinned is not None
                and pinned.get("sha256") == trust.sha256
            )

    def record(self, tool_name: str, trust: ToolTrust | None, decision: ApprovalDecision) -> None:
        """Remember the person's answer for this session (the same rules as :func:`remember_decision`)."""
        if decision == "deny":
            return
        if trust is None:
            if decision == "always":
                self.allow_for_session(tool_name)
            return
        with self._lock:
            before = self._pins.get(trust.key)
            changed = before is not None and before.get("sha256") != trust.sha256
            self._pins[trust.key] = pin_record(trust)
            if decision == "always":
                self._session_allowed.add(f"{trust.key}#{trust.sha256}")
            elif changed and self._defaults.get(trust.key) == "allow":
                self._defaults[trust.key] = "ask"


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
        """Every field, by name (the shape history stores and ``--json`` prints)."""
        return asdict(self)

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
