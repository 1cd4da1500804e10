"""The result budget: what one tool result may cost the context, and a handle for the rest.

A result whose estimated tokens (the turn's calibrated estimator) pass its tool's cap
(``RESULT_BUDGET_TOKENS``, or the tool's own in ``RESULT_BUDGET_PER_TOOL``) is never cut
silently: it is kept whole as a dataset of the conversation, one row per line (a line
longer than ``PART_CHARS``, such as minified JSON, in several rows: ``part`` 1, 2, …),
and the model reads a note naming that handle and the result's true size, then its
first lines.
The model reads the rest with ``query`` or ``preview_data``. ``[CURRENT_STATE]`` lists
the conversation's handles on every call, so a handle outlives the result that made it.

On later turns, history replays a result the model has already read whole only while it
is short (``compacted_history``); a long one comes back as its head and a note.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import TYPE_CHECKING

from django.conf import settings

from conversations.prompt import compact_tool_results
from datacatalog.models import CatalogDataset
from datacatalog.store import CatalogError
from eunice.db.prepared import Prepared
from registry.result import ToolResult

if TYPE_CHECKING:
    from conversations.runtime import Runtime

logger = logging.getLogger("eunice.conversations")

# Marks a dataset as a held result: ``source_detail`` reads "result handle: TOOL, N tokens".
HANDLE_SOURCE = "result handle"
# Of an oversize result the model reads at most this share of its tool's cap.
PREVIEW_SHARE = 0.25
# A result read on an earlier turn is replayed whole up to twice this many characters.
REPLAY_KEEP_CHARS = 2_000
# A held line is stored in parts of at most this many characters, so any row is readable.
PART_CHARS = 2_000
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def cap_for(tool_name: str) -> int:
    """The tokens one result of ``tool_name`` may cost the context."""
    return int(settings.RESULT_BUDGET_PER_TOOL.get(tool_name, settings.RESULT_BUDGET_TOKENS))


def within_budget(tool_name: str, tool_use_id: str, result: ToolResult, runtime: Runtime) -> ToolResult:
    """``result`` as the model may read it: itself when it fits its tool's cap, else a
    note and a preview, with the whole result kept as a dataset (a handle). Database work."""
    content = result.content
    tokens = runtime.estimator.tokens(len(content))
    cap = cap_for(tool_name)
    if tokens <= cap:
        return result
    lines = content.splitlines()
    handle = handle_name(tool_name, tool_use_id)
    kept = _keep(handle, tool_name, tokens, lines, runtime)
    size = f"about {tokens:,} tokens ({len(content):,} characters, {len(lines):,} lines)"
    if kept is None:
        note = f"[result budget: this result of {tool_name} is {size}, over its cap of {cap:,}; it could not be kept"
        note += " whole (its lines do not fit a dataset), so only its first lines follow. Narrow the call.]"
    else:
        runtime.held_results()[handle] = f"{tool_name}, {tokens:,} tokens"
        note = (
            f"[result budget: this result of {tool_name} is {size}, over its cap of {cap:,}. It is kept whole "
            f"as dataset `{handle}` (columns: line, part, text; a line over {PART_CHARS:,} characters is "
            f"in several parts); read more with query, e.g. "
            f"SELECT text FROM {handle} WHERE line BETWEEN 41 AND 80 ORDER BY line, part. Its first lines:]"
        )
    preview = _head(lines, int(cap * PREVIEW_SHARE * runtime.estimator.chars_per_token))
    return dataclasses.replace(result, content=f"{note}\n{preview}")


def handle_name(tool_name: str, tool_use_id: str) -> str:
    """A dataset name for the held result of one call (``fetch_url_result_1a2b3c``)."""
    suffix = _UNSAFE.sub("", tool_use_id.rsplit("_", 1)[-1])[-8:] or "0"
    return f"{_UNSAFE.sub('_', tool_name)[:40]}_result_{suffix}".lower()


def _keep(handle: str, tool_name: str, tokens: int, lines: list[str], runtime: Runtime) -> str | None:
    import pandas as pd

    numbers, parts, texts = [], [], []
    for number, line in enumerate(lines, 1):
        for part, start in enumerate(range(0, max(len(line), 1), PART_CHARS), 1):
            numbers.append(number)
            parts.append(part)
            texts.append(line[start : start + PART_CHARS])
    frame = pd.DataFrame({"line": numbers, "part": parts, "text": texts})
    try:
        runtime.catalog.save(
            handle, frame, source="tool", source_detail=f"{HANDLE_SOURCE}: {tool_name}, {tokens:,} tokens"
        )
    except CatalogError as exc:
        logger.warning("an oversize result of %s could not be kept as %s: %s", tool_name, handle, exc)
        return None
    return handle


def _head(lines: list[str], chars: int) -> str:
    """The first whole lines of a result within ``chars`` (at least the start of the first)."""
    taken: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > chars:
            break
        taken.append(line)
        used += len(line) + 1
    return "\n".join(taken) if taken else (lines[0][:chars] + "…" if lines else "")


_HELD: Prepared[tuple[str, str]] = Prepared(
    lambda tenant_id, conversation_id: (
        CatalogDataset.objects.in_conversation(tenant_id, conversation_id)
        .filter(source_detail__startswith=f"{HANDLE_SOURCE}: ")
        .order_by("created_at")
        .values_list("name", "source_detail")
    )
)


def held_results(tenant_id: str, conversation_id: str) -> dict[str, str]:
    """The conversation's handles: dataset name → "TOOL, N tokens". One query, composed
    once (every turn's first model call reads it)."""
    prefix = len(HANDLE_SOURCE) + 2
    return {name: detail[prefix:] for name, detail in _HELD(tenant_id, conversation_id)}


def compacted_history(messages: list[dict]) -> list[dict]:
    """Earlier turns' messages with each long tool result the model has read cut to its
    head and a note (the whole result stays in the conversation's events)."""
    compact_tool_results(messages, keep_chars=REPLAY_KEEP_CHARS, spare_last=False)
    return messages
