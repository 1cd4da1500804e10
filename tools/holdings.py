"""What a tenant holds of skills and primitives, for the tools that act on them.

``use_skill``, ``read_skill_asset`` and ``run_skill_script`` need an approved skill
of the tenant's, ``update_skill`` any skill, ``validate_primitive`` any primitive and
``call_primitive`` an approved one. Each handler declares that with
``@requires_tenant`` (registry.handlers), so a workspace with nothing for a tool to
act on is not offered it (registry.availability): the surface leaves it off,
``search_tools`` does not rank it, and a call of it is answered with a Hint saying
what to make first.

The checks are asked on every turn and every search, so they answer from a cache:
one query per tenant reads the four counts, kept ``HOLD_SECONDS``. A skill or a
primitive saved or deleted forgets its tenant's counts at once in this process,
and again once the change commits, in every process (the process bus,
eunice/bus.py); a reconnected bus forgets them all, as a missed message may have
said anything. "Approved" is counted in SQL as approved with the content hash it
was approved at; the handlers still check the content itself (``is_usable``), so a
bulk update that slipped past the hash is caught by the call.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import partial

from django.db import transaction
from django.db.models import Count, F, Q, Value
from django.db.models.signals import post_delete, post_save

from eunice import bus
from tools.models import CapabilityStatus, Primitive, Skill

HOLD_SECONDS = 30.0  # a backstop: a change is pushed (the process bus); as the capability cache of registry.surface
MAX_TENANTS = 10_000  # tenants kept at once; past it the cache starts again
CHANGED = "tools.holdings_changed"
USABLE = Q(status=CapabilityStatus.APPROVED) & ~Q(approved_hash="") & Q(approved_hash=F("content_hash"))


@dataclass(frozen=True, slots=True)
class Holdings:
    skills: int = 0
    usable_skills: int = 0
    primitives: int = 0
    usable_primitives: int = 0


_held: dict[str, tuple[float, Holdings]] = {}  # tenant -> (until when, its holdings)
_forgotten = 0  # bumped by every forget: a read that began before one is not kept
_lock = threading.Lock()


def of(tenant_id: str) -> Holdings:
    """The tenant's skill and primitive counts: from the cache, else one query."""
    kept = _held.get(tenant_id)
    if kept is not None and kept[0] > time.monotonic():
        return kept[1]
    began = _forgotten
    holdings = _read(tenant_id)
    with _lock:
        if began == _forgotten:  # nothing changed meanwhile that this read may have missed
            if len(_held) >= MAX_TENANTS:
                _held.clear()
            _held[tenant_id] = (time.monotonic() + HOLD_SECONDS, holdings)
    return holdings


def _read(tenant_id: str) -> Holdings:
    def counts(model: type[Skill] | type[Primitive], kind: str):  # noqa: ANN202 (a values queryset)
        return (
            model.objects.filter(tenant_id=tenant_id)
            .order_by()
            .values(kind=Value(kind))
            .annotate(held=Count("pk"), usable=Count("pk", filter=USABLE))
            .values_list("kind", "held", "usable")
        )

    rows = counts(Skill, "skill").union(counts(Primitive, "primitive"), all=True)
    found = {kind: (held, usable) for kind, held, usable in rows}
    skills, usable_skills = found.get("skill", (0, 0))
    primitives, usable_primitives = found.get("primitive", (0, 0))
    return Holdings(skills, usable_skills, primitives, usable_primitives)


def forget(tenant_id: str | None = None) -> None:
    """Read ``tenant_id``'s holdings again at the next check (every tenant's: None)."""
    global _forgotten
    with _lock:
        _forgotten += 1
        if tenant_id is None:
            _held.clear()
        else:
            _held.pop(tenant_id, None)


# --- the checks (registry.handlers.requires_tenant) ----------------------------


def usable_skill(tenant_id: str) -> str | None:
    """Why a tool that follows an approved skill cannot run for the tenant (None: it can)."""
    held = of(tenant_id)
    return _approved("skill", held.skills, held.usable_skills, "its current files (Tools → Skills in the admin)")


def any_skill(tenant_id: str) -> str | None:
    """Why update_skill cannot run for the tenant: it has no skill to change."""
    if of(tenant_id).skills:
        return None
    return "this workspace has no skill to update yet; create one with create_skill"


def any_primitive(tenant_id: str) -> str | None:
    """Why validate_primitive cannot run for the tenant: it has no primitive to check."""
    if of(tenant_id).primitives:
        return None
    return "this workspace has no primitive yet; create one with create_primitive"


def usable_primitive(tenant_id: str) -> str | None:
    """Why call_primitive cannot run for the tenant: it has no approved primitive."""
    held = of(tenant_id)
    return _approved(
        "primitive", held.primitives, held.usable_primitives, "its current code (Tools → Primitives in the admin)"
    )


def _approved(kind: str, held: int, usable: int, what: str) -> str | None:
    """None when one of the tenant's ``held`` rows of ``kind`` is ``usable``; else why not
    (each waits for a staff member to approve ``what``), or that there is none yet."""
    if usable:
        return None
    if held:
        return (
            f"none of this workspace's {held} {kind}(s) is approved as it is now: each waits for a staff member "
            f"to approve {what}"
        )
    return f"this workspace has no approved {kind} yet; create one with create_{kind}, and a staff member approves it"


# --- keeping the cache in step --------------------------------------------------


def _changed(instance: Skill | Primitive, **_: object) -> None:
    """A skill or primitive was saved or deleted: forget its tenant here now, and once the
    change commits here again (a check between the two may have read the old rows) and
    in the other processes."""
    forget(instance.tenant_id)
    transaction.on_commit(partial(bus.publish, CHANGED, tenant=instance.tenant_id))


def _changed_elsewhere(payload: dict) -> None:
    tenant = payload.get("tenant")
    forget(tenant if isinstance(tenant, str) else None)


def listen() -> None:
    """Keep the cache in step with the tables (once per process: ``tools.apps``)."""
    for model in (Skill, Primitive):
        post_save.connect(_changed, sender=model, dispatch_uid=f"holdings_saved_{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"holdings_deleted_{model.__name__}")
    bus.on(CHANGED)(_changed_elsewhere)
    bus.on_reconnect(forget)
