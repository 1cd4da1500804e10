"""The LLM provider layer: one interface, an Anthropic and an offline provider.

config = get_model_for_role("chat")
llm = create_llm_client_for_role("chat", model=config)
request = LLMRequest.for_model(config, system=..., messages=..., tools=...)
for event in llm.stream(request): ...      # ends with MessageStop(response)
cost = response.usage.cost_usd(config)
"""

from llm.cost import Usage
from llm.errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMConfigError,
    LLMConnectionError,
    LLMContextTooLongError,
    LLMError,
    LLMOverloadedError,
    LLMRateLimitError,
    LLMResponseError,
)
from llm.provider import Provider
from llm.types import (
    CURRENT_STATE_MARKER,
    ContentBlock,
    LLMRequest,
    LLMResponse,
    MessageStop,
    RedactedThinkingBlock,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseInputDelta,
    ToolUseStart,
    ToolUseStop,
    UsageUpdate,
)

__all__ = [
    "CURRENT_STATE_MARKER",
    "ContentBlock",
    "LLMAuthError",
    "LLMBadRequestError",
    "LLMConfigError",
    "LLMConnectionError",
    "LLMContextTooLongError",
    "LLMError",
    "LLMOverloadedError",
    "LLMRateLimitError",
    "LLMRequest",
    "LLMResponse",
    "LLMResponseError",
    "MessageStop",
    "RedactedThinkingBlock",
    "Provider",
    "StreamEvent",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolUseBlock",
    "ToolUseInputDelta",
    "ToolUseStart",
    "ToolUseStop",
    "Usage",
    "UsageUpdate",
]
