"""Plain types at the tools boundary: what a tool is, a call of it, and its result.

All of them are frozen dataclasses so the engine's worker thread, the UI thread and the
storage layer can pass them around freely.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The approvals' words are app.calls's (one vocabulary); the tools' API names them here too.
from app.calls import APPROVAL_OUTCOMES, ApprovalDecision, ApprovalOutcome, ToolCall, ToolResult, ToolTrust

__all__ = [
    "APPROVAL_OUTCOMES",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolTrust",
    "pretty_json",
]


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON for a person to read (the one pretty-printer of arguments and
    results): a string holding JSON is shown parsed, other text as it is, and what JSON cannot
    hold through ``str``."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


class ToolError(Exception):
    """Raised by a tool for a failure the model should read as-is (one clear sentence)."""


@dataclass(frozen=True)
class Tool:
    """A tool the model may call.

    ``parameters`` is a JSON Schema object (``{"type": "object", "properties": ...}``).
    ``handler`` receives the validated arguments as keyword arguments and returns a string
    (or anything JSON-serialisable). ``side_effects`` tools ask the user before running.
    ``timeout_s`` overrides the dispatcher's default per-call timeout.
    ``source`` says where the tool comes from: ``"builtin"`` or ``"mcp:<server>"``.
    ``cancellable`` tools follow :mod:`app.tools.cancel`: they stop when their time runs out and
    commit side effects only through ``commit_side_effect()``, so a timed-out call of one either
    changed nothing or is known to be finishing its change. Other tools that time out are
    abandoned on their thread, and for a side-effecting one the model is told the effect may
    still happen.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    side_effects: bool = False
    handler: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    timeout_s: float | None = None
    source: str = "builtin"
    cancellable: bool = False
    #: a tool from outside (MCP): its pinned definition and what the checks found (app.calls.ToolTrust)
    trust: ToolTrust | None = field(default=None, compare=False, repr=False)

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool shape that chat templates render."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ApprovalRequest:
    """What the approval dialog shows: the tool, what it does, and the exact arguments.

    ``timeout_s`` is how long the dispatcher waits for an answer before treating the call as
    denied (the UI may close its dialog then).
    """

    call_id: str
    tool_name: str
    description: str
    arguments: dict[str, Any]
    source: str = "builtin"
    timeout_s: float | None = None
    #: a tool from outside: its definition, pin, warnings and hints (the dialog shows them)
    trust: ToolTrust | None = None
    #: the definition the person allowed before, when the tool now offers a different one
    previous: dict[str, Any] | None = None

    @property
    def arguments_text(self) -> str:
        """The arguments as indented JSON, for display."""
        return pretty_json(self.arguments)
