"""A hand-written stdio MCP server (newline-delimited JSON-RPC, no SDK) that misbehaves on purpose.

The SDK's own server guards its stdout, so a server that corrupts the wire has to be written
by hand. It speaks enough MCP for a client to connect and list tools; then:
``garbage`` answers with bytes that are not JSON-RPC, ``bad_result`` answers with a JSON-RPC
response whose result is not a CallToolResult, ``echo`` works normally.
"""

from __future__ import annotations

import json
import sys
import time

TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "garbage",
        "description": "Answers with garbage.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "bad_result",
        "description": "Answers with an invalid result.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    },
]


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue  # a notification
        if method == "initialize":
            version = msg["params"].get("protocolVersion", "2025-06-18")
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "protocolVersion": version,
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = msg["params"]["name"]
            if name == "echo":
                text = msg["params"].get("arguments", {}).get("text", "")
                send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
            elif name == "garbage":
                sys.stdout.write("<html>502 Bad Gateway</html>\n")
                sys.stdout.flush()
                time.sleep(600)
            elif name == "bad_result":
                send({"jsonrpc": "2.0", "id": mid, "result": {"content": "not a list", "isError": "maybe"}})
            else:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": mid,
                        "error": {"code": -32602, "message": f"Unknown tool: {name}"},
                    }
                )
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
