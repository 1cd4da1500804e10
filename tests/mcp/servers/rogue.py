"""A hand-written stdio MCP server that breaks the protocol on request.

It answers initialize and tools/list correctly; calling ``garbage`` makes it
write a non-JSON line, calling ``huge`` a 10 MB line, on its real stdout.
"""

import sys

from wire import serve

TOOLS = [
    {"name": name, "description": f"Write a {name} line.", "inputSchema": {"type": "object"}}
    for name in ("garbage", "huge")
]


def write_bad_line(params):
    bad = "this is not json" if params["name"] == "garbage" else "x" * (10 * 1024 * 1024)
    sys.stdout.write(bad + "\n")
    sys.stdout.flush()


serve("rogue", {"tools": {}}, lambda: TOOLS, write_bad_line)
