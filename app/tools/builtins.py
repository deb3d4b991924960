"""Register Callisto's built-in tools: calculator, clock, and (with a workspace) the file tools."""

from __future__ import annotations

import os

from app.tools.calculator import calculator
from app.tools.clock import current_datetime
from app.tools.registry import ToolRegistry, tool_from_function
from app.tools.types import Tool
from app.tools.workspace import Workspace, workspace_tools

__all__ = ["FILE_TOOL_NAMES", "builtin_tools", "register_builtin_tools"]

FILE_TOOL_NAMES = ("list_files", "read_file", "search_files", "write_file")


def builtin_tools(workspace: str | os.PathLike[str] | Workspace | None = None) -> list[Tool]:
    """The built-in tools. File tools only when a workspace folder is chosen.

    Raises ``WorkspaceError`` when the workspace folder does not exist or is not a folder.
    """
    tools = [tool_from_function(calculator), tool_from_function(current_datetime)]
    if workspace is not None and str(workspace).strip():
        ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        tools.extend(workspace_tools(ws))
    return tools


def register_builtin_tools(
    registry: ToolRegistry, workspace: str | os.PathLike[str] | Workspace | None = None
) -> list[Tool]:
    """Add the built-in tools to ``registry`` (replacing earlier ones, e.g. after the workspace
    setting changed: the file tools are removed when no workspace is chosen)."""
    tools = builtin_tools(workspace)
    names = {t.name for t in tools}
    for name in FILE_TOOL_NAMES:
        if name not in names:
            existing = registry.get(name)
            if existing is not None and existing.source == "builtin":
                registry.unregister(name)
    for tool in tools:
        existing = registry.get(tool.name)
        registry.register(tool, replace=True, enabled=existing is None or registry.is_enabled(tool.name))
    return tools
