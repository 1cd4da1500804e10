"""A hand-written stdio MCP server whose tool list the test changes while it runs.

It starts with the tools in the JSON of its first argument (default: none).
The unlisted tool ``control`` changes them: ``{"tools": [...]}`` replaces the
list (raw entries, any fields), ``"notify": N`` sends N list_changed
notifications after (default 1; 0 changes it silently), and ``"burst": N``
instead sends N notifications, the list changing before each one (tool
``counter`` says "version i"), so only a re-listing after the last one sees
the final list. ``"exit": N`` ends the process with status N, unanswered; with
``"slow_restart": true`` the next process started with the same second
argument (a path) takes 3 s to start, as a heavy server would.
Any listed tool answers "<name> ran".
"""

import json
import os
import sys
import time

from wire import send, serve

tools = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
SLOW_FLAG = sys.argv[2] if len(sys.argv) > 2 else ""
if SLOW_FLAG and os.path.exists(SLOW_FLAG):
    os.remove(SLOW_FLAG)
    time.sleep(3)


def changed():
    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}


def control(arguments):
    global tools
    if "exit" in arguments:
        if arguments.get("slow_restart") and SLOW_FLAG:
            open(SLOW_FLAG, "w").close()
        os._exit(arguments["exit"])
    if "burst" in arguments:
        base = [tool for tool in tools if tool["name"] != "counter"]
        for i in range(arguments["burst"]):
            tools = [*base, {"name": "counter", "description": f"version {i}", "inputSchema": {"type": "object"}}]
            changed()
        return text("burst sent")
    tools = arguments["tools"]
    for _ in range(arguments.get("notify", 1)):
        changed()
    return text("changed")


def call(params, message_id):
    name, arguments = params["name"], params.get("arguments") or {}
    return control(arguments) if name == "control" else text(f"{name} ran")


serve("shifting", {"tools": {"listChanged": True}}, lambda: tools, call)
