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
# Capabilities that are tools the provider runs (its hosted search): a request offers one
# only where its caller passes it, having vetted it as the tool it stands in for
# (registry.surface.permitted_capabilities); a bare ``LLMRequest.for_model`` never does.
HOSTED_TOOLS = frozenset({WEB_SEARCH})

# Names match llm.roles.PROVIDERS and settings.LLM_PROVIDERS.
NATIVE: dict[str, frozenset[str]] = {
    "anthropic": frozenset(),
    "openai": frozenset({STRICT_TOOLS}),
    "openai_responses": frozenset({WEB_SEARCH, STRICT_TOOLS}),
    "offline": frozenset(),
}


def native_capabilities(provider: str) -> frozenset[str]:
    return NATIVE.get(provider, frozenset())


KNOWN: frozenset[str] = frozenset().union(*NATIVE.values())


def claim_problem(capabilities: object) -> str | None:
    """What is wrong with a row's ``capabilities`` (a JSON object of known names to true or
    false), said so an admin can fix it; None when nothing is."""
    if not isinstance(capabilities, dict):
        return 'must be a JSON object of capability names to true or false, e.g. {"web_search": true}'
    unknown = sorted(set(capabilities) - KNOWN)
    if unknown:
        return f"unknown capability {', '.join(map(repr, unknown))}; known: {', '.join(sorted(KNOWN))}"
    not_flags = sorted(name for name, on in capabilities.items() if not isinstance(on, bool))
    if not_flags:
        return f"{', '.join(map(repr, not_flags))} must be true or false"
    return None
