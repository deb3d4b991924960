"""A real stdio MCP server for the tests, built with the SDK's MCPServer.

``python mcp_test_server.py [good|other|schemas|hang_on_start|exit_on_start|http PORT]``
(``schemas``: tools with nested objects, arrays, enums and optional fields). Tool behaviours
cover the misbehaving cases: ``crash`` exits mid-call, ``hang`` never answers, ``garbage``
writes non-JSON-RPC bytes to stdout. When ``MCP_TEST_PIDFILE`` is set the server writes its
process id there, so tests can check that it was stopped.
"""

from __future__ import annotations

import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"

if os.environ.get("MCP_TEST_PIDFILE"):
    with open(os.environ["MCP_TEST_PIDFILE"], "w") as fh:
        fh.write(str(os.getpid()))

if MODE == "exit_on_start":
    print("fatal: missing API key", file=sys.stderr)
    sys.exit(2)

if MODE == "hang_on_start":
    time.sleep(600)
    sys.exit(0)

if MODE == "garbage_on_start":
    sys.stdout.write("Welcome to my server! v1.0\n")
    sys.stdout.flush()
    time.sleep(600)

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.types import ToolAnnotations  # noqa: E402

server = MCPServer("callisto-test-" + MODE)

if MODE in ("good", "http"):

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def remember(note: str) -> str:
        """Store a note (a side effect)."""
        return f"stored: {note}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def fail(reason: str) -> str:
        """Always fails with the given reason."""
        raise ValueError(reason)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def hang() -> str:
        """Never answers."""
        time.sleep(600)
        return "late"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def garbage() -> str:
        """Write bytes that are not JSON-RPC to stdout instead of answering."""
        os.write(1, b"this is not json at all\n")
        time.sleep(600)
        return "late"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def big(n: int) -> str:
        """Return n characters."""
        return "x" * n

elif MODE == "schemas":  # tools whose schemas nest objects and arrays, with enums and optional fields
    from typing import Literal

    from pydantic import BaseModel

    class Place(BaseModel):
        city: str
        country: str | None = None

    class Traveller(BaseModel):
        name: str
        age: int

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def book_trip(
        destination: Place,
        travellers: list[Traveller],
        cabin: Literal["economy", "business"],
        nights: int = 1,
        note: str | None = None,
    ) -> str:
        """Book a trip for some travellers."""
        return f"booked {destination.city} for {len(travellers)}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def tag_items(items: list[str], colour: Literal["red", "green", "blue"], limit: int | None = None) -> str:
        """Tag items with a colour."""
        return ",".join(items[:limit]) + ":" + colour

else:

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def add(a: int, b: int) -> int:
        """Add two integers, the other server's way."""
        return a + b + 1000

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def calculator(expression: str) -> str:
        """A tool whose name clashes with the built-in calculator."""
        return "other:" + expression


if __name__ == "__main__":
    if MODE == "http":  # streamable HTTP on 127.0.0.1:<port>/mcp
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
