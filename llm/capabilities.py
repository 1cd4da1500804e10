"""What each provider delivers natively, as our request layer wires it.

A ModelConfig row claims capabilities (``{"web_search": true}``); only those
its provider also delivers are active (``ModelConfig.active_capabilities``),
and only an active one goes into a request (``LLMRequest.capabilities``) or
takes a tool off the model's surface (``registry.surface``). A claim the
provider cannot deliver changes nothing.

- ``web_search``: the Responses API's hosted web search tool; it replaces our
  ``web_search`` tool.
- ``strict_tools``: function schemas sent in strict mode, so the model's
  arguments always match them (``llm.openai_request.strict_schema``). The
  Responses API takes them strict whenever a schema can be; a Chat
  Completions row turns it on by claiming it (OpenAI itself enforces it;
  many compatible servers ignore it).
"""

from __future__ import annotations

WEB_SEARCH = "web_search"
STRICT_TOOLS = "strict_tools"

# Names match llm.roles.PROVIDERS and settings.LLM_PROVIDERS.
NATIVE: dict[str, frozenset[str]] = {
    "anthropic": frozenset(),
    "openai": frozenset({STRICT_TOOLS}),
    "openai_responses": frozenset({WEB_SEARCH, STRICT_TOOLS}),
    "offline": frozenset(),
}


def native_capabilities(provider: str) -> frozenset[str]:
    return NATIVE.get(provider, frozenset())
