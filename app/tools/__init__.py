"""Qt-free tools: types, registry, schema-typed dispatcher, built-in tools, MCP.

``app.tools.mcp`` (the MCP client, which imports the ``mcp`` SDK) is not imported here;
import ``McpManager`` from ``app.tools.mcp`` where MCP servers are wanted.
"""

from app.tools.builtins import FILE_TOOL_NAMES, builtin_tools, register_builtin_tools
from app.tools.dispatcher import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    DEFAULT_RESULT_BUDGET,
    DEFAULT_TOOL_TIMEOUT_S,
    ApprovalHook,
    ApprovalPolicy,
    Dispatcher,
)
from app.tools.registry import ToolRegistry, tool_from_function
from app.tools.types import (
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    Tool,
    ToolCall,
    ToolError,
    ToolResult,
)
from app.tools.validation import validate_arguments
from app.tools.workspace import Workspace, WorkspaceError

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "DEFAULT_RESULT_BUDGET",
    "DEFAULT_TOOL_TIMEOUT_S",
    "FILE_TOOL_NAMES",
    "ApprovalDecision",
    "ApprovalHook",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Dispatcher",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "Workspace",
    "WorkspaceError",
    "builtin_tools",
    "register_builtin_tools",
    "tool_from_function",
    "validate_arguments",
]
