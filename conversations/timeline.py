"""What a reload of the chat page shows: the conversation as the person saw it, rebuilt
from its stored messages and events.

Each turn becomes the chunks the websocket sent while it ran (``docs/chat.md``), in
order: the question, thinking, the model's text between tool calls, each tool call
with its status message and result, the cards, helpers' panes, errors, and the
answer (a cancelled or interrupted one as far as it got) with its stored cards. A
running turn's question, or an MCP server's request, still waiting for the person is
drawn again, to be answered. The page draws them with the same code that draws a live
answer.

A message stored without events (written by a script or an import) is shown as its
text. Nothing here is sent to a model.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from conversations.models import ChatMessage, Conversation, ConversationEvent
from conversations.stops import NOTICES

# The events a reload draws; the rest (requests, decisions, telemetry) are the staff's.
SHOWN = (
    "user_message",
    "thinking",
    "text_delta",
    "tool_call",
    "tool_result",
    "card",
    "error",
    "status",
    "done",
    "interrupted",
    "subtask_started",
    "subtask_text",
    "subtask_thinking",
    "subtask_finished",
)
INTERRUPTED = "This answer was interrupted; it is shown as far as it got."
ASKED = ("question", "elicitation")  # what a running turn waits for the person to answer
UNKNOWN_TOOL = "⚠ schema hint: unknown tool "  # registry.registry.ToolRegistry._unknown_tool
# A tool result is shown folded; past this it is cut (the events keep it whole).
RESULT_CHARS = 20_000


def result_outcome(content: str, error: bool) -> dict:
    """How a tool result reads for a person: ``ok``, ``hint`` (not run: a correction, or a
    tool that does not exist, ``unknown``) or ``error``; from the contract's render
    (``registry/contract_render.py``)."""
    if error or content.startswith("✗ error"):
        return {"outcome": "error"}
    if content.startswith("⚠ "):
        return {"outcome": "hint", "unknown": content.startswith(UNKNOWN_TOOL)}
    return {"outcome": "ok"}


def timeline(conversation: Conversation, messages: list[ChatMessage] | None = None) -> list[dict]:
    """The chunks that redraw the conversation, oldest first. Two queries (messages, events)."""
    if messages is None:
        messages = list(ChatMessage.objects.filter(conversation=conversation).order_by("created_at", "id"))
    turns = _events_by_turn(conversation)
    starts = [(turn, events[0]) for turn, events in turns.items() if events and events[0][0] == "user_message"]
    chunks: list[dict] = []
    index = 0
    for group in _groups(messages):
        user, answer = group
        events: list[tuple[str, dict]] = []
        # The turn of this question: the next one whose stored question is its text.
        while index < len(starts) and user is not None:
            turn, (_, data) = starts[index]
            index += 1
            if data.get("text") == user.text:
                events = turns[turn]
                break
        if user is not None:
            chunks.append({"type": "user", "text": user.text})
        if events:
            chunks.extend(_turn_chunks(events[1:], answer, last=index == len(starts)))
        elif answer is not None:
            chunks.append({"type": "answer", "text": answer.text, "cards": answer.cards})
    return chunks


def _groups(messages: list[ChatMessage]) -> list[tuple[ChatMessage | None, ChatMessage | None]]:
    """Each question with the answer stored after it (if any)."""
    groups: list[tuple[ChatMessage | None, ChatMessage | None]] = []
    for m in messages:
        if m.role == ChatMessage.Role.USER:
            groups.append((m, None))
        elif groups and groups[-1][1] is None and groups[-1][0] is not None:
            groups[-1] = (groups[-1][0], m)
        else:
            groups.append((None, m))
    return groups


def _events_by_turn(conversation: Conversation) -> dict[int, list[tuple[str, dict]]]:
    rows = (
        ConversationEvent.objects.filter(conversation=conversation, event_type__in=SHOWN)
        .order_by("turn", "sequence")
        .values_list("turn", "event_type", "data", "blob__data")
    )
    turns: dict[int, list[tuple[str, dict]]] = defaultdict(list)
    for turn, event_type, data, blob in rows:
        if blob is not None:  # too large to keep inline
            data = json.loads(bytes(blob))
        turns[turn].append((event_type, data))
    return turns


def _turn_chunks(events: list[tuple[str, dict]], answer: ChatMessage | None, *, last: bool) -> list[dict]:
    chunks: list[dict] = []
    ended = any(kind in ("done", "interrupted") for kind, _ in events)
    running = last and not ended and answer is None
    # The text of the last model call is the answer (stored whole with its cards): the
    # text_delta events after the last tool call are left to it (unless it is still running).
    last_tool = max(
        (i for i, (kind, data) in enumerate(events) if kind == "tool_call" and "subtask" not in data), default=-1
    )
    status: dict[str, Any] = {}
    settled: set[str] = set()  # questions answered or given up: not offered again
    cards: list[dict] = []  # recorded before their tool's result, shown after it (as live)
    shown_cards: list[dict] = []
    for i, (kind, data) in enumerate(events):
        chunk = _chunk(kind, data)
        if chunk is not None and chunk["type"] == "card" and "subtask" not in chunk:
            cards.append(chunk)
            shown_cards.append(chunk["card"])
            continue
        if kind == "text_delta" and i > last_tool and "subtask" not in data and not running:
            continue
        if kind == "status":
            if "asked" in data:  # a question or an MCP server's request, as the page was sent it
                if running:
                    chunks.append(data["asked"])
            elif "settled" in data:
                settled.add(data["settled"])
            else:
                status.update(data)
            continue
        if kind in ("done", "interrupted"):
            continue
        if chunk is not None:
            chunks.append(chunk)
        if kind == "tool_result":
            chunks.extend(cards)
            cards = []
    chunks.extend(cards)
    if running:  # the page streams the rest in, and the person can answer what still waits
        chunks = [c for c in chunks if c.get("type") not in ASKED or c.get("question_id") not in settled]
        chunks.append({"type": "running"})
        return chunks
    done: dict[str, Any] = {"type": "done", "stop_reason": "end_turn"}
    if status.get("cancelled"):
        done.update(stop_reason="cancelled", cancelled=True)
    elif not ended or any(kind == "interrupted" for kind, _ in events):
        done.update(stop_reason="interrupted", notice=INTERRUPTED)
    elif status.get("refusal"):
        done.update(stop_reason="refusal", notice=NOTICES.get("refusal", ""))
    elif any(kind == "error" and "subtask" not in data for kind, data in events):
        done.update(stop_reason="error")
    if answer is not None:
        # The same cards as shown while it ran (keys in another order): kept where they are.
        done.update(text=answer.text, cards=None if answer.cards == shown_cards else answer.cards)
    chunks.append(done)
    return chunks


def _chunk(kind: str, data: dict) -> dict | None:
    subtask = {"subtask": data["subtask"]} if "subtask" in data else {}
    if kind in ("thinking", "text_delta", "subtask_text", "subtask_thinking"):
        return {"type": kind, "text": str(data.get("text", "")), **subtask}
    if kind == "tool_call":
        return {"type": kind, "tool_use_id": data.get("tool_use_id"), "name": data.get("name", ""), **subtask}
    if kind == "tool_result":
        content = str(data.get("content", ""))
        if len(content) > RESULT_CHARS:
            content = content[:RESULT_CHARS] + f"\n… ({len(content) - RESULT_CHARS} more characters)"
        return {
            "type": kind,
            "tool_use_id": data.get("tool_use_id"),
            "name": data.get("name", ""),
            "content": content,
            "error": data.get("error") is not None,
            **result_outcome(content, data.get("error") is not None),
            **subtask,
        }
    if kind == "card" and isinstance(data.get("card"), dict):
        return {"type": "card", "card": data["card"], **subtask}
    if kind == "error":
        return {"type": "error", "message": str(data.get("message", "")), **subtask}
    if kind == "subtask_started":
        named = {"label": str(data["label"])} if data.get("label") else {}
        return {"type": kind, "subtask": data.get("subtask"), "task": data.get("task", ""), **named}
    if kind == "subtask_finished":
        return {"type": kind, "subtask": data.get("subtask"), "stop_reason": data.get("stop_reason", "end_turn")}
    return None
