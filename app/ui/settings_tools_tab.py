"""Settings → Tools: the workspace folder, approvals, the MCP servers file, and what those servers offer.

:func:`add_mcp_section` adds the MCP part to the tab of :class:`app.ui.settings_dialog.SettingsDialog`.
:class:`McpToolsView` lists each MCP server (its state, and a warning when any of its tools looks
unsafe) and each of its tools with its full description (hidden characters removed, and counted),
what the server claims about it (hints, never permissions), what Callisto's checks found, and
whether the person allowed it (and for which definition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QFormLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from app.storage.settings import ToolSettings
    from app.tools.mcp import McpServerStatus, McpToolInfo

__all__ = ["McpToolsView", "add_mcp_section", "mcp_tools_text"]


def _allowed(info: McpToolInfo, approvals: Mapping[str, str], pins: Mapping[str, Any]) -> str:
    key = info.trust.key
    pin = pins.get(key)
    pinned = pin.get("sha256") if isinstance(pin, Mapping) else None
    if pinned is not None and pinned != info.trust.sha256:
        return "CHANGED since you allowed it: it will ask again and show what changed"
    if approvals.get(key) == "allow" and pinned == info.trust.sha256:
        return "always allowed (this definition)"
    if pinned is not None:
        return "asks each time (you allowed this definition before)"
    return "asks each time (never allowed yet)"


def mcp_tools_text(
    statuses: Sequence[McpServerStatus],
    tools: Sequence[McpToolInfo],
    approvals: Mapping[str, str],
    pins: Mapping[str, Any],
) -> str:
    """The servers and their tools, in full, as the Settings page shows them."""
    if not statuses:
        return "No MCP servers are running. Name an mcp.json above to add some."
    by_server: dict[str, list[McpToolInfo]] = {}
    for info in tools:
        by_server.setdefault(info.server, []).append(info)
    out: list[str] = []
    for st in statuses:
        flagged = sorted({w.split(":", 1)[0] for w in st.warnings})
        head = f"Server '{st.name}': {st.state}"
        if st.error:
            head += f" ({st.error})"
        out.append(head)
        if flagged:
            out.append(f"  ⚠ Careful: {len(flagged)} of its tools look unsafe: {', '.join(flagged)}.")
        for info in by_server.get(st.name, []):
            trust = info.trust
            mark = "⚠ " if trust.warnings else ""
            out.append(f"  • {mark}{info.name}  [{_allowed(info, approvals, pins)}]")
            for line in (info.description or "(no description)").splitlines() or [""]:
                out.append(f"      {line}")
            if trust.hints:
                out.append(f"      The server says it {'; '.join(trust.hints)} (hints, not permissions).")
            for w in trust.warnings:
                out.append(f"      ⚠ {w}")
            for w in st.warnings:
                tool, _, text = w.partition(": ")
                if tool == info.trust.definition.get("name") and "its result" in text:
                    out.append(f"      ⚠ {text}")
        out.append("")
    return "\n".join(out).rstrip()


class McpToolsView(QPlainTextEdit):
    """The MCP servers and their tools, read-only, in full."""

    def __init__(
        self,
        mcp: Any,
        approvals: Mapping[str, str],
        pins: Mapping[str, Any],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("mcpTools")
        self.setReadOnly(True)
        statuses = list(mcp.statuses()) if mcp is not None else []
        tools = list(mcp.describe()) if mcp is not None else []
        self.setPlainText(mcp_tools_text(statuses, tools, approvals, pins))
        self.setMinimumHeight(160)


def add_mcp_section(
    page: QWidget, form: QFormLayout, hint: Any, mcp: Any, tools: ToolSettings
) -> McpToolsView:
    """Below the Tools tab's form: the MCP trust rules in one sentence, then each server's tools in
    full (``mcp``: the running :class:`app.tools.mcp.McpManager`, or None)."""
    form.addRow(
        "",
        hint(
            "An MCP server's tools always ask before they run until you allow them; what a server says "
            'about a tool ("read-only") is a hint, not a permission. "Always allow" holds for the '
            "tool as you saw it: when the server changes it, Callisto asks again and shows what changed."
        ),
    )
    outer = page.layout()
    assert isinstance(outer, QVBoxLayout)
    stretch = outer.takeAt(outer.count() - 1)  # the room left below the form: the list takes it
    del stretch
    outer.addWidget(QLabel("MCP servers and their tools:"))
    view = McpToolsView(mcp, tools.approvals, tools.pins)
    outer.addWidget(view, 1)
    return view
