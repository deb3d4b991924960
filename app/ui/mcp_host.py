"""The MCP servers of the window's engine thread: started from ``mcp.json``, restarted when it changes.

Qt-free; the worker owns one :class:`McpHost` and calls it on its own thread (the servers are
started, called and stopped there). Problems become notices through ``notify``, never exceptions.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.tools.mcp import McpManager

__all__ = ["MCP_SETTING", "McpHost"]

log = logging.getLogger(__name__)

MCP_SETTING = "tools.mcp_servers_path"


def _fingerprint(path: str | None) -> bytes | None:
    """A digest of the file's bytes (None when there is no path or it cannot be read)."""
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).expanduser().read_bytes()).digest()
    except OSError:
        return None


class McpHost:
    """The running :class:`app.tools.mcp.McpManager` (``manager``) of one ``mcp.json``."""

    def __init__(
        self, notify: Callable[[str, str, str | None], None], progress: Callable[[float, str], None]
    ) -> None:
        self.notify, self.progress = notify, progress
        self.manager: McpManager | None = None
        self._path: str | None = None
        self._fingerprint: bytes | None = None  # digest of the mcp.json the servers were started from
        self._tried = False  # the servers of (_path, _fingerprint) were started (or failed to)

    def close(self) -> None:
        manager, self.manager = self.manager, None
        self._path = None
        self._fingerprint = None
        if manager is not None:
            try:
                manager.close()
            except Exception:  # noqa: BLE001 - stopping is best effort; a server that hangs is killed by it
                log.exception("stopping the MCP servers failed")

    def ensure(self, path: str | None, *, closing: bool = False) -> None:
        """Start the servers of ``path``; restart them when the path or the file's contents changed
        since they were started. A failed server or a broken file becomes a notice."""
        path = (path or "").strip() or None
        fingerprint = _fingerprint(path)
        if path == self._path and fingerprint == self._fingerprint and (path is None or self._tried):
            return
        self.close()
        self._path, self._fingerprint = path, fingerprint
        self._tried = path is not None
        if path is None or closing:
            return
        from app.tools.mcp import McpConfigError, McpManager

        try:
            manager = McpManager(path)
        except (McpConfigError, OSError, ValueError) as exc:  # names the file and the field
            self.notify("mcp_config", f"The MCP servers file cannot be used: {exc}", MCP_SETTING)
            return
        self.manager = manager
        self.progress(-1.0, "Starting MCP servers…")
        for st in manager.start():
            if st.state == "failed":
                self.notify(
                    "mcp_server_failed",
                    f"MCP server '{st.name}' failed and its tools are off: {st.error}",
                    MCP_SETTING,
                )
            elif st.warnings:
                self.notify("mcp_tool_warning", _warning_text(st.name, st.warnings), MCP_SETTING)


def _warning_text(server: str, warnings: tuple[str, ...], limit: int = 600) -> str:
    """One notice for a server whose tools look unsafe: each tool with what was found in it."""
    found: dict[str, list[str]] = {}
    for w in warnings:
        tool, _, what = w.partition(": ")
        found.setdefault(tool, []).append(
            what.replace("its description ", "").replace("its result ", "result ")
        )
    parts = "; ".join(f"{tool} ({', '.join(whats)})" for tool, whats in found.items())
    if len(parts) > limit:
        parts = parts[:limit].rstrip() + "…"
    return f"⚠ MCP server '{server}': be careful with {parts}. Settings → Tools lists its tools in full."
