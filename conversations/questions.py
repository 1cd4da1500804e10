"""Questions a running turn asks the person on the websocket, and their answers.

The turn waits on a future registered here; the consumer that receives the
answer resolves it directly, or, when the turn runs in another server process,
publishes it on the process bus (eunice/bus.py) for that process to resolve.
"""

from __future__ import annotations

import asyncio
import threading
import uuid

from eunice import bus

ANSWER = "conversations.answer"

_pending: dict[tuple[str, str], tuple[asyncio.AbstractEventLoop, asyncio.Future]] = {}
_lock = threading.Lock()


def ask(conversation_id: str) -> tuple[str, asyncio.Future]:
    """Register a question; returns its id and the future its answer resolves."""
    loop = asyncio.get_running_loop()
    question_id = uuid.uuid4().hex[:12]
    future = loop.create_future()
    with _lock:
        _pending[(conversation_id, question_id)] = (loop, future)
    return question_id, future


def forget(conversation_id: str, question_id: str) -> None:
    with _lock:
        _pending.pop((conversation_id, question_id), None)


def answer(conversation_id: str, question_id: str, text: str | dict) -> bool:
    """Resolve a pending question of this process (with the text of an answer, or the dict of
    an elicitation's answer); False when it is not waiting here."""
    with _lock:
        entry = _pending.pop((conversation_id, question_id), None)
    if entry is None:
        return False
    loop, future = entry

    def resolve() -> None:
        if not future.done():
            future.set_result(text)

    loop.call_soon_threadsafe(resolve)
    return True


def tell_others(conversation_id: str, question_id: str, text: str | dict) -> None:
    """Publish an answer this process was not waiting for: the process that asked resolves it."""
    bus.publish(ANSWER, here=False, conversation=conversation_id, question=question_id, text=text)


@bus.on(ANSWER)
def _answer_here(payload: dict) -> None:
    text = payload["text"]
    answer(str(payload["conversation"]), str(payload["question"]), text if isinstance(text, dict) else str(text))
