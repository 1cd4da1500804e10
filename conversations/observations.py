"""Observations of how a person works: noted by the model (create_observation) or
reinforced by the policy rules they break (conversations.policies), shown to the model
in each call's [CURRENT_STATE] block and to staff in the admin.

A row is one person's (tenant and user) one observation; recording the same one again
raises its count instead of adding a row, so what recurs rises to the top.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

from conversations.models import Observation
from eunice.db.prepared import Prepared

# The kinds of note the model may record; ``policy_violation`` rows are the policies' own.
NOTE_KINDS: tuple[str, ...] = ("preference", "habit", "expertise", "correction")
POLICY_VIOLATION = "policy_violation"
KEY_CHARS = 200
SHOWN_IN_STATE = 5

_SPACES = re.compile(r"\s+")


def increment(model: type[models.Model], key: dict[str, Any], **changes: Any) -> None:
    """``count += 1`` (and ``changes``) on the row ``key`` names, made at 0 when missing.

    One conditional UPDATE, and only when no row matched a race-safe get_or_create
    before it: counts made at once (parallel calls, two processes) are all counted.
    """
    rows = model._default_manager.filter(**key)
    if not rows.update(count=F("count") + 1, **changes):
        model._default_manager.get_or_create(**key)
        rows.update(count=F("count") + 1, **changes)


def note_key(text: str) -> str:
    """The note as the row's key: spaces collapsed, case folded, cut to the column."""
    return _SPACES.sub(" ", text).strip().casefold()[:KEY_CHARS]


@transaction.atomic
def note_observation(*, tenant_id: str, user_id: str, kind: str, text: str) -> int:
    """Record that ``text`` was observed of the person; how many times it has been, this one included.

    Raises ValueError for a kind outside NOTE_KINDS, a blank note, or no user to note it of.
    """
    if kind not in NOTE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(NOTE_KINDS)}; got {kind!r}")
    if not text.strip() or not user_id:
        raise ValueError("an observation needs a person and a note")
    key = {"tenant_id": tenant_id, "user_id": user_id, "kind": kind, "key": note_key(text)}
    increment(Observation, key, text=text.strip(), updated_at=timezone.now())
    return Observation.objects.filter(**key).values_list("count", flat=True).get()


_SHOWN: Prepared[tuple[str, str, str, int]] = Prepared(
    lambda tenant_id, user_id: Observation.objects.of_person(tenant_id, user_id).values_list(
        "kind", "key", "text", "count"
    )[:SHOWN_IN_STATE]
)


def state_lines(tenant_id: str, user_id: str) -> list[str]:
    """The person's ``SHOWN_IN_STATE`` most reinforced observations, one line each, for the
    [CURRENT_STATE] block (one query, composed once: every model call reads it; none
    without a user)."""
    if not user_id:
        return []
    return [_line(kind, key, text, count) for kind, key, text, count in _SHOWN(tenant_id, user_id)]


def _line(kind: str, key: str, text: str, count: int) -> str:
    if kind == POLICY_VIOLATION:
        return f"broke the policy {key!r} {count}×"
    return f"{kind}: {text or key} (noted {count}×)"
