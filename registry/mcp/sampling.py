"""A server's request for a model's completion (sampling, 2025-11-25), answered with
Eunice's own model once the person behind the call has approved exactly what would be sent.

The request goes to the person like an elicitation (mode ``sampling``: the messages, the
system prompt, the token cap), and only an accept runs the model: the chat role's model,
through the same provider as a turn, with no tools and none of the conversation. What it
cost is charged to the call that asked (``elicitation.Person.bill``): to that server's tool,
the tenant and the user. A call nobody watches, or a person who declines, gets an error.
"""

from __future__ import annotations

from typing import Any

from registry.mcp.elicitation import Askers, Elicitation, ask

DECLINED = -1  # the spec's code for "the user rejected the sampling request"
MAX_TOKENS = 4096


def callback(askers: Askers, server: str) -> Any:
    """The SDK's sampling callback for a session."""

    async def sample(context: Any, params: Any) -> Any:
        import mcp_types

        request = _request(server, params)
        person, answer = await ask(askers, request, "Sampling")
        if person is None or isinstance(request, str):
            return answer
        if not answer or answer.get("action") != "accept":
            return mcp_types.ErrorData(code=DECLINED, message="the person did not approve the sampling request")
        return await _complete(request, person)

    return sample


def _request(server: str, params: Any) -> Elicitation | str:
    """What the person is asked to approve, or why the request cannot be run (only text)."""
    messages = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        if any(getattr(block, "type", "") != "text" for block in blocks):
            return "Sampling refused: only text messages can be sent to the model"
        messages.append({"role": message.role, "text": "\n".join(block.text for block in blocks)})
    if getattr(params, "tools", None):
        return "Sampling refused: tools in a sampling request are not offered"
    return Elicitation(
        server,
        "sampling",
        f"The MCP server “{server}” asks to send these messages to the model.",
        messages=tuple(messages),
        system=params.system_prompt or "",
        max_tokens=min(int(params.max_tokens), MAX_TOKENS),
    )


async def _complete(request: Elicitation, person: Any) -> Any:
    import mcp_types

    from llm import LLMRequest
    from llm.roles import create_llm_client_for_role, get_model_for_role
    from registry.aio import in_db_thread

    config = await in_db_thread(get_model_for_role)("chat")
    provider = create_llm_client_for_role(config.role, model=config)
    asked = LLMRequest.for_model(
        config,
        system=request.system,
        tools=[],
        messages=[{"role": m["role"], "content": [{"type": "text", "text": m["text"]}]} for m in request.messages],
        cache_breakpoint_before_last_user=False,
    )
    if request.max_tokens:
        asked = _capped(asked, min(request.max_tokens, asked.max_tokens))
    response = await provider.acomplete(asked)
    if hasattr(person, "spent"):
        person.spent += response.usage.cost_usd(config)
    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=response.text),
        model=config.model,
        stop_reason="maxTokens" if response.stop_reason == "max_tokens" else "endTurn",
    )


def _capped(request: Any, max_tokens: int) -> Any:
    import dataclasses

    return dataclasses.replace(request, max_tokens=max_tokens)
