"""An LLMRequest as Responses API parameters (``client.responses.create``).

The Responses API takes the system prompt as ``instructions`` and the history
as ``input`` items: a message per turn (``input_text`` and ``input_image``
parts for the user, text for the assistant), each tool call as a
``function_call`` item and each result as a ``function_call_output`` item
naming the call's ``call_id``. Nothing is stored at the provider
(``store: false``): every request carries the whole history, as with the
other APIs. Thinking is not sent back (the API would need it encrypted).

Tools are flat (``{"type": "function", "name", "parameters", "strict"}``) and
the API takes them strict unless told otherwise, so ``strict`` is always
sent: true only with the ``strict_tools`` capability and a schema strict mode
can express. The ``web_search`` capability adds the hosted ``web_search``
tool, which the provider runs itself: the model's searches and their
sources come back inside its answer. Names are translated as for Chat
Completions (``llm.openai_request.ToolNames``). The API has no stop sequences.
"""

from __future__ import annotations

from typing import Any

import orjson

from llm.capabilities import STRICT_TOOLS, WEB_SEARCH
from llm.openai_request import ToolNames, blocks_of, image_url, result_text, text_of
from llm.types import LLMRequest

HOSTED_WEB_SEARCH = {"type": "web_search"}


def build_responses_params(request: LLMRequest, *, stream: bool) -> tuple[dict[str, Any], ToolNames]:
    """Keyword arguments for ``client.responses.create``, and the tool names it renamed."""
    names = ToolNames()
    items: list[dict[str, Any]] = []
    for message in request.messages:
        items += _items(message, names)
    params: dict[str, Any] = {
        "model": request.model,
        "max_output_tokens": request.max_tokens,
        "input": items,
        "store": False,
    }
    instructions = text_of(request.system)
    if instructions:
        params["instructions"] = instructions
    strict = STRICT_TOOLS in request.capabilities
    tools = [_tool(tool, names, strict=strict) for tool in request.tools]
    if WEB_SEARCH in request.capabilities:
        tools.append(dict(HOSTED_WEB_SEARCH))
    if tools:
        params["tools"] = tools
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if stream:
        params["stream"] = True
    return params, names


def _tool(tool: dict[str, Any], names: ToolNames, *, strict: bool) -> dict[str, Any]:
    parameters, strict = names.parameters(tool, strict=strict)
    sent: dict[str, Any] = {"type": "function", "name": names.wire(tool["name"]), "parameters": parameters}
    if tool.get("description"):
        sent["description"] = tool["description"]
    sent["strict"] = strict
    return sent


def _items(message: dict[str, Any], names: ToolNames) -> list[dict[str, Any]]:
    blocks = blocks_of(message.get("content", []))
    if message.get("role") == "assistant":
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        said = [{"role": "assistant", "content": text}] if text else []
        return said + [_function_call(b, names) for b in blocks if b.get("type") == "tool_use"]
    results = [
        {"type": "function_call_output", "call_id": b.get("tool_use_id", ""), "output": result_text(b)}
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    parts = [part for b in blocks if (part := _user_part(b)) is not None]
    return [*results, {"role": "user", "content": parts}] if parts else results


def _function_call(block: dict[str, Any], names: ToolNames) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": block["id"],
        "name": names.wire(block["name"]),
        "arguments": orjson.dumps(block.get("input") or {}).decode(),
    }


def _user_part(block: dict[str, Any]) -> dict[str, Any] | None:
    if block.get("type") == "text" and block.get("text"):
        return {"type": "input_text", "text": block["text"]}
    url = image_url(block)
    return {"type": "input_image", "image_url": url} if url else None
