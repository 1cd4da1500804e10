"""The interface every model provider implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Protocol, runtime_checkable

from llm.types import (
    LLMRequest,
    LLMResponse,
    MessageStop,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseStart,
    ToolUseStop,
    UsageUpdate,
)


@runtime_checkable
class Provider(Protocol):
    """A model behind one wire protocol.

    ``stream`` / ``astream`` yield typed events ending with exactly one
    ``MessageStop`` that carries the whole response; ``complete`` /
    ``acomplete`` return that response without streaming. All four raise
    only ``llm.errors.LLMError`` subclasses, whose messages are
    safe to show.
    """

    name: str

    def stream(self, request: LLMRequest) -> Iterator[StreamEvent]: ...

    def astream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]: ...

    def complete(self, request: LLMRequest) -> LLMResponse: ...

    async def acomplete(self, request: LLMRequest) -> LLMResponse: ...


def events_for(response: LLMResponse) -> Iterator[StreamEvent]:
    """The stream a finished response would have produced (for providers that do not stream)."""
    for index, block in enumerate(response.content):
        if isinstance(block, TextBlock):
            yield TextDelta(index, block.text)
        elif isinstance(block, ThinkingBlock):
            yield ThinkingDelta(index, block.thinking)
        elif isinstance(block, ToolUseBlock):
            yield ToolUseStart(index, block.id, block.name)
            yield ToolUseStop(index, block.id, block.name, block.input)
    yield UsageUpdate(response.usage)
    yield MessageStop(response)
