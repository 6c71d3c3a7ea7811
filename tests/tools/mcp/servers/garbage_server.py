"""A hand-written stdio "MCP server" that answers the handshake and the tool listing correctly and then
sends malformed frames: ``tools/call`` gets lines that are not JSON, JSON that is not JSON-RPC, and a
response for an id nobody asked about — never a real answer. With ``--garbage-handshake`` it sends
garbage from the start."""

from __future__ import annotations

import json
import sys


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    garbage_handshake = "--garbage-handshake" in sys.argv
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, ident = msg.get("method"), msg.get("id")
        if ident is None:
            continue  # a notification
        if garbage_handshake:
            sys.stdout.write("\x00\x01 this is not json {{{\n")
            sys.stdout.flush()
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "garbage", "version": "0"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
                {"name": "noise", "description": "Answers with garbage.",
                 "inputSchema": {"type": "object", "properties": {}}}]}})
        elif method == "tools/call":
            sys.stdout.write("}}} not json at all\n")
            sys.stdout.write(json.dumps({"hello": "not json-rpc"}) + "\n")
            send({"jsonrpc": "2.0", "id": 987654, "result": {"content": []}})
            sys.stdout.flush()
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
