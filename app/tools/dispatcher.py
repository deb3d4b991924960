"""Run the model's tool calls safely: validate, ask approval, time out, bound the result.

``Dispatcher.dispatch(call)`` is called synchronously from the engine's worker thread and
never raises: every failure (unknown tool, bad arguments, a denial, a timeout, an exception
inside the tool) becomes a ``ToolResult`` whose ``error`` is one sentence the model reads.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

# The one memory of approvals (tool names, and pinned definitions of tools from outside) is app.calls's,
# and so are the calls and their results.
from app.calls import ApprovalOutcome, ApprovalPolicy, ToolCall, ToolResult, outcome_of, read_decision
from app.tools.cancel import CallControl, ToolCancelled, run_under
from app.tools.registry import ToolRegistry
from app.tools.types import ApprovalRequest, Tool, ToolError
from app.tools.validation import parse_arguments, validate_arguments

__all__ = [
    "ApprovalHook",
    "ApprovalPolicy",
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "DEFAULT_RESULT_BUDGET",
    "DEFAULT_TOOL_TIMEOUT_S",
    "Dispatcher",
]

log = logging.getLogger(__name__)

DEFAULT_TOOL_TIMEOUT_S = 30.0
DEFAULT_APPROVAL_TIMEOUT_S = 300.0
DEFAULT_RESULT_BUDGET = 8000  # characters the model reads back from one call

# A callable taking the request and returning a decision (app.calls.ApprovalDecision), or an
# awaitable of one.
ApprovalHook = Callable[[ApprovalRequest], Any]


def _run_in_thread(
    fn: Callable[[], Any], timeout_s: float | None, name: str, control: CallControl | None = None
) -> tuple[threading.Thread, dict[str, Any]]:
    """Start ``fn()`` on a daemon thread (under ``control``), wait ``timeout_s``; (thread, box).

    ``box`` gets ``value`` or ``error`` once the thread finishes. A daemon thread, so a tool
    that never returns cannot keep the app from exiting.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = run_under(control, fn) if control is not None else fn()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller as a result
            box["error"] = exc

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return thread, box


def _call_hook(hook: ApprovalHook, request: ApprovalRequest) -> Any:
    answer = hook(request)
    if inspect.isawaitable(answer):
        import asyncio

        async def wait() -> Any:
            return await answer

        answer = asyncio.run(wait())
    return answer


def _format_seconds(seconds: float) -> str:
    return f"{seconds:g} s"


def _to_text(value: Any) -> str:
    if value is None:
        return "(no output)"
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class Dispatcher:
    """Validates, approves, runs and bounds tool calls. ``dispatch`` never raises.

    ``approval`` is the hook asked before a side-effecting tool runs; it receives an
    ``ApprovalRequest`` and returns (or resolves to) "allow_once", "always" or "deny". It is
    called on the dispatching thread and may block; after ``approval_timeout_s`` without an
    answer the call counts as denied (outcome "timeout"). With no hook, side-effecting tools
    are refused unless the policy pre-approves them.

    Each call has a time limit (``Tool.timeout_s`` or ``timeout_s``). At the limit the call is
    cancelled (see :mod:`app.tools.cancel`): a cooperating tool gets ``cancel_grace_s`` to stop
    and report; one already committing its side effect gets ``commit_grace_s`` to finish, and its
    real outcome is reported. The error the model reads says whether the effect may still happen.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        approval: ApprovalHook | None = None,
        *,
        policy: ApprovalPolicy | None = None,
        timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        approval_timeout_s: float | None = DEFAULT_APPROVAL_TIMEOUT_S,
        result_budget: int = DEFAULT_RESULT_BUDGET,
        cancel_grace_s: float = 1.0,
        commit_grace_s: float = 10.0,
    ) -> None:
        if result_budget < 100:
            raise ValueError("result_budget must be at least 100 characters")
        self.registry = registry
        self.approval = approval
        self.policy = policy if policy is not None else ApprovalPolicy()
        self.timeout_s = timeout_s
        self.approval_timeout_s = approval_timeout_s
        self.result_budget = result_budget
        self.cancel_grace_s = cancel_grace_s
        self.commit_grace_s = commit_grace_s

    # -- public -------------------------------------------------------------------------

    def dispatch(self, call: ToolCall) -> ToolResult:
        """Run one call and return its result; never raises."""
        start = time.monotonic()
        try:
            return self._dispatch(call, start)
        except BaseException as exc:  # noqa: BLE001 - the contract: never raise into the chat loop
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            log.exception("dispatch of %r failed unexpectedly", getattr(call, "name", call))
            return ToolResult(
                call_id=str(getattr(call, "id", "")),
                name=str(getattr(call, "name", "")),
                error=f"The tool could not be run because of an internal error ({type(exc).__name__}: {exc}).",
                duration_s=time.monotonic() - start,
            )

    # -- steps --------------------------------------------------------------------------

    def _result(self, call: ToolCall, start: float, **kw: Any) -> ToolResult:
        error = kw.pop("error", None)
        content = kw.pop("content", None)
        truncated = False
        if error is not None:
            error, truncated = self._bound(str(error))
        elif content is not None:
            content, truncated = self._bound(content)
        return ToolResult(
            call_id=call.id,
            name=call.name,
            content=content,
            error=error,
            duration_s=time.monotonic() - start,
            truncated=truncated,
            **kw,
        )

    def _bound(self, text: str) -> tuple[str, bool]:
        budget = self.result_budget
        if len(text) <= budget:
            return text, False
        note = f"\n[Output truncated: showing the first {{shown}} of {len(text)} characters.]"
        shown = budget - len(note.format(shown=budget))
        return text[:shown] + note.format(shown=shown), True

    def _dispatch(self, call: ToolCall, start: float) -> ToolResult:
        tool = self.registry.get(call.name) if isinstance(call.name, str) else None
        if tool is None or not self.registry.is_enabled(call.name):
            available = ", ".join(self.registry.enabled_names()) or "none"
            return self._result(
                call, start, error=f"Unknown tool '{call.name}'. Available tools: {available}."
            )

        parsed, problem = parse_arguments(call.arguments)
        if problem is None and parsed is not None:
            problem = validate_arguments(tool.parameters, parsed)
        if problem is not None or parsed is None:
            return self._result(call, start, error=problem or "The arguments are not a JSON object.")
        arguments = parsed

        outcome: ApprovalOutcome = "auto"
        if tool.side_effects:
            asked = self._approve(call, tool, arguments)
            start = time.monotonic()  # the call's duration is its run, not the wait for the user's answer
            if asked is None:
                return self._result(
                    call,
                    start,
                    approval="denied",
                    error=f"'{tool.name}' needs the user's approval and no one can be asked here, so it did not run.",
                )
            outcome = asked
            if outcome == "denied":
                return self._result(
                    call, start, approval=outcome, error=f"The user denied permission to run '{tool.name}'."
                )
            if outcome == "timeout":
                return self._result(
                    call,
                    start,
                    approval=outcome,
                    error=f"No one approved '{tool.name}' in time, so it did not run.",
                )

        return self._run(call, tool, arguments, outcome, start)

    def _approve(self, call: ToolCall, tool: Tool, arguments: dict[str, Any]) -> ApprovalOutcome | None:
        """How the call may run; None when it needs an answer and no one can be asked."""
        trust = tool.trust
        if self.policy.is_preapproved(tool.name, trust):
            return "always"
        if self.approval is None:
            return None
        request = ApprovalRequest(
            call_id=call.id,
            tool_name=tool.name,
            description=tool.description,
            arguments=arguments,
            source=tool.source,
            timeout_s=self.approval_timeout_s,
            trust=trust,
            previous=self.policy.changed_since_pinned(trust) if trust is not None else None,
        )
        hook = self.approval
        thread, box = _run_in_thread(
            lambda: _call_hook(hook, request), self.approval_timeout_s, f"approval-{tool.name}"
        )
        if thread.is_alive():
            return "timeout"
        answer, error = box.get("value"), box.get("error")
        if error is not None:
            log.warning("approval hook raised %r for %s: treated as deny", error, tool.name)
            return "denied"
        decision = read_decision(answer)
        if decision is None:
            log.warning("approval hook returned %r for %s: treated as deny", answer, tool.name)
            return "denied"
        self.policy.record(tool.name, trust, decision)
        return outcome_of(decision)

    def _run(
        self, call: ToolCall, tool: Tool, arguments: dict[str, Any], outcome: ApprovalOutcome, start: float
    ) -> ToolResult:
        if tool.handler is None:
            return self._result(
                call, start, approval=outcome, error=f"Tool '{tool.name}' has no implementation."
            )
        timeout = tool.timeout_s if tool.timeout_s is not None else self.timeout_s
        handler = tool.handler
        control = CallControl(deadline=time.monotonic() + timeout if timeout is not None else None)
        thread, box = _run_in_thread(lambda: handler(**arguments), timeout, f"tool-{tool.name}", control)
        if thread.is_alive():
            late = self._timed_out(tool, timeout, control, thread, box)
            if late is not None:
                return self._result(call, start, approval=outcome, error=late)
        exc = box.get("error")
        if exc is not None:
            if isinstance(exc, ToolError):
                return self._result(
                    call, start, approval=outcome, error=str(exc) or f"Tool '{tool.name}' failed."
                )
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            detail = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
            return self._result(call, start, approval=outcome, error=f"Tool '{tool.name}' failed ({detail}).")
        return self._result(call, start, approval=outcome, content=_to_text(box.get("value")))

    def _timed_out(
        self,
        tool: Tool,
        timeout: float | None,
        control: CallControl,
        thread: threading.Thread,
        box: dict[str, Any],
    ) -> str | None:
        """The error the model reads for a call past its time, or None when it finished after all.

        Says honestly whether the tool's effect may still happen: a cancellable tool stopped
        before its commit point changed nothing; one past its commit point is waited for (its
        real outcome is reported); any other side-effecting tool keeps running unseen.
        """
        limit = _format_seconds(timeout if timeout is not None else 0.0)
        nothing_committed = control.cancel()
        if not nothing_committed:
            # The tool is making its change visible right now: wait for it and report what happened.
            thread.join(self.commit_grace_s)
            if not thread.is_alive():
                return None
            return (
                f"Tool '{tool.name}' did not finish within {limit}; it had already started applying its "
                "change, which may still complete."
            )
        if tool.cancellable:
            # It stops at its next check; a moment lets it report its own, clearer error.
            thread.join(self.cancel_grace_s)
            if not thread.is_alive() and not isinstance(box.get("error"), ToolCancelled):
                return None
            if tool.side_effects:
                return f"Tool '{tool.name}' did not finish within {limit} and was stopped before it changed anything."
            return f"Tool '{tool.name}' did not finish within {limit} and was stopped."
        if tool.side_effects:
            return (
                f"Tool '{tool.name}' did not finish within {limit} and was abandoned, but it may still be "
                "running: its effect may still happen."
            )
        return f"Tool '{tool.name}' did not finish within {limit} and was abandoned."
