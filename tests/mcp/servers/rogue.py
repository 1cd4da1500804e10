"""A hand-written stdio MCP server that breaks the protocol on request.

It answers initialize and tools/list correctly; calling ``garbage`` makes it
write a non-JSON line, calling ``huge`` a 10 MB line, on its real stdout;
``deep`` answers with structured content nested ``depth`` levels (written by
hand: json.dumps itself recurses).
"""

import json
import sys

TOOLS = [
    {"name": name, "description": f"Write a {name} line.", "inputSchema": {"type": "object"}}
    for name in ("garbage", "huge", "deep")
]


def reply(message_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, message_id = message.get("method"), message.get("id")
    if method == "initialize":
        reply(message_id, {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "rogue", "version": "1"},
        })
    elif method == "tools/list":
        reply(message_id, {"tools": TOOLS})
    elif method == "tools/call" and message["params"]["name"] == "deep":
        depth = int(message["params"].get("arguments", {}).get("depth", 150))
        structured = '{"v": ' + "[" * depth + "]" * depth + "}"
        sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "deep"}], '
                         '"structuredContent": %s}}\n' % (json.dumps(message_id), structured))
        sys.stdout.flush()
    elif method == "tools/call":
        bad = "this is not json" if message["params"]["name"] == "garbage" else "x" * (10 * 1024 * 1024)
        sys.stdout.write(bad + "\n")
        sys.stdout.flush()
    elif message_id is not None:
        reply(message_id, {})
