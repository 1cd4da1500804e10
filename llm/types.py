"""Provider-neutral request, response and stream-event types.

Messages and tools use the Messages API shapes (``{"role": "user", "content":
[...blocks]}``, ``{"name", "description", "input_schema"}``) because that is
what the registry already produces; a provider that speaks another wire
format translates at its edge.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from llm.capabilities import HOSTED_TOOLS
from llm.cost import Usage

if TYPE_CHECKING:
    from llm.models import ModelConfig

# The per-call [CURRENT_STATE] block goes last in the last user message; the
# prompt-cache breakpoint sits on the block before it.
CURRENT_STATE_MARKER = "[CURRENT_STATE]"

StopReason = str  # end_turn | max_tokens | stop_sequence | tool_use | pause_turn | refusal | …


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One model call. ``max_tokens`` comes from the role's ModelConfig."""

    model: str
    system: str | list[dict[str, Any]]
    messages: list[dict[str, Any]]
    max_tokens: int
    tools: list[dict[str, Any]] = field(default_factory=list)
    cache_breakpoint_before_last_user: bool = True
    temperature: float | None = None
    thinking_budget_tokens: int | None = None  # None: extended thinking off
    stop_sequences: tuple[str, ...] = ()
    metadata_user_id: str | None = None
    # The model's active native capabilities (llm/capabilities.py): the provider turns them on.
    capabilities: frozenset[str] = frozenset()

    @classmethod
    def for_model(cls, config: ModelConfig, **fields: Any) -> LLMRequest:
        """A request for ``config``'s model with its ``max_output_tokens``, thinking budget
        and active native capabilities, less the hosted tools (``HOSTED_TOOLS``: a caller
        that vetted them passes ``capabilities`` itself)."""
        fields.setdefault("thinking_budget_tokens", config.thinking_budget_tokens or None)
        fields.setdefault("capabilities", config.active_capabilities - HOSTED_TOOLS)
        return cls(model=config.model, max_tokens=config.max_output_tokens, **fields)


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    thinking: str
    signature: str = ""
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True)
class RedactedThinkingBlock:
    """Thinking the provider's safety system encrypted: opaque, sent back unchanged."""

    data: str
    type: Literal["redacted_thinking"] = "redacted_thinking"


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use"] = "tool_use"


ContentBlock = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """A finished assistant turn."""

    content: tuple[ContentBlock, ...]
    stop_reason: StopReason
    usage: Usage
    model: str
    id: str = ""
    # Tool calls cut off by max_tokens before their input was complete: never run,
    # and left out of ``content`` (their input is half a JSON object).
    cut_tool_uses: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def thinking(self) -> str:
        return "".join(b.thinking for b in self.content if isinstance(b, ThinkingBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the history for the next call.

        Thinking blocks keep their signature, and redacted thinking its data:
        the API requires them back unchanged when a turn used tools. A tool
        call's input is a copy: the dispatcher may fill in schema defaults,
        and history echoes what the model sent.
        """
        blocks: list[dict[str, Any]] = []
        for block in self.content:
            if isinstance(block, TextBlock):
                if block.text:
                    blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ThinkingBlock):
                # Unsigned thinking was cut off (max_tokens) before its signature: the API refuses it back.
                if block.signature:
                    blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
            elif isinstance(block, RedactedThinkingBlock):
                blocks.append({"type": "redacted_thinking", "data": block.data})
            else:
                blocks.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": copy.deepcopy(block.input)}
                )
        return {"role": "assistant", "content": blocks}


# --- stream events, in the order a turn produces them ------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    index: int
    thinking: str


@dataclass(frozen=True, slots=True)
class ToolUseStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolUseInputDelta:
    index: int
    partial_json: str


@dataclass(frozen=True, slots=True)
class ToolUseStop:
    """The tool_use block is complete; ``input`` is the assembled JSON object."""

    index: int
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class UsageUpdate:
    """Tokens so far; the last one of a turn is the turn's total."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class MessageStop:
    """Always the last event of a successful stream."""

    response: LLMResponse

    @property
    def stop_reason(self) -> StopReason:
        return self.response.stop_reason


StreamEvent = TextDelta | ThinkingDelta | ToolUseStart | ToolUseInputDelta | ToolUseStop | UsageUpdate | MessageStop
