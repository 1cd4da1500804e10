"""JSON-RPC over stdio for the hand-written test servers (rogue.py, shifting.py)."""

import json
import sys


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def reply(message_id, result: dict) -> None:
    send({"jsonrpc": "2.0", "id": message_id, "result": result})


def serve(name: str, capabilities: dict, on_list, on_call) -> None:
    """Answer initialize as ``name``, tools/list with ``on_list()``, tools/call with
    ``on_call(params, message_id)`` (None: it answered by itself), anything else with {}."""
    for line in sys.stdin:
        message = json.loads(line)
        method, message_id = message.get("method"), message.get("id")
        if method == "initialize":
            reply(
                message_id,
                {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": capabilities,
                    "serverInfo": {"name": name, "version": "1"},
                },
            )
        elif method == "tools/list":
            reply(message_id, {"tools": on_list()})
        elif method == "tools/call":
            result = on_call(message["params"], message_id)
            if result is not None:
                reply(message_id, result)
        elif message_id is not None:
            reply(message_id, {})
