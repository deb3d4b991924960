"""Building a chat session: the one place the window, the CLI, the server and the self-test
turn a loaded model and a few choices into a :class:`~app.engine.chat.ChatSession`.

:func:`build_tools` makes the registry (built-in tools, the workspace's file tools, MCP tools)
and the dispatcher behind one :class:`~app.tools.dispatcher.ApprovalPolicy`, the one memory of
approvals. Problems that leave the other tools working (a workspace folder that cannot be
used, an MCP server that failed) are returned as :class:`ToolProblem` for the caller to show;
``strict=True`` raises them instead (the CLI exits with a usage error).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.engine.errors import ToolSetupError

if TYPE_CHECKING:
    from app.engine.chat import ChatSession
    from app.engine.llm import LoadedModel
    from app.engine.messages import Message
    from app.engine.thinking import Thinking
    from app.tools.dispatcher import ApprovalHook, ApprovalPolicy, Dispatcher
    from app.tools.mcp import McpManager
    from app.tools.registry import ToolRegistry

__all__ = ["ToolProblem", "ToolSet", "build_session", "build_tools"]


@dataclass(frozen=True)
class ToolProblem:
    """Something that turned some tools off; ``setting`` names the setting that fixes it."""

    code: str
    message: str
    setting: str | None = None


@dataclass
class ToolSet:
    registry: ToolRegistry
    dispatcher: Dispatcher
    policy: ApprovalPolicy
    problems: list[ToolProblem] = field(default_factory=list)


def build_tools(
    *,
    builtin: bool = True,
    workspace: str | None = None,
    mcp: McpManager | None = None,
    approval: ApprovalHook | None = None,
    approvals: Mapping[str, str] | None = None,
    pins: Mapping[str, Any] | None = None,
    default_approval: str = "ask",
    approval_timeout_s: float | None = None,
    policy: ApprovalPolicy | None = None,
    strict: bool = False,
) -> ToolSet:
    """The tools a session may call and the dispatcher that runs them.

    ``approvals`` (tool name -> "ask" | "allow") and ``default_approval`` ("ask" | "allow") are
    the settings' approval memory, ``pins`` (``tools.pins``) the definitions of MCP tools the person
    allowed; a given ``policy`` (kept across sessions) is updated with them. ``default_approval``
    covers the built-in tools only: an MCP tool runs unasked only when allowed as it is now.
    """
    from app.calls import POLICY_DEFAULTS
    from app.tools import ApprovalPolicy, Dispatcher, ToolRegistry, register_builtin_tools
    from app.tools.workspace import WorkspaceError

    registry = ToolRegistry()
    problems: list[ToolProblem] = []
    if builtin:
        try:
            register_builtin_tools(registry, workspace)
        except (WorkspaceError, OSError, ValueError) as exc:
            if strict:
                raise ToolSetupError(str(exc)) from exc
            register_builtin_tools(registry, None)
            problems.append(
                ToolProblem("workspace_unusable", f"The file tools are off: {exc}", "tools.workspace")
            )
    if mcp is not None:
        try:
            mcp.register_tools(registry)
        except Exception as exc:  # noqa: BLE001 - a broken MCP server must not take the other tools down
            if strict:
                raise ToolSetupError(f"The MCP tools are off: {exc}") from exc
            problems.append(
                ToolProblem("mcp_server_failed", f"The MCP tools are off: {exc}", "tools.mcp_servers_path")
            )
    policy = policy if policy is not None else ApprovalPolicy()
    for name, value in (approvals or {}).items():
        if value in POLICY_DEFAULTS:
            policy.set_default(name, value)  # type: ignore[arg-type]
    policy.set_pins(pins or {})
    if default_approval == "allow":
        for name in registry.names():
            policy.set_default(name, "allow")
    kwargs: dict[str, Any] = {}
    if approval_timeout_s is not None:
        kwargs["approval_timeout_s"] = approval_timeout_s
    dispatcher = Dispatcher(registry, approval=approval, policy=policy, **kwargs)
    return ToolSet(registry, dispatcher, policy, problems)


def build_session(
    model: LoadedModel,
    *,
    tools: ToolSet | None = None,
    tool_format: str = "auto",
    system_prompt: str | None = None,
    sampling: Mapping[str, Any] | None = None,
    max_tokens: int = 1024,
    max_rounds: int | None = None,
    messages: list[Message] | None = None,
    grammar: str | Callable[[int], str | None] | None = None,
    thinking: Thinking | bool | str | None = None,
    **options: Any,
) -> ChatSession:
    """A session over ``model`` with ``tools`` (None: no tools). ``options`` are passed on to
    :class:`ChatSession` as they are (tool_choice and the other per-session choices).
    ``thinking``: off / on / an effort level / a budget (``app.engine.thinking.Thinking``; None:
    the template's default). Raises ValueError for an unknown choice."""
    from app.engine.chat import ChatSession
    from app.engine.thinking import parse_thinking

    kwargs: dict[str, Any] = dict(options)
    kwargs["thinking"] = parse_thinking(thinking)
    if tools is not None:
        kwargs.update(registry=tools.registry, dispatcher=tools.dispatcher)
    if max_rounds is not None:
        kwargs["max_rounds"] = max_rounds
    if messages:
        kwargs["messages"] = messages
    if grammar is not None:
        kwargs["grammar"] = grammar
    return ChatSession(
        model,
        tool_format=tool_format,
        system_prompt=system_prompt or None,
        sampling=dict(sampling) if sampling else None,
        max_tokens=max_tokens,
        **kwargs,
    )
