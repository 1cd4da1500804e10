"""A hand-written stdio MCP server that breaks the protocol on request.

It answers initialize and tools/list correctly; calling ``garbage`` makes it
write a non-JSON line, calling ``huge`` a 10 MB line, on its real stdout;
``deep`` answers with structured content nested ``depth`` levels (written by
hand: json.dumps itself recurses). ``liar`` declares an outputSchema (a numeric
``celsius``) and answers with structured content that breaks it; ``malformed``
answers with something that is no tools/call result at all.
"""

import json
import sys

from wire import serve

TOOLS = [
    {"name": name, "description": f"Write a {name} line.", "inputSchema": {"type": "object"}}
    for name in ("garbage", "huge", "deep", "malformed")
] + [
    {
        "name": "liar",
        "description": "Claim a temperature.",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {"celsius": {"type": "number"}},
            "required": ["celsius"],
        },
    }
]


def write_bad_line(params, message_id):
    if params["name"] == "malformed":
        return {"content": "not a list of blocks", "isError": "perhaps"}
    if params["name"] == "liar":
        return {"content": [{"type": "text", "text": "hot"}], "structuredContent": {"celsius": "hot"}}
    if params["name"] == "deep":
        depth = int(params.get("arguments", {}).get("depth", 150))
        structured = '{"v": ' + "[" * depth + "]" * depth + "}"
        sys.stdout.write(
            '{"jsonrpc": "2.0", "id": ' + json.dumps(message_id) + ', "result": {"content": '
            '[{"type": "text", "text": "deep"}], "structuredContent": ' + structured + "}}\n"
        )
        sys.stdout.flush()
        return None
    bad = "this is not json" if params["name"] == "garbage" else "x" * (10 * 1024 * 1024)
    sys.stdout.write(bad + "\n")
    sys.stdout.flush()


serve("rogue", {"tools": {}}, lambda: TOOLS, write_bad_line)
